"""The fonts of the world's scripts loaded before a token needs them, one script per idle pass.

The first time Qt draws a character of a script the window's fonts lack (Devanagari,
Thai, CJK, emoji…), it asks fontconfig for a fallback font, loads it and its shaping
tables on the GUI thread, more slowly on a desktop with many fonts. While training, the
live merges table meets those scripts in the middle of a run, and together with the batch
it is showing that made the worst stall of the GUI thread. The font caches
are per thread, so a worker cannot do it: `warm_fonts` draws one sample of each script,
in the window's proportional and fixed-pitch fonts, into a small image, one script per
pass of the event loop (each short enough not to be felt), starting once the
window is up. Drawing a script again later costs a fraction of a millisecond.

    warm_fonts(window)   # once: starts 300 ms into the event loop, stops by itself or with the window
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QFont, QFontDatabase, QImage, QPainter
from PySide6.QtWidgets import QWidget

SAMPLES = (  # a few letters (and marks, which shaping combines) of each script
    "ÀéŁœßĞ",  # Latin beyond ASCII
    "Ђжыё",  # Cyrillic
    "αβγλω",  # Greek
    "مرحبا",  # Arabic
    "שלום",  # Hebrew
    "नमस्ते",  # Devanagari
    "বাংলা",  # Bengali
    "தமிழ்",  # Tamil
    "ไทย่",  # Thai
    "日本語的中国",  # CJK ideographs
    "ひらカタ",  # kana
    "한국어",  # Hangul
    "ქართ",  # Georgian
    "Հայ",  # Armenian
    "😀👍🏽🚀❤️",  # emoji
    "∑√∞≠→",  # mathematical symbols and arrows
)
START_AFTER_MS = 300
"""Let the window paint and settle first."""


class _FontWarmer(QObject):
    """Draws `SAMPLES` one per timer tick, then deletes itself (a child of the window)."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.setObjectName("fontWarmer")
        self._fonts = [QFont(window.font()), QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)]
        self._image = QImage(64, 24, QImage.Format.Format_ARGB32_Premultiplied)
        self._left = list(SAMPLES)
        self.drawn: list[str] = []
        self._timer = QTimer(self)
        self._timer.setInterval(0)  # one script per pass of the event loop
        self._timer.timeout.connect(self._draw_next)
        QTimer.singleShot(START_AFTER_MS, self, self._timer.start)

    def _draw_next(self) -> None:
        if not self._left:
            self._timer.stop()
            self.deleteLater()
            return
        text = self._left.pop(0)
        painter = QPainter(self._image)
        try:
            for font in self._fonts:
                painter.setFont(font)
                painter.drawText(0, 18, text)  # loads the fallback font, shapes and draws the glyphs
        finally:
            painter.end()
        self.drawn.append(text)


def warm_fonts(window: QWidget) -> QObject:
    """Start drawing every script of `SAMPLES` once, a script per event-loop pass, after
    `START_AFTER_MS`; the warmer (returned) is a child of ``window`` and goes with it."""
    existing = window.findChild(_FontWarmer, "fontWarmer")
    return existing if existing is not None else _FontWarmer(window)
