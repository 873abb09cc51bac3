"""Closing without freezing: cancel what runs, let atomic writes finish, close when all is idle.

Adds `CloseGuard`. Given the window's pieces of work — each a name, a "busy?" test and a
cancel — `request` cancels them all and says what still runs; the guard then polls (every
`POLL_MS`) and emits `idle` once nothing does, so the window can close itself then. Waiting
in the close itself for a training process to stop would freeze the window. An
export or a session being written is not cancelled: its writer is atomic and short.

    guard = CloseGuard([("the training", training.busy_now, training.cancel), ...])
    guard.idle.connect(window.close)
    if guard.request(): event.ignore()        # "the training": wait for `idle`
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

POLL_MS = 50

Work = tuple[str, Callable[[], bool], Callable[[], object]]
"""(what it is, for the message; is it running?; cancel it)."""


class CloseGuard(QObject):
    """Stops the window's work before it closes.

    Signals:
        idle(): nothing runs any more (after a `request` found work running).
    """

    idle = Signal()

    def __init__(self, work: Sequence[Work], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._work = list(work)
        self._timer: QTimer | None = None

    @property
    def waiting(self) -> bool:
        """True from a request that found work running until `idle`."""
        return self._timer is not None

    def busy(self) -> str:
        """The first piece of work still running ("" if none)."""
        return next((what for what, running, _cancel in self._work if running()), "")

    def request(self) -> str:
        """Cancel every piece of work; returns what still runs ("" if nothing: close now)."""
        for _what, _running, cancel in self._work:
            cancel()
        what = self.busy()
        if what and self._timer is None:
            self._timer = QTimer(self)
            self._timer.setInterval(POLL_MS)
            self._timer.timeout.connect(self._poll)
            self._timer.start()
        return what

    def _poll(self) -> None:
        if not self.busy() and self._timer is not None:
            self._timer.stop()
            self.idle.emit()


def window_work(training: Any, encoding: Any, exports: Any, sessions: Any,
                background: Callable[[], Sequence[Any]]) -> list[Work]:
    """What closing the window waits for: the training and the encoding are cancelled; an
    export or a session being written and the ``background`` renderings (`LatestJob`s) end."""
    return [
        ("the training", lambda: training.running, training.cancel),
        ("the encoding", lambda: encoding.running, encoding.cancel),
        ("the export", lambda: exports.busy, exports.cancel),
        ("saving the session", lambda: sessions.busy, sessions.cancel),
        ("background work", lambda: any(job.busy for job in background()),
         lambda: [job.cancel() for job in background()]),
    ]

