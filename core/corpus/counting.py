"""Counting a corpus's documents in parallel, in order, stopping at the cap.

`count_documents` hands the tasks of `core.corpus.documents` to worker processes (and this
one: `core.corpus.scheduler`), each counting its task's documents with the per-chunk
counter it is given (`core.pretokenize.counting.count_chunk_bytes`), and yields the results
in the tasks' order. Documents are joined with a separator character counted as one more
special token, so nothing is counted across a document boundary. With ``max_bytes``, the
task during which the cap is reached is counted again here, cut at the cap, and the run
stops: the same documents whatever the number of workers.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from core.corpus.documents import (
    LazyTasks,
    Part,
    Task,
    Texts,
    cut_bytes,
    encode_text,
    read_documents,
    separator_for,
)
from core.corpus.scheduler import WorkerPool, results_in_order
from core.corpus.sources import ReadOptions
from core.pretokenize.counting import ChunkCounts, CountTable
from core.pretokenize.patterns import Pattern, resolve_pattern

__all__ = ["CountData", "CountStep", "count_documents", "count_task"]

PROGRESS_INTERVAL = 0.1
"""Seconds between progress-only steps while the workers count."""

CountData = Callable[[bytes, Pattern, list[str], dict[str, list[str]]], ChunkCounts]
"""The per-chunk counter (`core.pretokenize.counting.count_chunk_bytes`): text bytes,
pattern, special tokens, piece cache -> the chunk's pre-token counts, compact
(`ChunkCounts`: packed by the native pre-tokenizer, with its invalid UTF-8 bytes)."""


@dataclass(frozen=True, slots=True)
class CountStep:
    """One counted task (``counts`` is None for a progress-only step while waiting)."""

    input_bytes: int
    documents: int
    counts: ChunkCounts | None
    invalid: int = 0


Counted = tuple[ChunkCounts, int, int, int, int]
"""A task's result: counts, invalid bytes, text bytes, documents, input bytes."""

Job = tuple[Task, ReadOptions, str, list[str], CountData, "int | None"]

_worker_cache: dict[str, list[str]] = {}


def _init_worker() -> None:
    """Let a worker whose parent has gone die quietly (not with a BrokenPipeError traceback)."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)


def _count_job(job: Job, _warm: object = None) -> Counted:
    task, options, pattern_source, specials, count_data, limit = job
    return count_task(task, options, resolve_pattern(pattern_source), specials, count_data, _worker_cache, limit)


def count_task(task: Task, options: ReadOptions, pattern: Pattern, specials: list[str], count_data: CountData,
               cache: dict[str, list[str]], limit: int | None = None) -> Counted:
    """Count one task's documents (at most ``limit`` bytes of their text)."""
    parts: list[ChunkCounts] = []  # a task of one part hands its counts on as they are
    text_bytes = documents = 0
    for part, docs in read_documents(task, options, specials):
        if limit is not None:
            part, docs = _limited(part, docs, limit - text_bytes, specials)
        if isinstance(part, bytes):
            blob, blob_specials, text = part, specials, len(part)
        else:
            sep = separator_for(part, specials)
            if not sep and len(part) > 1:  # no separator free: one document at a time
                for doc in part:
                    counted = count_task(Texts([doc], 0, 0), ReadOptions(options.field), pattern, specials,
                                         count_data, cache)
                    parts.append(counted[0])
                    text_bytes += counted[2]
                documents += docs
                continue
            blob = encode_text(sep.join(part))
            blob_specials = [*specials, sep] if sep else specials
            text = len(blob) - (len(part) - 1) * len(sep.encode()) if part else 0
        counts = count_data(blob, pattern, blob_specials, cache)
        parts.append(counts)
        text_bytes += text
        documents += docs
        if limit is not None and text_bytes >= limit:
            break
    if len(parts) == 1:
        result = parts[0]
    else:
        total = CountTable()
        for part_counts in parts:
            total.add(part_counts)
        result = total.chunk()
    return result, result.invalid, text_bytes, documents, task.input_bytes


def _limited(part: bytes | list[str], docs: int, room: int, specials: Sequence[str]) -> Part:
    """The start of ``part`` holding at most ``room`` bytes of text."""
    if room <= 0:
        return [], 0
    if isinstance(part, bytes):
        if len(part) <= room:
            return part, docs
        return encode_text(cut_bytes(part.decode("utf-8", errors="surrogateescape"), room, specials)), docs
    taken: list[str] = []
    for doc in part:
        size = len(encode_text(doc))
        if size >= room:
            cut = cut_bytes(doc, room, specials)
            if cut or size == 0:
                taken.append(cut)
            break
        taken.append(doc)
        room -= size
    return taken, len(taken)


def count_documents(
    tasks: Iterator[Task],
    options: ReadOptions,
    pattern: Pattern,
    specials: list[str],
    workers: int,
    count_data: CountData,
) -> Iterator[CountStep]:
    """Count the tasks' documents in ``workers`` processes (this one included), in order.

    Yields a `CountStep` per task, and progress-only steps every `PROGRESS_INTERVAL` while
    waiting (so a consumer can report progress or stop; closing the iterator stops the
    workers). Stops where ``options.max_bytes`` of text have been taken.
    """
    cache: dict[str, list[str]] = {}
    lazy: LazyTasks[Job] = LazyTasks(tasks, lambda task: (task, options, pattern.source, specials, count_data, None))
    cap = options.max_bytes
    taken = 0

    def here(job: Job) -> Counted:
        return count_task(job[0], options, pattern, specials, count_data, cache)

    pool = None
    if workers > 1 and lazy.at_least(2):
        pool = WorkerPool(workers - 1, fork=False, initializer=_init_worker)
    try:
        results: Iterator[Counted | None]
        if pool is None:
            results = (here(job) for job in iter(lazy.take, None))
        else:
            results = results_in_order(lazy, pool, _count_job, run_here=here, poll=PROGRESS_INTERVAL)
        for counted in results:
            if counted is None:
                yield CountStep(0, 0, None)
                continue
            task = lazy.handed.popleft()
            if cap is not None and taken + counted[2] > cap:
                counted = count_task(task, options, pattern, specials, count_data, cache, cap - taken)
            taken += counted[2]
            yield CountStep(counted[4], counted[3], counted[0], counted[1])
            if cap is not None and taken >= cap:
                return
        if lazy.error is not None:
            raise lazy.error
    finally:
        if pool is not None:
            pool.close()
        close = getattr(tasks, "close", None)
        if close is not None:
            close()  # a stream being read is closed now, not when collected
