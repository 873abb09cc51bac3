"""Compressed corpus files read as streams, in bounded pieces, their errors naming the file.

`open_stream` gives a file's decompressed text as a stream (``.gz``, ``.bz2``, ``.xz``,
``.zst``, or the file itself) and the raw file beside it (``raw.tell()``: the compressed
bytes read, for progress). Every read returns at most what was asked for: gzip, bzip2
and xz decompress with an output limit, and the zstd reader feeds its decompressor
`_ZstdReader.RAW_PIECE` bytes at a time, so even a bomb (a few KB holding 16 GiB) never
produces more than a few tens of MB at once. A corrupt or truncated stream raises a
`CorpusError` naming the file (`corrupt_error`).
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from core.errors import CorpusError

if TYPE_CHECKING:
    from core.corpus.sources import SourceFile

__all__ = ["STREAM_BLOCK", "corrupt_error", "open_stream"]

STREAM_BLOCK = 1 << 20
"""Bytes read from a (decompressed) stream at a time."""


def corrupt_error(file: SourceFile | Path, error: BaseException) -> CorpusError:
    """The error for a compressed file that cannot be decompressed (corrupt or cut short)."""
    path = file if isinstance(file, Path) else file.path
    method = None if isinstance(file, Path) else file.compression
    what = f"{method} data" if method else "data"
    reason = str(error) or type(error).__name__
    if isinstance(error, EOFError):
        reason = "it ends before its end-of-stream marker: the file is truncated"
    return CorpusError(f"{path} is corrupt or truncated ({what}: {reason}); download or compress it again")


DECOMPRESSION_ERRORS: tuple[type[BaseException], ...] = (OSError, EOFError, zlib.error, lzma.LZMAError)


def _zstd_error() -> tuple[type[BaseException], ...]:
    try:
        import zstandard
    except ImportError:
        return ()
    return (zstandard.ZstdError,)


@contextlib.contextmanager
def open_stream(file: SourceFile) -> Iterator[tuple[Any, BinaryIO]]:
    """``(decompressed, raw)`` streams of ``file``; ``raw.tell()`` is the compressed bytes read.

    Reading ``decompressed`` raises `CorpusError` (`corrupt_error`) on corrupt or truncated data.
    """
    with file.path.open("rb") as raw:
        if file.compression is None:
            yield raw, raw
            return
        reader: Any
        if file.compression == "gzip":
            reader = gzip.GzipFile(fileobj=raw, mode="rb")
        elif file.compression == "bzip2":
            reader = bz2.BZ2File(raw, "rb")
        elif file.compression == "xz":
            reader = lzma.LZMAFile(raw, "rb")
        else:
            reader = io.BufferedReader(_ZstdReader(raw, file.path), STREAM_BLOCK)
        try:
            yield _Checked(reader, file), raw
        finally:
            reader.close()


class _ZstdReader(io.RawIOBase):
    """A zstd stream of one or more frames; a last frame cut short raises EOFError (the
    zstandard package's own stream reader ends quietly there).

    The decompressor takes no output limit, so it is fed `RAW_PIECE` bytes at a time: a
    zstd block of at least 4 bytes gives at most 128 KB, so a piece gives at most
    ``RAW_PIECE / 4 * 128 KB`` (16 MB), however the file was made; and pieces are fed only
    while what was decompressed is used up. (Small pieces cost nothing: the decompressor
    buffers its input.)"""

    RAW_BLOCK = 1 << 16
    RAW_PIECE = 512

    def __init__(self, raw: BinaryIO, path: Path) -> None:
        super().__init__()
        try:
            import zstandard
        except ImportError:  # pragma: no cover - zstandard is a dependency
            raise CorpusError(f"{path}: reading .zst needs the zstandard package: pip install zstandard") from None
        self._new = zstandard.ZstdDecompressor().decompressobj
        self._raw = raw
        self._decoder = self._new()
        self._pending = b""
        self._at = 0
        self._input = b""
        self._input_at = 0
        self._in_frame = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        """Fill ``buffer`` as far as the stream goes (fewer calls than one piece's output each)."""
        view = memoryview(buffer).cast("B")
        filled = 0
        while filled < len(view):
            if self._at >= len(self._pending) and not self._decompress_piece():
                break
            n = min(len(view) - filled, len(self._pending) - self._at)
            view[filled : filled + n] = memoryview(self._pending)[self._at : self._at + n]
            self._at += n
            filled += n
        return filled

    def _decompress_piece(self) -> bool:
        """Decompress the next `RAW_PIECE` bytes into ``_pending``; False at the end."""
        if self._input_at >= len(self._input):
            self._input, self._input_at = self._raw.read(self.RAW_BLOCK), 0
            if not self._input:
                if self._in_frame:
                    raise EOFError("the last zstd frame is cut short")
                return False
        piece = self._input[self._input_at : self._input_at + self.RAW_PIECE]
        self._input_at += len(piece)
        self._in_frame = True
        self._pending, self._at = self._decoder.decompress(piece), 0
        if self._decoder.eof:  # the frame ended in this piece: the rest starts the next one
            rest = self._decoder.unused_data
            self._decoder = self._new()
            self._in_frame = False
            self._input, self._input_at = rest + self._input[self._input_at :], 0
        return True


class _Checked(io.RawIOBase):
    """A decompressing reader whose errors become `corrupt_error`s naming the file."""

    def __init__(self, reader: Any, file: SourceFile) -> None:
        super().__init__()
        self._reader = reader
        self._file = file
        self._errors = DECOMPRESSION_ERRORS + _zstd_error()

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        try:
            data: bytes = self._reader.read(size)
            return data
        except CorpusError:
            raise
        except self._errors as e:
            raise corrupt_error(self._file, e) from None

    def readline(self, size: int | None = -1) -> bytes:
        try:
            line: bytes = self._reader.readline(-1 if size is None else size)
            return line
        except self._errors as e:
            raise corrupt_error(self._file, e) from None
