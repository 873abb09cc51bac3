"""The Train tab at 1024×700 (and still at 1600×1000): Train is in view without scrolling,
no hint is cut off, and the corpus line follows the file on disk (changed, deleted)."""

from __future__ import annotations

import os

import pytest
from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import QGroupBox, QLabel

SIZES = [(1024, 700), (1600, 1000)]


def shown_at(qtbot, make_window, size, corpus=None):  # noqa: ANN001, ANN201
    window = make_window(corpus)
    window.resize(*size)
    qtbot.waitExposed(window)
    qtbot.wait(50)  # layouts settle
    return window


def in_view(widget, window) -> bool:
    """Whether all of ``widget`` is painted inside ``window`` (no scroll area or edge cuts it)."""
    if not widget.isVisible():
        return False
    whole = widget.rect()
    seen = widget.visibleRegion().boundingRect()
    top_left = widget.mapTo(window, QPoint(0, 0))
    return seen == whole and window.rect().contains(QRect(top_left, widget.size()))


@pytest.mark.parametrize("size", SIZES)
def test_the_train_button_is_in_view_without_scrolling(qtbot, make_window, size) -> None:
    window = shown_at(qtbot, make_window, size)
    panel = window.settings_panel
    assert window.left_scroll.verticalScrollBar().value() == 0
    assert in_view(panel.train_button, window), (panel.train_button.geometry(), panel.train_button.visibleRegion())
    assert panel.train_button.height() >= panel.train_button.sizeHint().height()
    button = QRect(panel.train_button.mapTo(window, QPoint(0, 0)), panel.train_button.size())
    for box in panel.findChildren(QGroupBox):  # over none of the settings
        seen = box.visibleRegion().boundingRect()
        assert not QRect(box.mapTo(window, seen.topLeft()), seen.size()).intersects(button), box.title()
    # Running, it reads Cancel, in the same place.
    where = panel.train_button.mapTo(window, QPoint(0, 0))
    panel.set_running(True)
    qtbot.wait(20)
    assert panel.train_button.text() == "Cancel" and in_view(panel.train_button, window)
    assert panel.train_button.mapTo(window, QPoint(0, 0)) == where
    panel.set_running(False)
    # With a result shown (the Result box grows), and after a resize, still in view.
    from tests.app.train.test_left_panel import long_token_session

    window.state.load(long_token_session(panel.corpus()))
    window.summary_panel.refresh()
    window.resize(size[0], size[1] - 60)
    qtbot.wait(50)
    assert in_view(panel.train_button, window)


def clipped_hints(panel) -> list[str]:
    """The visible hint lines of ``panel`` whose text does not fit their rectangle."""
    cut = []
    for label in panel.findChildren(QLabel):
        if label.objectName() != "hint" or not label.isVisible() or not label.text():
            continue
        if label.wordWrap():
            needed = label.heightForWidth(label.width())
            if label.height() < needed:
                cut.append(f"{label.text()!r}: {label.height()} < {needed} px high at {label.width()} px")
        elif label.width() < label.sizeHint().width():
            cut.append(f"{label.text()!r}: {label.width()} < {label.sizeHint().width()} px wide")
    return cut


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("typed", [None, ["<|im_start|>"]])
def test_no_hint_is_cut_off(qtbot, make_window, size, typed) -> None:
    """The sample corpus has <|endoftext|> between documents: the special-token hint says so
    (filled in, or — with other tokens typed — to add it); the variant's note is there too."""
    window = shown_at(qtbot, make_window, size)
    panel = window.settings_panel
    if typed is not None:
        panel.specials_edit.setPlainText("\n".join(typed))
        panel.set_corpus("")
        panel.use_sample_corpus()
    qtbot.wait(50)
    assert panel.specials_hint.isVisible()
    assert ("add it here" in panel.specials_hint.text()) == (typed is not None)
    assert not clipped_hints(panel), clipped_hints(panel)
    # A long invalid custom regex: its message wraps and is not cut either.
    panel.pattern_combo.setCurrentIndex(panel.pattern_combo.findData("custom"))
    panel.regex_edit.setText("(" * 3 + "unbalanced [" + "x" * 40)
    qtbot.wait(50)
    assert not clipped_hints(panel), clipped_hints(panel)


def test_the_corpus_line_follows_the_file_on_disk(qtbot, make_window, tmp_path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a" * 2000, encoding="utf-8")
    window = shown_at(qtbot, make_window, (1024, 700), corpus)
    panel = window.settings_panel
    info = panel.corpus_info
    assert info.text().startswith("2.0 KB")
    corpus.write_text("a" * 50_000, encoding="utf-8")  # changed on disk
    qtbot.waitUntil(lambda: info.text().startswith("50.0 KB"), timeout=5000)
    os.remove(corpus)  # deleted: shown as missing
    qtbot.waitUntil(lambda: "No such file" in info.text(), timeout=5000)
    assert info.property("invalid") is True
    corpus.write_text("b" * 3000, encoding="utf-8")  # back again
    qtbot.waitUntil(lambda: info.text().startswith("3.0 KB"), timeout=5000)
    assert not info.property("invalid")


def test_train_reads_the_corpus_line_again(qtbot, make_window, tmp_path, monkeypatch) -> None:
    """Pressing Train brings the line up to date at once, whatever the timer's phase."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a" * 2000, encoding="utf-8")
    window = shown_at(qtbot, make_window, (1024, 700), corpus)
    panel = window.settings_panel
    started = []
    panel.trainClicked.disconnect()
    panel.trainClicked.connect(lambda: started.append(panel.corpus_info.text()))
    os.remove(corpus)
    panel.train_button.click()
    assert started and "No such file" in started[0]
