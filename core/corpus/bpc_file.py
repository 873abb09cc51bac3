"""The pre-token counts file (``.bpc``): `PretokenCounts` on disk, checked before it is trusted.

The format is in docs/formats.md, "Pre-token counts (.bpc)": a header (magic ``BPECOUNT``,
version, metadata length), JSON metadata, then the counts in the native counter's packed
layout (`core.pretokenize.counting.ChunkCounts.packed`: int64 n, int64 invalid bytes,
int64 keys' length, n int64 counts, n uint32 key lengths, the keys), little-endian, sorted
by pre-token bytes (so equal tables give equal files), and a CRC-32 of metadata and body.

Reading checks, in this order and before the body is read: the path is a regular file
(a folder, a FIFO or a device such as ``/dev/zero`` is refused at once), the magic and
version, a metadata length that fits in the file. Then the body: its lengths add up, every
count is at least 1, no pre-token is empty, and the counts' corpus bytes fit in 63 bits
(what training computes in), then the checksum.

Writing (`write_file`) streams: each table's body is handed over a block at a time (a
native table sorted in place, `core.pretokenize.counting.SortedBody`), the checksum
computed as it goes; `PretokenCounts.save` checks the counts fit before it opens the file.
"""

from __future__ import annotations

import json
import os
import stat
import struct
import sys
import zlib
from array import array
from itertools import accumulate
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from core.errors import FormatError
from core.pretokenize.counting import ChunkCounts
from core.pretokenize.native import native_module

__all__ = ["MAGIC", "MAX_CORPUS_BYTES", "NAMED_VERSION", "VERSION", "VERSIONS", "Body", "BytesBody", "decode",
           "open_counts_file", "pack", "read_file", "read_header", "read_info", "sorted_body", "write_file"]

MAGIC = b"BPECOUNT"
VERSION = 1
NAMED_VERSION = 2
"""Version 1 holds one table; version 2 one per named source (`core.corpus.named_counts`)."""
VERSIONS = (VERSION, NAMED_VERSION)
HEADER = struct.Struct("<8sII")  # magic, version, metadata length
MAX_CORPUS_BYTES = (1 << 63) - 1
"""The largest sum of count × length training computes with (int64): more is refused."""


class Body(Protocol):
    """One table's part of the file, written a block at a time (`BytesBody`, or
    `core.pretokenize.counting.SortedBody`, which sorts a native table without copying it)."""

    @property
    def size(self) -> int: ...

    def write(self, write: Callable[[bytes], object]) -> None: ...


@dataclass(frozen=True)
class BytesBody:
    """A body already made (`sorted_body`, or the body of a file loaded)."""

    data: bytes

    @property
    def size(self) -> int:
        return len(self.data)

    def write(self, write: Callable[[bytes], object]) -> None:
        view = memoryview(self.data)
        for at in range(0, len(view), 1 << 20):
            write(view[at:at + (1 << 20)])  # type: ignore[arg-type]


def write_file(f: IO[bytes], version: int, bodies: list[Body], meta: dict[str, Any]) -> None:
    """Write the file to ``f`` as it is made: header, metadata, each body, the checksum
    (no copy of the counts). Version 2 (``meta["sources"]``, one body each): each source's
    ``body_bytes`` is filled in."""
    if version == NAMED_VERSION:
        meta = {**meta, "sources": [{**source, "body_bytes": body.size}
                                    for source, body in zip(meta["sources"], bodies)]}
    meta_bytes = json.dumps(meta, ensure_ascii=False).encode()
    f.write(HEADER.pack(MAGIC, version, len(meta_bytes)))
    f.write(meta_bytes)
    crc = zlib.crc32(meta_bytes)

    def put(block: bytes) -> None:
        nonlocal crc
        crc = zlib.crc32(block, crc)
        f.write(block)

    for body in bodies:
        body.write(put)
    f.write(struct.pack("<I", crc))


def pack(words: list[bytes], counts: list[int], invalid: int, order: str) -> bytes:
    """The native counter's packed layout (``_native.c``): int64 n, int64 invalid, int64 keys'
    length, int64 × n counts, uint32 × n key lengths, the keys; ``order`` "little" or "native"."""
    numbers = array("q", counts)
    lengths = array("I", map(len, words))
    if order == "little" and sys.byteorder != "little":  # pragma: no cover - big-endian machines
        numbers.byteswap()
        lengths.byteswap()
    head = struct.pack("<qqq" if order == "little" else "=qqq", len(words), invalid, sum(lengths))
    return b"".join((head, numbers.tobytes(), lengths.tobytes(), *words))


def sorted_body(words: list[bytes], counts: list[int], invalid: int) -> bytes:
    """One table packed little-endian, sorted by pre-token bytes (equal tables, equal bytes)."""
    order = sorted(range(len(words)), key=words.__getitem__)
    return pack([words[i] for i in order], [counts[i] for i in order], invalid, "little")


def open_counts_file(path: str | os.PathLike[str]) -> tuple[IO[bytes], int]:
    """Open ``path`` for reading, with its size, once it is known to be a regular file.

    Raises:
        FormatError: no such file, a folder, or not a regular file (a FIFO, a device).
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise FormatError(f"{path}: no such file") from None
    if stat.S_ISDIR(info.st_mode):
        raise FormatError(f"{path} is a folder, not a pre-token counts file")
    if not stat.S_ISREG(info.st_mode):
        raise FormatError(f"{path} is not a regular file (a pipe or a device); give a pre-token counts file")
    f = open(path, "rb")
    try:
        size = os.fstat(f.fileno()).st_size
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # replaced between the two looks
            raise FormatError(f"{path} is not a regular file; give a pre-token counts file")
    except BaseException:
        f.close()
        raise
    return f, size


def read_header(f: IO[bytes], size: int, name: str, *, loading: bool = False) -> bytes:
    """Check the magic, version and metadata length of an open file; give the raw metadata.
    (``loading``: the whole file is read next; the message says how to write it again.)"""
    head = f.read(HEADER.size)
    if len(head) < HEADER.size or not head.startswith(MAGIC):
        if loading:
            raise FormatError(f"{name} is not a readable pre-token counts file (it does not start with "
                              "BPECOUNT); write it again with 'bpe-studio count' or PretokenCounts.save")
        raise FormatError(f"{name} is not a pre-token counts file (it does not start with BPECOUNT)")
    _, version, meta_size = HEADER.unpack(head)
    if version not in VERSIONS:
        raise FormatError(f"{name} is a pre-token counts file of version {version}; this BPE Studio "
                          f"reads versions {', '.join(map(str, VERSIONS))}: upgrade BPE Studio or count again")
    if HEADER.size + meta_size > size:
        raise FormatError(f"{name} is not a readable pre-token counts file (it is truncated); "
                          "write it again with 'bpe-studio count' or PretokenCounts.save")
    return f.read(meta_size)


def decode(data: bytes, name: str) -> tuple[list[ChunkCounts], dict[str, Any]]:
    """The counts and metadata of a whole file's bytes: one table, or one per named source
    (version 2: the metadata's ``sources`` gives each one's body length, in order).

    Raises:
        FormatError: truncated, damaged (checksum), an empty pre-token, a count below 1 or
            counts too large to train with; the message names ``name``.
    """
    def bad(why: str) -> FormatError:
        return FormatError(f"{name} is not a readable pre-token counts file ({why}); "
                           "write it again with 'bpe-studio count' or PretokenCounts.save")

    if len(data) < HEADER.size or not data.startswith(MAGIC):
        raise bad("it does not start with BPECOUNT")
    _, version, meta_size = HEADER.unpack_from(data)
    if version not in VERSIONS:
        raise FormatError(f"{name} is a pre-token counts file of version {version}; this BPE Studio "
                          f"reads versions {', '.join(map(str, VERSIONS))}: upgrade BPE Studio or count again")
    start = HEADER.size + meta_size
    if len(data) < start + 24 + 4:
        raise bad("it is truncated")
    meta_bytes, body = data[HEADER.size:start], data[start:-4]
    (crc,) = struct.unpack_from("<I", data, len(data) - 4)
    try:
        meta = json.loads(meta_bytes)
        if not isinstance(meta, dict):
            raise ValueError("no metadata")
        sizes = [len(body)] if version == 1 else [int(source["body_bytes"]) for source in meta["sources"]]
        if not sizes or min(sizes) < 0 or sum(sizes) != len(body):
            raise ValueError("truncated")
        bodies = [body[at:at + size] for at, size in zip(accumulate(sizes, initial=0), sizes)]
        tables = [_table(part) for part in bodies]
    except (ValueError, KeyError, TypeError, struct.error):
        raise bad("it is truncated or damaged") from None
    if zlib.crc32(body, zlib.crc32(meta_bytes)) != crc:
        raise bad("its checksum does not match: it is damaged")
    chunks = []
    for part, (n, invalid, keys_at, keys_length, lengths, numbers) in zip(bodies, tables):
        if min(lengths, default=1) < 1:
            raise bad("it holds an empty pre-token")
        if n and max(numbers) * keys_length > MAX_CORPUS_BYTES and sum(map(int.__mul__, lengths, numbers)) > MAX_CORPUS_BYTES:
            raise bad("its counts add up to more bytes than training can count (2**63)")
        if native_module() is not None and sys.byteorder == "little":
            chunks.append(ChunkCounts(part, None, invalid))  # the native counter's own packed layout
        else:
            ends = list(accumulate(lengths, initial=keys_at))
            chunks.append(ChunkCounts(None, {part[a:b]: c for a, b, c in zip(ends, ends[1:], numbers)}, invalid))
    return chunks, meta


def _table(body: bytes) -> tuple[int, int, int, int, array[int], array[int]]:
    """One packed table's ``(n, invalid bytes, where its keys start, their length, key
    lengths, counts)``; ``ValueError`` when it does not add up."""
    n, invalid, keys_length = struct.unpack_from("<qqq", body)
    keys_at = 24 + 12 * n
    if n < 0 or keys_length < 0 or keys_at + keys_length != len(body):
        raise ValueError("truncated")
    lengths = array("I", body[24 + 8 * n:keys_at])
    numbers = array("q", body[24:24 + 8 * n])
    if sys.byteorder != "little":  # pragma: no cover
        lengths.byteswap()
        numbers.byteswap()
    if sum(lengths) != keys_length or min(numbers, default=1) < 1:
        raise ValueError("truncated")
    return n, invalid, keys_at, keys_length, lengths, numbers


def read_file(path: str | os.PathLike[str]) -> tuple[list[ChunkCounts], dict[str, Any]]:
    """`decode` of the file at ``path``, its kind and header checked before the body is read."""
    f, size = open_counts_file(path)
    with f:
        read_header(f, size, str(path), loading=True)
        f.seek(0)
        data = f.read(size)
    return decode(data, str(Path(path)))


def read_info(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The metadata of the counts file at ``path``, from its header alone (cheap whatever
    its size); `FormatError` if it is not one (`read_file` checks the rest)."""
    f, size = open_counts_file(path)
    with f:
        raw = read_header(f, size, str(path))
    try:
        meta = json.loads(raw)
    except ValueError:
        meta = None
    if not isinstance(meta, dict) or not {"pattern", "special_tokens"} <= meta.keys():
        raise FormatError(f"{path} is not a readable pre-token counts file (its header is damaged)")
    return meta
