"""An inline banner for errors and notices at the top of the window (no modal dialogs).

Errors from training or from files are shown here, in words, never as a traceback; the
window stays usable and the banner closes with its × button or the next action.

The message wraps (a long path breaks anywhere), so no message can widen the window.
After `float_over(tabs)` the banner floats over the top of the tabs' pages, just under the
tab bar, instead of taking a row of the layout: showing or closing it moves nothing (a
banner in the layout pushed the tab bar down under the cursor).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QSizePolicy, QTabWidget, QToolButton, QWidget


class ErrorBanner(QFrame):
    """A dismissible one-message banner; `show_error` and `show_info` set its text."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("errorBanner")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)  # floating: the page under it must not show through
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 6, 6)
        self._label = QLabel()
        self._label.setWordWrap(True)
        self._label.setTextFormat(Qt.TextFormat.PlainText)
        self._label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._close = QToolButton()
        self._close.setText("×")
        self._close.setToolTip("Dismiss")
        self._close.setAutoRaise(True)
        self._close.clicked.connect(self.clear)
        layout.addWidget(self._label, 1)
        layout.addWidget(self._close, 0, Qt.AlignmentFlag.AlignTop)
        self._host: QWidget | None = None
        self.hide()

    def text(self) -> str:
        """The message shown ("" when hidden)."""
        return "" if self.isHidden() else self._label.text()

    def kind(self) -> str:
        return str(self.property("kind") or "")

    def show_error(self, message: str) -> None:
        self._show(message, "error")

    def show_info(self, message: str) -> None:
        self._show(message, "info")

    def clear(self) -> None:
        self._label.clear()
        self.hide()

    def float_over(self, host: QWidget) -> None:
        """Float over the top of ``host`` (under its tab bar if it is a `QTabWidget`) rather
        than sit in a layout."""
        self._host = host
        self.setParent(host)
        host.installEventFilter(self)
        self.hide()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self._host and event.type() in (QEvent.Type.Resize, QEvent.Type.LayoutRequest):
            self._place()
        return super().eventFilter(watched, event)

    def _place(self) -> None:
        host = self._host
        if host is None or self.isHidden():
            return
        top = host.tabBar().geometry().bottom() + 1 if isinstance(host, QTabWidget) else 0
        width = host.width()
        height = self.heightForWidth(width) if self.hasHeightForWidth() else self.sizeHint().height()
        self.setGeometry(0, top, width, max(height, self.minimumSizeHint().height()))
        self.raise_()

    def _show(self, message: str, kind: str) -> None:
        self.setProperty("kind", kind)
        self._label.setText(message)
        self.style().unpolish(self)  # re-apply the style sheet's [kind=...] rule
        self.style().polish(self)
        self.show()
        self._place()
