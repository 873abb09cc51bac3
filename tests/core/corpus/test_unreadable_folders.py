"""What a folder's walk cannot read — a folder without permission, a link in a loop — is an
error naming it and saying what to do, never silently left out; with
``ReadOptions(skip_unreadable=True)`` (``--skip-unreadable``) it is left out with one
warning listing it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import core
from core.corpus.paths import UnreadableError, UnreadableSkipped, resolve_paths
from core.corpus.sources import open_corpus

@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    (root / "a" / "one.txt").write_text("the cat sat on the mat\n")
    (root / "b" / "two.txt").write_text("the dog sat on the log\n")
    return root


def _deny(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Listing ``folder`` fails as it does without read permission (tests run as root here)."""
    scandir = os.scandir

    def listing(path: object = ".") -> object:
        if os.fspath(path) == str(folder):  # type: ignore[call-overload]
            raise PermissionError(13, "Permission denied", str(folder))
        return scandir(path)  # type: ignore[call-overload]

    monkeypatch.setattr(os, "scandir", listing)


def test_a_folder_that_cannot_be_listed_is_an_error_naming_it(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _deny(monkeypatch, corpus / "b")
    for source in (corpus, f"{corpus}/**/*.txt", f"{corpus}/*/*.txt", f"{corpus}/[ab]/*.txt"):
        with pytest.raises(UnreadableError) as caught:
            core.count_pretokens(source, workers=1)
        message = str(caught.value)
        assert f"{corpus / 'b'} (Permission denied) inside the corpus cannot be read" in message
        assert message.endswith("or skip what cannot be read (skip_unreadable=True)")
        assert caught.value.unreadable == [(str(corpus / "b"), "Permission denied")]


def test_a_glob_does_not_look_into_folders_it_does_not_match(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _deny(monkeypatch, corpus / "b")
    assert resolve_paths(f"{corpus}/a/*.txt") == resolve_paths(f"{corpus}/a*/*.txt") == [corpus / "a" / "one.txt"]
    _deny(monkeypatch, corpus)
    with pytest.raises(UnreadableError, match=f"{corpus} \\(Permission denied\\)"):
        resolve_paths(f"{corpus}/*.txt")


def test_skipping_what_cannot_be_read_warns_with_the_list(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _deny(monkeypatch, corpus / "b")
    with pytest.warns(UnreadableSkipped) as warned:
        counts = core.count_pretokens(corpus, workers=1, read=core.ReadOptions(skip_unreadable=True))
    assert [str(w.message) for w in warned] == [
        f"skipped what cannot be read in the corpus: {corpus / 'b'} (Permission denied)"]
    assert counts.documents == 1 and dict(counts) == dict(core.count_pretokens(corpus / "a", workers=1))


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads any folder")
def test_a_folder_without_read_permission_is_an_error(corpus: Path) -> None:
    (corpus / "b").chmod(0)
    try:
        with pytest.raises(UnreadableError, match="Permission denied"):
            resolve_paths(corpus)
        with pytest.warns(UnreadableSkipped):
            assert resolve_paths(corpus, skip_unreadable=True) == [corpus / "a" / "one.txt"]
    finally:
        (corpus / "b").chmod(0o755)


def test_a_link_in_a_loop_is_named_and_can_be_skipped(corpus: Path) -> None:
    (corpus / "a" / "loop").symlink_to(corpus / "a" / "loop")
    with pytest.raises(UnreadableError, match=f"{corpus / 'a' / 'loop'} \\(a link in a loop of links\\)"):
        open_corpus(corpus)
    with pytest.warns(UnreadableSkipped, match="a link in a loop of links"):
        files = open_corpus(corpus, core.ReadOptions(skip_unreadable=True)).files
    assert [f.path for f in files] == [corpus / "a" / "one.txt", corpus / "b" / "two.txt"]


def test_a_walk_keeps_sorted_path_order_and_leaves_linked_folders_out(tmp_path: Path) -> None:
    for name in ("a.txt", "a/x.txt", "a-b/y.txt", "b/c/z.txt", "b.txt", ".hidden/h.txt", "a/.h.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "a")
    (tmp_path / "file-link.txt").symlink_to(tmp_path / "b.txt")
    found = resolve_paths(tmp_path)
    expected = sorted(tmp_path / n for n in ("a.txt", "a/x.txt", "a-b/y.txt", "b/c/z.txt", "b.txt", "file-link.txt"))
    assert found == expected
