"""Resolving what the user gave — paths, folders, globs, or a list of them — into files.

`resolve_paths` walks a folder recursively (files in sorted path order, hidden files and
folders skipped, links to folders not followed) and matches globs (``**`` not into linked
folders either). What a walk cannot read — a folder without permission, a link in a loop —
is never silently left out: it is an `UnreadableError` naming it, or, when the caller
allows it (``skip_unreadable``), one `UnreadableSkipped` warning listing what was left out.
Checking the files is `core.corpus.sources.open_corpus`.
"""

from __future__ import annotations

import errno
import fnmatch
import glob
import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Union

from core.errors import CorpusError, OptionsTypeError

__all__ = ["ResolvedPaths", "Source", "UnreadableError", "UnreadableSkipped", "resolve_paths"]

Source = Union[str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]]]
"""A corpus: a path, a directory, a glob pattern, or a list of them."""


class ResolvedPaths(list[Path]):
    """Files `resolve_paths` found (or a part of them): given back to it, they are the files,
    as they are, not walked or looked at again (a folder of 100,000 files is resolved once)."""


def _is_hidden(name: str) -> bool:
    return name.startswith(".")


class UnreadableError(CorpusError):
    """Folders (or links) inside the corpus that cannot be read: ``unreadable`` holds
    ``(path, reason)`` pairs. ``option`` is how the caller spells skipping them."""

    def __init__(self, unreadable: list[tuple[str, str]], option: str = "skip_unreadable=True") -> None:
        super().__init__(f"{_listed(unreadable)} inside the corpus cannot be read, so the corpus would be read "
                         f"without {'it' if len(unreadable) == 1 else 'them'}; give read permission or fix the "
                         f"links, leave {'it' if len(unreadable) == 1 else 'them'} out, or skip what cannot be "
                         f"read ({option})")
        self.unreadable = unreadable


class UnreadableSkipped(UserWarning):
    """What a walk left out because it cannot be read (``ReadOptions.skip_unreadable``):
    ``unreadable`` holds ``(path, reason)`` pairs."""

    def __init__(self, unreadable: list[tuple[str, str]]) -> None:
        super().__init__(f"skipped what cannot be read in the corpus: {_listed(unreadable)}")
        self.unreadable = unreadable


def _listed(unreadable: list[tuple[str, str]], shown: int = 5) -> str:
    items = [f"{path} ({reason})" for path, reason in unreadable[:shown]]
    more = len(unreadable) - shown
    return ", ".join(items) + (f" and {more} more" if more > 0 else "")


def _child(folder: Path, name: str) -> Path:
    """``folder / name`` for a name just listed in it: pathlib's own shortcut for walks (the
    name is not parsed again: a walk may list 100,000 files), where this Python has it."""
    make = getattr(folder, "_make_child_relpath", None)
    return make(name) if make is not None else folder / name


def _walk(folder: Path, unreadable: list[tuple[str, str]]) -> list[Path]:
    """The files under ``folder``, recursively, in sorted path order (a folder's entries
    sorted by name, each folder's files in its place: the order of sorting the paths);
    hidden ones skipped; links to folders not followed (no cycles). A folder that cannot
    be listed and a link in a loop are added to ``unreadable``."""
    found: list[Path] = []

    def visit(path: Path) -> None:
        try:
            with os.scandir(path) as listing:
                entries = sorted((e for e in listing if not _is_hidden(e.name)), key=lambda e: e.name)
        except OSError as e:
            unreadable.append((str(path), e.strerror or type(e).__name__))
            return
        for entry in entries:
            try:
                is_dir = entry.is_dir()  # follows a link, to leave a linked folder out
            except OSError as e:  # a link in a loop, or to where this user cannot look
                reason = "a link in a loop of links" if e.errno == errno.ELOOP else e.strerror or type(e).__name__
                unreadable.append((entry.path, reason))
                continue
            if not is_dir:
                found.append(_child(path, entry.name))
            elif not entry.is_symlink():
                visit(_child(path, entry.name))

    visit(Path(folder))
    return found


def _glob(pattern: str, unreadable: list[tuple[str, str]] | None = None) -> list[str]:
    """``glob.glob(pattern, recursive=True)``, except that ``**`` does not go into linked
    folders, as a folder's walk does not: ``glob`` follows them, so a link to a parent
    folder repeated files (``a.txt``, ``l/a.txt``, ``l/l/a.txt`` ...) and two such links
    never ended. Without ``**`` the depth is the pattern's, and ``glob`` serves; the
    folders it would list and cannot are added to ``unreadable`` (`glob` passes them by)."""
    parts = pattern.split(os.sep)
    first = next(i for i, part in enumerate(parts) if glob.has_magic(part))
    top = os.sep.join(parts[:first]) or (os.sep if pattern.startswith(os.sep) else "")
    wanted = [part for part in parts[first:] if part]  # ("a/**/" as "a/**")
    start = top or "."
    if "**" not in parts:
        if unreadable is not None and os.path.isdir(start):
            _note_unlistable(start, wanted, unreadable)
        return glob.glob(pattern)
    hidden_wanted = any(part.startswith(".") for part in wanted)
    if not os.path.isdir(start):
        return []
    matches = []

    def unlisted(error: OSError) -> None:
        if unreadable is not None:
            unreadable.append((str(error.filename), error.strerror or type(error).__name__))

    for root, dirs, names in os.walk(start, onerror=unlisted):  # links to folders are listed, not entered
        dirs[:] = sorted(d for d in dirs if hidden_wanted or not _is_hidden(d))
        below = os.path.relpath(root, start).split(os.sep) if root != start else []
        folders = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
        for name, folder in [(d, True) for d in folders] + [(n, False) for n in names]:
            if _glob_match(below + [name], wanted, folder):
                matches.append(os.path.join(top, *below, name))
    return matches


def _note_unlistable(start: str, wanted: list[str], unreadable: list[tuple[str, str]]) -> None:
    """Add to ``unreadable`` each folder a glob without ``**`` (``wanted``, the parts below
    ``start``) would list and cannot: ``start`` itself, and each folder a part matches."""
    level = [start]
    for depth in range(len(wanted)):
        deeper = []
        for folder in level:
            try:
                with os.scandir(folder) as listing:
                    names = [e.name for e in listing if depth < len(wanted) - 1 and e.is_dir()]
            except OSError as e:
                unreadable.append((folder, e.strerror or type(e).__name__))
                continue
            deeper += [os.path.join(folder, name) for name in names if _glob_match([name], wanted[depth : depth + 1], True)]
        level = deeper


def _glob_match(names: list[str], parts: list[str], folder: bool) -> bool:
    """Whether the path ``names`` (a folder or not) matches the glob ``parts`` as `glob`
    matches: ``**`` any number of folders, ``*`` and the like within one name, neither a
    hidden name unless the part itself starts with a dot, and a name that more parts
    follow a folder."""
    if not parts:
        return not names
    if parts[0] == "**":
        return any(_glob_match(names[skip:], parts[1:], folder) for skip in range(len(names) + 1)
                   if not any(_is_hidden(name) for name in names[:skip]))
    if not names or (_is_hidden(names[0]) and not parts[0].startswith(".")):
        return False
    if len(names) == 1 and len(parts) > 1 and not folder:
        return False
    return fnmatch.fnmatchcase(names[0], parts[0]) and _glob_match(names[1:], parts[1:], folder)


def resolve_paths(source: Source, *, skip_unreadable: bool = False) -> ResolvedPaths:
    """The files ``source`` names, in order: each path as given, each directory's files
    (recursive, sorted, hidden skipped), each glob's files (in path order, each once;
    ``**`` recurses, not into links to folders: `_glob`). What a walk cannot read is
    an error, or with ``skip_unreadable`` left out with an `UnreadableSkipped` warning.

    Raises:
        FileNotFoundError: a path that does not exist, a glob matching nothing, a folder
            holding no file, or no source at all.
        UnreadableError: a folder inside that cannot be listed, or a link in a loop.
    """
    if isinstance(source, ResolvedPaths):
        if not source:
            raise FileNotFoundError("no corpus given; name a file, a folder or a glob pattern")
        return source
    items = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    files: list[Path] = []
    unreadable: list[tuple[str, str]] = []
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise OptionsTypeError(f"a corpus source must be a path, a directory or a glob, got {item!r}")
        text = os.fspath(item)
        path = Path(text)
        if os.path.isdir(path):
            found = _walk(path, unreadable)
            if not found and not unreadable:
                links = any(os.path.islink(os.path.join(root, d)) for root, dirs, _ in os.walk(path) for d in dirs)
                raise FileNotFoundError(f"the folder {path} holds no files to read (hidden files are skipped"
                                        f"{', and links to folders are not followed' if links else ''})")
            files += found
        elif os.path.lexists(path) or not glob.has_magic(text):
            files.append(path)  # checked (and reported if missing) by `check_regular_file`
        else:
            matched: dict[Path, None] = {}  # each file once ("a/**" matches a folder and its files)
            for match in sorted(map(Path, _glob(text, unreadable))):  # in path order, as a folder's files
                matched.update(dict.fromkeys(_walk(match, unreadable) if match.is_dir() else [match]))
            if not matched and not unreadable:
                raise FileNotFoundError(f"no file matches {text} (hidden files are skipped); check the pattern")
            files += matched
    unreadable = list(dict.fromkeys(unreadable))  # (a glob's walk and a matched folder's may both meet one)
    if unreadable and not skip_unreadable:
        raise UnreadableError(unreadable)
    if unreadable:
        warnings.warn(UnreadableSkipped(unreadable), stacklevel=2)
    if not files:
        raise FileNotFoundError("no corpus given; name a file, a folder or a glob pattern")
    return ResolvedPaths(files)
