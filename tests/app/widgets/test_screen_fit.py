"""The window on a laptop screen (1024×700): it opens inside it, and nothing a label or a
combo box says can make it wider — a tokenizer with five long special tokens in the
Explore heading, a long "Failed …" message with a 300-character path, a long banner."""

from __future__ import annotations

import html

import pytest
from PySide6.QtCore import QRect

from bpe_studio.app.widgets import screen_fit
from bpe_studio.app.widgets.screen_fit import fit_rect

LAPTOP = QRect(0, 0, 1024, 700)
LONG_PATH = "/home/someone/corpora/" + "/".join(f"a_rather_long_folder_name_{k:02d}" for k in range(10)) + "/stdlib_all.txt"
SPECIALS = [f"<|{name}_with_a_long_descriptive_name|>" for name in
            ("endoftext", "fim_prefix", "fim_middle", "fim_suffix", "endofprompt")]


@pytest.fixture
def laptop(monkeypatch: pytest.MonkeyPatch) -> QRect:
    """The window's screen is 1024×700 (the offscreen platform's own is 800×800)."""
    monkeypatch.setattr(screen_fit, "available_geometry", lambda _window: QRect(LAPTOP))
    return LAPTOP


def fits(window, screen: QRect) -> bool:
    hint = window.minimumSizeHint()
    return (hint.width() <= screen.width() and hint.height() <= screen.height()
            and window.width() <= screen.width() and window.height() <= screen.height())


def test_fit_rect_keeps_a_fitting_window_and_shrinks_a_big_one() -> None:
    assert fit_rect(QRect(10, 20, 800, 600), LAPTOP) == QRect(10, 20, 800, 600)
    fitted = fit_rect(QRect(0, 0, 1360, 860), LAPTOP)
    assert LAPTOP.contains(fitted) and fitted.width() == 921 and fitted.height() == 630
    assert LAPTOP.contains(fit_rect(QRect(900, 650, 400, 300), LAPTOP))  # moved back on screen


def test_the_window_opens_inside_a_laptop_screen_and_stays_there(qtbot, laptop, make_window) -> None:
    assert len(LONG_PATH) >= 300
    window = make_window()
    qtbot.waitExposed(window)
    assert fits(window, laptop), (window.size(), window.minimumSizeHint())
    central = window.centralWidget().minimumSizeHint()
    assert central.width() <= laptop.width() and central.height() <= laptop.height()

    # A tokenizer whose heading names five long special tokens.
    from core.encode.tokenizer import Tokenizer

    vocab = {i: bytes([i]) for i in range(256)}
    vocab.update({256 + k: token.encode() for k, token in enumerate(SPECIALS)})
    explore = window.explore_panel
    window.tabs.setCurrentWidget(explore)
    with qtbot.waitSignal(explore.vocab_ready, timeout=30_000):
        explore.set_tokenizer(Tokenizer(vocab, [], SPECIALS), title="cl100k_base (100,261 tokens)")
    qtbot.wait(50)
    assert all(html.escape(token) in explore.heading.text() for token in SPECIALS)
    assert fits(window, laptop), (window.size(), window.minimumSizeHint())

    # A long failure: the progress line, the status bar and the banner.
    error = f"Failed to read {LONG_PATH}: " + "the file changed while it was being read; " * 6
    window.tabs.setCurrentIndex(0)
    window._on_failed(error)
    window.progress_panel.refresh()
    qtbot.wait(50)
    assert window.progress_panel.detail_label.text() == error  # whole, drawn shortened
    assert window.progress_panel.detail_label.is_elided()
    assert window.banner.text() == error
    assert fits(window, laptop), (window.size(), window.minimumSizeHint())
    # The banner's × stays on screen, inside the window.
    close = window.banner._close
    assert window.rect().contains(QRect(close.mapTo(window, close.rect().topLeft()), close.size()))


def test_a_long_combo_box_entry_does_not_widen_the_window(qtbot, laptop, make_window) -> None:
    from PySide6.QtWidgets import QComboBox

    window = make_window()
    qtbot.waitExposed(window)
    long_name = "a tokenizer opened from " + LONG_PATH
    combos = window.findChildren(QComboBox)
    assert len(combos) >= 5
    for index in range(window.tabs.count()):
        window.tabs.setCurrentIndex(index)
        for combo in combos:
            combo.addItem(long_name)
            combo.setCurrentIndex(combo.count() - 1)
        qtbot.wait(20)
        assert fits(window, laptop), (index, window.size(), window.minimumSizeHint())
