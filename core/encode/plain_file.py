"""The plain-file pipeline: one text file of any size to ids, in parallel chunks, in order.

`plain_file_events` is what `core.encode.corpus.encode_corpus_events` runs for a single
uncompressed text file with no separator and no reading options (the ids of the whole
text, exactly). The recipe:

1. Cut the file into chunks at exact boundaries (`core.corpus.chunks.plan_chunks`: at a special
   token or a safe cut point of the pattern), so encoding the chunks one by one gives
   exactly the ids of encoding the whole text.
2. Encode the chunks in workers (`core.workers.scheduler`), each reading its own chunks from
   the file. With the native encoder (the built-in patterns), the workers are threads of
   this process, each with an encoder and a read buffer of its own: the C code runs
   without the GIL, reads the buffer in place and gives the ids in the ``.npy``'s dtype,
   and no ids travel between processes. Otherwise they are worker processes
   (bytes decoded with ``surrogateescape``, so invalid bytes stay exact). Processes are
   forked where that is safe (Linux, and this process runs no other thread): they start
   in milliseconds with the encoder already built, one per core, and this process only
   gathers their results. Otherwise they are spawned and rebuild the encoder from its
   compact state, and this process encodes chunks too, from the first moment.
3. Stream the ids, in order, into the ``.npy`` (`core.encode.pipeline.NpyOut`).
"""

from __future__ import annotations

import codecs
import threading
from collections.abc import Callable, Iterator

import numpy as np

from core.corpus.chunks import plan_chunks
from core.workers.processes import can_fork
from core.workers.scheduler import WorkerPool, results_in_order
from core.corpus.sources import SourceFile
from core.encode.pipeline import (
    ENCODE_CACHE_ENTRIES,
    EncodeProgress,
    NpyOut,
    cache_snapshot,
    start_workers,
    thread_encoders,
    worker_encoder,
)
from core.encode.piece_encoder import TEXT_ERRORS, CacheSnapshot
from core.encode.streaming import SafeCuts, encode_stream
from core.encode.engine import TextEncoder
from core.encode.tokenizer import Tokenizer

__all__ = ["plain_file_events"]

STREAM_BYTES = 16 << 20
"""Chunks bigger than this (only when the file has no exact cut point) are streamed."""
STREAM_BLOCK_CHARS = 1 << 20
STARTUP_SMALL_CHUNKS = 8

Chunk = tuple[str, int, int, str]  # path, start, end, dtype


def plain_file_events(file: SourceFile, tok: Tokenizer, out: NpyOut, workers: int, chunk_bytes: int,
                      start_method: str | None) -> Iterator[EncodeProgress]:
    """Encode ``file`` into ``out``, yielding progress after each chunk (see the module).

    The caller owns ``out`` and checks afterwards that the file did not change."""
    if file.data is not None:  # a small file, read whole by its check: those bytes, not the file now
        yield EncodeProgress(0, file.size, 0)
        out.write(tok.encode_to_array(file.data).astype(out.dtype, copy=False))
        yield EncodeProgress(file.size, file.size, out.tokens)
        return
    chunks = _plan(file, tok, chunk_bytes, workers)
    tasks = [(str(file.path), start, end, out.dtype.str) for start, end in chunks]
    ends = [end for _, end in chunks]
    pool: WorkerPool | None = None
    results: Iterator[tuple[int, np.ndarray]]
    try:
        if any(end - start > STREAM_BYTES for start, end in chunks):
            # No cut points (a custom pattern, no special tokens): stream in this process.
            results = (item for task in tasks for item in _stream_chunk(tok, *task))
        else:
            encoder = tok._text_encoder(ENCODE_CACHE_ENTRIES)
            encoder.pieces.prepare()  # once, here: forked workers inherit it
            if workers > 1 and len(chunks) > 1 and encoder.native_available():
                pool = WorkerPool(min(workers, len(chunks)), threads=True)
                results = zip(ends, _encode_in_threads(tasks, tok, encoder, pool))
            elif encoder.native_available():
                encode = _reading_into_buffer(lambda: encoder)
                results = ((task[2], encode(task, None)) for task in tasks)
            elif workers > 1 and len(chunks) > 1:
                fork = start_method == "fork" or (start_method is None and can_fork())
                helpers = workers if fork else workers - 1  # see the module's docstring
                pool = start_workers(encoder, min(helpers, len(chunks)), fork)
                results = zip(ends, _encode_in_order(tasks, encoder, pool))
            else:
                results = ((task[2], _encode_chunk(encoder, *task)) for task in tasks)
        yield EncodeProgress(0, file.size, 0)
        for end, ids in results:
            out.write(ids)
            yield EncodeProgress(end, file.size, out.tokens)
    finally:
        if pool is not None:
            pool.close()


def _plan(file: SourceFile, tok: Tokenizer, chunk_bytes: int, workers: int) -> list[tuple[int, int]]:
    """Chunks of about ``chunk_bytes``, except the first and the last few, a quarter of that.

    The first: this process encodes them while the workers start, and only hands
    chunks to a worker between two of its own, so short ones let the workers begin sooner.
    The last: when the work runs out, no process waits long for another's last chunk.
    """
    if workers < 2:
        return plan_chunks(file.path, file.size, tok.pattern, tok.special_tokens, chunk_bytes)
    small = plan_chunks(file.path, file.size, tok.pattern, tok.special_tokens, max(chunk_bytes // 4, 1))
    first = min(STARTUP_SMALL_CHUNKS, len(small))
    tail = 4 * workers
    middle = small[first : max(len(small) - tail, first)]
    merged = [(group[0][0], group[-1][1]) for group in (middle[i : i + 4] for i in range(0, len(middle), 4))]
    return small[:first] + merged + small[first + len(middle) :]


def _encode_chunk(tok: TextEncoder, path: str, start: int, end: int, dtype: str) -> np.ndarray:
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    return tok.encode_to_array(data).astype(dtype)


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

    # TEXT_ERRORS: the surrogateescape characters back to the bytes they stand for
    encode = lambda text: tok.encode_to_array(text.encode("utf-8", TEXT_ERRORS))  # noqa: E731
    for ids in encode_stream(blocks(), SafeCuts(tok.pattern, tok.special_tokens), encode, STREAM_BLOCK_CHARS):
        yield position, ids.astype(dtype)


def _encode_chunk_task(args: Chunk, warm: CacheSnapshot | None = None) -> np.ndarray:
    encoder = worker_encoder()
    if warm is not None:
        encoder.pieces.warm(warm)
    return _encode_chunk(encoder, *args)


def _encode_chunk_here(encoder: TextEncoder) -> Callable[[Chunk], np.ndarray]:
    return lambda task: _encode_chunk(encoder, *task)


def _encode_in_order(tasks: list[Chunk], encoder: TextEncoder, pool: WorkerPool) -> Iterator[np.ndarray]:
    """The chunks' ids in order. Forked workers started at once: this process only gathers.
    Spawned ones start late: this process encodes too, and hands them its caches with their
    first chunks."""
    here = not pool.started_at_once
    ordered = results_in_order(
        tasks, pool, _encode_chunk_task,
        run_here=_encode_chunk_here(encoder) if here else None,
        warm_up=cache_snapshot(encoder) if here else None,
    )
    return (ids for ids in ordered if ids is not None)


def _reading_into_buffer(encoder: Callable[[], TextEncoder]) -> Callable[[Chunk, object], np.ndarray]:
    """``task -> ids`` for the native encoder: each thread reads its chunks into a buffer of
    its own, reused (a fresh one per chunk costs a page fault per 4 KB), which the C code
    encodes in place, giving the ids already in the ``.npy``'s dtype (no int64 array, no
    conversion). The file is read, not mapped: a file truncated meanwhile reads short (and
    `check_unchanged` says so), where a mapping would kill the process."""
    local = threading.local()

    def encode(task: Chunk, _warm: object = None) -> np.ndarray:
        path, start, end, dtype = task
        buffer: bytearray | None = getattr(local, "buffer", None)
        if buffer is None or len(buffer) < end - start:
            buffer = local.buffer = bytearray(end - start)
        with open(path, "rb") as f, memoryview(buffer) as whole:
            f.seek(start)
            got = f.readinto(whole[: end - start])
            with whole[:got] as data:
                return encoder().encode_into_dtype(data, np.dtype(dtype))

    return encode


def _encode_in_threads(tasks: list[Chunk], tok: Tokenizer, first: TextEncoder, pool: WorkerPool) -> Iterator[np.ndarray]:
    """The chunks' ids in order, encoded by threads of this process, each with a native
    encoder of its own (`thread_encoders`): reading the file, encoding and narrowing the
    ids all run without the GIL, and no ids are sent between processes."""
    ordered = results_in_order(tasks, pool, _reading_into_buffer(thread_encoders(tok, first)))
    return (ids for ids in ordered if ids is not None)
