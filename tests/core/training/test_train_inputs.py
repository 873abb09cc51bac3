"""Bad input is refused before any work, with an error that says what is wrong.

Each case is checked through `TrainRun.result` and through iterating the `core.train` run, whose
first ``next()`` must raise (no progress event comes first).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import core
from tests.training import train_run
from core.training.reference import train_bpe_reference


def _raises_before_any_event(exc: type[BaseException], path, vocab_size, specials, **kw) -> str:
    """Assert both entry points raise ``exc``; return the message."""
    with pytest.raises(exc) as blocking:
        train_run(path, vocab_size, specials, workers=1, **kw).result()
    with pytest.raises(exc) as streaming:
        events = train_run(path, vocab_size, specials, workers=1, **kw)
        next(events)
    assert str(blocking.value) == str(streaming.value)
    return str(blocking.value)


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("hello world, hello there\n" * 10, encoding="utf-8")
    return path


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-corpus.txt"
    message = _raises_before_any_event(FileNotFoundError, missing, 300, [])
    assert "no-such-corpus.txt" in message


def test_directory(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    message = _raises_before_any_event(OSError, folder, 300, [])
    assert "a-folder" in message


def test_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    message = _raises_before_any_event(ValueError, empty, 300, [])
    assert "empty.txt" in message and "empty" in message.replace("empty.txt", "")


def test_binary_file(tmp_path: Path) -> None:
    binary = tmp_path / "image.bin"
    binary.write_bytes(bytes(range(256)) * 40 + b"\x00" * 200)  # ~2.5 % NUL bytes
    message = _raises_before_any_event(ValueError, binary, 300, [])
    assert "image.bin" in message


def test_a_few_nul_bytes_are_fine(tmp_path: Path) -> None:
    # 0.1 % NUL bytes: a text file with some stray NULs, not a binary file
    data = (b"hello world \x00" + b"plain text " * 90) * 20
    path = tmp_path / "stray-nul.txt"
    path.write_bytes(data)
    assert core.train_bpe(path, 300, [], workers=1) == train_bpe_reference(data, 300, [])


@pytest.mark.parametrize("specials", [[], ["<|endoftext|>"], ["<|a|>", "<|b|>", "<|c|>"]])
def test_vocab_size_too_small(corpus: Path, specials: list[str]) -> None:
    too_small = 256 + len(specials) - 1
    message = _raises_before_any_event(ValueError, corpus, too_small, specials)
    assert str(256 + len(specials)) in message  # says what the minimum is
    # the minimum itself is accepted (no merges)
    vocab, merges = core.train_bpe(corpus, too_small + 1, specials, workers=1)
    assert merges == [] and len(vocab) == too_small + 1


def test_empty_special_token(corpus: Path) -> None:
    message = _raises_before_any_event(ValueError, corpus, 300, ["<|endoftext|>", ""])
    assert "empty" in message


def test_duplicate_special_token(corpus: Path) -> None:
    message = _raises_before_any_event(ValueError, corpus, 300, ["<|x|>", "<|y|>", "<|x|>"])
    assert "<|x|>" in message


@pytest.mark.parametrize("pattern", ["(unclosed", "[a-", r"\p{NoSuchProperty}+", ""])
def test_invalid_pattern(corpus: Path, pattern: str) -> None:
    _raises_before_any_event(core.InvalidPatternError, corpus, 300, [], pattern=pattern)
    assert issubclass(core.InvalidPatternError, ValueError)


def test_pattern_matching_empty_string_is_refused(corpus: Path) -> None:
    _raises_before_any_event(core.InvalidPatternError, corpus, 300, [], pattern=r"\w*")

