"""The one way the window runs work off the GUI thread: a generator run by a worker thread.

Adds `ThreadJob` (napari/superqt's pattern). The work is a generator function (or a plain
function: one step) called with the job's arguments in a worker `QThread`:

- each ``yield`` becomes a `ThreadJob.yielded` signal in the GUI thread, at most one per
  ``interval_ms`` when the job asks for it (the latest value held back goes out at the end);
- `ThreadJob.cancel` sets a thread-safe flag checked between yields; the generator is then
  closed *in the worker thread*, so its ``finally`` clean-up (stopping processes, removing
  temporary files) runs there, before the job reports that it stopped;
- the generator's ``return`` value (a plain function's result) becomes `ThreadJob.returned`;
- *any* exception becomes `ThreadJob.failed` with one line for the user: a user error
  (`ValueError`/`OSError`) says what to do as it is, anything else reads "encoding failed
  unexpectedly (KeyError: 'x')" and its traceback goes to the log;
- `ThreadJob.stopped` comes last, once the thread has ended (``True`` if cancelled).

`LatestJob` runs requests where a newer one supersedes an older one (the inspector's text,
the tokenizer being shown): only the latest request's result or error is delivered.

    def count(n):                                  # runs in the worker thread
        for i in range(n):
            yield i                                # -> yielded(i), throttled
        return "done"                              # -> returned("done")

    job = ThreadJob(count, 10, what="counting", interval_ms=100)
    job.yielded.connect(bar.setValue); job.returned.connect(print)
    job.failed.connect(banner.show_error); job.stopped.connect(on_stopped)
    job.start(); ...; job.cancel()                 # shutdown() at window close: cancel and wait
"""

from __future__ import annotations

import atexit
import inspect
import logging
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from PySide6.QtCore import QObject, Qt, QThread, QTimer, Signal, Slot

from core.errors import BpeStudioError
from core.steps import run_steps

USER_ERRORS: tuple[type[BaseException], ...] = (BpeStudioError, OSError)
"""Errors whose message is for the user (`core.errors`' types, files): shown as they are."""

log = logging.getLogger(__name__)

_NOTHING = object()
_live: set[ThreadJob] = set()  # started jobs, kept alive (with their thread) until they stop


GIL_SWITCH_SECONDS = 0.00005
"""How long a background thread keeps the GIL while the GUI thread waits for it (Python's
default is 5 ms; see `give_the_gil_back_sooner`)."""


def give_the_gil_back_sooner() -> None:
    """Make Python threads hand the GIL over after 50 µs instead of 5 ms (for the whole process).

    While a job's pure-Python work runs (building a vocabulary's columns), every Python call
    the GUI thread makes — each slot, each table cell's ``data()`` while painting — first waits
    for the worker to give the GIL up, up to the switch interval each time, and the GUI thread
    gives it up again inside nearly every Qt call, so a short repaint stretches many times
    over. The worker is not measurably slower: the hand-overs happen only while the GUI thread
    asks for the GIL (see docs/benchmarks.md, `bench_gui_stalls.py`).
    """
    if sys.getswitchinterval() > GIL_SWITCH_SECONDS:
        sys.setswitchinterval(GIL_SWITCH_SECONDS)


class Cancelled(Exception):
    """Raised by work that stopped early because it was asked to (e.g. a child process that
    got the cancel first): the job then stops as cancelled, neither returned nor failed."""


def one_line(error: BaseException) -> str:
    """The error's message on one line (its type's name if it has none)."""
    return " ".join(str(error).split()) or type(error).__name__


def failure_message(error: BaseException, what: str, user_errors: tuple[type[BaseException], ...] = USER_ERRORS) -> str:
    """The line a user sees for ``error`` raised while doing ``what`` (e.g. "encoding").

    A user error's message as it is; anything else is a bug: named, and logged with its
    traceback. Example: ``KeyError('x')`` while "encoding" -> "encoding failed
    unexpectedly (KeyError: 'x')".
    """
    if isinstance(error, user_errors):
        return one_line(error)
    log.error("%s failed unexpectedly", what, exc_info=error)
    detail = type(error).__name__ + (f": {one_line(error)}" if str(error) else "")
    return f"{what} failed unexpectedly ({detail})"


class _Runner(QThread):
    """The worker thread: runs the work in `run` (no event loop) and reports by signals."""

    yielded = Signal(object)
    returned = Signal(object)
    failed = Signal(str)
    ended = Signal(bool)  # last; True if cancelled

    def __init__(
        self,
        work: Callable[..., Any],
        args: tuple[Any, ...],
        cancel: threading.Event,
        interval: float,
        describe: Callable[[BaseException], str],
    ) -> None:
        super().__init__()
        self._work: Callable[..., Any] | None = work
        self._args: tuple[Any, ...] | None = args
        self._cancel = cancel
        self._interval = interval
        self._describe = describe
        self._cancelled = False

    def run(self) -> None:
        try:
            if self._cancel.is_set():
                self._cancelled = True
                return
            assert self._work is not None and self._args is not None
            out = self._work(*self._args)
            if inspect.isgenerator(out):
                self._follow(out)
            else:
                self.returned.emit(out)
        except Cancelled:
            self._cancelled = True
        except Exception as e:  # noqa: BLE001 - every failure is reported, never lost with the thread
            self.failed.emit(self._describe(e))
        finally:
            self._work = self._args = None  # a stopped job keeps no (large) arguments alive
            self.ended.emit(self._cancelled)

    def _follow(self, generator: Any) -> None:
        """Run ``generator`` to its end, or until a cancel seen between two yields."""
        held: object = _NOTHING
        last = float("-inf")

        def step(value: object) -> None:
            nonlocal held, last
            if self._cancel.is_set():
                raise Cancelled
            now = time.monotonic()
            if now - last >= self._interval:
                self.yielded.emit(value)
                held, last = _NOTHING, now
            else:
                held = value

        # (run_steps closes the generator here, in the worker thread: its `finally` runs before `ended`)
        result = run_steps(generator, step)
        if held is not _NOTHING:
            self.yielded.emit(held)  # the last figures are always shown
        self.returned.emit(result)


class ThreadJob(QObject):
    """One run of ``work(*args)`` in its own worker thread.

    Args:
        work: a generator function (each yield a `yielded` signal, its return value
            `returned`) or a plain function (its result `returned`); runs in the thread.
        *args: its arguments.
        what: what the work does, for unexpected-error messages ("encoding").
        name: the thread's name (shown by debuggers and ``ps -L``).
        interval_ms: at most one `yielded` every this many milliseconds (0: every yield).
        user_errors: exception types whose message is shown as it is.
        failure_prefix: put before a user error's message ("Export failed: "), so the
            line says what failed.

    Signals (all in the GUI thread):
        yielded(object): a value the work yielded.
        returned(object): the work's result; it completed.
        failed(str): the work raised; one line for the user.
        stopped(bool): last, after the thread has ended; ``True`` if cancelled.
    """

    yielded = Signal(object)
    returned = Signal(object)
    failed = Signal(str)
    stopped = Signal(bool)

    def __init__(
        self,
        work: Callable[..., Any],
        *args: Any,
        what: str = "the work",
        name: str = "bpe-studio-job",
        interval_ms: int = 0,
        user_errors: tuple[type[BaseException], ...] = USER_ERRORS,
        failure_prefix: str = "",
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.what = what
        self.user_errors = tuple(user_errors)
        self.failure_prefix = failure_prefix
        self._cancel = threading.Event()
        self._running = False
        self._thread = _Runner(work, args, self._cancel, interval_ms / 1000, self.describe_failure)
        self._thread.setObjectName(name)
        queued = Qt.ConnectionType.QueuedConnection  # emitted in the worker thread, delivered here
        self._thread.yielded.connect(self.yielded, queued)
        self._thread.returned.connect(self.returned, queued)
        self._thread.failed.connect(self.failed, queued)
        self._thread.ended.connect(self._on_ended, queued)

    @property
    def running(self) -> bool:
        """True from `start` until `stopped` is emitted."""
        return self._running

    def start(self) -> None:
        if self._running or self._thread.isFinished():
            raise RuntimeError("a ThreadJob runs once; make a new one")
        _live.add(self)  # alive until stopped even if its owner lets go of it first
        self._running = True
        give_the_gil_back_sooner()
        self._thread.start()

    def cancel(self) -> None:
        """Ask the work to stop at its next yield (thread-safe); `stopped(True)` follows."""
        self._cancel.set()

    def shutdown(self, timeout_ms: int = 30_000) -> bool:
        """Cancel and block until the thread (and the generator's clean-up) has ended.

        Returns False if it was still running after ``timeout_ms``.
        """
        self.cancel()
        return bool(self._thread.wait(timeout_ms))

    def describe_failure(self, error: BaseException) -> str:
        """The `failed` message for ``error`` (called in the worker thread; see `failure_message`)."""
        message = failure_message(error, self.what, self.user_errors)
        return self.failure_prefix + message if isinstance(error, self.user_errors) else message

    @Slot(bool)
    def _on_ended(self, cancelled: bool) -> None:
        self._thread.wait()  # `ended` is its last act: returns at once
        self._running = False
        self.stopped.emit(cancelled)
        # Let go of it from the event loop, not here: if that were the last reference, the
        # job would be deleted while Qt is still delivering this call to it.
        QTimer.singleShot(0, partial(_live.discard, self))


class OneJobAtATime(QObject):
    """A controller that runs one short `ThreadJob` at a time (an export, a session save).

    Its writers are atomic, so a job is never cancelled half-way: `cancel` does nothing and
    `shutdown` (the window closing) waits for it.

    Signals:
        failed(str): the job could not start or failed (one line for the user).
    """

    failed = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.job: ThreadJob | None = None

    @property
    def busy(self) -> bool:
        return self.job is not None and self.job.running

    def _start(self, job: ThreadJob, done: Callable[[Any], object]) -> ThreadJob:
        """Start ``job``: ``done(result)`` when it returns, `failed` when it fails."""
        job.returned.connect(done)
        job.failed.connect(self.failed)
        self.job = job
        job.start()
        return job

    def cancel(self) -> None:
        """Nothing to do: the job is short and atomic; closing waits for it."""

    def shutdown(self, timeout_ms: int = 30_000) -> bool:
        """Wait for the job being run (the window is closing)."""
        return bool(self.job.shutdown(timeout_ms)) if self.job is not None else True


class LatestJob(QObject):
    """Runs requests of one kind where a newer request supersedes an older one.

    `start` cancels the previous request and disconnects it: whatever it still yields,
    returns or raises is never delivered (its thread ends on its own). Only the latest
    request's `returned` or `failed` comes out of this object.

    Args:
        what, name: as `ThreadJob`'s.

    Signals:
        returned(object), failed(str): the latest request's, in the GUI thread.
    """

    returned = Signal(object)
    failed = Signal(str)

    def __init__(self, what: str, *, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._what = what
        self._name = name
        self._job: ThreadJob | None = None
        self._jobs: list[ThreadJob] = []  # every request still running, superseded ones too
        self.generation = 0
        """How many requests were made (the latest one's number)."""

    @property
    def running(self) -> bool:
        """True while the latest request runs."""
        return self._job is not None and self._job.running

    @property
    def busy(self) -> bool:
        """True while any request's thread runs, superseded ones included."""
        return any(job.running for job in self._jobs)

    def start(self, work: Callable[..., Any], *args: Any) -> ThreadJob:
        """Run ``work(*args)`` as the latest request (see `ThreadJob` for ``work``)."""
        self.cancel()
        self.generation += 1
        job = ThreadJob(work, *args, what=self._what, name=self._name)
        # Signal to signal, both in the GUI thread: once disconnected in `cancel`, nothing
        # of this request can come out, even if its result is already queued.
        job.returned.connect(self.returned)
        job.failed.connect(self.failed)
        self._jobs = [j for j in self._jobs if j.running] + [job]
        self._job = job
        job.start()
        return job

    def cancel(self) -> None:
        """Cancel the latest request; nothing of it is delivered."""
        job, self._job = self._job, None
        if job is not None:
            job.returned.disconnect(self.returned)
            job.failed.disconnect(self.failed)
            job.cancel()

    def shutdown(self, timeout_ms: int = 30_000) -> bool:
        """Cancel, and wait for every request's thread to end (the window is closing)."""
        self.cancel()
        deadline = time.monotonic() + timeout_ms / 1000
        done = True
        for job in self._jobs:
            done = job.shutdown(max(0, int((deadline - time.monotonic()) * 1000))) and done
        return done


@atexit.register
def _wait_for_live_jobs() -> None:
    """At exit, stop jobs nobody shut down: a QThread destroyed while running aborts Python."""
    for job in list(_live):
        try:
            job.shutdown(10_000)
        except RuntimeError:  # its Qt object is already gone
            pass
