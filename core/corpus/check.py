"""The one check of a corpus file before any work, for training and encoding alike.

A corpus file must be an existing, non-empty, readable regular file that is text rather
than binary: a sample of its start holding more than 1% NUL bytes, or (from 4 KB of
sample on) more than 30% of bytes that are not text — invalid UTF-8 or control bytes;
random bytes have about 55% — is refused, naming the share found. Real text with a few
bad bytes passes (and trains byte-exact: invalid bytes are kept as they are). A FIFO, a terminal or
a device (``/dev/stdin``, ``/dev/zero``) is refused at once, by its file type, without
opening it: opening a FIFO with no writer would wait forever, and a device has no size.
The check reads at most 1 MB, so a mistake is reported at once, before any worker starts.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

from core.errors import CorpusError
from core.pretokenize.native import python_forced

_file_starts: ModuleType | None
try:
    from core.corpus import _file_starts
except ImportError:  # built without a C compiler: one file at a time, in Python
    _file_starts = None

STARTS_BATCH = 256
"""Files read ahead at once by `read_regular_starts` (at most this many starts held)."""

BINARY_SAMPLE_BYTES = 1 << 20
"""How much of the file's start is checked for NUL bytes."""

BINARY_NUL_FRACTION = 0.01
"""More NUL bytes than this fraction of the sample means the file is binary, not text."""

NOT_TEXT_FRACTION = 0.3
"""More than this fraction of invalid UTF-8 and control bytes in the sample means the file
is not UTF-8 text (random bytes: about 0.55; text with a few bad bytes: well under 0.01)."""

NOT_TEXT_MIN_SAMPLE = 4096
"""Samples shorter than this are not judged by their share of non-text bytes (too few)."""

_CONTROL_BYTES = bytes(b for b in range(32) if b not in b"\t\n\v\f\r\x1b") + b"\x7f"


def check_regular_file(path: Path) -> os.stat_result:
    """Stat ``path`` (following links) and refuse anything but a regular file.

    Raises:
        FileNotFoundError, IsADirectoryError: the path is missing or a directory.
        CorpusError: a FIFO, socket or device.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if path.is_symlink():
            raise FileNotFoundError(f"{path} is a link to {os.readlink(path)}, which does not exist; "
                                    "fix or remove the link") from None
        raise FileNotFoundError(f"corpus file not found: {path}") from None
    except OSError as e:
        if e.errno == errno.ELOOP:  # a link to itself, or links in a ring
            raise CorpusError(f"{path} is a link that leads back to itself (a loop of links); "
                              "fix or remove the link") from None
        raise
    _refuse_irregular(path, info)
    return info


class FileInfo(NamedTuple):
    """What `read_regular_starts` saw of a file: the fields of an `os.stat_result` it needs."""

    st_mode: int
    st_size: int
    st_mtime_ns: int
    st_dev: int
    st_ino: int


def read_regular_starts(paths: Sequence[Path], limit: int) -> Iterator[tuple[FileInfo, bytes]]:
    """`read_regular_start` of each path, in order, read ahead in batches: with the C
    extension (``_file_starts.c``) a batch is read on two threads without the GIL."""
    native = None if python_forced() else _file_starts
    for first in range(0, len(paths), STARTS_BATCH):
        batch = paths[first : first + STARTS_BATCH]
        if native is None:
            yield from (read_regular_start(path, limit) for path in batch)
            continue
        for path, seen in zip(batch, native.read_starts([os.fspath(path) for path in batch], limit)):
            if isinstance(seen, int):  # the reason, told as for one file
                yield read_regular_start(path, limit)
                continue
            info = FileInfo(*seen[:5])
            _refuse_irregular(path, info)
            yield info, seen[5]


def read_regular_start(path: Path, limit: int) -> tuple[FileInfo, bytes]:
    """`check_regular_file` and the file's first ``limit`` bytes, with one open: a folder of
    many small files pays one ``open``, ``fstat`` and ``read`` each. The open never waits (a
    FIFO with no writer is refused by its type once open) and takes no terminal."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        check_regular_file(path)  # the reason, told as for a stat (missing, a loop of links, a socket)
        raise  # (a regular file this user may not read: PermissionError, naming it)
    try:
        stat_info = os.fstat(fd)
        info = FileInfo(stat_info.st_mode, stat_info.st_size, stat_info.st_mtime_ns, stat_info.st_dev, stat_info.st_ino)
        _refuse_irregular(path, info)
        start = os.read(fd, limit)  # (a regular file's read stops short only at its end)
        while len(start) < min(limit, info.st_size) and (more := os.read(fd, limit - len(start))):
            start += more  # (a file grown since: read on, to the limit)
        return info, start
    finally:
        os.close(fd)


def _refuse_irregular(path: Path, info: os.stat_result | FileInfo) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(f"{path} is a directory; choose a text file")
    if not stat.S_ISREG(info.st_mode):
        kind = "a FIFO (pipe)" if stat.S_ISFIFO(info.st_mode) else "a device or socket"
        raise CorpusError(
            f"{path} is {kind}, not a regular file; save the text to a file first and give its path"
        )


def check_sample(path: Path, sample: bytes, *, purpose: str = "train on") -> None:
    """Refuse an empty ``sample`` of a corpus (its start, decompressed) or a binary one."""
    if not sample:
        raise CorpusError(f"{path} is empty; there is nothing to {purpose}")
    nuls = sample.count(0)
    if nuls > BINARY_NUL_FRACTION * len(sample):
        raise CorpusError(
            f"{path} looks like a binary file ({nuls} NUL bytes in its first "
            f"{len(sample)} bytes); choose a text file"
        )
    if len(sample) >= NOT_TEXT_MIN_SAMPLE:
        share = not_text_share(sample)
        if share > NOT_TEXT_FRACTION:
            raise CorpusError(
                f"{path} does not look like UTF-8 text: {100 * share:.0f}% of its first {len(sample):,} bytes "
                "are invalid UTF-8 or control bytes; choose a text file, or convert it to UTF-8"
            )


def not_text_share(sample: bytes) -> float:
    """The fraction of ``sample``'s bytes that are invalid UTF-8 or control bytes (other
    than tab, newlines, form feed and escape). ``not_text_share(b"ab\xff\x00") -> 0.5``."""
    if not sample:
        return 0.0
    invalid = len(sample) - len(sample.decode("utf-8", errors="ignore").encode("utf-8"))
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    return (invalid + controls) / len(sample)


def check_corpus(path: str | os.PathLike[str], *, purpose: str = "train on") -> tuple[Path, int]:
    """Check that ``path`` is a non-empty text file; return it and its size in bytes.

    Args:
        purpose: what the corpus is for, in the messages ("train on", "encode").

    Raises:
        FileNotFoundError, IsADirectoryError, PermissionError: the file cannot be read.
        CorpusError: the file is empty, looks binary, or is not a regular file.
    """
    path = Path(path)
    size = check_regular_file(path).st_size
    if size == 0:
        raise CorpusError(f"{path} is empty; there is nothing to {purpose}")
    with path.open("rb") as f:
        sample = f.read(BINARY_SAMPLE_BYTES)
    check_sample(path, sample, purpose=purpose)
    return path, size
