"""Training off the GUI thread: a worker in a QThread that hands event batches to the GUI.

`TrainWorker.run` first checks the settings with the core's own validation (so a missing
file or a bad pattern is reported at once), then runs the trainer in a child process
(`bpe_studio.app.workers.train_process`: the merge loop holds the GIL, which would stall the GUI) and
re-emits its event batches — at most one signal every ~50 ms, never one per merge.
Cancellation is a flag the trainer checks between events. `TrainJob` owns the thread and
the worker and is what the window uses:

    job = TrainJob(settings); job.events.connect(state.apply); job.start(); ...; job.cancel()
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Signal, Slot

from bpe_studio.app.models.session import TrainSettings
from bpe_studio.app.workers.thread_job import ThreadJob
from bpe_studio.app.workers.train_process import TrainingFailed, TrainingProcess, check_settings


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


class TrainJob(ThreadJob):
    """One training run: a `TrainWorker` in its own thread (`ThreadJob`).

    Signals:
        events(list), failed(str), stopped(bool): as `TrainWorker`'s, in the GUI thread.
    """

    events = Signal(object)

    def __init__(self, settings: TrainSettings, parent: QObject | None = None) -> None:
        super().__init__(TrainWorker(settings), "bpe-studio-training", parent)
        self.settings = settings
        self._worker.events.connect(self.events)

    @property
    def tokenizer(self) -> object | None:
        """After `stopped`: the finished run's `core.Tokenizer`, built by the training process
        (None after a cancel or a failure)."""
        return self._worker._process.tokenizer

    @property
    def process_pid(self) -> int | None:
        """The training process's id once it started (for tests and diagnostics)."""
        return self._worker._process.pid
