"""The one way files are written: atomically, as a set, leaving nothing behind.

Every file BPE Studio writes (tokenizer exports, encoded corpora, sessions) is first
written to a temporary file beside its target and renamed over the target only when
complete, so a failed or interrupted write leaves the old file (or nothing). Temporary
files are created ``0o600``; they get the mode a newly created file would get (``0o666``
less the umask) before the rename.

- `atomic_output`: one file, written through a binary file object (a ``.npy`` streamed
  chunk by chunk, a session);
- `write_atomically`: several text files (each a string or an iterable of strings,
  written as it comes, so memory does not hold a whole file) that are renamed into place
  only once every one of them was written (the files of one export).
- `check_output_dir`: whether files can be created in a folder, before any long work.

Temporary files are named ``.<name>.<pid>.<random>.tmp``. Interruptions that Python sees
(an exception, Ctrl+C, and SIGTERM/SIGHUP, which the command line turns into one) remove
them; a process killed outright (SIGKILL, a power cut) cannot, so the next write into the
same place removes every such file whose process is gone (`remove_stale_temporaries`).

The files of one export change together: the renames into a folder happen under an
exclusive lock on that folder (``flock`` on the directory itself, so no lock file is left
behind), and `folder_read_lock` lets a reader (`core.formats.load`) hold a shared lock
while it reads, so it never sees one writer's ``vocab.json`` with another's ``merges.txt``.
Where ``flock`` does not exist (Windows) the files are still each atomic.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "atomic_output",
    "check_output_dir",
    "folder_read_lock",
    "new_file_mode",
    "remove_stale_temporaries",
    "write_atomically",
]

WRITE_BLOCK_CHARS = 1 << 20
"""Text handed to a file object at most this many characters at a time (a huge token is
written in slices, never encoded whole)."""


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


# --------------------------------------------------------------------------- checks


def _nearest_existing(path: Path) -> Path:
    existing = path.absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    return existing


def check_output_dir(path: str | os.PathLike[str]) -> None:
    """Check, without leaving anything, that files can be created in the folder ``path``
    (created later if missing): run it before long work whose result goes there.

    Raises:
        NotADirectoryError: ``path``, or a folder on the way to it, is a file.
        PermissionError: (or another ``OSError``) a file cannot be created there; the
            message says where.
    """
    folder = Path(path)
    existing = _nearest_existing(folder)
    if not existing.is_dir():
        if existing == folder.absolute():
            raise NotADirectoryError(f"{folder} exists and is not a folder; choose a folder to write into")
        raise NotADirectoryError(f"{existing} is a file, so the folder {folder} cannot be created in it")
    prefix = f".bpe-studio-probe.{os.getpid()}."
    try:
        try:
            fd, probe = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=existing)
        except OSError as e:
            reason = e.strerror or type(e).__name__
            raise type(e)(f"cannot write into {existing} ({reason.lower()}); choose another folder") from e
        os.close(fd)
        os.unlink(probe)
    except BaseException:  # an interruption (SIGTERM made an exception) may land before the unlink
        _remove_own_files(existing, prefix)
        raise


# --------------------------------------------------------------------------- temporaries


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    except OSError:
        return True  # cannot tell: keep the file
    return True


def remove_stale_temporaries(path: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files a killed writer of ``path`` left beside it (named
    ``.<name>.<pid>.<random>.tmp`` with a process id that no longer runs); return them.

    A temporary file of a live process (another writer at work) is left alone.
    """
    target = Path(path)
    pattern = re.compile(rf"\.{re.escape(target.name)}\.(\d+)\.[^.]+\.tmp")
    removed = []
    try:
        names = os.listdir(target.parent)
    except OSError:
        return []
    for name in names:
        m = pattern.fullmatch(name)
        if m and not _pid_alive(int(m.group(1))):
            stale = target.parent / name
            with contextlib.suppress(FileNotFoundError):  # another run removed it first
                stale.unlink()
                removed.append(stale)
    return removed


def _remove_own_temporaries(path: Path) -> None:
    """Remove this process's temporary files for ``path``, tracked or not: an interruption
    (SIGTERM made an exception) can land between creating one and keeping its name."""
    _remove_own_files(path.parent, f".{path.name}.{os.getpid()}.")


def _remove_own_files(folder: Path, prefix: str) -> None:
    """Remove the ``prefix*.tmp`` files in ``folder`` (``prefix`` names this process)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            if name.startswith(prefix) and name.endswith(".tmp"):
                with contextlib.suppress(FileNotFoundError):
                    (folder / name).unlink()


def _temporary_beside(path: Path) -> tuple[int, Path]:
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory; choose a file name")
    remove_stale_temporaries(path)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    return fd, Path(name)


# --------------------------------------------------------------------------- locks


@contextlib.contextmanager
def _folder_lock(folder: Path, operation: int) -> Iterator[None]:
    if fcntl is None:
        yield
        return
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        yield  # a folder we may not open (or none): nothing to coordinate with
        return
    try:
        # a file system without locks (some network mounts): each file is still atomic
        with contextlib.suppress(OSError):
            fcntl.flock(fd, operation)
        yield
    finally:
        os.close(fd)  # releases the lock


def folder_read_lock(folder: str | os.PathLike[str]) -> contextlib.AbstractContextManager[None]:
    """Hold a shared lock on ``folder`` while reading several files of one export from it:
    `write_atomically` cannot replace them in the meantime."""
    return _folder_lock(Path(folder), fcntl.LOCK_SH if fcntl is not None else 0)


# --------------------------------------------------------------------------- writers


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """Write ``path`` (bytes) through the file object this yields; it replaces ``path``
    only if the ``with`` block completes.

    ``with atomic_output("ids.npy") as f: f.write(data)``
    """
    target = Path(path)
    try:
        fd, tmp = _temporary_beside(target)
        with os.fdopen(fd, "wb") as f:
            yield f
        os.chmod(tmp, new_file_mode())
        os.replace(tmp, target)
    except BaseException:
        _remove_own_temporaries(target)
        raise


def _write_text(f: BinaryIO, content: str | Iterable[str]) -> None:
    """Write ``content`` as UTF-8: small parts gathered into blocks of about
    `WRITE_BLOCK_CHARS` (one encode and write a block, not a part), a huge part (one 20 MB
    token) encoded a slice at a time, never whole."""
    parts: Iterable[str] = (content,) if isinstance(content, str) else content
    block: list[str] = []
    size = 0
    for part in parts:
        if len(part) >= WRITE_BLOCK_CHARS:
            f.write("".join(block).encode("utf-8"))
            block, size = [], 0
            for at in range(0, len(part), WRITE_BLOCK_CHARS):
                f.write(part[at : at + WRITE_BLOCK_CHARS].encode("utf-8"))
            continue
        block.append(part)
        size += len(part)
        if size >= WRITE_BLOCK_CHARS:
            f.write("".join(block).encode("utf-8"))
            block, size = [], 0
    f.write("".join(block).encode("utf-8"))


def write_atomically(files: Sequence[tuple[Path, str | Iterable[str]]]) -> list[Path]:
    """Write every ``(path, text)`` to a temporary file, then rename them all into place;
    nothing is replaced unless every file was written, and the files of one folder are
    renamed under its lock, so they change together (see the module docstring).

    ``text`` is a string or an iterable of strings, written as UTF-8 as they come: a file
    never needs to be whole in memory. Missing parent directories are created.
    """
    for path, _ in files:
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a directory; choose another output directory")
    temps: list[tuple[Path, Path]] = []
    try:
        for path, text in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = _temporary_beside(path)
            temps.append((tmp, path))
            with os.fdopen(fd, "wb") as f:
                _write_text(f, text)
        mode = new_file_mode()
        for tmp, _ in temps:
            os.chmod(tmp, mode)
        with contextlib.ExitStack() as locks:
            for folder in sorted({path.parent.absolute() for _, path in temps}):
                locks.enter_context(_folder_lock(folder, fcntl.LOCK_EX if fcntl is not None else 0))
            for tmp, path in temps:
                os.replace(tmp, path)
    except BaseException:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)
        for path, _ in files:
            _remove_own_temporaries(path)
        raise
    return [path for path, _ in files]
