"""Keeping the window on a laptop screen: it opens inside the available screen, and no
combo box entry can make it wider.

`place_window` restores the saved geometry (or the default size) and then shrinks and
moves the window into the screen's available area (at most `SCREEN_SHARE` of it when it
would not fit): at 1024×700 the window opens at about 920×630, not 1360×860 with the
Result box and the status bar off-screen. It also bounds every combo box's width, so
that a long entry (a tokenizer's name, a path) is shortened in the box and shown whole in
its list instead of widening the window.

    place_window(window, saved_geometry, (1360, 860))
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QByteArray, QRect
from PySide6.QtWidgets import QComboBox, QWidget

SCREEN_SHARE = 0.9
"""The share of the available screen a window too big for it opens at."""
COMBO_CHARACTERS = 14
"""Characters a combo box shows before it shortens its entry (its list shows them whole)."""


def available_geometry(window: QWidget) -> QRect:
    """The screen area the window may use (without task bars and docks)."""
    screen = window.screen()
    return screen.availableGeometry() if screen is not None else QRect(0, 0, 1024, 700)


def fit_rect(rect: QRect, available: QRect, share: float = SCREEN_SHARE) -> QRect:
    """``rect`` made to fit ``available``: as it is when it fits, else at most ``share`` of it
    in each direction that does not fit, and moved inside it.

    ``fit_rect(QRect(0, 0, 1360, 860), QRect(0, 0, 1024, 700))`` -> ``QRect(51, 35, 921, 630)``
    """
    width = rect.width() if rect.width() <= available.width() else int(available.width() * share)
    height = rect.height() if rect.height() <= available.height() else int(available.height() * share)
    left = min(max(rect.left(), available.left()), available.right() + 1 - width)
    top = min(max(rect.top(), available.top()), available.bottom() + 1 - height)
    if width != rect.width():
        left = available.left() + (available.width() - width) // 2
    if height != rect.height():
        top = available.top() + (available.height() - height) // 2
    return QRect(left, top, width, height)


def bound_combo_boxes(root: QWidget, characters: int = COMBO_CHARACTERS) -> int:
    """Make every combo box under ``root`` size itself for ``characters`` characters rather
    than for its longest entry (the style shortens the entry shown with "…"; the open list
    shows it whole). Returns how many there are."""
    combos = root.findChildren(QComboBox)
    for combo in combos:
        combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        combo.setMinimumContentsLength(characters)
    return len(combos)


def place_window(window: QWidget, saved: QByteArray | bytes | object, default_size: Sequence[int],
                 available: QRect | None = None) -> QRect:
    """Restore ``saved`` geometry (else resize to ``default_size``), then fit the window into
    the screen's available area; bound its combo boxes (see the module docstring).

    Args:
        window: the top-level window (not shown yet).
        saved: what ``saveGeometry`` gave last time (``b""`` or anything else: none).
        default_size: (width, height) used without a saved geometry.
        available: the screen area to fit into (default: the window's screen's).

    Returns:
        The window's geometry after fitting.
    """
    restored = isinstance(saved, (QByteArray, bytes)) and bool(saved) and window.restoreGeometry(saved)
    if not restored:
        window.resize(*default_size)
    bound_combo_boxes(window)
    area = available if available is not None else available_geometry(window)
    frame = window.frameGeometry() if restored else QRect(window.pos(), window.size())
    fitted = fit_rect(frame, area)
    # The frame (title bar, borders) is part of what must fit: take it off the client size.
    extra_w, extra_h = frame.width() - window.width(), frame.height() - window.height()
    window.resize(max(fitted.width() - extra_w, 1), max(fitted.height() - extra_h, 1))
    window.move(fitted.topLeft())
    return QRect(fitted.topLeft(), window.size())
