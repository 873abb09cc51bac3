"""`ShareCounter` reads no task under its lock: while one thread is held up reading the
corpus (a slow stream, a disk that stalls), the others record what they counted and the
consumer takes the finished shares; and it keeps no share's table once its counts are taken."""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Iterator

from core.corpus.documents import LazyTasks, Task, Texts
from core.corpus.shares import ShareCounter, ShareCounts
from core.pretokenize.counting import ChunkCounts
from core.pretokenize.patterns import resolve_pattern

MB = 1 << 20


class _Tally:
    """Stands for a native table: remembers the tasks counted into it."""

    def __init__(self) -> None:
        self.tasks: list[int] = []

    def chunk(self) -> ChunkCounts:
        return ChunkCounts(None, None, 0)


def test_a_thread_reading_the_corpus_holds_no_one_up() -> None:
    release = threading.Event()
    released_at: list[float] = []

    def tasks() -> Iterator[Task]:
        yield Texts(["a"], 0, MB)
        yield Texts(["b"], 1, MB)
        # the next read stalls (at most 20 s, so the old code ends too)
        release.wait(20)
        released_at.append(time.monotonic())
        for i in range(2, 6):
            yield Texts([str(i)], i, MB)

    counted: list[int] = []

    def count(task: Task, tally: object) -> tuple[int, int]:
        assert isinstance(task, Texts)
        counted.append(task.first_index)
        return 1, 1

    lazy: LazyTasks[object] = LazyTasks(tasks(), lambda t: t)
    counter = ShareCounter(lazy, count, _Tally, threads=2, total=2 * MB, chain=False,  # type: ignore[arg-type]
                           pattern=resolve_pattern("gpt2"), specials=[])
    first: ShareCounts | None = None
    got: list[ShareCounts] = []
    started = time.monotonic()
    for result in counter.results(0.02):
        if result is None:
            if first is None and time.monotonic() - started > 30:
                break
            continue
        if first is None:
            first = result
            first_at = time.monotonic()
            release.set()
        got.append(result)
    assert first is not None
    # the first share came while the other thread was still stuck reading
    assert released_at and first_at <= released_at[0], "the first share waited for the stalled read"
    assert first_at - started < 5
    assert [t.first_index for share in got for t in share.tasks] == list(range(6))  # type: ignore[union-attr]
    assert sorted(counted) == list(range(6))


def test_a_taken_shares_table_is_let_go() -> None:
    # the consumer adds each share's table into its own: kept by the counter too, every
    # table of the corpus was alive at the end of counting (1 GB of web text: 1090 MB, not 570)
    alive: weakref.WeakSet[_Tally] = weakref.WeakSet()

    def new_tally() -> _Tally:
        tally = _Tally()
        alive.add(tally)
        return tally

    tasks = [Texts([str(i)], i, MB) for i in range(8)]
    lazy: LazyTasks[object] = LazyTasks(iter(tasks), lambda t: t)
    counter = ShareCounter(lazy, lambda task, tally: (1, 1), new_tally,  # type: ignore[arg-type]
                           threads=2, total=8 * MB, chain=False, pattern=resolve_pattern("gpt2"), specials=[])
    made = 0
    for result in counter.results(0.02):
        if result is not None:
            made = max(made, len(alive))
            del result
    gc.collect()
    assert made >= 1 and len(alive) == 0
