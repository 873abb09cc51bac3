"""Encoding whole corpora: a text file of any size to a ``.npy`` of token ids, in parallel.

Adds `encode_file` (blocking) and `encode_file_events` (an iterator of progress events that
a GUI worker or a terminal display follows; closing it cancels). The recipe:

1. Cut the file into chunks at exact boundaries (`core.corpus.chunks.plan_chunks`: at a special
   token or a safe cut point of the pattern), so encoding the chunks one by one gives
   exactly the ids of encoding the whole text.
2. Encode the chunks in workers (`core.corpus.scheduler`), each reading its own chunks from
   the file. With the native encoder (the built-in patterns), the workers are threads of
   this process, each with an encoder of its own: the C code runs without the GIL, and
   no ids travel between processes. Otherwise they are worker processes
   (bytes decoded with ``surrogateescape``, so invalid bytes stay exact). Processes are
   forked where that is safe (Linux, and this process runs no other thread): they start
   in milliseconds with the encoder already built, one per core, and this process only
   gathers their results. Otherwise they are spawned and rebuild the encoder from its
   compact state (~0.25 s), and this process encodes chunks too, from the first moment.
3. Stream the ids, in order, into a temporary file beside the output, behind a reserved
   ``.npy`` header, then write the header and rename: nothing is left on error or cancel,
   and memory does not grow with the corpus.

Ids are ``uint16`` when the largest id is below 65,536, else ``uint32`` (decided by the
largest id, not the number of tokens: a vocabulary with gaps, or a special token added at
id 70,000, needs ``uint32`` however few tokens it has).
"""

from __future__ import annotations

import codecs
import gc
import io
import os
import signal
import threading
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from core.corpus.check import check_corpus
from core.corpus.chunks import plan_chunks
from core.corpus.processes import can_fork
from core.corpus.scheduler import WorkerPool, results_in_order
from core.encode.piece_encoder import CacheSnapshot, EncoderState
from core.encode.tokenizer import TextEncoder, Tokenizer
from core.formats.atomic import atomic_output, check_output_dir
from core.progress import encode_summary

__all__ = [
    "EncodeFinished", "EncodeProgress", "check_paths", "dtype_for_largest_id", "encode_file", "encode_file_events",
    "ids_dtype",
]

ENCODE_CACHE_ENTRIES = 1 << 18
"""Cache size of the encoders of chunks (~180 bytes an entry, so up to ~45 MB a worker):
far more than the interactive default, so chunks after the first mostly hit the cache
(the 11 MB Python docs have 173k distinct pieces; on 44 MB, 262k entries encode ~15%
faster than 65k)."""
STREAM_BYTES = 16 << 20
"""Chunks bigger than this (only when the file has no exact cut point) are streamed."""
STREAM_BLOCK_CHARS = 1 << 20
MIN_CHUNK_BYTES = 256 << 10
MAX_CHUNK_BYTES = 4 << 20
STARTUP_SMALL_CHUNKS = 8


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
        raise ValueError(f"token id {largest_id} does not fit in 32 bits; a .npy of ids cannot hold it")
    return np.dtype(np.uint16) if largest_id < 1 << 16 else np.dtype(np.uint32)


# --------------------------------------------------------------------------- workers

_worker_encoder: TextEncoder | None = None


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


def _encode_chunk(tok: TextEncoder, path: str, start: int, end: int, dtype: str) -> np.ndarray:
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    return tok.encode_bytes_array(data).astype(dtype)


def _stream_chunk(tok: Tokenizer, path: str, start: int, end: int, dtype: str) -> Iterator[tuple[int, np.ndarray]]:
    """Encode a chunk too big to hold, block by block: ``(bytes done up to, ids)`` pairs."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")
    position = start

    def blocks() -> Iterator[str]:
        nonlocal position
        with open(path, "rb") as f:
            f.seek(start)
            while position < end:
                data = f.read(min(STREAM_BLOCK_CHARS, end - position))
                if not data:
                    break
                position += len(data)
                yield decoder.decode(data)
        yield decoder.decode(b"", final=True)

    for ids in tok.encode_blocks(blocks(), batch_chars=STREAM_BLOCK_CHARS, escaped=True):
        yield position, ids.astype(dtype)


def _encode_chunk_task(args: tuple[str, int, int, str], warm: CacheSnapshot | None = None) -> np.ndarray:
    assert _worker_encoder is not None
    if warm is not None:
        _worker_encoder.pieces.warm(warm)
    return _encode_chunk(_worker_encoder, *args)


# --------------------------------------------------------------------------- output


def _npy_header(count: int, dtype: np.dtype[np.unsignedinteger]) -> bytes:
    buffer = io.BytesIO()
    header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": (count,)}
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue()


def _write_npy_header(f: BinaryIO, tokens: int, dtype: np.dtype[np.unsignedinteger]) -> None:
    """Write the header of ``tokens`` ids over the one reserved at the start of ``f``
    (``_npy_header(0, dtype)``: the same size, a count having room in its padding)."""
    header = _npy_header(tokens, dtype)
    assert len(header) == len(_npy_header(0, dtype)), "the .npy header does not fit the space reserved"
    f.seek(0)
    f.write(header)


def check_paths(corpus: Path, out: Path) -> int:
    """Check the corpus (`core.corpus.check`) and the output path before any work; return
    the corpus size.

    Raises:
        FileNotFoundError, IsADirectoryError, PermissionError, CorpusError: with a message
            saying what to fix.
    """
    _, size = check_corpus(corpus, purpose="encode")
    if out.is_dir():
        raise IsADirectoryError(f"--out {out} is a directory; give a file name such as ids.npy")
    if not out.parent.is_dir():
        raise FileNotFoundError(f"the directory for {out} does not exist; create it first")
    check_output_dir(out.parent)
    return size


def encode_file_events(
    corpus_path: str | os.PathLike[str],
    tokenizer: Tokenizer,
    out_path: str | os.PathLike[str],
    *,
    workers: int | None = None,
    chunk_bytes: int | None = None,
    start_method: str | None = None,
) -> Iterator[EncodeProgress | EncodeFinished]:
    """Encode a corpus file into ``out_path`` (``.npy``), yielding progress as it goes.

    The paths are checked at once (this call raises before any work). Closing the iterator
    early stops the workers and removes the temporary file; ``out_path`` is untouched.

    Args:
        corpus_path: a text file (UTF-8; invalid bytes are encoded as the bytes they are).
        tokenizer: the tokenizer to encode with.
        out_path: the ``.npy`` to write.
        workers: processes to encode in (default: all cores): that many forked workers,
            or this process and ``workers - 1`` spawned ones, which join in as soon as
            they have started.
        chunk_bytes: approximate chunk size (default: from the file size and workers).
        start_method: how workers start, ``"fork"`` or ``"spawn"``; by default fork when
            `can_fork` says it is safe, else spawn.
    """
    corpus, out = Path(corpus_path), Path(out_path)
    size = check_paths(corpus, out)
    workers = max(1, workers if workers is not None else (os.cpu_count() or 1))
    if chunk_bytes is None:
        chunk_bytes = min(MAX_CHUNK_BYTES, max(MIN_CHUNK_BYTES, size // (workers * 8) + 1))
    if start_method not in (None, "fork", "spawn"):
        raise ValueError(f'start_method must be "fork", "spawn" or None, not {start_method!r}')
    return _encode_events(corpus, tokenizer, out, size, workers, chunk_bytes, start_method)


def _encode_events(
    corpus: Path, tok: Tokenizer, out: Path, size: int, workers: int, chunk_bytes: int, start_method: str | None
) -> Iterator[EncodeProgress | EncodeFinished]:
    started = time.monotonic()
    dtype = ids_dtype(tok)
    chunks = _plan(corpus, size, tok, chunk_bytes, workers)
    reserved = _npy_header(0, dtype)
    pool: WorkerPool | None = None
    try:
        with atomic_output(out) as f:
            f.write(reserved)
            tasks = [(str(corpus), start, end, dtype.str) for start, end in chunks]
            results: Iterator[tuple[int, np.ndarray]]
            if any(end - start > STREAM_BYTES for start, end in chunks):
                # No cut points (a custom pattern, no special tokens): stream in this process.
                results = (item for task in tasks for item in _stream_chunk(tok, *task))
            else:
                encoder = tok.text_encoder(ENCODE_CACHE_ENTRIES)
                encoder.pieces.prepare()  # once, here: forked workers inherit it
                if workers > 1 and len(chunks) > 1 and encoder.native_available():
                    pool = WorkerPool(min(workers, len(chunks)), threads=True)
                    ends = [end for _, end in chunks]
                    results = zip(ends, _encode_in_threads(tasks, tok, encoder, pool))
                elif workers > 1 and len(chunks) > 1:
                    fork = start_method == "fork" or (start_method is None and can_fork())
                    helpers = workers if fork else workers - 1  # see the module's docstring
                    pool = _start_workers(encoder, min(helpers, len(chunks)), fork)
                    ends = [end for _, end in chunks]
                    results = zip(ends, _encode_in_order(tasks, encoder, pool))
                else:
                    results = ((task[2], _encode_chunk(encoder, *task)) for task in tasks)
            tokens = 0
            yield EncodeProgress(0, size, 0)
            for end, ids in results:
                ids.tofile(f)
                tokens += len(ids)
                yield EncodeProgress(end, size, tokens)
            _write_npy_header(f, tokens, dtype)
    finally:
        if pool is not None:
            pool.close()
    yield EncodeFinished(out, tokens, size, dtype.name, time.monotonic() - started)


def _plan(corpus: Path, size: int, tok: Tokenizer, chunk_bytes: int, workers: int) -> list[tuple[int, int]]:
    """Chunks of about ``chunk_bytes``, except the first and the last few, a quarter of that.

    The first: this process encodes them while the workers start (~0.25 s), and only hands
    chunks to a worker between two of its own, so short ones let the workers begin sooner.
    The last: when the work runs out, no process waits long for another's last chunk.
    """
    if workers < 2:
        return plan_chunks(corpus, size, tok.pattern, tok.special_tokens, chunk_bytes)
    small = plan_chunks(corpus, size, tok.pattern, tok.special_tokens, max(chunk_bytes // 4, 1))
    first = min(STARTUP_SMALL_CHUNKS, len(small))
    tail = 4 * workers
    middle = small[first : max(len(small) - tail, first)]
    merged = [(group[0][0], group[-1][1]) for group in (middle[i : i + 4] for i in range(0, len(middle), 4))]
    return small[:first] + merged + small[first + len(middle) :]


def _encode_chunk_here(encoder: TextEncoder) -> Callable[[tuple[str, int, int, str]], np.ndarray]:
    return lambda task: _encode_chunk(encoder, *task)


def _cache_snapshot(encoder: TextEncoder) -> Callable[[], CacheSnapshot | None]:
    """This process's caches, copied from a pool thread while this process may be encoding
    (each copy is one C call; should one ever see a cache change, the worker simply starts
    cold: an exception there would stop the pool's result thread)."""

    def snapshot() -> CacheSnapshot | None:
        try:
            return encoder.pieces.snapshot()
        except RuntimeError:
            return None

    return snapshot


def _encode_in_order(tasks: list[tuple[str, int, int, str]], encoder: TextEncoder, pool: WorkerPool) -> Iterator[np.ndarray]:
    """The chunks' ids in order. Forked workers started at once: this process only gathers.
    Spawned ones start late: this process encodes too, and hands them its caches with their
    first chunks."""
    here = not pool.started_at_once
    ordered = results_in_order(
        tasks, pool, _encode_chunk_task,
        run_here=_encode_chunk_here(encoder) if here else None,
        warm_up=_cache_snapshot(encoder) if here else None,
    )
    return (ids for ids in ordered if ids is not None)


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
                mine = tok.text_encoder(ENCODE_CACHE_ENTRIES)
            local.encoder = mine
        return mine

    return encoder


def _encode_in_threads(tasks: list[tuple[str, int, int, str]], tok: Tokenizer, first: TextEncoder,
                       pool: WorkerPool) -> Iterator[np.ndarray]:
    """The chunks' ids in order, encoded by threads of this process, each with a native
    encoder of its own (`thread_encoders`): reading the file, encoding and converting the
    ids all run without the GIL, and no ids are sent between processes."""
    encoder = thread_encoders(tok, first)

    def encode(task: tuple[str, int, int, str], _warm: object = None) -> np.ndarray:
        return _encode_chunk(encoder(), *task)

    ordered = results_in_order(tasks, pool, encode)
    return (ids for ids in ordered if ids is not None)


def _start_workers(encoder: TextEncoder, processes: int, fork: bool) -> WorkerPool:
    """Forked workers inherit the built encoder; spawned ones get only what encoding needs,
    compact (merges as numpy arrays)."""
    if fork:
        return WorkerPool(processes, fork=True, initializer=_init_forked_worker, initargs=(encoder,))
    return WorkerPool(processes, fork=False, initializer=_init_spawned_worker, initargs=(encoder.state(),))


def encode_file(
    corpus_path: str | os.PathLike[str],
    tokenizer: Tokenizer,
    out_path: str | os.PathLike[str],
    *,
    workers: int | None = None,
    progress: Callable[[EncodeProgress], object] | None = None,
    chunk_bytes: int | None = None,
    start_method: str | None = None,
) -> EncodeFinished:
    """Encode a corpus file into a ``.npy`` of ids; see `encode_file_events`.

    ``numpy.load(out_path)`` then equals ``tokenizer.encode(text)`` on the whole text.

    Args:
        progress: called with each `EncodeProgress`.
    """
    events = encode_file_events(
        corpus_path, tokenizer, out_path, workers=workers, chunk_bytes=chunk_bytes, start_method=start_method
    )
    assert isinstance(events, Generator)
    finished = None
    try:
        for event in events:
            if isinstance(event, EncodeFinished):
                finished = event
            elif progress is not None:
                progress(event)
    finally:
        events.close()
    assert finished is not None
    return finished
