"""The one background-work pattern: `ThreadJob` runs a generator in a worker thread.

Each yield is a signal (throttled on request), the return value is `returned`, any
exception is `failed` with one line for the user, `stopped` comes last; a cancel stops the
generator between yields and closes it in the worker thread. `LatestJob` delivers only the
newest request's outcome.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from bpe_studio.app.workers.thread_job import Cancelled, LatestJob, ThreadJob, failure_message  # noqa: E402
from core.errors import OptionsError  # noqa: E402

MAIN = threading.get_ident()


def record(job: ThreadJob) -> list[tuple[str, object]]:
    """Every signal of ``job``, in the order the GUI thread got them."""
    seen: list[tuple[str, object]] = []
    job.yielded.connect(lambda v: seen.append(("yielded", v)))
    job.returned.connect(lambda v: seen.append(("returned", v)))
    job.failed.connect(lambda m: seen.append(("failed", m)))
    job.stopped.connect(lambda c: seen.append(("stopped", c)))
    return seen


def run(qtbot, job: ThreadJob, timeout: int = 10_000) -> list[tuple[str, object]]:
    seen = record(job)
    with qtbot.waitSignal(job.stopped, timeout=timeout):
        job.start()
    assert not job.running and job._thread.isFinished()
    return seen


def test_each_yield_is_a_signal_then_the_result_then_stopped(qtbot) -> None:
    threads: set[int] = set()

    def count(n: int):
        for i in range(n):
            threads.add(threading.get_ident())
            yield i
        return f"counted {n}"

    seen = run(qtbot, ThreadJob(count, 4, what="counting"))
    assert seen == [("yielded", 0), ("yielded", 1), ("yielded", 2), ("yielded", 3),
                    ("returned", "counted 4"), ("stopped", False)]
    assert threads and MAIN not in threads  # the work ran in the worker thread


def test_a_started_job_makes_background_threads_give_the_gil_back_within_a_tenth_of_a_millisecond(qtbot) -> None:
    """The GUI thread takes the GIL back inside nearly every Qt call while it paints: with
    Python's 5 ms (or even 1 ms) switch interval, a busy job turned 10 ms of painting into
    50-120 ms (tests/benchmarks/bench_gui_stalls.py)."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    try:
        run(qtbot, ThreadJob(lambda: None))
        assert sys.getswitchinterval() <= 0.0001
    finally:
        sys.setswitchinterval(before)


def test_a_plain_function_is_one_step(qtbot) -> None:
    seen = run(qtbot, ThreadJob(lambda a, b: (a + b, threading.get_ident()), 2, 3))
    (kind, (value, thread)), stopped = seen
    assert (kind, value, stopped) == ("returned", 5, ("stopped", False))
    assert thread != MAIN


def test_yields_are_throttled_and_the_last_one_always_goes_out(qtbot) -> None:
    took: list[float] = []

    def fast():
        start = time.monotonic()
        for i in range(2000):
            time.sleep(0.0002)
            yield i
        took.append(time.monotonic() - start)

    seen = run(qtbot, ThreadJob(fast, interval_ms=100))
    values = [v for kind, v in seen if kind == "yielded"]
    assert values[0] == 0 and values[-1] == 1999  # the first at once, the last at the end
    assert len(values) <= took[0] / 0.1 + 2  # one per 100 ms (a handful), not 2000
    assert values == sorted(values)
    assert seen[-2:] == [("returned", None), ("stopped", False)]


def test_cancel_closes_the_generator_in_the_worker_thread(qtbot) -> None:
    cleanup: list[int] = []
    after_cancel = threading.Event()

    def endless():
        try:
            i = 0
            while True:
                yield i
                i += 1
                time.sleep(0.005)
                if i > 2_000:
                    after_cancel.set()  # never reached: the job stops at the next yield
        finally:
            cleanup.append(threading.get_ident())  # e.g. stop worker processes, remove files

    job = ThreadJob(endless, what="looping")
    seen = record(job)
    job.yielded.connect(lambda v: job.cancel() if v == 3 else None)
    job.stopped.connect(lambda _c: seen.append(("cleaned up before stopped", bool(cleanup))))
    with qtbot.waitSignal(job.stopped, timeout=10_000) as stopped:
        job.start()
    assert stopped.args == [True]
    assert len(cleanup) == 1 and cleanup[0] != MAIN  # its `finally` ran once, in the worker thread
    assert ("cleaned up before stopped", True) in seen
    assert not any(kind in ("returned", "failed") for kind, _ in seen)
    assert not after_cancel.is_set()


def test_cancel_before_start_runs_nothing(qtbot) -> None:
    ran: list[bool] = []
    job = ThreadJob(lambda: ran.append(True))
    job.cancel()
    assert run(qtbot, job) == [("stopped", True)]
    assert ran == []


@pytest.mark.parametrize(
    "error, message",
    [
        (KeyError("x"), "counting failed unexpectedly (KeyError: 'x')"),
        (RuntimeError("bad\n  state"), "counting failed unexpectedly (RuntimeError: bad state)"),
        (ZeroDivisionError(), "counting failed unexpectedly (ZeroDivisionError)"),
    ],
)
def test_an_unexpected_error_becomes_failed_then_stopped(qtbot, caplog, error, message) -> None:
    cleanup: list[bool] = []

    def broken():
        try:
            yield 1
            raise error
        finally:
            cleanup.append(True)

    with caplog.at_level(logging.ERROR, logger="bpe_studio.app.workers.thread_job"):
        seen = run(qtbot, ThreadJob(broken, what="counting"))
    assert seen == [("yielded", 1), ("failed", message), ("stopped", False)]
    assert cleanup == [True]
    # The traceback is in the log, not in the message.
    assert any(r.exc_info and r.exc_info[1] is error for r in caplog.records)


def test_user_errors_are_shown_as_they_are(qtbot, caplog) -> None:
    def missing():
        raise FileNotFoundError("corpus.txt not found: check the path")

    seen = run(qtbot, ThreadJob(missing, what="encoding"))
    assert seen == [("failed", "corpus.txt not found: check the path"), ("stopped", False)]
    assert not caplog.records  # not a bug: nothing logged
    assert failure_message(OptionsError("vocabulary too\nsmall"), "training") == "vocabulary too small"


def test_a_plain_value_error_is_a_bug_not_the_users_mistake(caplog) -> None:
    """Issue 39: only `core.errors`' types (and files' OSError) are the user's mistake."""
    error = ValueError("min() arg is an empty sequence")
    assert failure_message(error, "training") == ("training failed unexpectedly "
                                                  "(ValueError: min() arg is an empty sequence)")
    assert any(r.exc_info and r.exc_info[1] is error for r in caplog.records)


def test_work_that_raises_cancelled_stops_as_cancelled(qtbot) -> None:
    def cut_short():
        yield "a batch"
        raise Cancelled

    assert run(qtbot, ThreadJob(cut_short)) == [("yielded", "a batch"), ("stopped", True)]


def test_shutdown_waits_for_the_clean_up(qtbot) -> None:
    cleaned = threading.Event()
    started = threading.Event()

    def slow():
        try:
            while True:
                started.set()
                yield
                time.sleep(0.01)
        finally:
            time.sleep(0.1)
            cleaned.set()

    job = ThreadJob(slow)
    job.start()
    assert started.wait(5)
    assert job.shutdown(5_000)
    assert cleaned.is_set() and job._thread.isFinished()
    with qtbot.waitSignal(job.stopped, timeout=5_000) as stopped:
        pass  # still delivered once the GUI thread gets to it
    assert stopped.args == [True]


def test_a_newer_request_supersedes_an_older_one(qtbot) -> None:
    latest = LatestJob("looking up", name="test-latest")
    got: list[object] = []
    latest.returned.connect(got.append)
    latest.failed.connect(lambda m: got.append(("failed", m)))
    gate = threading.Event()

    def slow(value: str, fail: bool):
        gate.wait(5)
        if fail:
            raise KeyError(value)
        return value

    old = latest.start(slow, "old", False)
    older_failing = latest.start(slow, "older", True)
    assert latest.generation == 2
    with qtbot.waitSignal(latest.returned, timeout=5_000):
        gate.set()
        new = latest.start(lambda: "new")
    for job in (old, older_failing, new):
        if job.running:
            qtbot.waitSignal(job.stopped, timeout=5_000).wait()
    qtbot.wait(50)  # anything still queued from the superseded requests arrives now
    assert got == ["new"]
    assert not latest.running


def test_latest_job_cancel_drops_the_pending_result(qtbot) -> None:
    latest = LatestJob("looking up", name="test-latest")
    got: list[object] = []
    latest.returned.connect(got.append)
    job = latest.start(lambda: "late")
    latest.cancel()
    qtbot.waitUntil(lambda: not job.running, timeout=5_000)
    assert latest.shutdown(1_000)
    qtbot.wait(20)
    assert got == []


def test_a_job_nobody_holds_runs_to_its_end_and_is_let_go(qtbot) -> None:
    import gc
    import weakref

    from bpe_studio.app.workers import thread_job

    got: list[object] = []
    job = ThreadJob(lambda: "kept alive")
    job.returned.connect(got.append)
    job.start()
    ref = weakref.ref(job)
    del job  # its owner let go: the job (and its thread) lives until it has stopped
    qtbot.waitUntil(lambda: got == ["kept alive"], timeout=5_000)
    qtbot.waitUntil(lambda: ref() not in thread_job._live, timeout=5_000)
    gc.collect()
    assert ref() is None
