"""Trainer options in the settings panel: max token length, min frequency, continue a tokenizer.

Widgets the settings panel adds to its form with `add_rows` (docs/semantics.md, "Trainer options").
Choosing a tokenizer to continue reads it in a background job (`LatestJob`: GPT-2's files
take about a second) and then emits `initialRead` with what the panel must show: the
tokenizer's special tokens (they come first and keep their ids) and its pattern (a
continued run must use it). Until it is read, `pending` is True and training waits.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, QSettings, Signal, Slot
from PySide6.QtWidgets import (
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QSpinBox,
)

from bpe_studio.app.file_dialogs import dialogs_for
from bpe_studio.app.workers.thread_job import LatestJob
from core import TrainOptions

TOKENIZER_FILTER = "Tokenizer files (*vocab.json *merges.txt *.json *.tiktoken *.model);;All files (*)"


@dataclass(frozen=True)
class InitialInfo:
    """What the panel needs of a tokenizer to continue: read off the GUI thread."""

    path: str
    special_tokens: tuple[str, ...]  # in id order
    pattern: str
    merges: int
    size: int


def read_initial(path: str) -> InitialInfo:
    """Read the tokenizer at ``path`` (runs in a worker thread).

    Raises:
        FileNotFoundError, ValueError: it cannot be read (the loader's messages).
    """
    from core.formats import find_special_ids
    from core.formats.load import load_tokenizer_files

    files = load_tokenizer_files(path)
    ids = find_special_ids(files.vocab, files.merges, files.special_tokens)
    ordered = sorted(files.special_tokens, key=lambda t: ids.get(t, len(files.vocab)))
    pattern = files.pattern.name if files.pattern.name in ("gpt2", "gpt4") else files.pattern.source
    return InitialInfo(path, tuple(ordered), pattern, len(files.merges), len(files.vocab))


class TrainerOptions(QObject):
    """Max token length, min frequency and the tokenizer to continue.

    Signals:
        initialRead(object): an `InitialInfo` once a chosen tokenizer is read, or None when
            the choice is cleared.
        initialFailed(str): the chosen tokenizer cannot be read (the reason).
    """

    initialRead = Signal(object)
    initialFailed = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.info: InitialInfo | None = None
        self.max_length_spin = QSpinBox()
        self.max_length_spin.setRange(1, 1_000_000)  # 1 shows "no limit"; a limit is at least 2
        self.max_length_spin.setSpecialValueText("no limit")
        self.max_length_spin.setSuffix(" bytes")
        self.max_length_spin.setToolTip("Never merge a pair whose token would be longer; the next best pair is merged instead")
        self.min_frequency_spin = QSpinBox()
        self.min_frequency_spin.setRange(1, 1_000_000_000)
        self.min_frequency_spin.setToolTip("Stop training when the best pair occurs fewer times")
        self.initial_edit = QLineEdit()
        self.initial_edit.setPlaceholderText("train from scratch")
        self.initial_edit.setReadOnly(True)
        self.initial_edit.setToolTip("Continue this tokenizer: its merges and ids stay, new merges follow")
        self.initial_button = QPushButton("Choose…")
        self.initial_button.setToolTip("Choose a tokenizer to continue training (vocab.json, tokenizer.json, .tiktoken)")
        # A folder (as `bpe-studio train --init DIR`) or one file: a file dialog takes one or the other.
        choices = QMenu(self.initial_button)
        choices.addAction("A tokenizer folder…", self.choose_initial_folder)
        choices.addAction("A tokenizer file…", self.choose_initial)
        self.initial_button.setMenu(choices)
        self.clear_button = QPushButton("Clear")
        self.clear_button.clicked.connect(lambda: self.set_initial(None))
        self.initial_status = QLabel()
        self.initial_status.setObjectName("hint")
        self.initial_status.setWordWrap(True)
        self.initial_status.hide()
        self._reads = LatestJob("reading the tokenizer to continue", name="bpe-studio-initial", parent=self)
        self._reads.returned.connect(self._on_read)
        self._reads.failed.connect(self._on_failed)


    def add_rows(self, form: QFormLayout) -> None:
        """Add the options to the settings panel's form, below its own rows."""
        buttons = QHBoxLayout()
        buttons.setContentsMargins(0, 0, 0, 0)
        buttons.addWidget(self.initial_button)
        buttons.addWidget(self.clear_button)
        buttons.addStretch(1)
        form.addRow("Max token length", self.max_length_spin)
        form.addRow("Min frequency", self.min_frequency_spin)
        form.addRow("Continue", self.initial_edit)
        form.addRow("", buttons)
        form.addRow("", self.initial_status)

    # -- values --------------------------------------------------------------------------

    def max_token_length(self) -> int | None:
        value = self.max_length_spin.value()
        return None if value < 2 else value

    def min_frequency(self) -> int:
        return self.min_frequency_spin.value()

    def initial(self) -> str | None:
        return self.initial_edit.text() or None

    @property
    def pending(self) -> bool:
        """A chosen tokenizer is still being read."""
        return self._reads.running

    def set_values(self, options: TrainOptions) -> None:
        """Show the trainer options of ``options`` (e.g. an opened session's)."""
        self.max_length_spin.setValue(options.max_token_length or 1)
        self.min_frequency_spin.setValue(options.min_frequency)
        # the window continues tokenizers by path; read it again: its merges are marked kept
        # if it is trained again
        self.set_initial(None if options.initial is None else os.fspath(options.initial))  # type: ignore[arg-type]

    def set_running(self, running: bool) -> None:
        for widget in (self.max_length_spin, self.min_frequency_spin, self.initial_button, self.clear_button):
            widget.setEnabled(not running)

    def set_initial(self, path: str | None, *, read: bool = True) -> None:
        """Continue ``path`` (None: train from scratch); read it unless ``read`` is False."""
        self.initial_edit.setText(path or "")
        self.initial_edit.setToolTip(path or "Continue this tokenizer: its merges and ids stay, new merges follow")
        self.info = None
        self.initial_status.hide()
        if path and read:
            self.initial_status.setText("Reading the tokenizer…")
            self.initial_status.show()
            self._reads.start(read_initial, path)
        else:
            self._reads.cancel()
            if not path:
                self.initialRead.emit(None)

    def choose_initial(self) -> None:
        path = dialogs_for(self.initial_button).open_file("Continue training a tokenizer", "paths/tokenizer_folder",
                                                          TOKENIZER_FILTER, start=self.initial())
        if path:
            self.set_initial(path)

    def choose_initial_folder(self) -> None:
        start = str(Path(self.initial()).parent) if self.initial() else ""
        path = dialogs_for(self.initial_button).existing_folder("Continue training a tokenizer: its folder",
                                                                "paths/tokenizer_folder", start)
        if path:
            self.set_initial(path)

    def shutdown(self, timeout_ms: int = 30_000) -> bool:
        return self._reads.shutdown(timeout_ms)

    # -- persistence ---------------------------------------------------------------------------

    def save(self, s: QSettings) -> None:
        s.setValue("train/max_token_length", self.max_length_spin.value())
        s.setValue("train/min_frequency", self.min_frequency_spin.value())

    def restore(self, s: QSettings) -> None:
        for spin, key in ((self.max_length_spin, "train/max_token_length"), (self.min_frequency_spin, "train/min_frequency")):
            try:
                spin.setValue(int(s.value(key, spin.minimum())))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                pass

    # -- results ---------------------------------------------------------------------------------

    @Slot(object)
    def _on_read(self, info: InitialInfo) -> None:
        self.info = info
        self.initial_status.setText(f"Keeps {info.merges:,} merges, {info.size:,} tokens")
        self.initial_status.setToolTip("Its merges come first and its ids stay; its pattern and special tokens are used")
        self.initial_status.show()
        self.initialRead.emit(info)

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self.initial_edit.clear()
        self.initial_status.setText(f"Cannot continue it: {message}")
        self.initial_status.show()
        self.initialFailed.emit(message)
