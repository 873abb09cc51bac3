"""Issue 39: the command line tells a user's mistake from our bug.

A user mistake is one of `core.errors`' types (or the CLI's `UsageError`, or a file's
``OSError``): one line, exit status 2. Any other exception, a ``ValueError`` included, is
a bug: one line that says so and names a log holding the traceback, exit status 1. Until
now every ``ValueError`` was shown as the user's mistake, so a bug read like bad input.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import bpe_studio.cli.docs
import core.evaluate.ladder
from bpe_studio.cli import UsageError, main
from bpe_studio.cli.crash import crash_log_dir
from core.errors import BpeStudioError
from core.formats import save_tokenizer


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Crash logs go under ``tmp_path`` (``$XDG_CACHE_HOME``), never the real cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return Path(crash_log_dir())


@pytest.fixture()
def tokenizer(tmp_path: Path) -> Path:
    vocab = {i: bytes([i]) for i in range(256)}
    vocab[256] = b"at"
    save_tokenizer(tmp_path / "tok", vocab, [(b"a", b"t")], [], "gpt2")
    return tmp_path / "tok"


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err.rstrip("\n")


def test_the_log_folder_is_the_users_cache(cache: Path, tmp_path: Path) -> None:
    if sys.platform.startswith("linux"):
        assert cache == tmp_path / "cache" / "bpe-studio"


def test_a_core_user_error_is_still_one_line_and_status_2(
    tokenizer: Path, tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["shrink", str(tokenizer), "--vocab-size", "9999", "--out", str(tmp_path / "small")])
    assert status == 2
    assert _one_line(capsys).startswith("bpe-studio: error: size 9,999 is above the tokenizer's vocabulary")
    assert not cache.exists()  # a user mistake writes no crash log


def test_a_cli_check_is_a_usage_error(tokenizer: Path, tmp_path: Path, cache: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert issubclass(UsageError, BpeStudioError)
    status = main(["encode", str(tokenizer), str(tokenizer / "vocab.json"), "--out", str(tmp_path / "ids.bin")])
    assert status == 2
    assert _one_line(capsys) == f"bpe-studio: error: --out {tmp_path / 'ids.bin'} must end in .npy"
    assert not cache.exists()


@pytest.mark.parametrize("error", [ValueError("x"), KeyError("k"), TypeError("not a str"), AttributeError("gone")])
def test_a_bug_says_so_with_a_log_and_status_1(
    error: Exception, monkeypatch: pytest.MonkeyPatch, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(args: object) -> int:
        raise error

    monkeypatch.setattr(bpe_studio.cli.docs, "run_docs", broken)
    assert main(["docs"]) == 1
    line = _one_line(capsys)
    logs = list(cache.glob("crash-*.log"))
    assert len(logs) == 1, logs
    assert line == (f"bpe-studio: internal error: {type(error).__name__}: {str(error)} — this is a bug; "
                    f"please report it with the log at {logs[0]}")
    log = logs[0].read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" in log
    assert "in broken" in log  # where it was raised
    assert f"{type(error).__name__}: {error}" in log
    assert "command: bpe-studio docs" in log


def test_a_value_error_inside_core_is_a_bug_not_the_users_mistake(
    tokenizer: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def broken(tokenizer: object, vocab_size: int) -> None:
        raise ValueError("min() arg is an empty sequence")

    monkeypatch.setattr(core.evaluate.ladder, "shrink", broken)
    status = main(["shrink", str(tokenizer), "--vocab-size", "257", "--out", str(tmp_path / "small")])
    assert status == 1
    line = _one_line(capsys)
    assert line.startswith("bpe-studio: internal error: ValueError: min() arg is an empty sequence — this is a bug")
    assert len(list(cache.glob("crash-*.log"))) == 1
    assert not (tmp_path / "small").exists()  # no empty --out folder left, as for a user mistake


def test_two_bugs_in_one_second_get_two_logs(monkeypatch: pytest.MonkeyPatch, cache: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    def broken(args: object) -> int:
        raise RuntimeError("again")

    monkeypatch.setattr(bpe_studio.cli.docs, "run_docs", broken)
    monkeypatch.setattr("time.strftime", lambda *_: "20260101-000000")
    assert main(["docs"]) == 1 and main(["docs"]) == 1
    capsys.readouterr()
    assert sorted(p.name for p in cache.glob("crash-*.log")) == ["crash-20260101-000000-1.log",
                                                                 "crash-20260101-000000.log"]


def test_with_no_folder_to_log_in_the_traceback_is_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # its bpe-studio folder cannot be made
    monkeypatch.setattr(tempfile, "tempdir", str(blocker))

    def broken(args: object) -> int:
        raise KeyError("k")

    monkeypatch.setattr(bpe_studio.cli.docs, "run_docs", broken)
    assert main(["docs"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "in broken" in err
    assert err.splitlines()[-1] == ("bpe-studio: internal error: KeyError: 'k' — this is a bug; "
                                    "please report it with the traceback above")


def test_the_installed_command_exits_1_on_a_bug(tmp_path: Path) -> None:
    """The real process: status 1, one line on stderr, the log written."""
    code = ("import sys, bpe_studio.cli, bpe_studio.cli.docs as d\n"
            "def broken(args): raise ValueError('injected')\n"
            "d.run_docs = broken\n"
            "sys.exit(bpe_studio.cli.main(['docs']))\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "PYTHONIOENCODING": "utf-8"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          encoding="utf-8", timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("bpe-studio: internal error: ValueError: injected — this is a bug")
    log = Path(done.stderr.rstrip("\n").split("please report it with the log at ", 1)[1])
    assert log.parent == tmp_path / "cache" / "bpe-studio" or not sys.platform.startswith("linux")
    assert "ValueError: injected" in log.read_text(encoding="utf-8")
