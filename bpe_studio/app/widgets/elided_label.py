"""A one-line label that elides long text instead of widening its panel; the full text is its tooltip."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget


class ElidedLabel(QLabel):
    """A one-line label that shortens its text with "…" rather than widen the window.

    Args:
        mode: where the "…" goes (the middle by default: a path keeps both ends).

    While the text is shortened, its tooltip is the full text (unless `set_tip` gave one).
    """

    def __init__(self, parent: QWidget | None = None, *, mode: Qt.TextElideMode = Qt.TextElideMode.ElideMiddle) -> None:
        super().__init__(parent)
        self._full = ""
        self._mode = mode
        self._tip = ""
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

    def set_full_text(self, text: str) -> None:
        self._full = text
        self._elide()

    def set_tip(self, tip: str) -> None:
        """A tooltip of its own, shown whether or not the text is shortened."""
        self._tip = tip
        self._elide()

    def full_text(self) -> str:
        return self._full

    def is_elided(self) -> bool:
        return self.text() != self._full

    def minimumSizeHint(self) -> QSize:
        return QSize(0, super().minimumSizeHint().height())

    def sizeHint(self) -> QSize:
        return QSize(self.fontMetrics().horizontalAdvance(self._full) + 4, super().sizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        shown = self.fontMetrics().elidedText(self._full, self._mode, max(self.width(), 0))
        self.setText(shown)
        self.setToolTip(self._tip or (self._full if shown != self._full else ""))
