"""Helpers for the reliability tests: the command line run as a user runs it."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests import cli_run
from tests.cli_run import REPO, cli_command, cli_env


@pytest.fixture()
def run_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """``run_cli("train", corpus, "--out", out, env={...})``: the CLI in a subprocess."""
    return cli_run.run_cli


@pytest.fixture()
def sh_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """``sh_cli(">&-", "train", ...)``: the CLI run by ``sh`` with a redirection added."""

    def run(redirect: str, *args: str | os.PathLike[str], env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
        line = " ".join(shlex.quote(str(part)) for part in cli_command(*args)) + " " + redirect
        return subprocess.run(["sh", "-c", line], env=env or cli_env(), cwd=REPO, capture_output=True, text=True,
                              timeout=120)

    return run


@pytest.fixture()
def env_with() -> Callable[..., dict[str, str]]:
    """``env_with(PYTHONIOENCODING="ascii")``: the CLI's environment with these changes."""
    return cli_env


@pytest.fixture()
def start_cli() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """``start_cli("encode", ...)``: the CLI started in a subprocess (stdout and stderr piped)."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str | bytes | os.PathLike[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            cli_command(*args), cwd=REPO, env=env or cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        started.append(process)
        return process

    yield start
    for process in started:  # a failed test must not leave its CLI running
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("The cat sat on the mat. The dog sat on the log, didn't it?\n" * 200, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def big_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """~24 MB of random words: seconds of counting or encoding on this machine."""
    import random

    rng = random.Random(13)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choices(letters, k=rng.randint(2, 9))) for _ in range(20_000)]
    lines = [" ".join(rng.choices(words, k=12)) + ".\n" for _ in range(5_000)]
    block = "".join(lines)
    path = tmp_path_factory.mktemp("big") / "big.txt"
    with open(path, "w", encoding="utf-8") as f:
        for n in range(60):
            f.write(block.replace("a", "aeiou"[n % 5]))  # not one block repeated exactly
    return path


@pytest.fixture()
def merge_kernel() -> None:
    """Skip a test that trains on one word of megabytes (to reach the export of huge
    tokens in seconds) when the merge loop runs in Python, which takes minutes there."""
    from core.training import merge

    if merge._MergeState is None or os.environ.get("BPE_STUDIO_PURE_PYTHON") == "1":
        pytest.skip("one word of megabytes needs the compiled merge loop to train in seconds")
