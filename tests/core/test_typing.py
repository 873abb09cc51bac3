"""`core` ships ``py.typed``: ``mypy --strict core`` must stay clean."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_mypy_strict_core_is_clean() -> None:
    # a fresh run each time, so no cache is written (mypy's way to say so: the null device)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", os.devnull, "core"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
