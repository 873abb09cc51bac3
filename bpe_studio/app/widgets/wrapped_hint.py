"""A word-wrapped hint line that keeps the height its lines need at its width.

In the settings form (inside a scroll area) a plain wrapped label was squeezed and its
lines cut off; `WrappedHint` sets its minimum height to what its text needs whenever its
width, text or font changes (kept from a longer text, the new lines floated in blank space). It carries the ``hint`` object name (the style sheet's small grey text).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QWidget


class WrappedHint(QLabel):
    """A word-wrapped hint that is never cut off (see the module docstring)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("hint")
        self.setWordWrap(True)  # a long text must not widen the settings column

    def setText(self, text: str) -> None:
        if text != self.text():
            super().setText(text)
            self._fit()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):  # a style sheet may set another font
            self._fit()

    def _fit(self) -> None:
        old = self.minimumHeight()
        self.setMinimumHeight(0)  # a label's heightForWidth never answers less than its minimum
        needed = self.heightForWidth(self.width()) if self.text() else 0
        self.setMinimumHeight(max(needed, 0) if needed != -1 else old)
