"""Issue 39: no module of the product over 450 lines (Python) or 800 (C), generated files
excepted: a module that grows past them holds two ideas, and is split."""

from __future__ import annotations

from pathlib import Path

from tests.packaging.test_prose import GENERATED

REPO = Path(__file__).resolve().parents[2]
LIMITS = {".py": 450, ".c": 800, ".h": 800}


def too_long(repo: Path) -> list[str]:
    """``path: N lines (at most L)`` of every module of ``repo``'s core, bpe_studio and tools
    over its limit."""
    found = []
    for root in ("core", "bpe_studio", "tools"):
        for path in sorted((repo / root).rglob("*")):
            rel = path.relative_to(repo).as_posix()
            limit = LIMITS.get(path.suffix)
            if limit is None or "__pycache__" in path.parts or rel in GENERATED:
                continue
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > limit:
                found.append(f"{rel}: {lines} lines (at most {limit})")
    return found


def test_no_module_is_over_its_limit() -> None:
    assert too_long(REPO) == []


def test_a_module_over_its_limit_is_named(tmp_path: Path) -> None:
    (tmp_path / "core" / "pretokenize").mkdir(parents=True)
    (tmp_path / "core" / "long.py").write_text("x = 1\n" * 451, encoding="utf-8")
    (tmp_path / "core" / "fits.c").write_text("int x;\n" * 800, encoding="utf-8")
    (tmp_path / "core" / "pretokenize" / "_unicode_tables.h").write_text("0,\n" * 2000, encoding="utf-8")
    assert too_long(tmp_path) == ["core/long.py: 451 lines (at most 450)"]
