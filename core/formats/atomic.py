"""The one way files are written: atomically, with the permissions of any new file.

Every file BPE Studio writes (tokenizer exports, encoded corpora, sessions) is first
written to a temporary file beside its target (``.<name>.<random>.tmp``) and renamed over
the target only when complete, so a failed or interrupted write leaves the old file (or
nothing) and no temporary file. Temporary files are created ``0o600``; they get the mode a
newly created file would get (``0o666`` less the umask) before the rename.

- `atomic_output`: one file, written through a binary file object (a ``.npy`` streamed
  chunk by chunk, a session);
- `write_atomically`: several text files that are renamed into place only once every one
  of them was written (the files of one export).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_output", "new_file_mode", "write_atomically"]


def new_file_mode() -> int:
    """The permissions a newly created file gets (``0o666`` less the umask).

    The umask is read from ``/proc`` where possible: setting it to read it is process-wide.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o644


def _temporary_beside(path: Path) -> tuple[int, Path]:
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory; choose a file name")
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    return fd, Path(name)


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """Write ``path`` (bytes) through the file object this yields; it replaces ``path``
    only if the ``with`` block completes.

    ``with atomic_output("ids.npy") as f: f.write(data)``
    """
    target = Path(path)
    fd, tmp = _temporary_beside(target)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        os.chmod(tmp, new_file_mode())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomically(files: Sequence[tuple[Path, str]]) -> list[Path]:
    """Write every ``(path, text)`` (UTF-8, ``\\n`` newlines) to a temporary file, then
    rename them all into place; nothing is replaced unless every file was written.
    Missing parent directories are created."""
    for path, _ in files:
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a directory; choose another output directory")
    temps: list[tuple[Path, Path]] = []
    try:
        for path, text in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = _temporary_beside(path)
            temps.append((tmp, path))
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
        mode = new_file_mode()
        for tmp, _ in temps:
            os.chmod(tmp, mode)
        for tmp, path in temps:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)
        raise
    return [path for path, _ in files]
