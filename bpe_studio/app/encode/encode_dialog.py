"""The Encode dialog: the corpus, the ``.npy`` to write, and the separator between documents.

Adds `EncodeDialog`. The separator offers what ``bpe-studio encode`` offers — its default
(``<|endoftext|>`` when the tokenizer has it), another special token (``--doc-separator``),
or none (``--no-doc-separator``) — from `bpe_studio.app.controllers.encoding.separator_choices`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtWidgets import (
    QComboBox, QDialog, QDialogButtonBox, QFormLayout, QHBoxLayout, QLineEdit, QPushButton, QWidget,
)

from bpe_studio.app.controllers.encoding import separator_choices
from bpe_studio.app.file_dialogs import FileDialogs

NPY_FILTER = "NumPy arrays (*.npy);;All files (*)"
CORPUS_FILTER = "Corpora (*.txt *.md *.jsonl *.ndjson *.parquet *.gz *.bz2 *.xz *.zst);;All files (*)"


class EncodeDialog(QDialog):
    """Asks what to encode with ``tokenizer`` (named ``title``) and where to write it."""

    def __init__(self, parent: QWidget, tokenizer: Any, title: str, dialogs: FileDialogs, corpus: str = "") -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Encode a corpus with “{title}”")
        self._dialogs = dialogs
        self.corpus_edit = QLineEdit(corpus)
        self.corpus_edit.setPlaceholderText("a text, JSONL or Parquet file (compressed or not)")
        self.out_edit = QLineEdit(self._npy_for(corpus) if corpus else "")
        self.out_edit.setPlaceholderText("ids.npy")
        self.separator_combo = QComboBox()
        for label, value in separator_choices(tokenizer):
            self.separator_combo.addItem(label, value)
        self.separator_combo.setToolTip("The id written after each document (a plain file is one document), "
                                        "as bpe-studio encode --doc-separator TOKEN / --no-doc-separator")
        form = QFormLayout(self)
        form.addRow("Corpus:", self._with_button(self.corpus_edit, self._browse_corpus))
        form.addRow("Save ids as:", self._with_button(self.out_edit, self._browse_out))
        form.addRow("Separator:", self.separator_combo)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Encode")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form.addRow(self.buttons)
        self.corpus_edit.textChanged.connect(self._update_ok)
        self.out_edit.textChanged.connect(self._update_ok)
        self._update_ok()

    def _with_button(self, edit: QLineEdit, browse: Any) -> QWidget:
        row = QWidget()
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(edit, 1)
        button = QPushButton("Browse…")
        button.clicked.connect(browse)
        layout.addWidget(button)
        return row

    def _npy_for(self, corpus: str) -> str:
        """``corpus.jsonl.gz`` -> ``corpus.npy`` in the folder encoded into last, else the corpus's."""
        name = Path(corpus).name.split(".")[0] or "ids"
        return str(Path(self._dialogs.remembered("paths/encode_folder") or Path(corpus).parent) / f"{name}.npy")

    def _browse_corpus(self) -> None:
        path = self._dialogs.open_file("Encode: choose the corpus", "paths/encode_corpus_folder", CORPUS_FILTER)
        if path:
            self.corpus_edit.setText(path)
            if not self.out_edit.text():
                self.out_edit.setText(self._npy_for(path))

    def _browse_out(self) -> None:
        name = Path(self.out_edit.text()).name or "ids.npy"
        path = self._dialogs.save_file("Encode: save the token ids as", "paths/encode_folder", name, NPY_FILTER)
        if path:
            self.out_edit.setText(path)

    def _update_ok(self) -> None:
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(
            bool(self.corpus_edit.text().strip() and self.out_edit.text().strip()))

    def corpus(self) -> str:
        return self.corpus_edit.text().strip()

    def out(self) -> str:
        """The ``.npy`` to write (``.npy`` added when missing)."""
        out = self.out_edit.text().strip()
        return out if out.endswith(".npy") else out + ".npy"

    def doc_separator(self) -> str | bool | None:
        """The choice, as ``encode_source_events``'s ``doc_separator``."""
        return self.separator_combo.currentData()
