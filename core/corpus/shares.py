"""Counting in worker threads: each thread a contiguous share of the tasks, the shares in
the corpus's order, balanced at the end by stealing.

`core.corpus.counting.count_documents` uses it for text counted by the native
pre-tokenizer (`core.corpus.counting.worker_threads_suit`), which scans without the GIL.
Each thread counts a *share* — consecutive tasks — into one native table, so there are
about as many tables to add up (the part of the work done in one thread) as threads, and
adding them in the shares' order keeps the first-seen order of one thread counting the
whole corpus:

- a thread with nothing in hand takes a share of the tasks not handed out yet: at first an
  equal part of the input for each thread (``total``: its size, or the cap), then a
  ``threads``-th of what is left (guided self-scheduling), at most `MAX_SHARE_BYTES`
  (`CAPPED_SHARE_BYTES` under a cap) and `MAX_SHARE_TEXT` of text read from a stream. A share that follows the thread's previous one directly, whose counts the
  consumer has not taken yet, goes on in the same table (``chain``);
- when none are left, a thread steals the second half of what is left of the share with
  the most left — whole tasks, or the one task left, whole — as a new share placed right
  after it; and a task about to be counted once no tasks are left to hand out is first
  cut, by the thread that claimed it, to a small part of what is left, at an exact
  boundary (`core.corpus.chunks.find_cut`), the rest going back to the front of its
  share (where it can be stolen). So the threads end together, whatever the speed of
  each core (on a shared machine it varies by half from one run to the next).

No reading happens under the lock (`_cond`), which guards only the bookkeeping: the
next tasks are read (a stream decompressed, a file's cut points found) by one thread at a
time under a lock of their own, and a task is cut by the thread that claimed it; so while
one thread waits on a slow read, the others record their counts, claim tasks and steal,
and the consumer takes finished shares.

The consumer (`ShareCounter.results`) takes the shares' counts in order as they end.
Closing it stops the threads after the task in hand (a chunk of at most a few MB).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from core.corpus.chunks import find_cut
from core.corpus.documents import Block, FileRange, LazyTasks, Task
from core.workers.processes import max_workers
from core.pretokenize.counting import ChunkCounts, NativeTally
from core.pretokenize.patterns import Pattern

__all__ = ["ShareCounter", "ShareCounts"]

MAX_SHARE_BYTES = 512 << 20
"""At most this many input bytes in a share taken from the tasks (beyond one task). Each
share's table is added into the consumer's (a lookup at random per distinct pre-token of
the share, holding the GIL) and grows from empty, so fewer, larger shares take less CPU
time and less memory (see docs/benchmarks.md)."""
CAPPED_SHARE_BYTES = 128 << 20
"""Under a cap (no ``chain``), at most this many: the share in which the cap falls is counted
again, a task at a time, in the consumer's thread."""
MAX_SHARE_TEXT = 16 << 20
"""At most this many bytes of text read from a stream in a share (beyond one task): the text
of the shares handed out is held in memory until it is counted."""
MIN_PIECE_BYTES = 256 << 10
"""Tasks are not cut smaller than this (a cut costs a read and a search near it)."""

CountTask = Callable[[Task, NativeTally], tuple[int, int]]
"""Counts one task into a table: -> (text bytes, documents)."""


@dataclass(frozen=True, slots=True)
class ShareCounts:
    """A counted share: its counts (empty when they went on into the next share's table),
    text bytes, documents and input bytes, and the tasks counted (to count again, cut, at a cap)."""

    counts: ChunkCounts
    text_bytes: int
    documents: int
    input_bytes: int
    tasks: tuple[Task, ...]


class _Share:
    """Consecutive tasks counted by one thread into ``tally``."""

    def __init__(self, tasks: deque[Task], tally: NativeTally) -> None:
        self.todo = tasks  # not started yet (the back may be stolen)
        self.left = sum(_work(task) for task in tasks)  # the work in ``todo``, in bytes
        self.tally: NativeTally | None = tally  # None once the consumer has taken the counts
        self.tasks: list[Task] = []  # taken by the owner, in order
        self.text_bytes = self.documents = self.input_bytes = 0
        self.state = "open"  # then "done", then "handed on" (to the next share's table) or "taken"

    def take_front(self) -> Task:
        task = self.todo.popleft()
        self.left -= _work(task)
        self.tasks.append(task)
        return task


class ShareCounter:
    """Counts ``tasks`` in ``threads`` worker threads (started at once), each task with
    ``count_task`` into a table of ``new_tally()``; `results` gives the shares' counts in order.

    Args:
        total: the input bytes to count (the input's size, or the cap if smaller; 0: unknown).
        chain: a thread may go on counting its next share into the same table (not under
            a cap, where a share may have to be counted again alone).
        pattern, specials: where tasks may be cut (`find_cut`).
    """

    def __init__(self, tasks: LazyTasks[Any], count_task: CountTask, new_tally: Callable[[], NativeTally], *,
                 threads: int, total: int, chain: bool, pattern: Pattern, specials: list[str]) -> None:
        self._tasks = tasks
        self._count_task = count_task
        self._new_tally = new_tally
        self._chain = chain
        self._pattern = pattern
        self._specials = specials
        self._threads_count = threads = max(1, min(threads, max_workers()))
        self._left = total  # input bytes not handed out yet (an estimate: ``total`` may be off)
        self._first_round = threads  # shares still to hand out as an equal part each
        self._cond = threading.Condition()
        """Guards the bookkeeping (shares, their tasks, progress); never held while reading."""
        self._source_lock = threading.Lock()
        """Held by the one thread reading the next tasks (`_take_share`), outside `_cond`."""
        self._source_done = False  # every task handed out (the source said so)
        self._reading = False  # a thread is reading tasks: a share may be on its way
        self._order: list[_Share] = []  # every share, in the corpus's order
        self._taken = 0  # shares whose counts the consumer has taken
        self._counting = 0  # input bytes counted in shares not taken yet
        self._error: BaseException | None = None
        self.stop = threading.Event()
        """Set: the threads stop after the task in hand (the count is closed)."""
        self._threads = [threading.Thread(target=self._work, name=f"bpe-studio-count-{i}", daemon=True)
                         for i in range(threads)]
        for thread in self._threads:
            thread.start()

    # -- in the worker threads

    def _work(self) -> None:
        share: _Share | None = None
        try:
            while not self.stop.is_set():
                share, task = self._next_task(share)
                if share is None or task is None:
                    return
                assert share.tally is not None  # an open share's
                text_bytes, documents = self._count_task(task, share.tally)
                with self._cond:
                    share.text_bytes += text_bytes
                    share.documents += documents
                    share.input_bytes += task.input_bytes
                    self._counting += task.input_bytes
                    if not share.todo:
                        share.state = "done"
                    self._cond.notify_all()
        except BaseException as e:  # noqa: BLE001 - raised by the consumer
            with self._cond:
                if self._error is None:
                    self._error = e
                self.stop.set()
                self._cond.notify_all()

    def _next_task(self, share: _Share | None) -> tuple[_Share | None, Task | None]:
        """The next task for the thread whose last share is ``share``, and the share it is
        of; ``(None, None)`` when there is none left. Reading the tasks and cutting one
        happen outside the lock (`_cond` guards only the bookkeeping)."""
        while True:
            with self._cond:
                if share is not None and share.todo:
                    task = share.todo.popleft()  # claimed: no thief takes it now
                    share.left -= _work(task)
                    piece = self._front_piece(task)
                    break
                if share is not None and share.state == "open":  # its last tasks were stolen
                    share.state = "done"
                    self._cond.notify_all()
                stolen = self._steal() if self._source_done else None
            share = stolen or self._take_share(share)
            if share is None:
                with self._cond:
                    share = self._steal()
                if share is None:
                    return None, None
        halves = self._cut(task, piece) if piece is not None else None
        with self._cond:
            if halves is not None:
                task = halves[0]
                share.todo.appendleft(halves[1])
                share.left += _work(halves[1])
            share.tasks.append(task)
        return share, task

    def _take_share(self, last: _Share | None) -> _Share | None:
        """A new share of the tasks not handed out yet (None when there are none). The tasks
        are read (a stream decompressed, a file's cuts found) under `_source_lock` only."""
        with self._source_lock:
            with self._cond:
                if self._source_done:
                    return None
                self._reading = True
            try:
                task = self._tasks.pop()
                if task is None:
                    with self._cond:
                        self._source_done = True
                        self._cond.notify_all()
                    return None
                parts = self._first_round if self._first_round > 0 else self._threads_count
                self._first_round -= 1
                target = min(MAX_SHARE_BYTES if self._chain else CAPPED_SHARE_BYTES, self._left // parts)
                tasks = deque([task])
                size, text = task.input_bytes, _text_held(task)
                while (after := self._tasks.peek()) is not None and size + after.input_bytes <= target \
                        and text < MAX_SHARE_TEXT:
                    size, text = size + after.input_bytes, text + _text_held(after)
                    tasks.append(self._tasks.pop())
                self._left = max(0, self._left - size)
                with self._cond:
                    chained = self._chain and last is not None and self._order[-1] is last and last.state == "done"
                    if chained:
                        assert last is not None
                        last.state = "handed on"
                    tally = last.tally if chained and last is not None else None
                    share = _Share(tasks, tally if tally is not None else self._new_tally())
                    self._order.append(share)
                    return share
            finally:
                with self._cond:
                    self._reading = False
                    self._cond.notify_all()

    def _steal(self) -> _Share | None:
        """The second half of what is left of the open share with the most left (whole
        tasks; or its one task left, whole: its new owner cuts it as it goes, `_front_piece`),
        as a new share right after it (None when nothing is worth taking). No reading: the
        lock is held."""
        victim = max((s for s in self._order[self._taken:] if s.state == "open" and s.todo),
                     key=lambda s: s.left, default=None)
        if victim is None or victim.left < 2 * MIN_PIECE_BYTES:
            return None
        stolen: deque[Task] = deque()
        moved = 0
        while victim.todo and (not stolen or (len(victim.todo) > 1 and moved < victim.left)):
            task = victim.todo.pop()  # whole tasks from the back, up to half
            moved += _work(task)
            victim.left -= _work(task)
            stolen.appendleft(task)
        share = _Share(stolen, self._new_tally())
        self._order.insert(self._order.index(victim) + 1, share)
        return share

    def _front_piece(self, task: Task) -> int | None:
        """Once no tasks are left to hand out, the size to cut a share's next task to (a small
        part of what is left of every share, so the threads end together); None: as it is
        (the lock is held)."""
        if not self._source_done:
            return None
        left = _work(task) + sum(s.left for s in self._order[self._taken:] if s.state == "open")
        piece = max(MIN_PIECE_BYTES, left // (4 * self._threads_count))
        return piece if _work(task) > 2 * piece else None

    def _cut(self, task: Task, size: int) -> tuple[Task, Task] | None:
        """``task`` cut at the first exact boundary after its first ``size`` bytes (a range of
        a plain text file only; None if there is none before its end)."""
        if not (isinstance(task, FileRange) and task.file.kind == "text"):
            return None
        with task.file.path.open("rb") as f:
            cut = find_cut(f, task.start + size, task.end, self._pattern, self._specials)
        if not task.start < cut < task.end:
            return None
        return FileRange(task.file, task.start, cut), FileRange(task.file, cut, task.end)

    # -- in the consumer's thread

    def results(self, poll: float) -> Iterator[ShareCounts | None]:
        """Each share's counts in order as it ends; ``None`` for progress (`counting`)
        each time a task is counted, or every ``poll`` seconds while waiting. Raises the
        first error of a thread (or of reading the tasks). Closing it stops the threads."""
        try:
            reported = 0
            while True:
                with self._cond:
                    share = self._ready()
                    if share is None and self._error is None and not self._finished() \
                            and self._counting == reported:
                        self._cond.wait(poll)
                        share = self._ready()
                    if self._error is not None:
                        raise self._error
                    if share is None and self._finished():
                        return
                    if share is not None:
                        handed_on = share.state == "handed on"
                        share.state = "taken"
                        self._counting -= share.input_bytes
                        # `_order` keeps every share to the end: what a taken one holds (its
                        # table, its tasks' text) goes with its counts. (Kept, the tables of
                        # all shares would be alive at the end of counting, raising the peak.)
                        tally, tasks = share.tally, tuple(share.tasks)
                        share.tally, share.tasks = None, []
                    reported = self._counting
                if share is None:
                    yield None
                    continue
                counts = ChunkCounts(None, None, 0) if handed_on or tally is None else tally.chunk()
                yield ShareCounts(counts, share.text_bytes, share.documents, share.input_bytes, tasks)
        finally:
            self.close()

    def counting(self) -> int:
        """Input bytes counted in shares whose counts `results` has not given yet."""
        with self._cond:
            return self._counting

    def _ready(self) -> _Share | None:
        """The next share in order if it has ended (the lock is held)."""
        if self._taken < len(self._order) and self._order[self._taken].state in ("done", "handed on"):
            self._taken += 1
            return self._order[self._taken - 1]
        return None

    def _finished(self) -> bool:
        """Every share taken and no task left to hand out (the lock is held)."""
        return self._taken == len(self._order) and self._source_done and not self._reading

    def close(self) -> None:
        """Stop the threads after the task in hand and wait for them."""
        self.stop.set()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join()


def _work(task: Task) -> int:
    """The bytes to count in a task: its text if read from a stream (whose input bytes are
    compressed, and come unevenly as the stream is read), else its input bytes."""
    return _text_held(task) if isinstance(task, Block) else task.input_bytes


def _text_held(task: Task) -> int:
    """The bytes of text a task holds (read from a stream), to be counted."""
    return len(task.data) if isinstance(task, Block) else 0
