"""Issue 13.4: everything checkable is checked before the corpus is read.

An unwritable ``--out``, a special token that vocab.json could not tell from a single
byte, and a special token that is not text (undecodable bytes on the command line) fail
at once: one line naming the option, exit 2, no progress line (nothing was read), nothing
written. The library refuses the same before any work.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

import core
from core.errors import InvalidSpecialTokensError
from core.formats import check_save_tokenizer


def _unwritable_out(tmp_path: Path) -> Path:
    """An output folder that cannot be created: a read-only folder, or (as root, whom
    permissions do not stop) a folder under /sys."""
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        return locked / "out"
    try:
        fd, name = tempfile.mkstemp(dir="/sys")
    except OSError:
        return Path("/sys/bpe-studio-test-out")
    os.close(fd)
    os.unlink(name)
    pytest.skip("no unwritable folder available here")


def _assert_refused_at_once(result, *phrases: str) -> None:  # type: ignore[no-untyped-def]
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected only the error (no progress: nothing read), got {result.stderr!r}"
    assert lines[0].startswith("bpe-studio: error:")
    for phrase in phrases:
        assert phrase in lines[0], lines[0]
    assert "Traceback" not in result.stderr


def test_unwritable_out_is_refused_before_training(tmp_path: Path, corpus: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    out = _unwritable_out(tmp_path)
    result = run_cli("train", corpus, "--vocab-size", "300", "--out", out)
    _assert_refused_at_once(result, "cannot write into")
    with pytest.raises(OSError, match="cannot write into"):
        check_save_tokenizer(out, [])


def test_out_under_a_file_is_refused_before_training(tmp_path: Path, corpus: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("train", corpus, "--vocab-size", "300", "--out", corpus / "tok")
    _assert_refused_at_once(result, "is a file")


def test_unwritable_npy_folder_is_refused_before_encoding(tmp_path: Path, corpus: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    out = _unwritable_out(tmp_path)
    if not out.parent.is_dir():
        pytest.skip("needs an existing unwritable folder")
    tok = tmp_path / "tok"
    core.save_tokenizer(tok, {i: bytes([i]) for i in range(256)}, [], [], "gpt2")
    result = run_cli("encode", corpus, "--tokenizer", tok, "--out", out.parent / "ids.npy")
    _assert_refused_at_once(result, "cannot write into")


@pytest.mark.parametrize("token", ["a", "é", "Ġ"])
def test_special_token_spelling_a_single_byte_is_refused_before_training(
    tmp_path: Path, corpus: Path, run_cli, token: str  # type: ignore[no-untyped-def]
) -> None:
    out = tmp_path / "out"
    result = run_cli("train", corpus, "--vocab-size", "300", "--special-token", token, "--out", out)
    _assert_refused_at_once(result, "--special-token", repr(token), "single byte")
    assert not out.exists()
    with pytest.raises(InvalidSpecialTokensError, match="single byte"):
        check_save_tokenizer(out, ["<|ok|>", token])


def test_special_token_of_undecodable_bytes_names_the_option(tmp_path: Path, corpus: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    result = run_cli("train", corpus, "--vocab-size", "300", "--special-token", b"\xff\xfe", "--out", out)
    _assert_refused_at_once(result, "--special-token", "not valid UTF-8")
    assert not out.exists()


def test_pattern_of_undecodable_bytes_names_the_option(tmp_path: Path, corpus: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    result = run_cli("train", corpus, "--vocab-size", "300", "--pattern", b"\\w+|\xff", "--out", out)
    _assert_refused_at_once(result, "--pattern", "not valid UTF-8")


def test_library_refuses_special_tokens_that_are_not_text(corpus: Path) -> None:
    with pytest.raises(InvalidSpecialTokensError, match="not valid text"):
        core.train_bpe(corpus, 300, ["\udcff\udcfe"])
    with pytest.raises(InvalidSpecialTokensError, match="not valid text"):
        core.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|\udcff|>"])
