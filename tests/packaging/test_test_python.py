"""tools/test_python.py: the README's test command builds its venv with the system's Python
when that one can serve, else with the Python that runs the tool."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("test_python_tool", REPO / "tools" / "test_python.py")
assert _spec is not None and _spec.loader is not None
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)

THIS = "/the/python/running/the/tool"


def test_the_oldest_python_is_pyprojects_requires_python() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["requires-python"]
    assert declared == f">={tool.oldest_python()}"


def test_a_python_that_can_serve_is_taken() -> None:
    assert tool.choose(sys.executable, THIS) == sys.executable  # the suite's own: it made this venv


def test_off_linux_the_system_python_is_not_tried() -> None:
    assert tool.choose(sys.executable, THIS, "darwin") == THIS  # its /usr/bin/python3 may be Apple's installer stub


def test_a_python_older_than_the_project_takes_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tool, "oldest_python", lambda: "99.0")
    assert tool.choose(sys.executable, THIS) == THIS


@pytest.mark.parametrize("kind", ["missing", "failing"])
def test_a_system_python_that_cannot_serve_falls_back_to_this_one(kind: str, tmp_path: Path) -> None:
    fake = tmp_path / "python3"
    if kind == "failing":  # as one without its C headers or ensurepip fails the check
        fake.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'raise SystemExit(\"no Python.h\")'\n")
        fake.chmod(0o755)
    assert tool.choose(str(fake), THIS) == THIS


def test_the_tool_prints_one_path_a_shell_can_run() -> None:
    done = subprocess.run([sys.executable, str(REPO / "tools" / "test_python.py")], capture_output=True, text=True,
                          check=True)
    python = done.stdout.strip()
    assert done.stdout == python + "\n"
    assert subprocess.run([python, "-c", "import venv"], check=False).returncode == 0
