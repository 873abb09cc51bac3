"""`core.workers.scheduler`: tasks are read by a feeder thread with no lock held, so a slow
read holds back no result and no worker's bookkeeping; an error while reading reaches the
caller once, after the results before it; closing the pool stops the feeder before the
source is closed, and leaves no thread or process behind."""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Iterator, Sequence

import pytest

from core.corpus.documents import LazyTasks
from core.workers.scheduler import WorkerPool, results_in_order


class SlowSource(Sequence[int]):
    """Tasks 0..n-1 taken in order; reading ``block_at`` waits for ``release``; reading
    ``fail_at`` raises."""

    def __init__(self, n: int, block_at: int | None = None, fail_at: int | None = None) -> None:
        self.n, self.block_at, self.fail_at = n, block_at, fail_at
        self.release = threading.Event()
        self.reading_blocked = threading.Event()

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index):  # type: ignore[no-untyped-def, override]
        if index >= self.n:
            raise IndexError(index)
        if index == self.block_at:
            self.reading_blocked.set()
            assert self.release.wait(30)
        if index == self.fail_at:
            raise RuntimeError(f"cannot read task {index}")
        return index


def _times_ten(task: int, _warm: object = None) -> int:
    return task * 10


def _feeders() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "bpe-studio-feeder" and t.is_alive()]


def test_results_flow_while_a_read_blocks() -> None:
    source = SlowSource(12, block_at=5)
    pool = WorkerPool(2, threads=True)
    got: list[int] = []
    try:
        results = results_in_order(source, pool, _times_ten, poll=0.05)
        consumer = threading.Thread(target=lambda: got.extend(r for r in results if r is not None), daemon=True)
        consumer.start()
        assert source.reading_blocked.wait(10)
        deadline = time.monotonic() + 10
        while len(got) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        # every task read before the slow one came back, while the read still blocks
        assert got == [0, 10, 20, 30, 40] and not source.release.is_set()
        source.release.set()
        consumer.join(10)
        assert not consumer.is_alive()
        assert got == [10 * i for i in range(12)]
    finally:
        source.release.set()
        pool.close()
    assert _feeders() == []


@pytest.mark.parametrize("run_here", [False, True])
def test_an_error_while_reading_reaches_the_caller_once_after_the_results_before_it(run_here: bool) -> None:
    source = SlowSource(10, fail_at=3)
    pool = WorkerPool(2, threads=True)
    got: list[int] = []
    try:
        results = results_in_order(source, pool, _times_ten, run_here=_times_ten if run_here else None)
        with pytest.raises(RuntimeError, match="cannot read task 3"):
            for result in results:
                assert result is not None
                got.append(result)
    finally:
        pool.close()
    assert got == [0, 10, 20]
    assert _feeders() == []


def test_closing_the_pool_stops_the_feeder_before_the_source_is_closed() -> None:
    release = threading.Event()
    closed = []

    def blocks() -> Iterator[int]:
        try:
            for i in range(100):
                if i == 6:
                    assert release.wait(30)
                yield i
        finally:
            closed.append(True)

    stream = blocks()
    lazy: LazyTasks[int] = LazyTasks(stream, lambda task: task)
    pool = WorkerPool(2, threads=True)
    results = results_in_order(lazy, pool, _times_ten)
    assert [next(results), next(results)] == [0, 10]
    threading.Timer(0.3, release.set).start()  # the read in hand ends; the feeder reads no more
    pool.close()
    assert _feeders() == []
    stream.close()  # not "generator already executing": no thread is inside it
    assert closed == [True] and lazy.error is None


def test_worker_processes_give_every_result_in_order_and_leave_nothing_behind() -> None:
    source = SlowSource(30, block_at=7)
    threading.Timer(0.5, source.release.set).start()
    pool = WorkerPool(2, fork=True, initializer=lambda: None)
    try:
        assert [r for r in results_in_order(source, pool, _times_ten, poll=0.05) if r is not None] == [
            10 * i for i in range(30)]
    finally:
        pool.close()
    assert _feeders() == []
    assert multiprocessing.active_children() == []
