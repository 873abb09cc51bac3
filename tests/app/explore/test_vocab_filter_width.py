"""The vocabulary browser's filter bar at 1024×700 and 1600×1000: the filter field has room
to type in (at least 160 px) and none of its options is cut or pushed out of view."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QRect

MIN_FILTER_WIDTH = 160


@pytest.mark.parametrize("size", [(1024, 700), (1600, 1000)])
def test_the_filter_field_has_room(qtbot, make_window, size) -> None:
    window = make_window()
    window.resize(*size)
    window.tabs.setCurrentWidget(window.explore_panel)
    qtbot.waitExposed(window)
    qtbot.wait(50)
    browser = window.explore_panel.browser
    assert browser.filter_edit.width() >= MIN_FILTER_WIDTH, browser.filter_edit.width()
    for widget in (browser.filter_edit, browser.scope_combo, browser.regex_box, browser.case_box,
                   browser.spans_box, browser.show_combo):
        where = QRect(widget.mapTo(browser, QPoint(0, 0)), widget.size())
        assert widget.isVisible() and browser.rect().contains(where), (widget, where, browser.rect())
        assert widget.width() >= widget.minimumSizeHint().width(), widget
        table_top = browser.table.mapTo(browser, QPoint(0, 0)).y()
        assert where.bottom() < table_top  # above the table, not over it
