"""Encoding a corpus to a ``.npy`` off the GUI thread: a worker in a QThread, and its job.

`EncodeWorker.run` follows `core.encode.corpus_to_npy.encode_file_events` in its own thread, with
workers *spawned* (forking a process that runs Qt is unsafe), and re-emits its progress at
most a few times a second. Cancelling sets a flag the worker checks between events; the
worker then closes the iterator itself (a generator is closed in the thread that runs it),
which stops the worker processes and removes the temporary file. `EncodeJob` owns the
thread and the worker and is what the window uses:

    job = EncodeJob(corpus, tokenizer, "ids.npy"); job.finished.connect(...); job.start()
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from bpe_studio.app.workers.thread_job import ThreadJob


PROGRESS_INTERVAL = 0.25
"""Seconds between two progress signals (the first and the last always go out)."""


class EncodeWorker(QObject):
    """Encodes one corpus from a worker thread.

    Signals:
        progress(EncodeProgress): throttled to one every `PROGRESS_INTERVAL` seconds.
        finished(EncodeFinished): the ``.npy`` is written.
        failed(str): encoding stopped on an error; the one-line message is for the user.
        stopped(bool): the run is over (emitted last); ``True`` if it was cancelled.
    """

    progress = Signal(object)
    finished = Signal(object)
    failed = Signal(str)
    stopped = Signal(bool)

    def __init__(
        self,
        corpus: str | os.PathLike[str],
        tokenizer: Any,
        out: str | os.PathLike[str],
        *,
        workers: int | None = None,
    ) -> None:
        super().__init__()
        self.corpus = Path(corpus)
        self.out = Path(out)
        self._tokenizer = tokenizer
        self._workers = workers
        self._cancel = threading.Event()

    def cancel(self) -> None:
        """Ask the run to stop at the next event (thread-safe)."""
        self._cancel.set()

    @Slot()
    def run(self) -> None:
        from core.encode.corpus_to_npy import EncodeFinished, encode_file_events  # not at the GUI's start

        cancelled = False
        events = None
        try:
            if self._cancel.is_set():
                cancelled = True
                return
            events = encode_file_events(
                self.corpus, self._tokenizer, self.out, workers=self._workers, start_method="spawn"
            )
            last = float("-inf")
            for event in events:
                if isinstance(event, EncodeFinished):
                    # The file is in place: a cancel that arrives now is too late to matter.
                    self.finished.emit(event)
                    continue
                if self._cancel.is_set():
                    cancelled = True
                    break
                now = time.monotonic()
                if now - last >= PROGRESS_INTERVAL or event.done in (0, event.total):
                    last = now
                    self.progress.emit(event)
        except (ValueError, OSError) as e:  # the core's user errors: the message says what to do
            self.failed.emit(_one_line(e))
        finally:
            if events is not None:
                events.close()  # on cancel: stops the processes and removes the temporary file
            self._tokenizer = None  # a finished job does not keep a (large) tokenizer alive
            self.stopped.emit(cancelled)


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


class EncodeJob(ThreadJob):
    """One encoding run: an `EncodeWorker` in its own thread (`ThreadJob`).

    Signals:
        progress(EncodeProgress), finished(EncodeFinished), failed(str), stopped(bool):
        as `EncodeWorker`'s, in the GUI thread.
    """

    progress = Signal(object)
    finished = Signal(object)

    def __init__(
        self,
        corpus: str | os.PathLike[str],
        tokenizer: Any,
        out: str | os.PathLike[str],
        *,
        workers: int | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(EncodeWorker(corpus, tokenizer, out, workers=workers), "bpe-studio-encoding", parent)
        self._worker.progress.connect(self.progress)
        self._worker.finished.connect(self.finished)

    @property
    def corpus(self) -> Path:
        return self._worker.corpus  # type: ignore[no-any-return]

    @property
    def out(self) -> Path:
        return self._worker.out  # type: ignore[no-any-return]
