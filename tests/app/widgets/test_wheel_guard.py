"""Scrolling the Train tab's left panel never changes a setting: the wheel goes to a spin
box or combo box only when it has focus; otherwise the panel scrolls."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QAbstractSpinBox, QApplication, QComboBox


def wheel(widget, steps: int = -1) -> bool:
    """Send one notch of the wheel over ``widget``'s middle; True if it took the event."""
    centre = QPointF(widget.width() / 2, widget.height() / 2)
    event = QWheelEvent(centre, QPointF(widget.mapToGlobal(centre.toPoint())), QPoint(0, 0), QPoint(0, 120 * steps),
                        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(widget, event)
    return event.isAccepted()


def value(widget) -> object:
    return widget.currentIndex() if isinstance(widget, QComboBox) else widget.value()


def settings_widgets(panel) -> list:
    widgets = panel.findChildren(QAbstractSpinBox) + panel.findChildren(QComboBox)
    return [w for w in widgets if w.isEnabled() and w.isVisibleTo(panel)]


def test_the_wheel_over_an_unfocused_setting_changes_nothing(qtbot, make_window) -> None:
    window = make_window()
    qtbot.waitExposed(window)
    panel = window.settings_panel
    widgets = settings_widgets(panel)
    names = {type(w).__name__ for w in widgets}
    assert {"QSpinBox", "QDoubleSpinBox", "QComboBox"} <= names and len(widgets) >= 5, names
    window.tabs.setFocus()
    for widget in widgets:
        for steps in (-1, 1):
            before = value(widget)
            taken = wheel(widget, steps)
            assert value(widget) == before, widget
            assert not taken  # passed on: the scroll area gets it
            assert not widget.hasFocus() and widget.focusPolicy() == Qt.FocusPolicy.StrongFocus

    # With focus, the wheel changes the value as usual.
    spin = panel.vocab_spin
    spin.setFocus()
    qtbot.waitUntil(spin.hasFocus)
    before = spin.value()
    wheel(spin, -1)
    assert spin.value() == before - spin.singleStep()
    combo = panel.pattern_combo
    combo.setFocus()
    qtbot.waitUntil(combo.hasFocus)
    before = combo.currentIndex()
    wheel(combo, -1)
    assert combo.currentIndex() == before + 1


def test_every_setting_in_the_window_is_guarded(qtbot, make_window) -> None:
    window = make_window()
    widgets = window.findChildren(QAbstractSpinBox) + window.findChildren(QComboBox)
    assert widgets and all(w.property("wheelGuarded") for w in widgets)
