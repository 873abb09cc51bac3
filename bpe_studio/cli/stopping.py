"""SIGTERM and SIGHUP stop a command the way Ctrl+C does: cleanly.

``kill``, ``timeout`` and job schedulers send SIGTERM; closing a terminal sends SIGHUP.
By default either ends Python at once, skipping every ``finally``: the worker processes
would be left running and a half-written temporary file left behind. While a command
runs, `stop_signals_raise` turns them into `Stopped` (a ``KeyboardInterrupt``), so the
same clean-up as for Ctrl+C runs: workers stopped, temporary files removed, the old
output untouched. A second signal during that clean-up is ignored, so it cannot cut it
short.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["STOP_SIGNALS", "Stopped", "stop_signals_raise"]

STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Stopped(KeyboardInterrupt):
    """The command was asked to stop by a signal (``signum``)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


_owner = 0  # the process that installed the handler


def _raise_stopped(signum: int, _frame: FrameType | None) -> None:
    if os.getpid() != _owner:
        # a forked worker that has not yet reset its signals: end as the signal asks, quietly
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    for other in STOP_SIGNALS:  # let the clean-up finish
        signal.signal(other, signal.SIG_IGN)
    raise Stopped(signum)


@contextlib.contextmanager
def stop_signals_raise() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise `Stopped` in the main thread (called from
    another thread, where signals cannot be handled, it changes nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    global _owner
    _owner = os.getpid()
    previous = {signum: signal.signal(signum, _raise_stopped) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
