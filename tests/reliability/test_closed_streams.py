"""Issue 38.13: every command that prints survives odd standard streams.

With stdout closed (``>&-``), with a pipe whose reader is already gone (``| head -1``
after the first line) or with ``PYTHONIOENCODING=ascii`` and non-ASCII text to show, a
command does its work and exits 0 (the status of the work, not of the display), with no
traceback; text the stream cannot show is escaped.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import core
from tests.cli_run import REPO, cli_command, cli_env


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tokenizer whose tokens are not ASCII, and a corpus whose name is not either."""
    root = tmp_path_factory.mktemp("streams")
    vocab = {i: bytes([i]) for i in range(256)}
    merges = [(b"\xc3", b"\xa9"), (b"\xe2", b"\x86"), (b"\xe2\x86", b"\x92"), (b"caf", b"\xc3\xa9")]
    merges.insert(3, (b"c", b"a"))
    merges.insert(4, (b"ca", b"f"))
    for left, right in merges:
        vocab[len(vocab)] = left + right
    core.save_tokenizer(root / "tok", vocab, merges, [], "gpt2")
    (root / "café.txt").write_text("café → déjà vu, naïve café\n" * 300, encoding="utf-8")
    return root


def _commands(root: Path, out: Path) -> dict[str, list[str]]:
    tok, text = str(root / "tok"), str(root / "café.txt")
    return {
        "eval": ["eval", tok, "--on", text],
        "health": ["health", tok, "--on", text, "--show", "20"],
        "shrink": ["shrink", tok, "--vocab-size", "259", "--out", str(out / "petit-é")],
        "lm": ["lm", tok, "--train", text, "--on", text, "--samples", "3"],
        "train": ["train", text, "--vocab-size", "270", "--out", str(out / "trained-é")],
        "help": ["eval", "--help"],
    }


NAMES = ["eval", "health", "shrink", "lm"]


def _run_with_gone_reader(args: list[str]) -> subprocess.CompletedProcess[str]:
    """The command with stdout a pipe whose read end is already closed: every write fails
    with EPIPE, as it does once ``head -1`` has its line and exits."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(cli_command(*args), cwd=REPO, env=cli_env(), stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("name", [*NAMES, "train", "help"])
def test_a_closed_pipe_ends_quietly(name: str, files: Path, tmp_path: Path) -> None:
    result = _run_with_gone_reader(_commands(files, tmp_path)[name])
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "error" not in result.stderr
    assert "Broken pipe" not in result.stderr and "Exception ignored" not in result.stderr


@pytest.mark.parametrize("name", NAMES)
def test_a_closed_stdout_ends_quietly(name: str, files: Path, tmp_path: Path, sh_cli) -> None:  # type: ignore[no-untyped-def]
    result = sh_cli(">&-", *_commands(files, tmp_path)[name])
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "error" not in result.stderr


@pytest.mark.parametrize("name", NAMES)
def test_an_ascii_stdout_gets_escapes(name: str, files: Path, tmp_path: Path, run_cli, env_with) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*_commands(files, tmp_path)[name], env=env_with(PYTHONIOENCODING="ascii"))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "error" not in result.stderr
    assert "\\x" in result.stdout or "\\u" in result.stdout  # é, → shown escaped


def test_shrink_writes_its_tokenizer_with_stdout_closed(files: Path, tmp_path: Path, sh_cli) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "small"
    result = sh_cli(">&-", "shrink", files / "tok", "--vocab-size", "258", "--out", out)
    assert result.returncode == 0, result.stderr
    assert len(core.Tokenizer.load(out).vocab) == 258


def test_eval_writes_its_csv_when_the_reader_is_gone(files: Path, tmp_path: Path) -> None:
    csv = tmp_path / "table.csv"
    result = _run_with_gone_reader(["eval", str(files / "tok"), "--on", str(files / "café.txt"), "--csv", str(csv)])
    assert result.returncode == 0, result.stderr
    assert "café.txt" in csv.read_text(encoding="utf-8")


def test_a_closed_stderr_is_no_failure(files: Path, sh_cli) -> None:  # type: ignore[no-untyped-def]
    result = sh_cli("2>&-", "eval", files / "tok", "--on", files / "café.txt")
    assert result.returncode == 0
    assert "café.txt" in result.stdout
