"""A plain-text editor that hands over a paste or drop too long to hold.

Qt lays out all of a pasted text in the GUI thread, and reading it back (`toPlainText`)
copies all of it: tens of megabytes froze the window for seconds at each step. `TextEditor`
inserts as a `QPlainTextEdit` does up to `max_chars`; past that it inserts nothing and
emits `too_long` with the text the editor would have held, for its owner to show in part.
"""

from __future__ import annotations

from PySide6.QtCore import QMimeData, Signal
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QPlainTextEdit, QWidget

_LINE_BREAKS = str.maketrans({"\u2029": "\n", "\u2028": "\n"})  # Qt's paragraph and line separators


class TextEditor(QPlainTextEdit):
    """`QPlainTextEdit` whose pastes and drops past ``max_chars`` become `too_long(text)`."""

    too_long = Signal(object)  # the whole text the insertion would have made (a str: object, not copied)

    def __init__(self, max_chars: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.max_chars = max_chars

    def insertFromMimeData(self, source: QMimeData) -> None:  # noqa: N802 - Qt's name
        if self.isReadOnly() or not source.hasText():
            super().insertFromMimeData(source)
            return
        inserted = source.text()
        cursor = self.textCursor()
        kept = self.document().characterCount() - 1 - (cursor.selectionEnd() - cursor.selectionStart())
        if kept + len(inserted) <= self.max_chars:
            super().insertFromMimeData(source)
            return
        self.too_long.emit(self._before(cursor.selectionStart()) + inserted + self._after(cursor.selectionEnd()))

    def _before(self, position: int) -> str:
        cursor = QTextCursor(self.document())
        cursor.setPosition(position, QTextCursor.MoveMode.KeepAnchor)
        return cursor.selectedText().translate(_LINE_BREAKS)

    def _after(self, position: int) -> str:
        cursor = QTextCursor(self.document())
        cursor.setPosition(position)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        return cursor.selectedText().translate(_LINE_BREAKS)
