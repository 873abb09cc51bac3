"""Helpers for the reliability tests: the command line run as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def cli_command(*args: str | bytes | os.PathLike[str]) -> list[str | bytes]:
    return [sys.executable, "-m", "bpe_studio", *(a if isinstance(a, bytes) else str(a) for a in args)]


def cli_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "QT_QPA_PLATFORM": "offscreen", **extra}


@pytest.fixture()
def run_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """``run_cli("train", corpus, "--out", out, env={...})``: the CLI in a subprocess."""

    def run(*args: str | bytes | os.PathLike[str], env: dict[str, str] | None = None,
            timeout: float = 120, **kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run(  # type: ignore[call-overload, no-any-return]
            cli_command(*args), cwd=REPO, env=env or cli_env(), capture_output=True, text=True,
            timeout=timeout, **kwargs,
        )

    return run


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("The cat sat on the mat. The dog sat on the log, didn't it?\n" * 200, encoding="utf-8")
    return path
