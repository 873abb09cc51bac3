"""The command line run in tests: in a fresh process as a user runs it, or in this one.

``run_cli("train", corpus, "--out", out)`` runs ``python -m bpe_studio train ...`` from the
repository with Qt offscreen, its output captured as text; the reliability tests take it as
a fixture (tests/reliability/conftest.py). ``run_cli_here`` runs the same command through
``bpe_studio.cli.main`` in the test's process (no interpreter to start, no imports): for
what a command says, writes and returns, not for what only a process shows (signals,
closed streams, the environment read at start-up, memory limits).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cli_command(*args: str | bytes | os.PathLike[str]) -> list[str | bytes]:
    """``python -m bpe_studio ARGS`` (bytes arguments passed as they are)."""
    return [sys.executable, "-m", "bpe_studio", *(a if isinstance(a, bytes) else str(a) for a in args)]


def cli_env(**extra: str) -> dict[str, str]:
    """This environment, Qt offscreen, with ``extra`` set."""
    return {**os.environ, "QT_QPA_PLATFORM": "offscreen", **extra}


def run_cli(*args: str | bytes | os.PathLike[str], env: dict[str, str] | None = None, timeout: float = 120,
            **kwargs: object) -> subprocess.CompletedProcess[str]:
    """The command line with ``args``, run to its end from the repository (``kwargs`` to
    `subprocess.run`)."""
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        cli_command(*args), cwd=REPO, env=env or cli_env(), capture_output=True, text=True, timeout=timeout,
        **kwargs,
    )


def run_cli_here(*args: object, cwd: os.PathLike[str] = REPO) -> subprocess.CompletedProcess[str]:
    """The command line with ``args`` run by ``main`` in this process, in ``cwd`` (the
    repository), its status and output as `run_cli` gives them."""
    from bpe_studio.cli import main

    argv = [os.fsdecode(a) if isinstance(a, bytes) else str(a) for a in args]  # as sys.argv holds them
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as e:  # argparse's --help and --version
            status = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
    return subprocess.CompletedProcess(argv, status, out.getvalue(), err.getvalue())
