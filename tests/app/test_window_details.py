"""Small things a new user notices: the title, tooltips naming the right shortcut, every
column in view at 1024×700, sort arrows that fit."""

from __future__ import annotations

from PySide6.QtCore import Qt

from bpe_studio.app.models.vocab_data import COL_LENGTH
from tests.app.train.test_left_panel import window_at_1024_with_long_tokens


def test_title_names_the_app_once_and_last(qtbot, make_window, make_corpus):
    window = make_window(make_corpus(5_000, name="pydocs.txt"))
    title = window.windowTitle()
    # Qt appends the display name to a title not ending with it: "… — BPE Studio — BPE Studio".
    assert title == "pydocs.txt — BPE Studio"
    assert title.count("BPE Studio") == 1


def test_open_tokenizer_tooltip_names_its_shortcut(qtbot, make_window):
    window = make_window()
    shortcut = window.open_tokenizer_action.shortcut().toString()
    assert shortcut == "Ctrl+Shift+T"
    tip = window.explore_panel.open_button.toolTip()
    assert shortcut in tip and window.open_session_action.shortcut().toString() not in tip


def columns_in_view(view, header) -> bool:
    width = view.viewport().width()
    return all(
        0 <= header.sectionViewportPosition(c) and header.sectionViewportPosition(c) + header.sectionSize(c) <= width
        and header.sectionSize(c) >= 20  # not squeezed to nothing
        for c in range(header.count()) if not header.isSectionHidden(c)  # e.g. Count, for a tokenizer without counts
    )


def test_every_column_is_in_view_at_1024x700(qtbot, make_window):
    window = window_at_1024_with_long_tokens(qtbot, make_window)
    session = window.state.session
    table = window.merges_table
    assert columns_in_view(table, table.horizontalHeader())

    explore = window.explore_panel
    window.tabs.setCurrentWidget(explore)
    from core.encode.tokenizer import Tokenizer

    with qtbot.waitSignal(explore.vocab_ready, timeout=30_000):
        explore.set_tokenizer(Tokenizer(session.vocab, session.merges), title="long tokens")
    longest = max(session.vocab, key=lambda i: len(session.vocab[i]))
    explore.browser.select_token(longest)
    qtbot.waitUntil(lambda: explore.tree.token_id == longest)
    qtbot.wait(50)
    assert columns_in_view(explore.tree, explore.tree.header())

    # The Length column fits its title and the sort arrow.
    browser = explore.browser
    browser.table.sortByColumn(COL_LENGTH, Qt.SortOrder.DescendingOrder)
    header = browser.table.horizontalHeader()
    style = header.style()
    needed = (header.fontMetrics().horizontalAdvance("Length")
              + style.pixelMetric(style.PixelMetric.PM_HeaderMarkSize, None, header)
              + 2 * style.pixelMetric(style.PixelMetric.PM_HeaderMargin, None, header))
    assert header.sectionSize(COL_LENGTH) >= needed
