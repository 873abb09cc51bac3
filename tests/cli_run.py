"""One test helper: the command line run as a user runs it, in a fresh process.

``run_cli("train", corpus, "--out", out)`` runs ``python -m bpe_studio train ...`` from the
repository with Qt offscreen, its output captured as text; the reliability tests take it as
a fixture (tests/reliability/conftest.py), the command-line tests import it.
"""

from __future__ import annotations

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
