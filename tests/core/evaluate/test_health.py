"""Vocabulary health finds planted unreachable, partial, unused and repetitive tokens; overlap counts."""

from __future__ import annotations

from pathlib import Path

from core.encode.tokenizer import Tokenizer
from core.evaluate import evaluate
from core.evaluate.health import health, is_repetitive, overlap

MERGES = [
    (b"a", b"b"),            # 256 "ab"
    (b"a", b" "),            # 257 "a ": the pattern always cuts before the space -> unreachable
    (b" ", b"\xc3"),         # 258 " \xc3": half of "é" -> partial (yet reachable from raw bytes)
    (b"=", b"="),            # 259
    (b"==", b"=="),          # 260
    (b"====", b"="),         # 261 "=====" -> repetitive (5 bytes)
    (b"x", b"y"),            # 262 "xy": never in the held-out text -> unused
]


def planted() -> Tokenizer:
    vocab = {i: bytes([i]) for i in range(256)}
    for i, (left, right) in enumerate(MERGES):
        vocab[256 + i] = left + right
    return Tokenizer(vocab, MERGES, ["<|endoftext|>"])


def test_planted_problems(tmp_path: Path) -> None:
    tok = planted()
    (tmp_path / "held.txt").write_text("ab ab ===== ab", encoding="utf-8")
    counts = evaluate({"t": tok}, tmp_path / "held.txt").counts["t"]
    report = health(tok, counts)
    assert report.unreachable == [257]
    assert report.partial == [258]
    assert report.repetitive == [261]
    # single bytes and the special token (263) are never judged unused
    assert report.unused == [257, 258, 259, 260, 262]
    assert health(tok).unused is None


def test_repetitive() -> None:
    assert is_repetitive(b"-----", 5)
    assert is_repetitive(b"\xe2\x80\x94" * 2, 5)
    assert is_repetitive(b"abab" + b"ab", 5)
    assert not is_repetitive(b"----", 5)
    assert not is_repetitive(b"hello", 5)
    assert not is_repetitive(b"aaaab", 5)


def test_overlap() -> None:
    a = planted()
    vocab = {i: bytes([i]) for i in range(256)}
    vocab[256] = b"xy"
    vocab[257] = b"cd"
    b = Tokenizer(vocab, [(b"x", b"y"), (b"c", b"d")])
    result = overlap(a, b, ranks=(256, 258))
    assert (result.shared, result.only_a, result.only_b) == (257, 6, 1)
    assert result.by_rank == [(256, 256), (258, 256), (263, 257)]
