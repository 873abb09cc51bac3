"""Globs as sources: ``**`` does not go into linked folders (as a folder's walk does not),
and otherwise matches what ``glob.glob(pattern, recursive=True)`` matches — checked on
generated trees and patterns, hidden names included."""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.corpus.paths import _glob, resolve_paths

NAME = st.sampled_from(["a", "b.txt", "ab.txt", ".h", ".h.txt", "c.md", "a b"])
TREE = st.recursive(st.just("file"), lambda inner: st.dictionaries(NAME, inner, min_size=1, max_size=3), max_leaves=10)
PART = st.sampled_from(["**", "*", "*.txt", "a*", ".h*", "a", "?.txt", "[ab]*", ".h", "b.txt"])


def _make(root: Path, tree: dict | str) -> None:  # noqa: ANN001
    for name, below in tree.items():  # type: ignore[union-attr]
        if below == "file":
            (root / name).write_text(name, encoding="utf-8")
        else:
            (root / name).mkdir()
            _make(root / name, below)


def _files_of(matches: list[str]) -> list[Path]:
    """What `resolve_paths` makes of a glob's matches: folders walked, each file once."""
    files: dict[Path, None] = {}
    for match in sorted(matches, key=Path):
        if match.endswith(os.sep) and not os.path.isdir(match):
            continue  # glob's "f/" for "f/**" when f is a file: no folder, nothing under it
        if os.path.isdir(match):
            files.update(dict.fromkeys(sorted(Path(root) / name for root, dirs, names in os.walk(match)
                                              for name in names if not name.startswith(".")
                                              and not any(part.startswith(".") for part in Path(root).relative_to(match).parts))))
        else:
            files[Path(match)] = None
    return list(files)


@settings(max_examples=150, deadline=None)
@given(TREE.filter(lambda t: isinstance(t, dict)), st.lists(PART, min_size=1, max_size=4))
def test_without_links_a_glob_gives_the_files_glob_gives(tree: dict, parts: list[str]) -> None:
    root = Path(tempfile.mkdtemp())
    cwd = os.getcwd()
    try:
        (root / "top").mkdir()
        _make(root / "top", tree)
        os.chdir(root)
        for pattern in (os.path.join(str(root), "top", *parts), os.path.join("top", *parts)):
            if not glob.has_magic(pattern):
                continue  # a path, not a glob
            want = _files_of(glob.glob(pattern, recursive=True))
            got = _glob(pattern)
            assert {p.rstrip(os.sep) for p in got} <= {p.rstrip(os.sep) for p in glob.glob(pattern, recursive=True)}
            if want:
                assert resolve_paths(pattern) == want, pattern
            else:
                with pytest.raises(FileNotFoundError, match="no file matches"):
                    resolve_paths(pattern)
    finally:
        os.chdir(cwd)
        shutil.rmtree(root)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_links_to_folders_are_not_entered_by_a_double_star(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("a", encoding="utf-8")
    (tmp_path / "sub" / "b.txt").write_text("b", encoding="utf-8")
    os.symlink(".", tmp_path / "loop1")  # two links to the folder: glob never ends here
    os.symlink(".", tmp_path / "loop2")
    os.symlink("..", tmp_path / "sub" / "up")
    want = [tmp_path / "a.txt", tmp_path / "sub" / "b.txt"]
    assert resolve_paths(str(tmp_path / "**" / "*.txt")) == want
    assert resolve_paths(str(tmp_path / "**")) == want  # a folder and its files matched: each file once
    assert resolve_paths(str(tmp_path)) == want  # as the folder's own walk
