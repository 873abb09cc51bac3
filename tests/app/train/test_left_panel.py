"""The left panel of the Train tab never clips its controls, at small and large window sizes,
even with a result whose longest token is a 150-byte run without spaces."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import QScrollArea

from core import TrainOptions
from bpe_studio.app.models.session import Session, TrainSettings


def long_token_session(corpus: str) -> Session:
    """A result whose longest token is "+" + 128 "-" + "+" (the dashes built by doubling)."""
    vocab = {i: bytes([i]) for i in range(256)}
    merges = [(b"-" * n, b"-" * n) for n in (1, 2, 4, 8, 16, 32, 64)]
    merges += [(b"+", b"-" * 128), (b"+" + b"-" * 128, b"+")]
    for left, right in merges:
        vocab[len(vocab)] = left + right
    return Session(TrainSettings(corpus, TrainOptions(len(vocab))), vocab, merges, [5] * len(merges), [],
                   stats={"elapsed": 1.0, "distinct": 12_345, "total": 1_234_567})


def window_at_1024_with_long_tokens(qtbot, make_window):  # noqa: ANN001, ANN201
    """A window at 1024x700 showing `long_token_session` in its merges table."""
    window = make_window()
    window.resize(1024, 700)
    qtbot.waitExposed(window)
    window.state.load(long_token_session(window.settings_panel.corpus()))
    window.merges_table.refresh()
    qtbot.wait(50)  # layouts settle
    return window


def fully_visible(widget, area) -> bool:
    viewport = area.viewport()
    top_left = widget.mapTo(viewport, QPoint(0, 0))
    rect = QRect(top_left, widget.size())
    return viewport.rect().contains(QRect(rect.left(), viewport.rect().top(), rect.width(), 1)) and \
        widget.width() >= widget.minimumSizeHint().width()


@pytest.mark.parametrize("size", [(1024, 700), (1600, 1000)])
def test_left_panel_controls_are_never_cut(qtbot, make_window, size):
    window = make_window()
    window.resize(*size)
    qtbot.waitExposed(window)
    window.state.load(long_token_session(window.settings_panel.corpus()))
    window.summary_panel.refresh()
    qtbot.wait(50)  # layouts settle
    panel, summary = window.settings_panel, window.summary_panel
    area = panel.parentWidget()
    while not isinstance(area, QScrollArea):
        area = area.parentWidget()
    for widget in (panel.corpus_edit, panel.browse_button, panel.recent_button, panel.vocab_spin,
                   panel.workers_spin, panel.pattern_combo,
                   summary.export_button, summary.save_button):
        assert fully_visible(widget, area), (widget, widget.geometry(), area.viewport().width())
    # Train is pinned below the scrolling settings, across the same column.
    column = area.parentWidget()
    button = panel.train_button
    assert column.rect().contains(QRect(button.mapTo(column, QPoint(0, 0)), button.size()))
    assert button.width() >= button.minimumSizeHint().width()
    # The long value is shortened to fit, with the whole of it in the tooltip.
    field = next(summary._form.itemAt(i, summary._form.ItemRole.FieldRole).widget()
                 for i in range(summary._form.rowCount())
                 if summary._form.itemAt(i, summary._form.ItemRole.LabelRole).widget().text() == "Longest token:")
    assert field.full_text().startswith("130 bytes: +---")
    assert field.is_elided() and "…" in field.text()
    assert field.toolTip() == field.full_text()
    assert fully_visible(field, area)
    # The splitter cannot squeeze the panel below what its controls need.
    splitter = column.parentWidget()
    splitter.setSizes([50, 2000])
    qtbot.wait(20)
    assert fully_visible(panel.browse_button, area) and fully_visible(summary.save_button, area)


def test_the_recent_button_has_room_for_its_text_and_arrow(qtbot, make_window):
    button = make_window().settings_panel.recent_button
    style = button.style()
    needed = (button.fontMetrics().horizontalAdvance(button.text())
              + style.pixelMetric(style.PixelMetric.PM_MenuButtonIndicator, None, button)
              + 2 * style.pixelMetric(style.PixelMetric.PM_ButtonMargin, None, button))
    assert button.sizeHint().width() >= needed
    assert button.width() >= needed
    assert button.menu() is not None
