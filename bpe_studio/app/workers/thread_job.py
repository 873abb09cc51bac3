"""A long run off the GUI thread: a worker object moved to its own `QThread`.

Adds `ThreadJob`, the part the window's jobs share (`bpe_studio.app.workers.train_job.TrainJob`,
`bpe_studio.app.workers.encode_job.EncodeJob`): it lives in the GUI thread, starts the worker's
``run`` in the thread, re-emits the worker's ``failed``/``stopped`` there, and knows whether
the run is still going. A worker is a QObject with a ``run`` slot, a thread-safe ``cancel``,
and the signals ``failed(str)`` and ``stopped(bool)`` (emitted last; ``True`` if cancelled).
Subclasses connect the worker's own signals to theirs (signal to signal: queued into the
GUI thread, since the job lives there).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, QThread, Signal, Slot


class ThreadJob(QObject):
    """One run of ``worker`` in its own thread.

    Signals:
        failed(str): the run stopped on an error; the message is for the user.
        stopped(bool): the run is over and its thread has ended; ``True`` if cancelled.
    """

    failed = Signal(str)
    stopped = Signal(bool)

    def __init__(self, worker: Any, thread_name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._thread = QThread()
        self._thread.setObjectName(thread_name)
        self._worker = worker
        worker.moveToThread(self._thread)
        self._thread.started.connect(worker.run)
        worker.failed.connect(self.failed)
        worker.stopped.connect(self._on_stopped)
        self._running = False

    @property
    def running(self) -> bool:
        """True from `start` until the worker's last signal has been handled."""
        return self._running

    def start(self) -> None:
        self._running = True
        self._thread.start()

    def cancel(self) -> None:
        """Ask the worker to stop; `stopped` follows within a moment."""
        self._worker.cancel()

    def shutdown(self, timeout_ms: int = 30_000) -> bool:
        """Cancel and block until the thread (and what the worker runs) has ended."""
        self._worker.cancel()
        self._thread.quit()
        return self._thread.wait(timeout_ms)

    @Slot(bool)
    def _on_stopped(self, cancelled: bool) -> None:
        self._thread.quit()
        self._thread.wait()
        self._running = False
        self.stopped.emit(cancelled)
