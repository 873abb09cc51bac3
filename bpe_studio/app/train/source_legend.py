"""The legend of the named sources: each source's name beside its colour, above the merges and charts.

`SourceLegend` shows, while the run (or the opened session) has named sources, a line
(wrapping at any width, never widening the window) with a swatch in each source's colour
— the colour of its segment in the merges' share bars and of its line in the compression
chart — and the corpus's own line in the text colour. It is hidden for one unnamed corpus.
It reads the `TrainingState` from a timer, as the other views do.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

from bpe_studio.app.models.provenance import source_colour
from bpe_studio.app.models.training_state import TrainingState

REFRESH_MS = 200


def legend_html(names: tuple[str, ...], text_colour: str) -> str:
    """The legend's rich text: ``■ en  ■ el  … ━ all``, an entry never broken across lines."""
    entries = [f'<span style="color:{source_colour(k)}">■</span>&nbsp;{html.escape(name).replace(" ", "&nbsp;")}'
               for k, name in enumerate(names)]
    entries.append(f'<span style="color:{text_colour}">━</span>&nbsp;all&nbsp;sources')
    return "Sources: " + " &nbsp; ".join(entries)


class SourceLegend(QLabel):
    """The named sources and their colours (hidden without named sources)."""

    def __init__(self, state: TrainingState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._state = state
        self._shown: tuple[str, ...] | None = None
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setWordWrap(True)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # wraps, never widens
        self.setToolTip("Each source's colour in the merges' From bars and the Bytes per token chart; "
                        "“all sources” is the whole corpus's line")
        self.hide()
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh)
        self._timer.start()

    @property
    def names(self) -> tuple[str, ...]:
        """The sources the legend shows now."""
        return self._shown or ()

    def refresh(self) -> None:
        names = self._state.sources
        if names == self._shown:
            return
        self._shown = names
        if names:
            self.setText(legend_html(names, self.palette().color(QPalette.ColorRole.Text).name()))
        self.setVisible(bool(names))
