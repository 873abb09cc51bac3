"""The scripts' fallback fonts are loaded while the window is idle, one script per pass of
the event loop, and the warmer goes away when it is done (or with its window)."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QWidget

from bpe_studio.app.widgets import font_warmup
from bpe_studio.app.widgets.font_warmup import SAMPLES, warm_fonts


def _warmer_of(window: QWidget) -> object:
    return window.findChild(font_warmup._FontWarmer, "fontWarmer")


def test_every_script_is_drawn_one_per_tick_then_the_warmer_leaves(qtbot, monkeypatch) -> None:
    ticks: list[int] = []
    real = font_warmup._FontWarmer._draw_next

    def draw_next(self) -> None:  # noqa: ANN001
        before = len(self.drawn)
        real(self)
        ticks.append(len(self.drawn) - before)

    monkeypatch.setattr(font_warmup._FontWarmer, "_draw_next", draw_next)
    window = QWidget()
    qtbot.addWidget(window)
    warmer = warm_fonts(window)
    assert warm_fonts(window) is warmer  # one warmer per window
    drawn = warmer.drawn
    qtbot.waitUntil(lambda: _warmer_of(window) is None, timeout=10_000)
    assert drawn == list(SAMPLES)
    assert ticks == [1] * len(SAMPLES) + [0]  # one script per pass; the last tick ends it


def test_nothing_is_drawn_before_the_window_settles_or_after_it_goes(qtbot, monkeypatch) -> None:
    monkeypatch.setattr(font_warmup, "START_AFTER_MS", 200)
    window = QWidget()
    warmer = warm_fonts(window)
    gone: list[bool] = []
    warmer.destroyed.connect(lambda: gone.append(True))
    QCoreApplication.processEvents()
    assert warmer.drawn == []  # the window paints first
    window.deleteLater()
    qtbot.waitUntil(lambda: gone == [True])  # the warmer went with the window
    qtbot.wait(300)  # and its timers, with it: nothing fires on a deleted object


def test_the_main_window_warms_the_fonts(make_window) -> None:
    window = make_window()
    assert _warmer_of(window) is not None
