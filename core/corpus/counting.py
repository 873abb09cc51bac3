"""Counting a corpus's documents in parallel, in order, stopping at the cap.

`count_documents` hands the tasks of `core.corpus.documents` to workers
(`core.corpus.scheduler`) and yields the results in the tasks' order. Which workers is
decided in one place, `worker_threads_suit`:

- text counted by the native pre-tokenizer (plain or compressed files): threads of this
  process, which scan without the GIL. Each thread takes a `Run` of consecutive tasks —
  a share of what is left (guided self-scheduling: large runs first, single tasks at
  the end) — and counts it into one native table, going on into the same table with its
  next run when that run follows (`RunCounter`). So the tables to add up (the part of
  the work that holds the GIL) are about one per thread, the first taken over whole, and
  the pre-tokens keep the first-seen order of one process counting the whole corpus;
- anything else (the `regex` path, JSONL and Parquet, whose parsing holds the GIL):
  worker processes and this one, each task counted with the per-chunk counter it is
  given (`core.pretokenize.counting.count_chunk_bytes`) and sent back packed.

Documents are joined with a separator character counted as one more special token, so
nothing is counted across a document boundary. With ``max_bytes``, the task during which
the cap is reached is counted again here, cut at the cap, and the run stops: the same
documents whatever the number of workers.
"""

from __future__ import annotations

import signal
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from core.corpus.documents import (
    Block,
    FileRange,
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
from core.pretokenize.counting import ChunkCounts, CountTable, NativeTally, count_chunk_bytes
from core.pretokenize.native import scanner_for
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


def worker_threads_suit(pattern: Pattern, task: Task, count_data: CountData) -> bool:
    """Whether threads of this process should count a corpus whose first task is ``task``,
    rather than worker processes: the scheduling policy of counting. (Threads count with
    the native pre-tokenizer into `NativeTally` tables: ``count_data`` must be the counter
    that stands for, `count_chunk_bytes`.)

    Threads need no start-up (a spawned process takes a good part of a second, in which
    this process counts alone) and send no counts between processes, but run in parallel
    only in code that releases the GIL. That is most of the work of the native
    pre-tokenizer on text (reading a file or decompressing a stream, scanning); not of the
    `regex` path, nor of parsing JSON or Parquet, which go to processes.
    """
    return (
        count_data is count_chunk_bytes
        and scanner_for(pattern) is not None
        and isinstance(task, (FileRange, Block))
        and task.file.kind == "text"
    )


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
    total_bytes: int = 0,
) -> Iterator[CountStep]:
    """Count the tasks' documents with ``workers`` workers, in order.

    The workers are this process alone (one worker), threads of it, or other processes
    with this one (`worker_threads_suit`). Threads take runs of consecutive tasks (`Run`),
    sized from ``total_bytes``, the input's size (0: unknown). Yields a `CountStep` per
    task or run, and progress-only steps every `PROGRESS_INTERVAL` while waiting (so a
    consumer can report progress or stop; closing the iterator stops the workers). Stops
    where ``options.max_bytes`` of text have been taken.
    """
    cache: dict[str, list[str]] = {}
    lazy: LazyTasks[Job] = LazyTasks(tasks, lambda task: (task, options, pattern.source, specials, count_data, None))
    cap = options.max_bytes
    taken = 0

    def here(job: Job) -> Counted:
        return count_task(job[0], options, pattern, specials, count_data, cache)

    pool = None
    handed: deque[Task | Run] = lazy.handed
    scanner = scanner_for(pattern)
    in_threads = None
    if workers > 1 and lazy.at_least(2):
        if worker_threads_suit(pattern, lazy.peek(), count_data):
            pool = WorkerPool(workers, threads=True)
        else:
            pool = WorkerPool(workers - 1, initializer=_init_worker)
    try:
        results: Iterator[Counted | None]
        if pool is None and cap is None and lazy.at_least(1) and worker_threads_suit(pattern, lazy.peek(), count_data):
            assert scanner is not None
            results = _count_into_one_table(lazy, options, pattern, scanner, specials)
        elif pool is None:
            results = (here(job) for job in iter(lazy.take, None))
        elif pool.threads:
            assert scanner is not None
            runs: LazyTasks[Run] = LazyTasks(_runs(lazy, total_bytes, cap, pool.processes), lambda run: run)
            handed = runs.handed
            # under a cap a run may have to be counted again alone: no run goes on another's table
            in_threads = RunCounter(options, pattern, scanner, specials, chain=cap is None)
            linked = results_in_order(runs, pool, in_threads.count, poll=PROGRESS_INTERVAL)
            results = (None if link is None else link.take() for link in linked)
        else:
            results = results_in_order(lazy, pool, _count_job, run_here=here, poll=PROGRESS_INTERVAL)
        for counted in results:
            if counted is None:
                yield CountStep(0, 0, None)
                continue
            item = handed.popleft()
            if cap is not None and taken + counted[2] > cap:  # the cap falls here: count again, cut
                for task in item.tasks if isinstance(item, Run) else (item,):
                    counted = count_task(task, options, pattern, specials, count_data, cache, cap - taken)
                    taken += counted[2]
                    yield CountStep(counted[4], counted[3], counted[0], counted[1])
                    if taken >= cap:
                        return
                continue
            taken += counted[2]
            yield CountStep(counted[4], counted[3], counted[0], counted[1])
            if cap is not None and taken >= cap:
                return
        if lazy.error is not None:
            raise lazy.error
    finally:
        if in_threads is not None:
            in_threads.stop.set()
        if pool is not None:
            pool.close()
        close = getattr(tasks, "close", None)
        if close is not None:
            close()  # a stream being read is closed now, not when collected


def _count_into_one_table(lazy: LazyTasks[Job], options: ReadOptions, pattern: Pattern, scanner: int,
                          specials: list[str]) -> Iterator[Counted]:
    """One worker, native, no cap: every task counted here into one table, handed over with
    the last task (the others' results are empty), instead of a table per task to pack and
    add up (a tenth of the time on 44 MB of English)."""
    tally = NativeTally(scanner)
    job = lazy.take()
    while job is not None:
        _counts, _invalid, text_bytes, documents, input_bytes = count_task(
            job[0], options, pattern, specials, tally.count, {})
        job = lazy.take()
        counts = tally.chunk() if job is None else ChunkCounts(None, None, 0)
        yield counts, counts.invalid, text_bytes, documents, input_bytes


@dataclass(frozen=True, slots=True)
class Run:
    """Consecutive tasks that one worker thread counts into one table (`RunCounter`), the
    ``index``-th run of the corpus."""

    tasks: tuple[Task, ...]
    index: int

    @property
    def input_bytes(self) -> int:
        return sum(task.input_bytes for task in self.tasks)


MAX_RUN_BYTES = 128 << 20
"""At most this many input bytes in a run (beyond one task): progress is reported run by run."""
MAX_RUN_TEXT = 16 << 20
"""At most this many bytes of text read from a stream in a run (beyond one task): the text of
the runs handed out is held in memory until they are counted."""


def _runs(lazy: LazyTasks[Job], total: int, cap: int | None, threads: int) -> Iterator[Run]:
    """The tasks as runs, by guided self-scheduling: each run holds a ``threads``-th of the
    input not yet handed out — few and large while much is left (few tables to add up, the
    first taken over whole), a task at a time towards the end (so the threads end together)."""
    given = index = 0
    while (task := lazy.pop()) is not None:
        left = total - given if cap is None else min(total - given, cap - given)
        target = min(MAX_RUN_BYTES, left // threads)
        run = [task]
        size, text = task.input_bytes, _text_held(task)
        while (task := lazy.peek()) is not None and size + task.input_bytes <= target and text < MAX_RUN_TEXT:
            size, text = size + task.input_bytes, text + _text_held(task)
            run.append(lazy.pop())
        given += size
        yield Run(tuple(run), index)
        index += 1


def _text_held(task: Task) -> int:
    """The bytes of text a task holds (read from a stream), to be counted."""
    return len(task.data) if isinstance(task, Block) else 0


class RunCounter:
    """Counts runs in worker threads (`count`), each thread into its own native tables.

    A thread whose next run follows the one it has just counted (the other threads busy
    with earlier ones: guided self-scheduling makes that the rule) goes on counting into
    the same table, unless that run's result has already been taken: then the earlier
    run's result is empty and the later one's holds both, still in the corpus's order.
    So a thread's consecutive runs make one table to add up, not one each (``chain``).
    """

    def __init__(self, options: ReadOptions, pattern: Pattern, scanner: int, specials: list[str], *,
                 chain: bool) -> None:
        self.stop = threading.Event()
        """Set: the threads drop their runs after the task in hand (the count is closed)."""
        self._options = options
        self._pattern = pattern
        self._scanner = scanner
        self._specials = specials
        self._chain = chain
        self._last = threading.local()  # each thread's last RunResult

    def count(self, run: Run, _warm: object = None) -> RunResult:
        """Count ``run`` (in a worker thread)."""
        last: RunResult | None = getattr(self._last, "result", None)
        if self._chain and last is not None and last.index + 1 == run.index and last.hand_on():
            tally = last.tally
        else:
            tally = NativeTally(self._scanner)
        text_bytes = documents = 0
        for task in run.tasks:
            if self.stop.is_set():
                break
            _counts, _invalid, text, docs, _input = count_task(
                task, self._options, self._pattern, self._specials, tally.count, {})
            text_bytes += text
            documents += docs
        self._last.result = result = RunResult(run.index, tally, text_bytes, documents, run.input_bytes)
        return result


class RunResult:
    """A counted run: its table, unless the thread went on counting the next run into it."""

    def __init__(self, index: int, tally: NativeTally, text_bytes: int, documents: int, input_bytes: int) -> None:
        self.index = index
        self.tally = tally
        self._counted = (text_bytes, documents, input_bytes)
        self._lock = threading.Lock()
        self._state = "done"  # then "handed on" (to the next run, by the thread) or "taken" (by the consumer)

    def hand_on(self) -> bool:
        """Whether the thread may count the next run into this run's table (not yet taken)."""
        with self._lock:
            if self._state == "done":
                self._state = "handed on"
            return self._state == "handed on"

    def take(self) -> Counted:
        """The run's counts (none if handed on: the next run's hold them), for the consumer."""
        with self._lock:
            handed_on = self._state == "handed on"
            self._state = "taken"
        counts = ChunkCounts(None, None, 0) if handed_on else self.tally.chunk()
        return (counts, counts.invalid, *self._counted)
