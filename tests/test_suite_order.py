"""The suite runs its longest modules first, so that no long test is left for the end of a
parallel run, when one test process would wait for the other."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_slow_modules_exist(slow_first: tuple[str, ...]) -> None:
    missing = [module for module in slow_first if not (REPO / module).is_file()]
    assert missing == [], f"SLOW_FIRST names modules that are gone: {missing}"


def test_the_slow_modules_are_collected_first_in_their_order(slow_first: tuple[str, ...]) -> None:
    # A quick module named before two slow ones, given in the opposite order of SLOW_FIRST.
    quick, first, second = "tests/core/test_progress.py", slow_first[0], slow_first[3]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider",
         quick, second, first],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    modules = [line.split("::")[0] for line in done.stdout.splitlines() if "::" in line]
    order = list(dict.fromkeys(modules))
    assert order == [first, second, quick], order
