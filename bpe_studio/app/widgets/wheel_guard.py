"""The mouse wheel changes a setting only when that setting has focus.

Qt's spin boxes and combo boxes take every wheel event over them (and take the focus with
it): scrolling the Train tab's left panel over Pattern switched GPT-2 to an empty "Custom
regex", over Vocabulary size turned 2,000 into 1,000. `guard_wheel` installs one event
filter on each of them: without focus a wheel event is passed on to the parent (the
panel scrolls), with focus (clicked or tabbed into) it changes the value as usual.

    guard_wheel(settings_panel)   # every QAbstractSpinBox and QComboBox under it
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QAbstractSpinBox, QComboBox, QWidget


class WheelGuard(QObject):
    """The event filter: a wheel event over an unfocused setting goes to its parent."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Wheel and isinstance(watched, QWidget) and not watched.hasFocus():
            # Ignored and filtered: QApplication then offers it to the parents (the scroll area).
            event.ignore()
            return True
        return False


def guard_wheel(root: QWidget) -> int:
    """Guard every spin box and combo box under ``root`` (and ``root`` itself if it is one).

    Their focus policy becomes ``StrongFocus`` (click or Tab, not the wheel), so a wheel
    event can never give them the focus on its way past. Calling it again is harmless.
    Returns how many widgets are guarded.
    """
    guard = root.findChild(WheelGuard, "wheelGuard", Qt.FindChildOption.FindDirectChildrenOnly)
    if guard is None:
        guard = WheelGuard(root)  # lives as long as the widgets it guards
        guard.setObjectName("wheelGuard")
    widgets = root.findChildren(QAbstractSpinBox) + root.findChildren(QComboBox)
    if isinstance(root, (QAbstractSpinBox, QComboBox)):
        widgets.append(root)
    for widget in widgets:
        if widget.focusPolicy() == Qt.FocusPolicy.WheelFocus:
            widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        if not widget.property("wheelGuarded"):
            widget.setProperty("wheelGuarded", True)
            widget.installEventFilter(guard)
    return len(widgets)
