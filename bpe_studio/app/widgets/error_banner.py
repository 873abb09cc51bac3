"""An inline banner for errors and notices at the top of the window (no modal dialogs).

Errors from training or from files are shown here, in words, never as a traceback; the
window stays usable and the banner closes with its × button or the next action.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QWidget


class ErrorBanner(QFrame):
    """A dismissible one-message banner; `show_error` and `show_info` set its text."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("errorBanner")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 6, 6)
        self._label = QLabel()
        self._label.setWordWrap(True)
        self._label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._close = QToolButton()
        self._close.setText("×")
        self._close.setToolTip("Dismiss")
        self._close.setAutoRaise(True)
        self._close.clicked.connect(self.clear)
        layout.addWidget(self._label, 1)
        layout.addWidget(self._close, 0, Qt.AlignmentFlag.AlignTop)
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

    def _show(self, message: str, kind: str) -> None:
        self.setProperty("kind", kind)
        self._label.setText(message)
        self.style().unpolish(self)  # re-apply the style sheet's [kind=...] rule
        self.style().polish(self)
        self.show()
