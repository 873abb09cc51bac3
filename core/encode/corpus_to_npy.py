"""Encoding whole corpora: a text file of any size to a ``.npy`` of token ids, in parallel.

Adds `encode_file` (blocking) and `encode_file_events` (an iterator of progress events that
a GUI worker or a terminal display follows; closing it cancels). The recipe:

1. Cut the file into chunks at exact boundaries (`core.corpus.chunks.plan_chunks`: at a special
   token or a safe cut point of the pattern), so encoding the chunks one by one gives
   exactly the ids of encoding the whole text.
2. Encode the chunks in worker processes, each reading its own chunks from the file
   (bytes decoded with ``surrogateescape``, so invalid bytes stay exact). Workers are
   forked where that is safe (Linux, and this process runs no other thread): they start
   in milliseconds with the encoder already built, one per core, and this process only
   gathers their results. Otherwise they are spawned and rebuild the encoder from its
   compact state (~0.25 s), and this process encodes chunks too, from the first moment.
3. Stream the ids, in order, into a temporary file beside the output, behind a reserved
   ``.npy`` header, then write the header and rename: nothing is left on error or cancel,
   and memory does not grow with the corpus.

Ids are ``uint16`` when the vocabulary has at most 65,536 ids, else ``uint32``.
"""

from __future__ import annotations

import codecs
import collections
import contextlib
import gc
import io
import multiprocessing
import multiprocessing.pool
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.corpus.check import check_corpus
from core.corpus.chunks import plan_chunks
from core.formats.atomic import atomic_output
from core.progress import encode_summary
from core.encode.piece_encoder import CacheSnapshot, EncoderState
from core.corpus.processes import spawn_pool
from core.encode.tokenizer import TextEncoder, Tokenizer

__all__ = ["EncodeFinished", "EncodeProgress", "check_paths", "encode_file", "encode_file_events", "ids_dtype"]

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


def ids_dtype(vocab_size: int) -> np.dtype[np.unsignedinteger]:
    """``uint16`` when every id fits (``vocab_size <= 65536``), else ``uint32``."""
    return np.dtype(np.uint16) if vocab_size <= 1 << 16 else np.dtype(np.uint32)


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


def can_fork() -> bool:
    """Whether workers may be forked: on Linux, from the main thread of a process that runs
    no other thread — no Python thread, and no Qt, whose threads Python does not see. (Any
    other program with threads of its own should pass ``start_method="spawn"``.)"""
    return (
        sys.platform.startswith("linux")
        and threading.active_count() == 1
        and threading.current_thread() is threading.main_thread()
        and not any(name in sys.modules for name in ("PySide6.QtCore", "PyQt6.QtCore", "PyQt5.QtCore"))
    )


def _encode_chunk(tok: TextEncoder, path: str, start: int, end: int, dtype: str) -> np.ndarray:
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    text = data.decode("utf-8", errors="surrogateescape")
    return tok.encode_array(text).astype(dtype)


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

    for ids in tok.encode_blocks(blocks(), batch_chars=STREAM_BLOCK_CHARS):
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


def check_paths(corpus: Path, out: Path) -> int:
    """Check the corpus (`core.corpus.check`) and the output path before any work; return
    the corpus size.

    Raises:
        FileNotFoundError, IsADirectoryError, CorpusError: with a message saying what to fix.
    """
    _, size = check_corpus(corpus, purpose="encode")
    if out.is_dir():
        raise IsADirectoryError(f"--out {out} is a directory; give a file name such as ids.npy")
    if not out.parent.is_dir():
        raise FileNotFoundError(f"the directory for {out} does not exist; create it first")
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
    dtype = ids_dtype(len(tok))
    chunks = _plan(corpus, size, tok, chunk_bytes, workers)
    reserved = _npy_header(0, dtype)
    starter: _PoolStarter | None = None
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
                if workers > 1 and len(chunks) > 1:
                    fork = start_method == "fork" or (start_method is None and can_fork())
                    helpers = workers if fork else workers - 1  # see the module's docstring
                    starter = _PoolStarter(encoder, min(helpers, len(chunks)), fork)
                    ends = [end for _, end in chunks]
                    results = zip(ends, _results_in_order(tasks, encoder, starter))
                else:
                    results = ((task[2], _encode_chunk(encoder, *task)) for task in tasks)
            tokens = 0
            yield EncodeProgress(0, size, 0)
            for end, ids in results:
                ids.tofile(f)
                tokens += len(ids)
                yield EncodeProgress(end, size, tokens)
            header = _npy_header(tokens, dtype)
            assert len(header) == len(reserved), "the .npy header does not fit the space reserved"
            f.seek(0)
            f.write(header)
    finally:
        if starter is not None:
            starter.close()
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


class _PoolStarter:
    """Starts the worker pool. Forked workers start at once, here. Spawned ones start in a
    thread: sending each the encoder blocks until it has started Python, and this process
    has chunks to encode meanwhile."""

    def __init__(self, encoder: TextEncoder, processes: int, fork: bool) -> None:
        self.processes = processes
        self.forked = fork
        self._lock = threading.Lock()
        self._on_ready: list[Callable[[multiprocessing.pool.Pool], object]] = []
        self._pool: multiprocessing.pool.Pool | None = None
        self._thread: threading.Thread | None = None
        if fork:  # before any thread of this process starts
            with contextlib.suppress(OSError):  # no workers (a process limit): this process does it all
                context = multiprocessing.get_context("fork")
                self._pool = context.Pool(processes, _init_forked_worker, (encoder,))
        else:
            self._thread = threading.Thread(target=self._start, args=(encoder,), name="encode-pool-start", daemon=True)
            self._thread.start()

    def _start(self, encoder: TextEncoder) -> None:
        # The workers get only what encoding needs, compact (merges as numpy arrays).
        try:
            pool = spawn_pool(self.processes, _init_spawned_worker, (encoder.state(),))
        except OSError:
            return  # no workers (e.g. a process limit): this process does it all
        with self._lock:
            self._pool = pool
            callbacks = list(self._on_ready)
        for callback in callbacks:
            callback(pool)

    def when_ready(self, callback: Callable[[multiprocessing.pool.Pool], object]) -> None:
        """Call ``callback(pool)`` once the pool is started (now, if it is)."""
        with self._lock:
            pool = self._pool
            if pool is None:
                self._on_ready.append(callback)
        if pool is not None:
            callback(pool)

    @property
    def pool(self) -> multiprocessing.pool.Pool | None:
        """The pool once it is started, else ``None``."""
        return None if self._thread is not None and self._thread.is_alive() else self._pool

    def close(self) -> None:
        """Stop the workers (waiting for the pool to have started, if it is starting)."""
        if self._thread is not None:
            self._thread.join()
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()


class _Scheduler:
    """Hands the chunks out to the pool's workers and to this process; gives the results in order.

    With ``encode_here``, this process encodes a chunk itself whenever the next result is not
    ready yet: it works from the first moment while spawned workers are still starting, and
    the number of chunks held in memory stays small (``in_flight``). The workers are fed
    from the pool's threads — when the pool is up and each time a worker finishes a chunk —
    so a worker never waits for this process to finish a chunk of its own before it gets
    its next one.
    """

    def __init__(
        self,
        tasks: list[tuple[str, int, int, str]],
        encoder: TextEncoder,
        processes: int,
        *,
        warm: bool,
        encode_here: bool,
    ) -> None:
        self._tasks = tasks
        self._encoder = encoder
        self._processes = processes
        self._warm = warm  # a worker's first task brings this process's caches
        self._encode_here = encode_here
        self._in_flight = 4 * processes + 4
        self._lock = threading.Lock()
        # In order: a worker's AsyncResult, or a one-item list this process fills.
        self._pending: collections.deque[multiprocessing.pool.AsyncResult[np.ndarray] | list[np.ndarray]] = (
            collections.deque()
        )
        self._next = 0
        self._submitted = 0  # tasks in the workers' hands
        self._warmed = 0
        self._pool: multiprocessing.pool.Pool | None = None

    def pool_ready(self, pool: multiprocessing.pool.Pool) -> None:
        """Called (in the starter thread) once the workers are up."""
        with self._lock:
            self._pool = pool
            self._feed()

    def _worker_done(self, _result: object) -> None:
        with self._lock:
            self._submitted -= 1
            self._feed()

    def _feed(self) -> None:
        """Give the workers tasks, up to two each (the lock is held)."""
        pool = self._pool
        while (
            pool is not None
            and self._next < len(self._tasks)
            and self._submitted < 2 * self._processes
            and len(self._pending) < self._in_flight
        ):
            # A worker's first task brings this process's cache: no work is done twice on the
            # frequent pieces.
            warm = self._snapshot() if self._warm and self._warmed < self._processes and self._next > 0 else None
            try:
                result = pool.apply_async(
                    _encode_chunk_task,
                    (self._tasks[self._next], warm),
                    callback=self._worker_done,
                    error_callback=self._worker_done,
                )
            except ValueError:  # the pool is closing: the run was cancelled
                self._pool = None
                return
            self._warmed += warm is not None
            self._pending.append(result)
            self._next += 1
            self._submitted += 1

    def _snapshot(self) -> CacheSnapshot | None:
        """This process's caches, copied from a pool thread while this process may be
        encoding (each copy is one C call; should one ever see a cache change, the worker
        simply starts cold: an exception here would stop the pool's result thread)."""
        try:
            return self._encoder.pieces.snapshot()
        except RuntimeError:
            return None

    def results(self) -> Iterator[np.ndarray]:
        """The chunks' ids, in order."""
        while True:
            mine: list[np.ndarray] | None = None
            with self._lock:
                self._feed()
                if not self._pending and self._next >= len(self._tasks):
                    return
                head = self._pending[0] if self._pending else None
                ready = isinstance(head, list) or (head is not None and head.ready())
                if ready:
                    self._pending.popleft()
                elif self._encode_here and self._next < len(self._tasks) and len(self._pending) < self._in_flight:
                    task = self._tasks[self._next]
                    self._next += 1
                    mine = []
                    self._pending.append(mine)
            if ready:
                assert head is not None
                yield head[0] if isinstance(head, list) else head.get()
            elif mine is not None:
                mine.append(_encode_chunk(self._encoder, *task))
            elif head is not None and not isinstance(head, list):
                head.wait()


def _results_in_order(
    tasks: list[tuple[str, int, int, str]], encoder: TextEncoder, starter: _PoolStarter
) -> Iterator[np.ndarray]:
    """The chunks' ids in order (`_Scheduler`): from ``starter``'s workers, and from this
    process too unless the workers were forked (and started at once). Spawned workers, which
    start late, get this process's caches with their first chunk."""
    forked = starter.forked and starter.pool is not None
    scheduler = _Scheduler(tasks, encoder, starter.processes, warm=not forked, encode_here=not forked)
    starter.when_ready(scheduler.pool_ready)
    return scheduler.results()


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
