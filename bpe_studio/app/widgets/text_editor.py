"""A plain-text editor that hands over a paste or drop too long to hold.

Qt lays out all of a pasted text in the GUI thread, and reading it back (`toPlainText`)
copies all of it: tens of megabytes froze the window for seconds at each step. `TextEditor`
inserts as a `QPlainTextEdit` does up to `max_chars`; past that it inserts nothing and
emits `too_long` with the text the editor would have held, for its owner to show in part.
A paste of more than four bytes a character allowed (certainly too long) is not even made
a text here: `too_long_data` hands over its UTF-8 bytes, with the text around them, to be
decoded off the GUI thread (`join_paste`): Qt turning tens of megabytes into a str froze the window.
"""

from __future__ import annotations

import codecs

from PySide6.QtCore import QByteArray, QMimeData, Signal
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QPlainTextEdit, QWidget

PASTE_PIECE = 1 << 20  # bytes of a long paste decoded at a time
_LINE_BREAKS = str.maketrans({"\u2029": "\n", "\u2028": "\n"})  # Qt's paragraph and line separators


class TextEditor(QPlainTextEdit):
    """`QPlainTextEdit` whose pastes and drops past ``max_chars`` become `too_long(text)`."""

    too_long = Signal(object)  # the whole text the insertion would have made (a str: object, not copied)
    too_long_data = Signal(str, object, str)  # the text before, the pasted UTF-8 (a QByteArray), the text after

    def __init__(self, max_chars: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.max_chars = max_chars

    def insertFromMimeData(self, source: QMimeData) -> None:  # noqa: N802 - Qt's name
        if self.isReadOnly() or not source.hasText():
            super().insertFromMimeData(source)
            return
        cursor = self.textCursor()
        kept = self.document().characterCount() - 1 - (cursor.selectionEnd() - cursor.selectionStart())
        data = source.data("text/plain") if source.hasFormat("text/plain") else None
        if data is not None and data.size() > 4 * self.max_chars:  # (a character is at most 4 bytes)
            self.too_long_data.emit(self._before(cursor.selectionStart()), data, self._after(cursor.selectionEnd()))
            return
        inserted = source.text()
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


def join_paste(before: str, data: bytes | QByteArray, after: str) -> str:
    """The text `too_long_data` stands for (runs in any thread): ``data``, UTF-8, decoded
    between ``before`` and ``after``. A megabyte at a time, so the GUI thread gets the GIL
    between the pieces (one decode of tens of megabytes holds it throughout)."""
    view = memoryview(data)  # (pieces of a QByteArray or bytes, not copied)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    parts = [before]
    for start in range(0, len(view), PASTE_PIECE):
        parts.append(decoder.decode(view[start : start + PASTE_PIECE], final=start + PASTE_PIECE >= len(view)))
    parts.append(after)
    return "".join(parts)
