"""What the Evaluate tab measures: the tokenizers and the held-out sources, as two lists.

Tokenizers are files or folders added by the user, plus the one just trained or opened,
listed as "current". Sources are files or folders. `changed` is emitted whenever either
list changes, so the panel can refresh its choices.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidget, QPushButton, QVBoxLayout, QWidget

from bpe_studio.app.file_dialogs import dialogs_for

CURRENT = "current"


class EvaluateInputs(QWidget):
    """The tokenizer and source lists with their Add and Remove buttons.

    Signals:
        changed(): a tokenizer or a source was added or removed.
    """

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.current: object | None = None
        self.tokenizer_list = QListWidget()
        self.source_list = QListWidget()
        for widget in (self.tokenizer_list, self.source_list):
            widget.setMaximumHeight(widget.fontMetrics().height() * 4 + 10)  # four entries: the measures get the height
        self.add_tokenizer_button = QPushButton("Add tokenizer…")
        self.add_source_button = QPushButton("Add file…")
        self.add_folder_button = QPushButton("Add folder…")
        self.remove_button = QPushButton("Remove selected")
        self.remove_button.setToolTip("Remove the tokenizers and sources selected in the lists")

        lists = QHBoxLayout(self)
        lists.setContentsMargins(0, 0, 0, 0)
        left = QVBoxLayout()
        left.addWidget(QLabel("Tokenizers"))
        left.addWidget(self.tokenizer_list)
        tokenizer_buttons = QHBoxLayout()
        tokenizer_buttons.addWidget(self.add_tokenizer_button)
        tokenizer_buttons.addWidget(self.remove_button)
        left.addLayout(tokenizer_buttons)
        right = QVBoxLayout()
        right.addWidget(QLabel("Held-out sources"))
        right.addWidget(self.source_list)
        buttons = QHBoxLayout()
        buttons.addWidget(self.add_source_button)
        buttons.addWidget(self.add_folder_button)
        right.addLayout(buttons)
        lists.addLayout(left)
        lists.addLayout(right)

        self.add_tokenizer_button.clicked.connect(self.add_tokenizer_dialog)
        self.add_source_button.clicked.connect(self.add_source_dialog)
        self.add_folder_button.clicked.connect(self.add_folder_dialog)
        self.remove_button.clicked.connect(self.remove_selected)

    def set_current(self, tokenizer: object | None) -> None:
        """List ``tokenizer`` as "current" (None: take it out)."""
        self.current = tokenizer
        items = [self.tokenizer_list.item(i).text() for i in range(self.tokenizer_list.count())]
        if tokenizer is not None and CURRENT not in items:
            self.tokenizer_list.insertItem(0, CURRENT)
        elif tokenizer is None and CURRENT in items:
            self.tokenizer_list.takeItem(items.index(CURRENT))
        self.changed.emit()

    def add_tokenizer(self, path: str) -> None:
        self.tokenizer_list.addItem(str(path))
        self.changed.emit()

    def add_source(self, path: str) -> None:
        self.source_list.addItem(str(path))
        self.changed.emit()

    def tokenizers(self) -> dict[str, Any]:
        """Each tokenizer by a unique name: "current" (the object) or a path."""
        from core.evaluate.measures import _name

        out: dict[str, Any] = {}
        for i in range(self.tokenizer_list.count()):
            text = self.tokenizer_list.item(i).text()
            spec: Any = self.current if text == CURRENT else text
            name = CURRENT if text == CURRENT else _name(text, i)
            unique, n = name, 2
            while unique in out:
                unique, n = f"{name} ({n})", n + 1
            out[unique] = spec
        return out

    def sources(self) -> list[str]:
        return [self.source_list.item(i).text() for i in range(self.source_list.count())]

    def ready(self) -> bool:
        """Whether there is something to measure: a tokenizer and a source."""
        return self.tokenizer_list.count() > 0 and self.source_list.count() > 0

    def add_tokenizer_dialog(self) -> None:
        path = dialogs_for(self).open_file("Add a tokenizer", "paths/tokenizer_folder",
                                           "Tokenizers (*.json *.txt *.tiktoken *.model);;All files (*)")
        if path:
            self.add_tokenizer(path)

    def add_source_dialog(self) -> None:
        for path in dialogs_for(self).open_files("Add held-out text", "paths/heldout_folder"):
            self.add_source(path)

    def add_folder_dialog(self) -> None:
        path = dialogs_for(self).existing_folder("Add a folder of held-out text", "paths/heldout_folder")
        if path:
            self.add_source(path)

    def remove_selected(self) -> None:
        for widget in (self.tokenizer_list, self.source_list):
            for item in widget.selectedItems():
                if widget is self.tokenizer_list and item.text() == CURRENT:
                    self.current = None
                widget.takeItem(widget.row(item))
        self.changed.emit()
