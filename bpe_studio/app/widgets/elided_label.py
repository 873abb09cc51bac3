"""One-line labels that elide long text instead of widening their panel; the full text is their tooltip.

`ElidedLabel` keeps the whole text apart (`set_full_text`, `full_text`); `OneLineLabel` is a
drop-in `QLabel` whose `text()` stays whole and is only drawn shortened.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent, QResizeEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QToolTip, QWidget


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


class OneLineLabel(QLabel):
    """A drop-in `QLabel` for one line of plain text that may get long (a status, a figure
    line, an error): `text()` stays the whole text, but the label never asks for its
    width — it is drawn shortened with "…" when narrower, with the whole text as tooltip.

    Args:
        mode: where the "…" goes (the end by default).
    """

    def __init__(self, text: str = "", parent: QWidget | None = None, *,
                 mode: Qt.TextElideMode = Qt.TextElideMode.ElideRight) -> None:
        super().__init__(text, parent)
        self._mode = mode
        self._own_tip = ""
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

    def minimumSizeHint(self) -> QSize:
        return QSize(0, super().minimumSizeHint().height())

    def shown_text(self) -> str:
        """The text as drawn at the label's width (shortened with "…" when it does not fit)."""
        return self.fontMetrics().elidedText(self.text(), self._mode, max(self.contentsRect().width(), 0))

    def is_elided(self) -> bool:
        return self.shown_text() != self.text()

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and self.is_elided() and not self.toolTip():
            QToolTip.showText(event.globalPos(), self.text(), self)
            return True
        return super().event(event)

    def paintEvent(self, _event: QPaintEvent) -> None:
        painter = QPainter(self)
        self.style().drawItemText(painter, self.contentsRect(), int(self.alignment()), self.palette(),
                                  self.isEnabled(), self.shown_text(), self.foregroundRole())
