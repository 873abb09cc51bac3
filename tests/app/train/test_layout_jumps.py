"""Nothing jumps: the vocabulary-size hint does not widen the left column, a banner does
not push the tab bar down, and at 1024×700 the merges table and the merge tree show their
tokens readably."""

from __future__ import annotations

from PySide6.QtCore import QPoint
from PySide6.QtGui import QFontMetrics

READABLE_CHARACTERS = 8  # characters a token column always has room for
from tests.app.train.test_left_panel import window_at_1024_with_long_tokens


def test_the_vocabulary_size_hint_does_not_widen_the_left_column(qtbot, make_window) -> None:
    window = make_window()
    window.resize(1024, 700)
    qtbot.waitExposed(window)
    qtbot.wait(20)
    column = window.left_scroll
    before = (column.minimumSizeHint().width(), column.width(), window.charts.mapTo(window, QPoint(0, 0)))
    window.settings_panel.vocab_spin.setValue(100)  # "too small: at least 256 (256 bytes + special tokens)"
    qtbot.wait(50)
    assert "too small" in window.settings_panel.merges_hint.text()
    assert (column.minimumSizeHint().width(), column.width(), window.charts.mapTo(window, QPoint(0, 0))) == before


def test_a_banner_does_not_push_the_tab_bar_down(qtbot, make_window) -> None:
    window = make_window()
    qtbot.waitExposed(window)
    bar = window.tabs.tabBar()
    page = window.tabs.currentWidget()
    before = (bar.mapTo(window, QPoint(0, 0)), page.mapTo(window, QPoint(0, 0)), page.size())
    window.banner.show_error("Something went wrong: " + "a rather long explanation of it, " * 8)
    qtbot.wait(50)
    assert window.banner.isVisible()
    assert (bar.mapTo(window, QPoint(0, 0)), page.mapTo(window, QPoint(0, 0)), page.size()) == before
    # It floats just under the tab bar, over the page, across the whole width, and closes.
    banner_top = window.banner.mapTo(window, QPoint(0, 0)).y()
    assert banner_top == bar.mapTo(window, QPoint(0, bar.height())).y()
    assert window.banner.width() == window.tabs.width()
    window.banner._close.click()
    assert window.banner.text() == "" and not window.banner.isVisible()


def test_at_1024_the_merges_table_and_the_merge_tree_are_readable(qtbot, make_window) -> None:
    window = window_at_1024_with_long_tokens(qtbot, make_window)
    table = window.merges_table
    mono = QFontMetrics(table.merges_model._mono)
    header = table.horizontalHeader()
    for column in (1, 2, 3):  # Left, Right, Result
        assert header.sectionSize(column) >= mono.horizontalAdvance("m" * READABLE_CHARACTERS), column
    # The charts beside it are not cut: each at least as wide as its plot needs.
    for chart in window.charts._charts():
        assert chart.width() >= chart.minimumWidth() >= 170
        assert chart.getPlotItem().width() <= chart.viewport().width() + 1

    # The merge tree of a word of an opened tokenizer shows the word whole.
    from core.encode.tokenizer import Tokenizer

    explore = window.explore_panel
    window.tabs.setCurrentWidget(explore)
    vocab = {i: bytes([i]) for i in range(256)}
    merges = [(b" ", b"i"), (b"n", b"t"), (b"e", b"r"), (b" i", b"nt"), (b" int", b"er"),
              (b"n", b"a"), (b"t", b"i"), (b"o", b"na"), (b"ti", b"ona"), (b"na", b"tiona"), (b" inter", b"nationa"),
              (b" internationa", b"l")]
    for left, right in merges:
        vocab[len(vocab)] = left + right
    with qtbot.waitSignal(explore.vocab_ready, timeout=30_000):
        explore.set_tokenizer(Tokenizer(vocab, merges), title="opened")
    explore.browser.select_token(len(vocab) - 1)
    qtbot.waitUntil(lambda: explore.tree.token_id == len(vocab) - 1)
    qtbot.wait(50)
    tree = explore.tree
    label = tree.topLevelItem(0).text(0)
    assert label == "“·international”"
    needed = tree.fontMetrics().horizontalAdvance(label) + tree.indentation() + 8
    assert tree.header().sectionSize(0) >= needed, (tree.header().sectionSize(0), needed)
