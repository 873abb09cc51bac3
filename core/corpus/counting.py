"""Counting a corpus's documents in parallel, in order, stopping at the cap.

`count_documents` hands the tasks of `core.corpus.documents` to workers
(`core.corpus.shares`, `core.workers.scheduler`) and yields the results in the tasks'
order. Which workers is decided in one place, `worker_threads_suit`:

- text and JSONL counted by the native pre-tokenizer (plain or compressed files): threads
  of this process, which scan without the GIL, each counting a contiguous share of the
  tasks into one native table, the shares balanced by stealing (`core.corpus.shares`). So
  the tables to add up (the part of the work done in one thread) are about one per
  thread, the first taken over whole, and the pre-tokens keep the first-seen order of one
  process counting the whole corpus. (Parsing JSON holds the GIL, but scanning is most of
  the work, so threads beat processes on JSONL too.)
- anything else (the `regex` path, Parquet): worker processes and this one, each task
  counted with the per-chunk counter it is given
  (`core.pretokenize.counting.count_chunk_bytes`) and sent back packed.

Documents are joined with a separator character counted as one more special token, so
nothing is counted across a document boundary. With ``max_bytes``, the task during which
the cap is reached is counted again here, cut at the cap, and the run stops: the same
documents whatever the number of workers.
"""

from __future__ import annotations

import signal
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from core.corpus.documents import (
    Block,
    FileRange,
    Files,
    LazyTasks,
    Part,
    Task,
    Texts,
    cut_bytes,
    encode_text,
    read_documents,
    separator_for,
)
from core.workers.scheduler import WorkerPool, results_in_order
from core.corpus.shares import ShareCounter, ShareCounts
from core.corpus.sources import ReadOptions
from core.errors import CorpusError
from core.pretokenize.counting import ChunkCounts, CountTable, NativeTally, count_chunk_bytes
from core.pretokenize.native import scanner_for
from core.pretokenize.patterns import Pattern, resolve_pattern

__all__ = ["CountData", "CountStep", "check_text_counted", "count_documents", "count_task"]

PROGRESS_INTERVAL = 0.1
"""Seconds between progress-only steps while the workers count."""

CountData = Callable[[bytes, Pattern, list[str], dict[str, list[str]]], ChunkCounts]
"""The per-chunk counter (`core.pretokenize.counting.count_chunk_bytes`): text bytes,
pattern, special tokens, piece cache -> the chunk's pre-token counts, compact
(`ChunkCounts`: packed by the native pre-tokenizer, with its invalid UTF-8 bytes)."""


@dataclass(frozen=True, slots=True)
class CountStep:
    """One counted task (``counts`` is None for a progress-only step while waiting).

    ``counting``: input bytes counted by worker threads whose counts are not handed over
    yet (the rest of their share is being counted), for progress."""

    input_bytes: int
    documents: int
    counts: ChunkCounts | None
    invalid: int = 0
    counting: int = 0


class Counted(NamedTuple):
    """A task's result."""

    counts: ChunkCounts
    invalid: int
    text_bytes: int
    documents: int
    input_bytes: int


@dataclass(frozen=True, slots=True)
class Job:
    """One task as a worker process gets it: what to count and how."""

    task: Task
    options: ReadOptions
    pattern: str  # the pattern's source (a compiled pattern is made again in the worker)
    specials: list[str]
    count_data: CountData
    limit: int | None = None  # count at most this many bytes of text

_worker_cache: dict[str, list[str]] = {}


def worker_threads_suit(pattern: Pattern, task: Task, count_data: CountData) -> bool:
    """Whether threads of this process should count a corpus whose first task is ``task``,
    rather than worker processes: the scheduling policy of counting. (Threads count with
    the native pre-tokenizer into `NativeTally` tables: ``count_data`` must be the counter
    that stands for, `count_chunk_bytes`.)

    Threads need no start-up (a spawned process takes a good part of a second, in which
    this process counts alone) and send no counts between processes, but run in parallel
    only in code that releases the GIL. That is most of the work of the native
    pre-tokenizer on text and JSONL (reading a file or decompressing a stream, scanning:
    more than parsing the JSON); not of the `regex` path, nor of reading Parquet, which go
    to processes.
    """
    return (
        count_data is count_chunk_bytes
        and scanner_for(pattern) is not None
        and (isinstance(task, Files) or isinstance(task, (FileRange, Block)) and task.file.kind in ("text", "jsonl"))
    )


def _init_worker() -> None:
    """Let a worker whose parent has gone die quietly (not with a BrokenPipeError traceback)."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)


def _count_job(job: Job, _warm: object = None) -> Counted:
    return count_task(job.task, job.options, resolve_pattern(job.pattern), job.specials, job.count_data,
                      _worker_cache, job.limit)


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
                    parts.append(counted.counts)
                    text_bytes += counted.text_bytes
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
    return Counted(result, result.invalid, text_bytes, documents, task.input_bytes)


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
    total_bytes: int = 0,
) -> Iterator[CountStep]:
    """Count the tasks' documents with ``workers`` workers, in order.

    The workers are this process alone (one worker), threads of it, or other processes
    with this one (`worker_threads_suit`). Threads count shares of consecutive tasks
    (`core.corpus.shares`), sized from ``total_bytes``, the input's size (0: unknown).
    Yields a `CountStep` per task or share, and progress-only steps every
    `PROGRESS_INTERVAL` while waiting (so a consumer can report progress or stop; closing
    the iterator stops the workers). Stops where ``options.max_bytes`` of text have been taken.
    """
    cache: dict[str, list[str]] = {}
    lazy: LazyTasks[Job] = LazyTasks(tasks, lambda task: Job(task, options, pattern.source, specials, count_data))
    cap = options.max_bytes
    taken = documents = 0

    def here(job: Job) -> Counted:
        return count_task(job.task, options, pattern, specials, count_data, cache)

    def count_into(task: Task, tally: NativeTally) -> tuple[int, int]:
        _counts, _invalid, text_bytes, documents, _input = count_task(task, options, pattern, specials, tally.count, {})
        return text_bytes, documents

    pool = shares = None
    scanner = scanner_for(pattern)
    native_text = lazy.at_least(1) and worker_threads_suit(pattern, lazy.peek(), count_data)
    try:
        results: Iterator[Counted | None]
        counting: Callable[[], int] = lambda: 0
        if workers > 1 and native_text and lazy.at_least(2):
            assert scanner is not None
            total = total_bytes if cap is None else min(total_bytes, cap)
            # under a cap a share may have to be counted again alone: none goes on another's table
            shares = ShareCounter(lazy, count_into, lambda: NativeTally(scanner), threads=workers, total=total,
                                  chain=cap is None, pattern=pattern, specials=specials)
            results = _share_results(shares.results(PROGRESS_INTERVAL), lazy.handed)
            counting = shares.counting
        elif workers > 1 and lazy.at_least(2):
            pool = WorkerPool(workers - 1, initializer=_init_worker)
            results = results_in_order(lazy, pool, _count_job, run_here=here, poll=PROGRESS_INTERVAL)
        elif native_text and cap is None:
            assert scanner is not None
            results = _count_into_one_table(lazy, options, pattern, scanner, specials)
        else:
            results = (here(job) for job in iter(lazy.take, None))
        for counted in results:
            if counted is None:
                yield CountStep(0, 0, None, counting=counting())
                continue
            item = lazy.handed.popleft()
            if cap is not None and taken + counted.text_bytes > cap:  # the cap falls here: count again, cut
                for task in item if isinstance(item, tuple) else (item,):
                    counted = count_task(task, options, pattern, specials, count_data, cache, cap - taken)
                    taken += counted.text_bytes
                    documents += counted.documents
                    yield CountStep(counted.input_bytes, counted.documents, counted.counts, counted.invalid)
                    if taken >= cap:
                        return
                continue
            taken += counted.text_bytes
            documents += counted.documents
            yield CountStep(counted.input_bytes, counted.documents, counted.counts, counted.invalid, counting())
            if cap is not None and taken >= cap:
                return
        if lazy.error is not None:
            raise lazy.error
        check_text_counted(documents, taken > 0, options)
    finally:
        if shares is not None:
            shares.close()
        if pool is not None:
            pool.close()
        close = getattr(tasks, "close", None)
        if close is not None:
            close()  # a stream being read is closed now, not when collected


def _share_results(shares: Iterator[ShareCounts | None], handed: deque[object]) -> Iterator[Counted | None]:
    """The shares' counts as task results, each share's tasks put in ``handed`` (to be
    counted again, cut, where a cap falls)."""
    for share in shares:
        if share is None:
            yield None
            continue
        handed.append(share.tasks)
        yield Counted(share.counts, share.counts.invalid, share.text_bytes, share.documents, share.input_bytes)


def _count_into_one_table(lazy: LazyTasks[Job], options: ReadOptions, pattern: Pattern, scanner: int,
                          specials: list[str]) -> Iterator[Counted]:
    """One worker, native, no cap: every task counted here into one table, handed over with
    the last task (the others' results are empty), instead of a table per task to pack and
    add up, which takes far longer."""
    tally = NativeTally(scanner)
    job = lazy.take()
    while job is not None:
        _counts, _invalid, text_bytes, documents, input_bytes = count_task(
            job.task, options, pattern, specials, tally.count, {})
        job = lazy.take()
        counts = tally.chunk() if job is None else ChunkCounts(None, None, 0)
        yield Counted(counts, counts.invalid, text_bytes, documents, input_bytes)


def check_text_counted(documents: int, any_text: bool, options: ReadOptions) -> None:
    """A `CorpusError` if the count holds no text (local and Dask counting): sampling kept
    no document, or every document read was empty (Parquet nulls, JSONL ``""``), where a
    tokenizer of the 256 bytes would be no answer."""
    if documents == 0 and options.sample is not None and options.sample < 1:
        raise CorpusError(f"sampling kept no document (sample={options.sample:g}); give a larger fraction "
                          "(sample=) or a larger corpus")
    if not any_text:
        found = (f"its {documents:,} documents are all empty" if documents > 1 else "its one document is empty"
                 if documents else f"no record has text in the field {options.field!r}")
        raise CorpusError(f"the corpus holds no text: {found}; check the files and the field (field=)")
