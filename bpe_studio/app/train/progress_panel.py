"""The progress panel: stage, progress bar, figures (MB/s, k of N, merges/s, ETA) and elapsed time.

It reads the `TrainingState` from a timer (a few times a second), never per event, and
emits the same line for the status bar.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QGridLayout, QLabel, QProgressBar, QWidget

from bpe_studio.app.models.training_state import TrainingState
from bpe_studio.app.widgets.elided_label import OneLineLabel
from core.progress import format_duration

REFRESH_MS = 100


class ProgressPanel(QWidget):
    """Shows ``state``'s progress; `statusChanged` carries the one-line version."""

    statusChanged = Signal(str)

    def __init__(self, state: TrainingState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._state = state
        self.stage_label = QLabel()
        self.stage_label.setObjectName("stageLabel")
        self.detail_label = OneLineLabel()  # a failure's message can be long: never widen the window
        self.elapsed_label = QLabel()
        self.elapsed_label.setObjectName("hint")
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(False)
        self.bar.setFixedHeight(10)
        layout = QGridLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.stage_label, 0, 0)
        layout.addWidget(self.detail_label, 0, 1)
        layout.addWidget(self.elapsed_label, 0, 2)
        layout.addWidget(self.bar, 1, 0, 1, 3)
        layout.setColumnStretch(1, 1)
        self._status = ""
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh)
        self._timer.start()
        self.refresh()

    def status_text(self) -> str:
        return self._status

    def refresh(self) -> None:
        p = self._state.progress()
        self.stage_label.setText(p.stage)
        self.detail_label.setText(p.detail)
        self.elapsed_label.setText(f"elapsed {format_duration(p.elapsed)}" if p.elapsed else "")
        if p.fraction is None:
            self.bar.setRange(0, 0)  # busy indicator
        else:
            self.bar.setRange(0, 1000)
            self.bar.setValue(int(round(p.fraction * 1000)))
        status = p.stage + (f" — {p.detail}" if p.detail else "")
        if p.elapsed:
            status += f" — elapsed {format_duration(p.elapsed)}"
        if status != self._status:
            self._status = status
            self.statusChanged.emit(status)
