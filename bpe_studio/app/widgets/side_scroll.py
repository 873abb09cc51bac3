"""A side panel that scrolls vertically and never clips its controls horizontally.

A `QScrollArea` with its horizontal scroll bar off cuts whatever is wider than it (the
Browse… and Recent buttons, spin-box arrows, "Save session…"). This one reports its
content's minimum width (plus the vertical scroll bar) as its own, so the splitter and the
window can never make it narrower than its controls need.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QStyle, QWidget


class SideScrollArea(QScrollArea):
    """Scrolls ``content`` vertically; at least as wide as ``content``'s minimum width."""

    def __init__(self, content: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidget(content)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        content.installEventFilter(self)

    def _needed_width(self) -> int:
        content = self.widget()
        if content is None:
            return 0
        bar = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent, None, self)
        return content.minimumSizeHint().width() + bar + 2 * self.frameWidth()

    def minimumSizeHint(self) -> QSize:
        return QSize(self._needed_width(), super().minimumSizeHint().height())

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        return QSize(max(hint.width(), self._needed_width()), hint.height())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.widget() and event.type() == QEvent.Type.LayoutRequest:
            self.setMinimumWidth(self._needed_width())  # the content changed (e.g. a result shown)
        return super().eventFilter(watched, event)
