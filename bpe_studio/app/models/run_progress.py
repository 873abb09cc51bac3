"""How a training run's progress is said: its stage, the figures of the stage (MB/s,
merges/s, ETA), the bar's fraction, and a note when the training process goes silent.
`ProgressState` is the part of `bpe_studio.app.models.training_state.TrainingState` that
says it. No Qt.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from core.progress import RateMeter, bytes_progress, format_duration, merges_progress, stopped_early

RATE_WINDOW_SECONDS = 3.0
ETA_SETTLE_SECONDS = 1.0
"""No merge ETA in a run's first second of merging: the first merges are the slowest, so an
ETA from them is far too long."""
RATE_SMOOTHING = 0.3
"""Weight of the newest rate in the smoothed merge rate the ETA uses."""
SILENCE_SECONDS = 20.0
"""A running trainer that sends nothing for this long is reported as silent."""


class Stage(Enum):
    IDLE = "Ready"
    READING = "Reading and pre-tokenizing"
    COUNTED = "Counting pairs"
    MERGING = "Merging"
    FINISHED = "Finished"
    CANCELLED = "Cancelled"
    FAILED = "Failed"

    @property
    def running(self) -> bool:
        return self in (Stage.READING, Stage.COUNTED, Stage.MERGING)


@dataclass(frozen=True)
class Progress:
    """What a progress bar and status line show.

    Attributes:
        stage: the stage's name.
        detail: figures for the stage, e.g. ``"1,200 of 9,743 merges · 850 merges/s · ETA 10 s"``.
        fraction: 0..1 for a determinate bar, or ``None`` for a busy indicator.
        elapsed: seconds since the start.
    """

    stage: str
    detail: str
    fraction: float | None
    elapsed: float


class ProgressState:
    """A run's progress figures (`TrainingState` keeps the fields it reads)."""

    stage: Stage
    started: float
    ended: float | None
    error: str
    settings: Any
    token_ids: Any
    splits: list[Any]
    sizes: Any
    bytes_done: int
    bytes_total: int
    counting: Any
    process_started: bool
    last_heard: float
    _merge_rate: RateMeter
    _merge_started: float | None
    _smoothed_rate: float
    _reading_from: tuple[float, int] | None
    parity: bool  # (SourcesState's)
    parity_stop: Callable[[int, int], str]

    def elapsed(self, now: float | None = None) -> float:
        if self.ended is not None:
            return self.ended - self.started
        if self.stage is Stage.IDLE:
            return 0.0
        return (time.monotonic() if now is None else now) - self.started

    def merge_rate(self) -> float:
        """Merges per second over the last few seconds (0 when unknown)."""
        return self._merge_rate.rate()

    def eta_merge_rate(self, now: float | None = None) -> float:
        """The smoothed merge rate the ETA uses; 0 (no ETA yet) in the first second of merging."""
        now = time.monotonic() if now is None else now
        if self._merge_started is None or now - self._merge_started < ETA_SETTLE_SECONDS:
            return 0.0
        return self._smoothed_rate

    def reading_rate(self, now: float | None = None) -> float:
        """Bytes read per second since the first bytes (0 until there is a measure)."""
        if self._reading_from is None:
            return 0.0
        since, done = self._reading_from
        seconds = (time.monotonic() if now is None else now) - since
        return (self.bytes_done - done) / seconds if seconds > 0.2 and self.bytes_done > done else 0.0

    def progress(self, now: float | None = None) -> Progress:
        """The stage, its figures and the bar's fraction at time ``now``."""
        now = time.monotonic() if now is None else now
        elapsed = self.elapsed(now)
        stage = self.stage
        settings = self.settings
        max_merges = settings.max_merges if settings else len(self.token_ids)
        k = len(self.token_ids)
        progress = self._running_progress(now, elapsed)
        if progress is not None and now - self.last_heard >= SILENCE_SECONDS:
            return replace(progress, detail=progress.detail + " — " + self.silence_note(now))
        if progress is not None:
            return progress
        if stage is Stage.FINISHED:
            if self.splits:
                return Progress(stage.value, f"{k:,} merges, {len(self.splits):,} tokens removed in "
                                f"{format_duration(elapsed)}", 1.0, elapsed)
            if k < max_merges and self.parity:  # the chosen language ran out of pairs: the rules stop there
                return Progress(stage.value, f"{self.parity_stop(k, max_merges)} in {format_duration(elapsed)}", 1.0,
                                elapsed)
            if k < max_merges:  # the corpus ran out of pairs
                return Progress(stage.value, f"{stopped_early(k, max_merges)} in {format_duration(elapsed)}", 1.0, elapsed)
            return Progress(stage.value, f"{k:,} merges in {format_duration(elapsed)}", 1.0, elapsed)
        if stage is Stage.CANCELLED:
            detail = f"partial result: {k:,} of {max_merges:,} merges"
            return Progress(stage.value, detail, k / max_merges if max_merges else 0.0, elapsed)
        if stage is Stage.FAILED:
            return Progress(stage.value, self.error, 0.0, elapsed)
        return Progress(stage.value, "press Train (Ctrl+Enter) to start", 0.0, 0.0)

    def silence_note(self, now: float | None = None) -> str:
        """What the window says when the running trainer has sent nothing for a while."""
        silent = (time.monotonic() if now is None else now) - self.last_heard
        if not self.process_started:
            return (f"the training process has not started after {format_duration(silent)}; "
                    "Esc cancels")
        return f"no word from the training process for {format_duration(silent)}; it may be stuck (Esc cancels)"

    def _running_progress(self, now: float, elapsed: float) -> Progress | None:
        """The progress of a running stage (None when no run is going)."""
        stage = self.stage
        settings = self.settings
        max_merges = settings.max_merges if settings else len(self.token_ids)
        k = len(self.token_ids)
        if stage is Stage.READING:
            if not self.bytes_total:
                what = "opening the corpus…" if self.process_started else "starting the training process…"
                return Progress(stage.value, what, None, elapsed)
            detail = bytes_progress(self.bytes_done, self.bytes_total, elapsed, rate=self.reading_rate(now))
            return Progress(stage.value, detail, self.bytes_done / self.bytes_total, elapsed)
        if stage is Stage.COUNTED:
            c = self.counting
            detail = f"{c.distinct:,} distinct pre-tokens · {c.total:,} in all" if c else ""
            return Progress(stage.value, detail, None, elapsed)
        if stage is Stage.MERGING:
            if self.splits:  # Picky BPE: the vocabulary fills more slowly than the merges go
                made = self.sizes[-1] - (self.sizes[0] - 1) if self.sizes else 0
                detail = f"{made:,} of {max_merges:,} new tokens · {k:,} merges, {len(self.splits):,} removed"
                return Progress(stage.value, detail, min(made / max_merges, 1.0) if max_merges else 1.0, elapsed)
            detail = merges_progress(k, max_merges, self.eta_merge_rate(now))
            return Progress(stage.value, detail, k / max_merges if max_merges else 1.0, elapsed)
        return None
