"""A strip at the top of the window that follows a corpus being encoded to ``.npy``.

Shows what is encoded into which file, MB done of the total, MB/s and tokens so far, a
progress bar and a Cancel button; the window shows it while an `EncodeJob` runs and hides
it when the job stops (the result then goes to the window's banner). `follow` connects it
to an `EncodingController`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QProgressBar, QPushButton, QWidget

from bpe_studio.app.widgets.elided_label import ElidedLabel
from core.progress import encode_progress

if TYPE_CHECKING:
    from core.encode.corpus import EncodeProgress


class EncodeStrip(QFrame):
    """Progress of one encoding run; `cancelClicked` when the user asks it to stop;
    `statusChanged(text, timeout_ms)` the line for the status bar."""

    cancelClicked = Signal()
    statusChanged = Signal(str, int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("encodeStrip")
        self.setStyleSheet("QFrame#encodeStrip { border-bottom: 1px solid palette(mid); }")
        self.title_label = ElidedLabel()
        self.title_label.setObjectName("stageLabel")
        self.detail_label = QLabel()
        self.detail_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        # Room for large figures from the start: the title does not jump as they grow.
        widest = encode_progress(999_900_000, 999_900_000, 9_999_999_999, 1.0)
        self.detail_label.setMinimumWidth(self.detail_label.fontMetrics().horizontalAdvance(widest) + 8)
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(False)
        self.bar.setFixedHeight(10)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop encoding; no .npy is written")
        self.cancel_button.clicked.connect(self._on_cancel)
        layout = QGridLayout(self)
        layout.setContentsMargins(10, 6, 10, 8)
        layout.setHorizontalSpacing(12)
        layout.addWidget(self.title_label, 0, 0)
        layout.addWidget(self.detail_label, 0, 1)
        layout.addWidget(self.cancel_button, 0, 2, 2, 1)
        layout.addWidget(self.bar, 1, 0, 1, 2)
        layout.setColumnStretch(0, 1)
        self._started = 0.0
        self.hide()

    def follow(self, encoding: Any) -> None:
        """Show every run of ``encoding`` (an `EncodingController`); Cancel cancels it."""
        encoding.started.connect(lambda job: self.start(job.corpus, job.out, encoding.title))
        encoding.progress.connect(self.update_progress)
        encoding.stopped.connect(self._on_stopped)
        self.cancelClicked.connect(encoding.cancel)

    def _on_stopped(self, cancelled: bool) -> None:
        self.hide()
        self.statusChanged.emit("Encoding cancelled: no .npy was written." if cancelled else "", 5000)

    def start(self, corpus: Path, out: Path, tokenizer: str = "") -> None:
        """Show the strip for encoding ``corpus`` into ``out`` with the tokenizer named ``tokenizer``."""
        self._started = time.monotonic()
        using = f" with “{tokenizer}”" if tokenizer else ""
        self.title_label.set_full_text(f"Encoding {corpus.name}{using} → {out.name}")
        self.title_label.set_tip(f"{corpus}\n→ {out}" + (f"\ntokenizer: {tokenizer}" if tokenizer else ""))
        self.detail_label.setText("starting the workers…")
        self.bar.setRange(0, 0)  # busy until the first figures arrive
        self.cancel_button.setEnabled(True)
        self.show()

    def update_progress(self, event: EncodeProgress) -> None:
        self.bar.setRange(0, 1000)
        self.bar.setValue(int(round(1000 * event.done / event.total)) if event.total else 1000)
        self.detail_label.setText(encode_progress(event.done, event.total, event.tokens, time.monotonic() - self._started))
        self.statusChanged.emit(f"Encoding: {self.text()}", 0)

    def text(self) -> str:
        """The figures shown (for the status bar and tests)."""
        return self.detail_label.text()

    def _on_cancel(self) -> None:
        self.cancel_button.setEnabled(False)
        self.detail_label.setText("cancelling…")
        self.cancelClicked.emit()
