"""Print the Python to build the test venv with: the system's, when it can serve, else this one.

    $(python3 tools/test_python.py) -m venv .venv      # the README's test command does this

A Linux distribution's Python (``/usr/bin/python3`` on Debian, Ubuntu, Fedora) is built
with profile-guided optimization and a static libpython; a version manager's build
(pyenv's default) is not, and runs the suite's Python code slower (the README says by how
much). The system's is taken when it meets the project's ``requires-python`` and can make
a venv and build the kernels (``venv``, ``ensurepip``, the C headers); otherwise the
Python running this script.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SYSTEM = "/usr/bin/python3"
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"

# Run by the candidate with the oldest version the project takes: fails unless it is at
# least that version and can make a venv with pip and compile the C kernels.
CAN_SERVE = """
import os, sys, sysconfig, ensurepip, venv
recent = sys.version_info >= tuple(map(int, sys.argv[1].split(".")))
headers = os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))
sys.exit(0 if recent and headers else 1)
"""


def oldest_python() -> str:
    """``3.10`` from pyproject.toml's ``requires-python = ">=3.10"``."""
    found = re.search(r'^requires-python\s*=\s*">=\s*([0-9.]+)"', PYPROJECT.read_text(encoding="utf-8"), re.M)
    return found.group(1) if found else "3"


def can_serve(python: str) -> bool:
    try:
        done = subprocess.run([python, "-c", CAN_SERVE, oldest_python()], capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):  # no such file, or it hung
        return False
    return done.returncode == 0


def choose(system: str = SYSTEM, this: str = sys.executable, platform: str = sys.platform) -> str:
    """``system`` if it can serve, else ``this``. Only on Linux: macOS's ``/usr/bin/python3``
    is a stub that may offer to install Apple's developer tools."""
    return system if platform.startswith("linux") and can_serve(system) else this


def main() -> None:
    print(choose())


if __name__ == "__main__":
    main()
