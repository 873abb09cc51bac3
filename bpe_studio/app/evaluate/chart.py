"""The Evaluate tab's chart: bars per row (bytes per token, premium or tokens) or the size ladder.

Bars: one series per tokenizer (its colour), one bar of it per row (source, or language
of a folder of parallel files), the rows side by side along the axis. The measure is
bytes per token, the premium over the reference row (with a dashed line at 1: what the
reference costs) or the tokens themselves (`MEASURES`). Ladder: one line per tokenizer and
source, bytes per token against vocabulary size — the colour says the tokenizer, the
marker and dash say the source, and the legend lists each tokenizer and each source once.
The legend sits in head room kept above the data (as many rows as it needs), in dark text
on white, so it never covers a bar or a line; tick labels that would overlap are dropped
(`SpacedAxis`: many long source names under the bars).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt

from bpe_studio.app.widgets.spaced_axis import SpacedAxis
from core.evaluate.measures import Row

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
"""Tokenizer colours (Tableau 10: told apart, also by most colour-blind readers)."""
SYMBOLS = ("o", "s", "t", "d", "star", "x", "+", "h")
DASHES = (Qt.PenStyle.SolidLine, Qt.PenStyle.DashLine, Qt.PenStyle.DotLine, Qt.PenStyle.DashDotLine)
SOURCE_GREY = "#555555"
TRAINING = "training corpus"
MEASURES = {
    "bytes_per_token": ("bytes per token", "bytes per token"),
    "premium": ("premium", "premium: tokens / the reference's"),  # "premium over en" when it is known
    "tokens": ("tokens", "tokens"),
}
"""The bars' measure: the `Row` attribute -> (its name in the chooser, the y axis's label)."""
PARITY_LINE = "#7f7f7f"


def source_label(source: str) -> str:
    """``"/data/held/a.jsonl [lang=en]"`` -> ``"a.jsonl [lang=en]"``."""
    path, _, group = source.partition(" [")
    return Path(path).name + (f" [{group}" if group else "")


def source_labels(sources: Sequence[str]) -> dict[str, str]:
    """A short label per source, distinct: the file name (with its group), or the parent
    folder too when two sources share a name."""
    short = {s: source_label(s) for s in sources}
    taken = list(short.values())
    for s in sources:
        if taken.count(short[s]) > 1:
            path, _, group = s.partition(" [")
            short[s] = str(Path(*Path(path).parts[-2:])) + (f" [{group}" if group else "")
    return short


def tokenizer_of(row: Row) -> str:
    """The tokenizer a ladder row belongs to: ``"current @ 4096"`` -> ``"current"``."""
    return row.tokenizer.rsplit(" @ ", 1)[0]


class EvaluateChart(pg.PlotWidget):
    """The chart; `draw(rows, training_curve)` replaces what it shows."""

    def __init__(self) -> None:
        super().__init__(background="w", axisItems={"left": SpacedAxis("left"), "bottom": SpacedAxis("bottom")})
        self.setLabel("left", "bytes per token")
        self.setMinimumHeight(150)  # at 1024×700 the table above keeps a few rows
        self.getPlotItem().setContentsMargins(0, 8, 8, 0)  # the top and last tick labels were cut at the edge
        for name in ("left", "bottom"):
            self.getAxis(name).setTextPen("#303030")  # the default grey is faint on white
            self.getAxis(name).setPen("#808080")
        self.legend = self.addLegend(offset=(10, 5), labelTextColor="#202020", brush=pg.mkBrush(255, 255, 255, 230),
                                     pen=pg.mkPen("#b0b0b0"))
        self.legend.hide()  # until there is something to list
        self.training_line: Any = None  # the dashed "training corpus" curve when drawn
        self.bars: dict[str, pg.BarGraphItem] = {}
        """The bar series drawn, by tokenizer."""
        self.parity_line: Any = None  # the premium's dashed line at 1

    def draw(self, rows: list[Row], training_curve: tuple[Any, Any] | None = None,
             measure: str = "bytes_per_token", reference: str | None = None) -> None:
        """Bars of ``measure`` (a key of `MEASURES`; the premium over the row ``reference``),
        or the ladder when every row is a rung (``"name @ size"``)."""
        self.clear()
        self.legend.clear()
        self.training_line = self.parity_line = None
        self.bars = {}
        if rows and all(" @ " in r.tokenizer for r in rows):
            self.setLabel("left", MEASURES["bytes_per_token"][1])
            self._draw_ladder(rows, training_curve)
        else:
            self._draw_bars(rows, measure)
            if measure == "premium" and reference:
                self.setLabel("left", f"premium over {reference}")

    def bar_heights(self) -> dict[tuple[str, str], float]:
        """``{(tokenizer, source): height}`` of every bar drawn."""
        heights: dict[tuple[str, str], float] = {}
        for name, bars in self.bars.items():
            for source, height in zip(bars.sources, bars.opts["height"]):  # type: ignore[attr-defined]
                heights[(name, source)] = float(height)
        return heights

    def _legend_rows(self) -> int:
        """Lay the legend's entries out in as many columns as the chart's width holds; the rows."""
        labels = [label.text for _sample, label in self.legend.items]
        self.legend.setVisible(bool(labels))
        if not labels:
            return 0
        room, used, columns = max(self.width() - 90, 150), 0, 0
        for text in labels:
            used += self.fontMetrics().horizontalAdvance(text) + 45  # the sample and the spacing
            if used > room and columns:
                break
            columns += 1
        self.legend.setColumnCount(columns)
        return math.ceil(len(labels) / columns)

    def _fit_y(self, low: float, high: float) -> None:
        """Show ``low``..``high`` with head room above for the legend's rows (in pixels)."""
        rows = self._legend_rows()
        share = min((rows * 22 + 14) / max(self.height() - 60, 100), 0.6) if rows else 0.05
        self.setYRange(low, low + (high - low) / (1 - share), padding=0)

    def _draw_bars(self, rows: list[Row], measure: str) -> None:
        self.setLabel("bottom", "")
        self.setLabel("left", MEASURES[measure][1])
        sources = list(dict.fromkeys(r.source for r in rows))
        names = list(dict.fromkeys(r.tokenizer for r in rows))
        width = 0.8 / max(len(names), 1)
        top = 0.0
        for k, name in enumerate(names):
            values = {r.source: float(v) for r in rows if r.tokenizer == name
                      and (v := getattr(r, measure)) is not None}
            shown = [s for s in sources if s in values]
            xs = [i + (k - (len(names) - 1) / 2) * width for i, s in enumerate(sources) if s in values]
            heights = [values[s] for s in shown]
            top = max([top, *heights])
            color = COLORS[k % len(COLORS)]
            bars = pg.BarGraphItem(x=xs, height=heights, width=width, brush=color, pen=pg.mkPen("w"), name=name)
            bars.sources = shown  # type: ignore[attr-defined]  # which row each bar is (`bar_heights`)
            self.addItem(bars)  # named: the legend lists it
            self.bars[name] = bars
        if measure == "premium" and self.bars:  # parity with the reference row
            self.parity_line = pg.InfiniteLine(1.0, angle=0, pen=pg.mkPen(PARITY_LINE, width=1,
                                                                           style=Qt.PenStyle.DashLine))
            self.addItem(self.parity_line)
        labels = source_labels(sources)
        self.getAxis("bottom").setTicks([[(i, labels[s]) for i, s in enumerate(sources)]])
        self.setXRange(-0.6, len(sources) - 0.4, padding=0)
        self._fit_y(0, top or 1.0)

    def _draw_ladder(self, rows: list[Row], training_curve: tuple[Any, Any] | None) -> None:
        self.setLabel("bottom", "vocabulary size")
        self.getAxis("bottom").setTicks(None)
        names = list(dict.fromkeys(tokenizer_of(r) for r in rows))
        sources = list(dict.fromkeys(r.source for r in rows))
        labels = source_labels(sources)
        for k, name in enumerate(names):
            color = COLORS[k % len(COLORS)]
            for j, source in enumerate(sources):
                points = sorted((r.vocab_size, r.bytes_per_token) for r in rows
                                if r.source == source and tokenizer_of(r) == name)
                pen = pg.mkPen(color, width=2, style=DASHES[j % len(DASHES)])
                self.plot([p[0] for p in points], [p[1] for p in points], pen=pen, symbol=SYMBOLS[j % len(SYMBOLS)],
                          symbolBrush=color, symbolPen=color, symbolSize=7)
        # The legend: each tokenizer once (its colour) when there are several, each source once (its marker).
        if len(names) > 1:
            for k, name in enumerate(names):
                self.legend.addItem(pg.PlotDataItem(pen=pg.mkPen(COLORS[k % len(COLORS)], width=3)), name)
        for j, source in enumerate(sources):
            sample = pg.PlotDataItem(pen=pg.mkPen(SOURCE_GREY, width=2, style=DASHES[j % len(DASHES)]),
                                     symbol=SYMBOLS[j % len(SYMBOLS)], symbolBrush=SOURCE_GREY, symbolPen=SOURCE_GREY)
            self.legend.addItem(sample, labels[source])
        values = [r.bytes_per_token for r in rows]
        if training_curve is not None and any(n == "current" for n in names):
            sizes, bpt = training_curve
            self.training_line = self.plot(sizes, bpt, pen=pg.mkPen("#7f7f7f", width=2, style=Qt.PenStyle.DashLine),
                                           name=TRAINING)
            values += [float(v) for v in bpt]
        self.enableAutoRange(axis="x")
        low, high = (min(values), max(values)) if values else (0.0, 1.0)
        self._fit_y(low - 0.05 * (high - low), high)
