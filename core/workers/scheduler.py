"""The parallel chunk scheduler: chunks of a corpus run in workers (and here), results in order.

Training (counting pre-tokens) and corpus encoding both cut a file into chunks at exact
boundaries (`core.corpus.chunks`) and process them in parallel. Both use:

- `WorkerPool`: the workers — processes, or threads of this process. Forked workers
  start at once, here, sharing this process's memory (e.g. a built encoder); spawned ones
  start in a thread (sending each its start-up state blocks until it has started Python)
  without re-running the caller's script (`core.workers.processes`). A pool that cannot
  start (a process limit) leaves the work to this process. Every worker process first
  runs `core.workers.processes.prepare_worker` (signals, and ending itself should this
  process die). Worker threads start at once and cost no start-up, no copy of their
  tasks and results and no memory of their own, but run in parallel only while they are
  in code that releases the GIL (the native encoder, file reads): the caller chooses
  them for such work (`core.encode.corpus`; counting in threads has its own
  scheduler, which balances tables rather than chunks: `core.corpus.shares`).
  At most `core.workers.processes.max_workers` workers of either kind are started.
- `results_in_order`: hands the chunks to the workers and, when ``run_here`` is given, to
  this process too, whenever the next result is not ready yet — so it works from the
  first moment while spawned workers are still starting, and the results held in memory
  stay few. A feeder thread reads the tasks (a stream's next block) a few ahead, with no
  lock held; workers are given the tasks read from the pool's threads (when the pool is
  up and each time a worker finishes a chunk) and from the feeder, so a worker never
  waits for this process to finish a chunk of its own, nor a result for a slow read.
  Closing the pool (or the results) stops the feeder first: the caller may then close
  the tasks' source. An error the feeder meets is raised by the results, in order. A worker killed mid-run (by the system, for lack
  of memory) would leave its chunk's result pending for ever: while it waits, the
  scheduler looks at the workers and raises `core.errors.WorkerDiedError` instead.
"""

from __future__ import annotations

import collections
import contextlib
import multiprocessing
import multiprocessing.pool
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from core.workers.processes import max_workers, prepare_worker, spawn_pool
from core.errors import WorkerDiedError

__all__ = ["WorkerPool", "results_in_order"]

WORKER_CHECK_SECONDS = 0.25
"""While waiting for a worker's result, whether every worker is alive is checked this often."""

TASK_WAIT_SECONDS = 0.005
"""While this process waits for the feeder to read a task it could run, how often it looks
whether a worker's result came first."""

Task = TypeVar("Task")
Result = TypeVar("Result")


def _start_worker(initializer: Callable[..., None], initargs: tuple[Any, ...]) -> None:
    prepare_worker()
    initializer(*initargs)


class WorkerPool:
    """``processes`` workers (at most `max_workers`): worker processes, forked or spawned,
    each set up by ``initializer(*initargs)`` after `prepare_worker`; or, with ``threads``,
    threads of this process (no initializer: they share its state)."""

    def __init__(
        self,
        processes: int,
        *,
        fork: bool = False,
        threads: bool = False,
        initializer: Callable[..., None] | None = None,
        initargs: tuple[Any, ...] = (),
    ) -> None:
        self.processes = processes = max(1, min(processes, max_workers()))
        self.forked = fork and not threads
        self.threads = threads
        self._lock = threading.Lock()
        self._on_ready: list[Callable[[multiprocessing.pool.Pool], object]] = []
        self._pool: multiprocessing.pool.Pool | None = None
        self._thread: threading.Thread | None = None
        self._seen: list[Any] = []  # every worker process the pool has had
        self._feeders: list[Callable[[], None]] = []  # stops the feeders of the runs on this pool
        if threads:
            self._pool = multiprocessing.pool.ThreadPool(processes)
            return
        assert initializer is not None, "worker processes need an initializer"
        initializer, initargs = _start_worker, (initializer, initargs)
        if fork:  # before any thread of this process starts
            with contextlib.suppress(OSError):  # no workers (a process limit): this process does it all
                context = multiprocessing.get_context("fork")
                self._pool = context.Pool(processes, initializer, initargs)
                self._note_workers(self._pool)
        else:
            self._thread = threading.Thread(
                target=self._start, args=(initializer, initargs), name="bpe-studio-pool-start", daemon=True
            )
            self._thread.start()

    def _start(self, initializer: Callable[..., None], initargs: tuple[Any, ...]) -> None:
        try:
            pool = spawn_pool(self.processes, initializer, initargs)
        except OSError:
            return  # no workers (e.g. a process limit): this process does it all
        self._note_workers(pool)
        with self._lock:
            self._pool = pool
            callbacks = list(self._on_ready)
        for callback in callbacks:
            callback(pool)

    def _note_workers(self, pool: multiprocessing.pool.Pool) -> None:
        # the pool replaces a dead worker and forgets it: remember every one
        for worker in list(getattr(pool, "_pool", [])):
            if worker not in self._seen:
                self._seen.append(worker)

    def check_workers(self) -> None:
        """Raise `WorkerDiedError` if a worker was killed (its chunk will never come back)."""
        if self._pool is not None:
            self._note_workers(self._pool)
        for worker in self._seen:
            code = worker.exitcode
            if code is not None and code != 0:
                how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
                if code == -9:
                    how += ", most often the system stopping it for lack of memory"
                raise WorkerDiedError(
                    f"a worker process ended in the middle of the work ({how}); "
                    "try fewer workers or a smaller corpus, or free some memory"
                )

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

    @property
    def started_at_once(self) -> bool:
        """The workers were forked (or are threads) and are running: this process need not work too."""
        return (self.forked or self.threads) and self._pool is not None

    def stops(self, stop: Callable[[], None]) -> None:
        """Call ``stop()`` first when the pool is closed (a run's feeder thread)."""
        self._feeders.append(stop)

    def close(self) -> None:
        """Stop the runs' feeder threads, then the workers (waiting for the pool to have
        started, if it is starting; worker threads cannot be stopped and end the task in
        hand, a chunk's work). The caller may then close the tasks' source."""
        for stop in self._feeders:
            stop()
        if self._thread is not None:
            self._thread.join()
        if self._pool is not None:
            self._note_workers(self._pool)
            if any(worker.exitcode not in (None, 0) for worker in self._seen):
                self._abandon(self._pool)
                return
            self._pool.terminate()
            self._pool.join()

    def _abandon(self, pool: multiprocessing.pool.Pool) -> None:
        """Stop a pool one of whose workers was killed, without ``terminate``: the killed
        worker may have held a queue lock, or sent half a result, on which ``terminate``
        would wait for ever. The other workers are killed; the pool's threads are told to
        stop and the one stuck reading the half result is left (a daemon thread)."""
        with contextlib.suppress(Exception):  # the pool's internals, best effort
            pool._state = multiprocessing.pool.TERMINATE  # type: ignore[attr-defined]
            pool._terminate.cancel()  # type: ignore[attr-defined]  # no terminate at exit either
            # first stop the thread that replaces dead workers, so none starts after the kill
            pool._worker_handler._state = multiprocessing.pool.TERMINATE  # type: ignore[attr-defined]
            pool._change_notifier.put(None)  # type: ignore[attr-defined]
            pool._worker_handler.join(5)  # type: ignore[attr-defined]
            pool._task_handler._state = multiprocessing.pool.TERMINATE  # type: ignore[attr-defined]
            pool._taskqueue.put(None)  # type: ignore[attr-defined]
            pool._result_handler._state = multiprocessing.pool.TERMINATE  # type: ignore[attr-defined]
        for worker in list(getattr(pool, "_pool", [])) + self._seen:
            if worker.exitcode is None:
                worker.kill()
                worker.join(5)


class _Scheduler(Generic[Task, Result]):
    """The state of one `results_in_order` run; see the module docstring.

    Reading a task (a stream's next block) is I/O: it happens only in the feeder thread,
    with no lock held. The lock guards the bookkeeping (the tasks read ahead, the results
    pending, the workers' share), which the consumer, the pool's result-handler thread
    (each time a worker finishes) and the feeder update in a moment each."""

    def __init__(
        self,
        tasks: Sequence[Task],
        pool_task: Callable[[Task, Any], Result],
        processes: int,
        run_here: Callable[[Task], Result] | None,
        warm_up: Callable[[], Any] | None,
        check_workers: Callable[[], None],
    ) -> None:
        self._tasks = tasks
        self._pool_task = pool_task
        self._processes = processes
        self._run_here = run_here
        self._warm_up = warm_up
        self._in_flight = 4 * processes + 4
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # a task read, taken, or the run stopped
        # In order: a worker's AsyncResult, or a one-item list this process fills.
        self._pending: collections.deque[multiprocessing.pool.AsyncResult[Result] | list[Result]] = collections.deque()
        self._ready: collections.deque[Task] = collections.deque()  # read by the feeder, not yet handed out
        self._ahead = processes + 1  # tasks the feeder reads ahead of the workers
        self._ended = False  # the feeder has read every task (or failed: ``_error``)
        self._error: BaseException | None = None
        self._stopped = False
        self._feeder: threading.Thread | None = None
        self._submitted = 0  # tasks in the workers' hands
        self._warmed = 0
        self._handed = 0  # tasks handed to the workers or run here
        self._pool: multiprocessing.pool.Pool | None = None
        self._check_workers = check_workers

    def pool_ready(self, pool: multiprocessing.pool.Pool) -> None:
        """Called (in the pool's starter thread) once the workers are up."""
        with self._lock:
            self._pool = pool
            self._feed()

    def _worker_done(self, _result: object) -> None:
        with self._lock:
            self._submitted -= 1
            self._feed()

    def _feed(self) -> None:
        """Give the workers tasks already read, up to two each (the lock is held)."""
        pool = self._pool
        while (
            pool is not None
            and self._ready
            and self._submitted < 2 * self._processes
            and len(self._pending) < self._in_flight
        ):
            warm = None
            if self._warm_up is not None and self._warmed < self._processes and self._handed > 0:
                warm = self._warm_up()
                self._warmed += warm is not None
            try:
                result = pool.apply_async(
                    self._pool_task,
                    (self._ready[0], warm),
                    callback=self._worker_done,
                    error_callback=self._worker_done,
                )
            except ValueError:  # the pool is closing: the run was cancelled
                self._pool = None
                return
            self._ready.popleft()
            self._pending.append(result)
            self._handed += 1
            self._submitted += 1
            self._changed.notify_all()

    def _read_tasks(self) -> None:
        """The feeder thread: read the tasks in order, a few ahead of the workers."""
        index = 0
        try:
            while True:
                with self._lock:
                    while not self._stopped and len(self._ready) >= self._ahead:
                        self._changed.wait()
                    if self._stopped:
                        return
                try:
                    task = self._tasks[index]  # the I/O, with no lock held
                except IndexError:
                    break
                index += 1
                with self._lock:
                    self._ready.append(task)
                    self._feed()
                    self._changed.notify_all()
        except BaseException as e:  # noqa: BLE001 - raised by the consumer, in the tasks' order
            with self._lock:
                self._error = e
        finally:
            with self._lock:
                self._ended = True
                self._changed.notify_all()

    def stop(self) -> None:
        """End the feeder (after the read in hand, if any) and wait for it, so the caller may
        close the task source; hand out no more tasks."""
        with self._lock:
            self._stopped = True
            self._ready.clear()
            self._changed.notify_all()
        feeder = self._feeder
        if feeder is not None and feeder is not threading.current_thread():
            feeder.join()

    def _wait(self, head: multiprocessing.pool.AsyncResult[Result], poll: float | None) -> None:
        """Wait for ``head`` (at most ``poll`` seconds), checking that the workers live."""
        deadline = None if poll is None else time.monotonic() + poll
        while not head.ready():
            step = WORKER_CHECK_SECONDS if deadline is None else min(WORKER_CHECK_SECONDS, deadline - time.monotonic())
            if step <= 0:
                return
            head.wait(step)
            if not head.ready():
                self._check_workers()

    def results(self, poll: float | None) -> Iterator[Result | None]:
        self._feeder = threading.Thread(target=self._read_tasks, name="bpe-studio-feeder", daemon=True)
        self._feeder.start()
        try:
            yield from self._results(poll)
        finally:
            self.stop()

    def _results(self, poll: float | None) -> Iterator[Result | None]:
        quiet_since = time.monotonic()  # the last thing yielded (for ``poll``)
        while True:
            mine: list[Result] | None = None
            waited = False
            with self._lock:
                self._feed()
                if not self._pending and not self._ready and self._ended:
                    if self._error is not None:
                        raise self._error
                    return
                head = self._pending[0] if self._pending else None
                ready = isinstance(head, list) or (head is not None and head.ready())
                if ready:
                    self._pending.popleft()
                elif self._run_here is not None and self._ready and len(self._pending) < self._in_flight:
                    task = self._ready.popleft()
                    self._handed += 1
                    mine = []
                    self._pending.append(mine)
                    self._changed.notify_all()
                elif head is None:  # the next task is being read, or the pool is starting
                    self._changed.wait(WORKER_CHECK_SECONDS if poll is None else min(poll, WORKER_CHECK_SECONDS))
                    waited = True
                elif self._run_here is not None and not self._ended and len(self._pending) < self._in_flight:
                    # a task to run here is being read: wait for it (or the head result), briefly
                    self._changed.wait(TASK_WAIT_SECONDS)
                    waited = True
            if ready:
                assert head is not None
                yield head[0] if isinstance(head, list) else head.get()
                quiet_since = time.monotonic()
            elif mine is not None:
                assert self._run_here is not None
                mine.append(self._run_here(task))
            elif waited:
                if head is not None and not isinstance(head, list) and not head.ready():
                    self._check_workers()
                if poll is not None and time.monotonic() - quiet_since >= poll:
                    yield None
                    quiet_since = time.monotonic()
            elif head is not None and not isinstance(head, list):
                self._wait(head, poll)
                if poll is not None and not head.ready():
                    yield None
                    quiet_since = time.monotonic()


def results_in_order(
    tasks: Sequence[Task],
    pool: WorkerPool,
    pool_task: Callable[[Task, Any], Result],
    *,
    run_here: Callable[[Task], Result] | None = None,
    warm_up: Callable[[], Any] | None = None,
    poll: float | None = None,
) -> Iterator[Result | None]:
    """The result of each task, in the tasks' order, computed by ``pool``'s workers and,
    with ``run_here``, by this process too.

    Args:
        pool_task: a module-level function ``(task, warm) -> result`` run in a worker;
            ``warm`` is ``None`` except for the first tasks handed to the workers, which get
            ``warm_up()`` (e.g. this process's caches, so no work is done twice).
        run_here: ``task -> result`` in this process (``None``: only the workers work).
        poll: when a worker's result is awaited longer than this many seconds, ``None`` is
            yielded (so the consumer can report progress or be closed); with ``None``, the
            wait is unbounded and only results are yielded.
    """
    scheduler: _Scheduler[Task, Result] = _Scheduler(
        tasks, pool_task, pool.processes, run_here, warm_up, pool.check_workers
    )
    pool.when_ready(scheduler.pool_ready)
    pool.stops(scheduler.stop)
    return scheduler.results(poll)
