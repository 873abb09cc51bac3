"""Issue 38.20: `save_tokenizer` on a vocabulary whose ids have gaps writes files that all
load back to the same ids, or refuses before writing anything.

The ``.tiktoken`` file used to be written, then refused by its own loader ("the ranks
skip 256"); the ids given in ``tokenizer_config.json`` now say which gaps are unused.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from core.encode.tokenizer import Tokenizer
from core.formats import FormatError, save_tokenizer
from core.formats.base import UNUSED_IDS_ALLOWED

BYTES = {i: bytes([i]) for i in range(256)}
AB = [(b"a", b"b")]
CASES = {
    "ordinary after a gap": ({**BYTES, 300: b"ab"}, AB, []),
    "special in the gap, ordinary after": ({**BYTES, 256: b"<|s|>", 300: b"ab"}, AB, ["<|s|>"]),
    "ordinary after a gap, special next": ({**BYTES, 300: b"ab", 301: b"<|s|>"}, AB, ["<|s|>"]),
    "special far after": ({**BYTES, 256: b"ab", 70_000: b"<|s|>"}, AB, ["<|s|>"]),
    "bytes not first": ({i + 10: bytes([i]) for i in range(256)} | {300: b"ab"}, AB, []),
    "cl100k-like": ({**BYTES, 256: b"ab", 258: b"<|a|>", 262: b"<|b|>", 270: b"abab"},
                    [*AB, (b"ab", b"ab")], ["<|a|>", "<|b|>"]),
}
TEXT = "abab ab<|s|>a b<|a|>x<|b|>"


@pytest.mark.parametrize("case", list(CASES))
def test_every_file_loads_back_to_the_same_ids(case: str, tmp_path: Path) -> None:
    vocab, merges, specials = CASES[case]
    written = save_tokenizer(tmp_path / "tok", vocab, merges, specials, "gpt2")
    expected = Tokenizer(vocab, merges, specials).encode(TEXT)
    for path in [tmp_path / "tok", *(p for p in written if p.name != "tokenizer_config.json")]:
        loaded = Tokenizer.load(path)
        assert loaded.vocab == vocab, path.name
        assert loaded.merges == merges, path.name
        assert loaded.special_ids == {t: next(i for i, b in vocab.items() if b == t.encode()) for t in specials}
        assert loaded.encode(TEXT) == expected, path.name


def test_tiktoken_reads_the_file_with_gaps(tmp_path: Path) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    vocab, merges, specials = CASES["special in the gap, ordinary after"]
    save_tokenizer(tmp_path / "tok", vocab, merges, specials, "gpt2")
    lines = (tmp_path / "tok" / "tokenizer.tiktoken").read_text().split()
    ranks = {base64.b64decode(t): int(r) for t, r in zip(lines[::2], lines[1::2])}
    tok = Tokenizer.load(tmp_path / "tok")
    encoding = tiktoken.Encoding("gaps", pat_str=tok.pattern.source, mergeable_ranks=ranks,
                                 special_tokens=tok.special_ids)
    assert encoding.encode(TEXT, allowed_special="all") == tok.encode(TEXT)


def test_a_gap_no_loader_reads_is_refused_before_writing(tmp_path: Path) -> None:
    far = len(BYTES) + 1 + UNUSED_IDS_ALLOWED
    with pytest.raises(FormatError, match=f"has id {far:,}.*read back"):
        save_tokenizer(tmp_path / "tok", {**BYTES, far: b"ab"}, AB, [], "gpt2")
    assert not (tmp_path / "tok").exists() or not any((tmp_path / "tok").iterdir())
    save_tokenizer(tmp_path / "ok", {**BYTES, far - 1: b"ab"}, AB, [], "gpt2")  # the largest id allowed
    assert Tokenizer.load(tmp_path / "ok" / "tokenizer.tiktoken").vocab[far - 1] == b"ab"


def test_a_bare_rank_file_with_a_gap_and_named_specials_is_still_refused(tmp_path: Path) -> None:
    # without ids, special tokens fill the gaps: one left over says nothing about its token
    vocab, merges, _ = CASES["ordinary after a gap"]
    save_tokenizer(tmp_path / "tok", vocab, merges, [], "gpt2")
    bare = tmp_path / "bare.tiktoken"
    bare.write_bytes((tmp_path / "tok" / "tokenizer.tiktoken").read_bytes())
    with pytest.raises(FormatError, match="skip 257"):
        Tokenizer.load(bare, pattern="gpt2", special_tokens=["<s>"])
