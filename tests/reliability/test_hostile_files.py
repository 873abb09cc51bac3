"""Issue 13.10: hostile tokenizer files and patterns are refused, never a hang or an approximation.

A custom pattern with catastrophic backtracking (``(a|a)+$`` on ``aaaa…ab``), from the
command line or from an untrusted ``tokenizer_config.json``, stops with "takes too long"
instead of hanging training or encoding. A ``tokenizer.json`` with a part this tokenizer
does not implement (a normalizer, a post-processor that adds ids, dropout, ...) or of
another format version is refused with a message naming the part.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import core
from core.errors import FormatError, PatternTimeoutError

EVIL = r"(a|a)+$"
EVIL_TEXT = ("a" * 40 + "b\n") * 20


@pytest.fixture()
def evil_corpus(tmp_path: Path) -> Path:
    path = tmp_path / "evil.txt"
    path.write_text(EVIL_TEXT, encoding="utf-8")
    return path


def _assert_one_error(result, *phrases: str) -> None:  # type: ignore[no-untyped-def]
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("bpe-studio: error:")]
    assert len(errors) == 1, result.stderr
    for phrase in phrases:
        assert phrase in errors[0], errors[0]


def test_library_bounds_a_catastrophic_pattern(monkeypatch: pytest.MonkeyPatch) -> None:
    # the bound is PATTERN_TIMEOUT_SECONDS (the command line tests below keep its value): a
    # tenth of it here, the same mechanism in less time
    from core.pretokenize import patterns

    monkeypatch.setattr(patterns, "PATTERN_TIMEOUT_SECONDS", patterns.PATTERN_TIMEOUT_SECONDS / 10)
    pattern = core.resolve_pattern(EVIL)
    started = time.monotonic()
    with pytest.raises(PatternTimeoutError, match="takes too long on this text"):
        pattern.findall("a" * 40 + "b")
    assert time.monotonic() - started < 30
    tok = core.Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern=EVIL)
    with pytest.raises(PatternTimeoutError):
        tok.encode("a" * 40 + "b")
    assert pattern.findall("aaa") == ["aaa"]  # an ordinary text is unaffected


@pytest.mark.parametrize("workers", ["1", "2"])
def test_training_with_a_catastrophic_pattern_stops(tmp_path: Path, evil_corpus: Path, run_cli, workers: str) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    result = run_cli("train", evil_corpus, "--vocab-size", "300", "--pattern", EVIL, "--out", out,
                     "--workers", workers, timeout=90)
    _assert_one_error(result, "takes too long on this text", EVIL)
    assert not out.exists()


def test_encoding_with_an_untrusted_config_pattern_stops(tmp_path: Path, evil_corpus: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "tok"
    core.save_tokenizer(folder, {i: bytes([i]) for i in range(256)}, [], [], "gpt2")
    config = folder / "tokenizer_config.json"
    data = json.loads(config.read_text(encoding="utf-8"))
    data.update(pattern_name="custom", pattern=EVIL)
    config.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "ids.npy"
    result = run_cli("encode", evil_corpus, "--tokenizer", folder, "--out", out, "--workers", "1", timeout=90)
    _assert_one_error(result, "takes too long on this text")
    assert not out.exists() and not list(tmp_path.glob(".ids.npy*"))


def _tokenizer_json(tmp_path: Path, change: Any) -> Path:
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab"}
    path = tmp_path / "tokenizer.json"
    core.formats.save_tokenizer_json(path, vocab, [(b"a", b"b")], [], "gpt2")
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _set(path: str, value: Any) -> Any:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = data
        for key in parents:
            node = node[key]
        node[last] = value

    return change


def test_a_plain_tokenizer_json_still_loads(tmp_path: Path) -> None:
    tok = core.Tokenizer.load(_tokenizer_json(tmp_path, lambda data: None))
    assert tok.encode("ab") == [256]


@pytest.mark.parametrize(
    ("change", "phrases"),
    [
        (_set("normalizer", {"type": "Lowercase"}), ["key normalizer", "Lowercase"]),
        (_set("normalizer", {"type": "Sequence", "normalizers": [{"type": "NFC"}]}), ["key normalizer", "Sequence"]),
        (_set("post_processor", {"type": "TemplateProcessing", "single": [], "pair": [], "special_tokens": {}}),
         ["key post_processor", "TemplateProcessing"]),
        (_set("decoder", {"type": "Replace", "pattern": {"String": "a"}, "content": "b"}), ["key decoder", "Replace"]),
        (_set("truncation", {"max_length": 4}), ["key truncation"]),
        (_set("model.dropout", 0.1), ["key model.dropout"]),
        (_set("model.byte_fallback", True), ["key model.byte_fallback"]),
        (_set("model.ignore_merges", True), ["key model.ignore_merges"]),
        (_set("model.continuing_subword_prefix", "##"), ["key model.continuing_subword_prefix"]),
        (_set("added_tokens", [{"id": 257, "content": "<|x|>", "lstrip": True, "rstrip": False,
                                "single_word": False, "normalized": False, "special": True}]),
         ["key added_tokens[0].lstrip"]),
        (_set("version", "2.0"), ["key version", "'2.0'", "'1.0'"]),
    ],
)
def test_unimplemented_parts_are_refused_by_name(tmp_path: Path, change: Any, phrases: list[str]) -> None:
    path = _tokenizer_json(tmp_path, change)
    with pytest.raises(FormatError) as caught:
        core.Tokenizer.load(path)
    message = str(caught.value)
    assert message.startswith(str(path))
    for phrase in phrases:
        assert phrase in message, message


def test_encode_command_refuses_a_normalizer(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    path = _tokenizer_json(tmp_path, _set("normalizer", {"type": "Lowercase"}))
    corpus = tmp_path / "c.txt"
    corpus.write_text("Hello\n", encoding="utf-8")
    result = run_cli("encode", corpus, "--tokenizer", path, "--out", tmp_path / "ids.npy")
    _assert_one_error(result, "normalizer", "Lowercase")
