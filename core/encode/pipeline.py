"""What the two corpus pipelines share: events, worker encoders, chunk sizes and the ``.npy``.

`core.encode.corpus.encode_corpus_events` runs one of two pipelines — one plain text file
(`core.encode.plain_file`) or documents of any source (`core.encode.documents`); both build
on this module:

- the events, `EncodeProgress` and `EncodeFinished`;
- the encoders of the workers: threads of this process, each with an encoder of its own
  (`thread_encoders`; the native encoder runs without the GIL), or worker processes
  (`start_workers`: forked ones inherit the built encoder, spawned ones rebuild it from its
  compact state; `worker_encoder` is the one of the calling process);
- the ``.npy`` being written: `NpyOut` reserves its header, then writes the real one.

Ids are ``uint16`` when the largest id is below 65,536, else ``uint32`` (`ids_dtype`:
decided by the largest id, not the number of tokens: a vocabulary with gaps, or a special
token added at id 70,000, needs ``uint32`` however few tokens it has).
"""

from __future__ import annotations

import gc
import io
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from core.workers.scheduler import WorkerPool
from core.encode.piece_encoder import CacheSnapshot, EncoderState
from core.encode.engine import TextEncoder
from core.encode.tokenizer import Tokenizer
from core.errors import OptionsError
from core.progress import encode_summary

__all__ = [
    "ENCODE_CACHE_ENTRIES", "EncodeFinished", "EncodeProgress", "NpyOut", "cache_snapshot", "chunk_bytes_for",
    "dtype_for_largest_id", "ids_dtype", "start_workers", "thread_encoders", "worker_encoder",
]

ENCODE_CACHE_ENTRIES = 1 << 18
"""Cache size of the encoders of chunks (~180 bytes an entry, so up to ~45 MB a worker,
for the pre-tokens longer than 16 bytes; the short ones have a front cache of eight 32-byte
slots an entry, 64 MB a worker, mapped as it is used): far more than the interactive
default, so chunks after the first mostly hit the cache (the 11 MB Python docs have 173k
distinct pieces)."""
MIN_CHUNK_BYTES = 256 << 10
MAX_CHUNK_BYTES = 4 << 20


@dataclass(frozen=True, slots=True)
class EncodeProgress:
    """``done`` of ``total`` corpus bytes are encoded, giving ``tokens`` ids so far."""

    done: int
    total: int
    tokens: int


@dataclass(frozen=True, slots=True)
class EncodeFinished:
    """The ``.npy`` is written: ``tokens`` ids of ``dtype`` for ``corpus_bytes`` bytes."""

    path: Path
    tokens: int
    corpus_bytes: int
    dtype: str
    seconds: float

    @property
    def bytes_per_token(self) -> float:
        return self.corpus_bytes / self.tokens if self.tokens else 0.0

    def summary(self) -> str:
        """One line for the user (`core.progress.encode_summary`)."""
        return encode_summary(self.corpus_bytes, self.tokens, self.dtype, self.seconds, self.path)


def ids_dtype(tokenizer: Tokenizer) -> np.dtype[np.unsignedinteger]:
    """The dtype of ``tokenizer``'s ids in a ``.npy``: `dtype_for_largest_id` of its
    largest id (never of its number of tokens: ids may have gaps)."""
    return dtype_for_largest_id(max(tokenizer.vocab, default=0))


def dtype_for_largest_id(largest_id: int) -> np.dtype[np.unsignedinteger]:
    """The smallest unsigned type that holds every id up to ``largest_id``:
    ``dtype_for_largest_id(65535) -> uint16``, ``dtype_for_largest_id(65536) -> uint32``."""
    if largest_id >= 1 << 32:
        raise OptionsError(f"token id {largest_id} does not fit in 32 bits; a .npy of ids cannot hold it")
    return np.dtype(np.uint16) if largest_id < 1 << 16 else np.dtype(np.uint32)


def chunk_bytes_for(size: int, workers: int) -> int:
    """The default chunk size: about eight chunks per worker, within 256 KB..4 MB."""
    return min(MAX_CHUNK_BYTES, max(MIN_CHUNK_BYTES, size // (workers * 8) + 1))


# --------------------------------------------------------------------------- the .npy


class NpyOut:
    """Ids streamed into an open file behind a reserved ``.npy`` header, then the header
    written for the count: memory does not grow with the corpus."""

    def __init__(self, f: BinaryIO, dtype: np.dtype[np.unsignedinteger]) -> None:
        self.f = f
        self.dtype = dtype
        self.tokens = 0
        f.write(_npy_header(0, dtype))

    def write(self, ids: np.ndarray) -> None:
        ids.astype(self.dtype, copy=False).tofile(self.f)
        self.tokens += len(ids)

    def finish(self) -> None:
        """Write the header of the ids written over the one reserved (the same size: the
        count has room in its padding)."""
        header = _npy_header(self.tokens, self.dtype)
        assert len(header) == len(_npy_header(0, self.dtype)), "the .npy header does not fit the space reserved"
        self.f.seek(0)
        self.f.write(header)


def _npy_header(count: int, dtype: np.dtype[np.unsignedinteger]) -> bytes:
    buffer = io.BytesIO()
    header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": (count,)}
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue()


# --------------------------------------------------------------------------- workers

_worker_encoder: TextEncoder | None = None


def worker_encoder() -> TextEncoder:
    """The encoder of this worker process (set by `start_workers`' initializer)."""
    assert _worker_encoder is not None, "not in a worker process started by start_workers"
    return _worker_encoder


def _ignore_interrupts() -> None:
    """Ctrl+C reaches the workers too; the parent stops them (and says so once), so they
    ignore it rather than each printing a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _init_spawned_worker(state: tuple[EncoderState, dict[str, int]]) -> None:
    global _worker_encoder
    _ignore_interrupts()
    _worker_encoder = TextEncoder.from_state(state)


def _init_forked_worker(encoder: TextEncoder) -> None:
    global _worker_encoder
    _ignore_interrupts()
    # The collector would walk (and so write to, copying page after page) everything this
    # process shares with its parent; it is frozen (moved out of its reach) instead.
    gc.freeze()
    _worker_encoder = encoder


def start_workers(encoder: TextEncoder, processes: int, fork: bool) -> WorkerPool:
    """Worker processes with ``encoder``: forked ones inherit it built; spawned ones get only
    what encoding needs, compact (merges as numpy arrays)."""
    if fork:
        return WorkerPool(processes, fork=True, initializer=_init_forked_worker, initargs=(encoder,))
    return WorkerPool(processes, fork=False, initializer=_init_spawned_worker, initargs=(encoder.state(),))


def thread_encoders(tok: Tokenizer, first: TextEncoder) -> Callable[[], TextEncoder]:
    """The encoder of the calling worker thread: each thread one of its own (with its own
    caches; the native encoder serves one thread at a time), ``first`` to the first."""
    local = threading.local()
    spare = [first]  # list.pop is atomic

    def encoder() -> TextEncoder:
        mine: TextEncoder | None = getattr(local, "encoder", None)
        if mine is None:
            try:
                mine = spare.pop()
            except IndexError:
                mine = tok._text_encoder(ENCODE_CACHE_ENTRIES)
            local.encoder = mine
        return mine

    return encoder


def cache_snapshot(encoder: TextEncoder) -> Callable[[], CacheSnapshot | None]:
    """This process's caches, copied from a pool thread while this process may be encoding
    (each copy is one C call; should one ever see a cache change, the worker simply starts
    cold: an exception there would stop the pool's result thread)."""

    def snapshot() -> CacheSnapshot | None:
        try:
            return encoder.pieces.snapshot()
        except RuntimeError:
            return None

    return snapshot
