"""Running the core trainer off the GUI thread: a worker in a QThread that emits event batches.

`TrainWorker.run` iterates ``core.train_bpe_events`` in its own thread, checks a
cancellation flag between events, and hands the events to the GUI thread in batches — at
most one signal every ~50 ms (a run makes thousands of merges a second; one signal per
merge would flood the event loop). Closing the event generator stops the trainer and its
worker processes. `TrainJob` owns the thread and the worker and is what the window uses:

    job = TrainJob(settings); job.events.connect(state.apply); job.start(); ...; job.cancel()
"""

from __future__ import annotations

import logging
import threading
import time

from PySide6.QtCore import QObject, QThread, Signal, Slot

import core
from bpe_studio.session import TrainSettings
from core.events import CountingDone, Finished

BATCH_SECONDS = 0.05
"""Events are held back at most this long before being handed to the GUI thread."""

log = logging.getLogger(__name__)


class TrainWorker(QObject):
    """Iterates the trainer's events in a worker thread.

    Signals:
        events(list): a batch of events, in order.
        failed(str): training stopped on an error; the message is for the user.
        stopped(bool): the run is over (emitted last); ``True`` if it was cancelled.
    """

    events = Signal(object)
    failed = Signal(str)
    stopped = Signal(bool)

    def __init__(self, settings: TrainSettings) -> None:
        super().__init__()
        self._settings = settings
        self._cancel = threading.Event()

    def cancel(self) -> None:
        """Ask the run to stop at the next event (thread-safe)."""
        self._cancel.set()

    @Slot()
    def run(self) -> None:
        s = self._settings
        cancelled = False
        try:
            stream = core.train_bpe_events(
                s.corpus, s.vocab_size, list(s.special_tokens), pattern=s.pattern, workers=s.workers
            )
            batch: list[object] = []
            try:
                last = time.monotonic()
                for event in stream:
                    batch.append(event)
                    if self._cancel.is_set():
                        cancelled = True
                        break
                    now = time.monotonic()
                    # Counting and the end are rare and change the view: hand them over now.
                    if now - last >= BATCH_SECONDS or isinstance(event, (CountingDone, Finished)):
                        self.events.emit(batch)
                        batch, last = [], now
            finally:
                stream.close()  # stops the trainer's worker processes at once
            if batch:
                self.events.emit(batch)
        except (ValueError, OSError) as e:  # the core's user errors: the message says what to do
            self.failed.emit(str(e))
        except MemoryError:
            self.failed.emit("training ran out of memory; try a smaller corpus or vocabulary")
        except Exception as e:  # a bug or a crashed worker process: report it, keep the window alive
            log.exception("training failed")
            self.failed.emit(f"training failed unexpectedly ({type(e).__name__}: {e})")
        finally:
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

    def start(self) -> None:
        self._running = True
        self._thread.start()

    def cancel(self) -> None:
        """Ask the worker to stop; `stopped` follows within a moment."""
        self._worker.cancel()

    def shutdown(self, timeout_ms: int = 30_000) -> bool:
        """Cancel and block until the thread has ended (for closing the window)."""
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
