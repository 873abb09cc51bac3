"""Training off the GUI thread: a `ThreadJob` that follows the training process's event batches.

Its work (`follow_training`, in the job's worker thread) first checks the settings with the
core's own validation (so a missing file or a bad pattern is reported at once), then runs
the trainer in a child process (`bpe_studio.app.workers.train_process`: the merge loop holds
the GIL, which would stall the GUI) and yields its event batches — at most one every
`BATCH_SECONDS` of that module, never one per merge. A cancel is passed to the process at once (the trainer checks
it between events); the job stops at the next batch. `TrainJob` is what the window uses:

    job = TrainJob(settings); job.events.connect(state.apply); job.start(); ...; job.cancel()
"""

from __future__ import annotations

from collections.abc import Generator

from PySide6.QtCore import QObject, Signal, Slot

from bpe_studio.app.models.session import TrainSettings
from bpe_studio.app.workers.thread_job import USER_ERRORS, Cancelled, ThreadJob
from bpe_studio.app.workers.train_process import TrainingFailed, TrainingProcess, check_settings


def follow_training(settings: TrainSettings, process: TrainingProcess) -> Generator[list[object], None, object]:
    """Check ``settings``, run ``process`` and yield its event batches; return its tokenizer.

    Raises:
        ValueError, OSError: bad settings (the core's messages).
        TrainingFailed: the trainer reported an error, or its process died.
        Cancelled: the process stopped early on a cancel.
    """
    try:
        check_settings(settings)
        process.start()
        try:
            yield from process.batches()
        except GeneratorExit:  # the job stopped following (a cancel): let the child finish
            process.cancel()
            _drain(process)
            raise
    finally:
        process.stop()
    if process.cancelled:
        raise Cancelled
    return process.tokenizer


def _drain(process: TrainingProcess) -> None:
    """Read the child's last batches, so it never blocks writing into a full pipe."""
    try:
        for _ in process.batches():
            pass
    except TrainingFailed:
        pass  # it is stopping anyway


class TrainJob(ThreadJob):
    """One training run (`follow_training` in a `ThreadJob`).

    Signals:
        events(list): a batch of core events, in order.
        failed(str), stopped(bool): as `ThreadJob`'s; failures are the trainer's messages.
    """

    events = Signal(object)

    def __init__(self, settings: TrainSettings, parent: QObject | None = None) -> None:
        process = TrainingProcess(settings)
        super().__init__(
            follow_training, settings, process, what="training", name="bpe-studio-training",
            user_errors=(*USER_ERRORS, TrainingFailed), parent=parent,
        )
        self.settings = settings
        self._process = process
        self.tokenizer: object | None = None
        """After `stopped`: the finished run's `core.Tokenizer`, built by the training process
        (None after a cancel or a failure)."""
        self.yielded.connect(self.events)
        self.returned.connect(self._on_returned)

    def cancel(self) -> None:
        """Ask the run to stop (thread-safe): the trainer stops at its next event."""
        super().cancel()
        self._process.cancel()

    @property
    def process_pid(self) -> int | None:
        """The training process's id once it started (for tests and diagnostics)."""
        return self._process.pid

    @Slot(object)
    def _on_returned(self, tokenizer: object) -> None:
        self.tokenizer = tokenizer
