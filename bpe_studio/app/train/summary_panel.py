"""The summary of a finished or cancelled run: time, pre-tokens, vocabulary, longest token,
bytes per token; a clear "partial" notice after a cancel; Export and Save session buttons.
Each value is one line, elided to the panel's width with the full value in its tooltip.
A run that fails leaves the previous result here, with a notice above it that says so.
"""

from __future__ import annotations

import os

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QFormLayout, QGroupBox, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from bpe_studio.app.models.run_progress import Stage
from bpe_studio.app.models.training_state import TrainingState
from bpe_studio.app.widgets.elided_label import ElidedLabel

REFRESH_MS = 200
NOTICE_CHARS = 200


def _breakable(message: str) -> str:
    """The first line of ``message``, shortened, with break points after path separators so a
    long path wraps instead of widening the panel."""
    line = message.strip().splitlines()[0] if message.strip() else "no reason given"
    if len(line) > NOTICE_CHARS:
        line = line[:NOTICE_CHARS - 1] + "…"
    return line.replace("/", "/\u200b").replace("\\", "\\\u200b")


class SummaryPanel(QGroupBox):
    """Shows ``state.summary()`` once a result exists.

    Signals:
        exportClicked(), saveClicked(): the user asked to export / save the result.
    """

    exportClicked = Signal()
    saveClicked = Signal()

    def __init__(self, state: TrainingState, parent: QWidget | None = None) -> None:
        super().__init__("Result", parent)
        self._state = state
        self._version = -1
        self.failed_label = QLabel()  # a failed run: the result below is the one before it
        self.failed_label.setObjectName("partialNotice")
        self.failed_label.setWordWrap(True)
        self.failed_label.hide()
        self.partial_label = QLabel()
        self.partial_label.setObjectName("partialNotice")
        self.partial_label.setWordWrap(True)
        self.partial_label.hide()
        self.stale_label = QLabel()
        self.stale_label.setObjectName("partialNotice")
        self.stale_label.setWordWrap(True)
        self.stale_label.hide()
        self._chosen_corpus = ""
        self.empty_label = QLabel("Train, or open a saved session, to see the result here.")
        self.empty_label.setObjectName("hint")
        self.empty_label.setWordWrap(True)
        self._form = QFormLayout()
        self._form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft)
        self.export_button = QPushButton("Export…")
        self.export_button.setToolTip("Write this result's vocab.json, merges.txt and tokenizer.json")
        self.export_button.clicked.connect(self.exportClicked)
        self.save_button = QPushButton("Save session…")
        self.save_button.setToolTip("Save the whole result to reopen it later without training (Ctrl+S)")
        self.save_button.clicked.connect(self.saveClicked)
        buttons = QHBoxLayout()
        buttons.addWidget(self.export_button)
        buttons.addWidget(self.save_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.failed_label)
        layout.addWidget(self.empty_label)
        layout.addWidget(self.partial_label)
        layout.addWidget(self.stale_label)
        layout.addLayout(self._form)
        layout.addLayout(buttons)
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh)
        self._timer.start()
        self.refresh()

    def set_chosen_corpus(self, path: str) -> None:
        """The corpus now chosen for training: a result trained on another one says so."""
        self._chosen_corpus = path
        self._update_stale()

    def _update_stale(self) -> None:
        session = self._state.session
        chosen = self._chosen_corpus
        trained = session.settings.corpus if session is not None and not self._state.stage.running else ""
        stale = bool(trained and chosen and os.path.abspath(trained) != os.path.abspath(chosen))
        if stale:
            self.stale_label.setText(
                f"This result was trained on {os.path.basename(trained)}; the corpus chosen now is "
                f"{os.path.basename(chosen)}. Press Train for a result on it."
            )
            self.stale_label.setToolTip(f"trained on {trained}\nchosen now: {chosen}")
        self.stale_label.setVisible(stale)

    def rows(self) -> list[tuple[str, str]]:
        """The (label, value) rows shown."""
        return [
            (self._form.itemAt(i, QFormLayout.ItemRole.LabelRole).widget().text(),
             self._form.itemAt(i, QFormLayout.ItemRole.FieldRole).widget().full_text())
            for i in range(self._form.rowCount())
        ]

    def refresh(self) -> None:
        state = self._state
        if state.version == self._version:
            return
        self._version = state.version
        self._update_stale()
        while self._form.rowCount():
            self._form.removeRow(0)
        session = state.session
        has_result = session is not None and not state.stage.running
        self.empty_label.setVisible(not has_result)
        self.export_button.setEnabled(has_result)
        self.save_button.setEnabled(has_result)
        failed = has_result and state.stage is Stage.FAILED
        if failed:
            self.failed_label.setText(f"The last run failed: {_breakable(state.error)}\nThe result below is the "
                                      "previous one; it can still be browsed, exported and saved.")
            self.failed_label.setToolTip(state.error)
        self.failed_label.setVisible(failed)
        if session is not None and session.partial and has_result:
            self.partial_label.setText(
                f"Partial result: training was cancelled after {len(session.merges):,} of "
                f"{session.settings.max_merges:,} merges. It can be browsed and exported as is."
            )
            self.partial_label.show()
        else:
            self.partial_label.hide()
        if not has_result:
            return
        for label, value in state.summary():
            # One line each, elided: a 150-byte "+-----…" token must not widen the panel.
            field = ElidedLabel(mode=Qt.TextElideMode.ElideRight)
            field.set_full_text(value)
            self._form.addRow(f"{label}:", field)
