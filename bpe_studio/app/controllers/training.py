"""The training lifecycle, without a window: start, cancel, end; the previous result kept on an early cancel.

Adds `TrainingController`. It owns the run's one `TrainingState` (every view reads it, so
there is one source of truth), starts a `TrainJob`, applies its event batches to the state
and says when the *state* ends — `ended` goes out in the same call that applies the
trainer's `Finished` (or the failure, or the cancel), not when the job's thread has wound
down a moment later, so whatever listens can make every view say "Finished" at once.
A cancel before the first merge of a new run, or a failure, shows the previous result again
(after a failure the state says FAILED, with the error, over that result).

    training = TrainingController()
    training.ended.connect(window.show_end); training.result.connect(window.publish)
    training.start(settings); ...; training.cancel()
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from bpe_studio.app.models.session import Session, TrainSettings
from bpe_studio.app.models.training_state import TrainingState
from bpe_studio.app.workers.heap import freeze_long_lived_objects
from bpe_studio.app.workers.train_job import TrainJob


class TrainingController(QObject):
    """Runs one training at a time into ``state``.

    Args:
        state: the state to fill (a new one by default).

    Signals:
        started(): a run began (the state was reset for it).
        ended(Stage): the state reached FINISHED, CANCELLED or FAILED — every view may show the end now.
        failed(str): the run stopped on an error (one line for the user); the previous result, if
            any, is the state's session again.
        restored(Session): a cancel came before the first merge: the previous result is shown again.
        result(Session, object): a result to show and build a tokenizer for, after the job ended
            (the object is the training process's finished tokenizer, or None).
        stopped(bool): the job is over (True if cancelled); `running` is False from here.
    """

    started = Signal()
    ended = Signal(object)
    failed = Signal(str)
    restored = Signal(object)
    result = Signal(object, object)
    stopped = Signal(bool)

    def __init__(self, state: TrainingState | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.state = state if state is not None else TrainingState()
        self.job: TrainJob | None = None
        self._previous: Session | None = None
        self._pending: TrainSettings | None = None  # asked for while the last job wound down

    @property
    def running(self) -> bool:
        """True while a job runs (its thread may still be ending after the state says Finished)."""
        return self.job is not None and self.job.running

    busy = running

    def start(self, settings: TrainSettings) -> bool:
        """Start a run with ``settings`` (checked in the job: bad ones come back as `failed`).

        Returns False if a run is still going. If the last run has ended but its job is still
        winding down (the training process stopping), the new run starts as soon as it has.
        """
        if self.running:
            if self.state.stage.running:
                return False
            self._pending = settings
            return True
        self._pending = None
        # Kept until the new run has something to show: a cancel before its first merge restores it.
        previous = self.state.session
        self._previous = previous if previous is not None and not self.state.stage.running else None
        self.state.start(settings)
        job = TrainJob(settings, parent=self)
        job.events.connect(self._on_events)
        job.failed.connect(self._on_failed)
        job.stopped.connect(self._on_stopped)
        self.job = job
        self.started.emit()
        freeze_long_lived_objects()  # the run's collections then only walk what it creates
        job.start()
        return True

    def cancel(self) -> bool:
        """Stop the run; the merges learned so far stay as a partial result. False if none runs."""
        self._pending = None
        if not self.running or self.job is None:
            return False
        self.job.cancel()
        return True

    def shutdown(self, timeout_ms: int = 30_000) -> bool:
        """Cancel and wait for the job's thread (and the training process) to end."""
        return self.job.shutdown(timeout_ms) if self.job is not None else True

    # -- the job's signals ------------------------------------------------------------------------

    def _apply(self, change: object, *args: object) -> None:
        """Change the state (``change(*args)``) and emit `ended` if that ended the run."""
        was_running = self.state.stage.running
        change(*args)  # type: ignore[operator]
        if was_running and not self.state.stage.running:
            self.ended.emit(self.state.stage)

    def _on_events(self, batch: list[object]) -> None:
        if self.sender() is self.job:
            self._apply(self.state.apply, batch)

    def _on_failed(self, message: str) -> None:
        if self.sender() is self.job:
            self._apply(self._fail, message)
            self.failed.emit(message)

    def _fail(self, message: str) -> None:
        """The run failed: the previous result (if any) is shown again, under the failure."""
        state, previous = self.state, self._previous
        if previous is None or state.session is not None:
            state.fail(message)
            return
        took = state.elapsed()
        state.load(previous)
        state.fail(message)
        state.started = (state.ended or 0.0) - took  # the failed run's time, not the result's

    def _on_stopped(self, cancelled: bool) -> None:
        job = self.sender()
        if job is not self.job:
            return
        if cancelled:
            was_running = self.state.stage.running
            self.state.cancel()
            session, previous = self.state.session, self._previous
            if was_running and previous is not None and session is not None and not session.merges:
                self.state.load(previous)
                self.restored.emit(previous)
                self.stopped.emit(cancelled)
                return  # the previous result is the current one already
            if was_running:
                self.ended.emit(self.state.stage)
        elif self.state.stage.running:  # never left running: the views would show Cancel forever
            message = "The training stopped without finishing (its process sent no result)."
            self._apply(self._fail, message)
            self.failed.emit(message)
        self.stopped.emit(cancelled)
        session = self.state.session
        if session is not None and session is not self._previous and not self.state.stage.running:
            prebuilt = job.tokenizer if not cancelled else None  # type: ignore[union-attr]
            self.result.emit(self.state.session, prebuilt)
        pending, self._pending = self._pending, None
        if pending is not None:
            self.start(pending)
