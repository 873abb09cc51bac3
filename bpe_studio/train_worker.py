"""Training off the GUI thread: a worker in a QThread that hands event batches to the GUI.

`TrainWorker.run` first checks the settings with the core's own validation (so a missing
file or a bad pattern is reported at once), then runs the trainer in a child process
(`bpe_studio.train_process`: the merge loop holds the GIL, which would stall the GUI) and
re-emits its event batches — at most one signal every ~50 ms, never one per merge.
Cancellation is a flag the trainer checks between events. `TrainJob` owns the thread and
the worker and is what the window uses:

    job = TrainJob(settings); job.events.connect(state.apply); job.start(); ...; job.cancel()
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, QThread, Signal, Slot

from bpe_studio.session import TrainSettings
from bpe_studio.train_process import TrainingFailed, TrainingProcess, check_settings


class TrainWorker(QObject):
    """Follows one training run from a worker thread.

    Signals:
        events(list): a batch of core events, in order.
        failed(str): training stopped on an error; the message is for the user.
        stopped(bool): the run is over (emitted last); ``True`` if it was cancelled.
    """

    events = Signal(object)
    failed = Signal(str)
    stopped = Signal(bool)

    def __init__(self, settings: TrainSettings) -> None:
        super().__init__()
        self._settings = settings
        self._process = TrainingProcess(settings)
        self._cancel = threading.Event()

    def cancel(self) -> None:
        """Ask the run to stop at the trainer's next event (thread-safe)."""
        self._cancel.set()
        self._process.cancel()

    @Slot()
    def run(self) -> None:
        cancelled = False
        try:
            check_settings(self._settings)
            if self._cancel.is_set():
                cancelled = True
                return
            self._process.start()
            for batch in self._process.batches():
                self.events.emit(batch)
            cancelled = self._process.cancelled
        except (ValueError, OSError) as e:  # the core's user errors: the message says what to do
            self.failed.emit(str(e))
        except TrainingFailed as e:
            self.failed.emit(str(e))
        finally:
            self._process.stop()
            self.stopped.emit(cancelled)


class TrainJob(QObject):
    """One training run: a `TrainWorker` moved to its own `QThread`.

    Lives in the GUI thread; its signals are emitted there (re-emitting the worker's).

    Signals:
        events(list), failed(str), stopped(bool): as `TrainWorker`'s.
    """

    events = Signal(object)
    failed = Signal(str)
    stopped = Signal(bool)

    def __init__(self, settings: TrainSettings, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self._thread = QThread()
        self._thread.setObjectName("bpe-studio-training")
        self._worker = TrainWorker(settings)
        self._worker.moveToThread(self._thread)
        self._thread.started.connect(self._worker.run)
        # Queued into this (GUI-thread) object, then re-emitted here.
        self._worker.events.connect(self._on_events)
        self._worker.failed.connect(self._on_failed)
        self._worker.stopped.connect(self._on_stopped)
        self._running = False

    @property
    def running(self) -> bool:
        """True from `start` until the worker's last signal has been handled."""
        return self._running

    @property
    def tokenizer(self) -> object | None:
        """After `stopped`: the finished run's `core.Tokenizer`, built by the training process
        (None after a cancel or a failure)."""
        return self._worker._process.tokenizer

    @property
    def process_pid(self) -> int | None:
        """The training process's id once it started (for tests and diagnostics)."""
        return self._worker._process.pid

    def start(self) -> None:
        self._running = True
        self._thread.start()

    def cancel(self) -> None:
        """Ask the worker to stop; `stopped` follows within a moment."""
        self._worker.cancel()

    def shutdown(self, timeout_ms: int = 30_000) -> bool:
        """Cancel and block until the thread and the training process have ended."""
        self._worker.cancel()
        self._thread.quit()
        return self._thread.wait(timeout_ms)

    @Slot(object)
    def _on_events(self, batch: list[object]) -> None:
        self.events.emit(batch)

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self.failed.emit(message)

    @Slot(bool)
    def _on_stopped(self, cancelled: bool) -> None:
        self._thread.quit()
        self._thread.wait()
        self._running = False
        self.stopped.emit(cancelled)
