"""Training charts (pyqtgraph): pair count by merge rank, pre-token rank/frequency, token
lengths, and bytes per token as the vocabulary grows (SuperBPE's transition to tokens
across spaces marked by a vertical line; trained on named sources, a line per source in
its colour beside the corpus's, which is then drawn in the text colour — the legend above
the merges names them).

`ChartsPanel` reads the `TrainingState` from a timer and replaces each curve's data
(``setData``), never once per incoming event; long series are thinned to a few thousand
points (log-spaced where the axis is logarithmic). Each tick updates one chart in turn, so
repaints never add up in one stretch of the GUI thread.

Axes stay put while the data grows: the ranges are set by the panel (the planned merges and
vocabulary size on x, "round" ends such as 1.5, 2, 2.5, 3 × 10^k on y), not auto-ranged on
every update, and each axis is painted from a cached pixmap. A moved axis costs pyqtgraph a
re-layout of its ticks, labels and grid, several times the cost of the curve itself: this
way it happens a few times per run instead of at every update. Each axis title names its
unit, and tick labels that would run into each other are dropped (`SpacedAxis`). A new run
starts from empty charts: no curve, marker line or axis range of the last one stays.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt, QTimer
from PySide6.QtGui import QColor, QPalette, QResizeEvent
from PySide6.QtWidgets import QGraphicsItem, QGridLayout, QWidget

from bpe_studio.app.models.provenance import source_colour
from bpe_studio.app.models.training_state import TrainingState
from bpe_studio.app.widgets.spaced_axis import SpacedAxis

REFRESH_MS = 150
MAX_POINTS = 2000
SOURCE_POINTS = 300
"""Points of each named source's bytes-per-token line (a line per source: up to 16)."""
CHART_MIN_WIDTH = 170
"""A chart narrower than this cuts off its title and axis labels."""
ACCENT = "#2f7ed8"
ACCENT_2 = "#e4572e"
ACCENT_3 = "#3a9d5d"
ACCENT_4 = "#8e5ec4"
PADDING = 0.02
ROUND_STEPS = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0)
COMPRESSION_TIP = (
    "Bytes per token of the training corpus (its pre-token bytes ÷ its tokens) as the vocabulary grows.\n"
    "With named sources, one line per source, in its colour, and the whole corpus in the text colour.\n"
    "A source's line uses its own pair counts (provenance): each merge removes as many of its tokens as\n"
    "it held the pair. For a pair of one token twice (a + a), whose overlapping occurrences count twice\n"
    "(a a a holds it twice, is merged once), the merge's exact total is shared among the sources in\n"
    "proportion to their counts: exact when one source holds the pair, an estimate when several do."
)


def thin(n: int, max_points: int = MAX_POINTS) -> np.ndarray:
    """Indices of about ``max_points`` evenly spaced items out of ``n`` (always the last)."""
    if n <= max_points:
        return np.arange(n)
    idx = np.linspace(0, n - 1, max_points).astype(np.int64)
    return idx[np.concatenate(([True], idx[1:] != idx[:-1]))]  # not np.unique: its first call imports numpy.ma


def round_up(value: float) -> float:
    """The smallest "round" number (1, 1.25, 1.5, 2, 2.5, 3, 3.5, 4, 5, 6, 7 or 8 × 10^k) not below
    ``value``, for an axis end that stays put while the data grows: ``round_up(1.37) -> 1.5``,
    ``round_up(17) -> 20``, ``round_up(0) -> 1``."""
    if not value > 0 or not math.isfinite(value):
        return 1.0
    scale = 10.0 ** math.floor(math.log10(value))
    for step in ROUND_STEPS:
        if step * scale >= value * (1 - 1e-9):
            return step * scale
    return 10 * scale


class CompactAxis(SpacedAxis):
    """An axis whose thousands read "2k", "40k", "1.5M": in a chart 170 pixels wide (a
    1024-pixel window) "2000 4000 6000 8000" ran together."""

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        if self.logMode:
            return super().tickStrings(values, scale, spacing)
        out = []
        for value in values:
            v = value * scale
            if abs(v) >= 1e6:
                out.append(f"{v / 1e6:g}M")
            elif abs(v) >= 1e3:
                out.append(f"{v / 1e3:g}k")
            else:
                out.append(f"{v:g}")
        return out


def _decades(value: float) -> float:
    """The log10 axis end for ``value``: whole decades, at least one (``_decades(350) -> 3.0``)."""
    return max(1.0, math.ceil(math.log10(max(value, 1.0)) - 1e-9))


def _plot(title: str, x_label: str, y_label: str, background: QColor, foreground: QColor) -> pg.PlotWidget:
    widget = pg.PlotWidget(background=background,
                           axisItems={"bottom": CompactAxis("bottom"), "left": SpacedAxis("left")})
    item = widget.getPlotItem()
    item.setTitle(title, color=foreground.name(), size="10pt")
    for name, label in (("bottom", x_label), ("left", y_label)):
        axis = item.getAxis(name)
        axis.setLabel(label, color=foreground.name())
        axis.setPen(foreground)
        axis.setTextPen(foreground)
    item.showGrid(x=True, y=True, alpha=0.15)
    # Fewer ticks on x: in a narrow chart (a 1024-pixel window) "2000 4000 6000 8000" ran together.
    item.getAxis("bottom").setTickDensity(0.6)
    item.setMenuEnabled(False)
    for name in ("left", "bottom"):
        # Replayed from a pixmap until the axis range changes (the grid is drawn by the axes too).
        item.getAxis(name).setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
    widget.setMinimumSize(CHART_MIN_WIDTH, 120)  # narrower, its axes and title were cut off
    return widget


def _label_decades_only(widget: pg.PlotWidget, axis: str) -> None:
    """Label only powers of ten on a log axis (labelled 2·10², 3·10², … ticks overlap)."""
    widget.getPlotItem().getAxis(axis).setStyle(maxTextLevel=0)


class ChartsPanel(QWidget):
    """Four charts of the current run in a 2×2 grid, or one column when the panel is too
    narrow for two charts side by side (a 1024-pixel window)."""

    def __init__(self, state: TrainingState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._state = state
        self._frequency_points: object | None = object()  # never the state's: the first tick draws
        palette = self.palette()
        bg = palette.color(QPalette.ColorRole.Base)
        fg = palette.color(QPalette.ColorRole.Text)

        self.pair_plot = _plot("Pair count", "rank (merges)", "occurrences", bg, fg)
        self.pair_plot.setLogMode(x=False, y=True)
        _label_decades_only(self.pair_plot, "left")
        self.pair_curve = self.pair_plot.plot(pen=pg.mkPen(ACCENT, width=2))
        # continued training: the merges left of this line are the initial tokenizer's
        self.kept_line = pg.InfiniteLine(angle=90, pen=pg.mkPen(fg, style=Qt.PenStyle.DashLine),
                                         label="kept | new", labelOpts={"position": 0.9, "color": fg.name()})
        self.kept_line.setVisible(False)
        self.pair_plot.addItem(self.kept_line)

        self.freq_plot = _plot("Pre-token counts", "rank (pre-tokens)", "occurrences", bg, fg)
        self.freq_plot.setLogMode(x=True, y=True)
        _label_decades_only(self.freq_plot, "left")
        _label_decades_only(self.freq_plot, "bottom")
        self.freq_curve = self.freq_plot.plot(pen=pg.mkPen(ACCENT_2, width=2))

        self.length_plot = _plot("Token length", "length (bytes)", "tokens", bg, fg)
        # A filled step curve, not a BarGraphItem: that one repaints through a slow QPicture every frame.
        self.length_bars = self.length_plot.plot(
            stepMode="center", fillLevel=0, brush=ACCENT_3, pen=pg.mkPen(ACCENT_3)
        )

        self.bpt_plot = _plot("Bytes per token", "vocabulary (tokens)", "bytes per token", bg, fg)
        self.bpt_plot.setToolTip(COMPRESSION_TIP)
        self.source_curves: list[pg.PlotDataItem] = []
        """A bytes-per-token line per named source (made as a run needs them; the unused hidden)."""
        self._total_pens = (pg.mkPen(ACCENT_4, width=2), pg.mkPen(fg, width=2))  # alone; among the sources'
        self.bpt_curve = self.bpt_plot.plot(pen=self._total_pens[0])
        self._total_among_sources = False
        self.bpt_curve.setZValue(1)  # the corpus's line over the sources'

        # SuperBPE: the vocabulary size at which stage 2 (tokens across spaces) begins
        self.transition_line = pg.InfiniteLine(angle=90, pen=pg.mkPen(fg, style=Qt.PenStyle.DashLine),
                                               label="stage 2", labelOpts={"position": 0.9, "color": fg.name()})
        self.transition_line.setVisible(False)
        self.bpt_plot.addItem(self.transition_line)

        self._grid = QGridLayout(self)
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._grid.setSpacing(6)
        self.columns = 0
        self._arrange(2)

        self._updates = [self._refresh_pairs, self._refresh_compression, self._refresh_lengths,
                         self._refresh_frequencies]
        self._seen: dict[object, int] = {}
        self._ranges: dict[pg.PlotWidget, tuple[tuple[float, float], tuple[float, float]]] = {}
        self._next = 0
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self._tick)
        self._timer.start()

    def _arrange(self, columns: int) -> None:
        """Lay the charts out in ``columns`` columns (2: a 2×2 grid; 1: one above the other)."""
        if columns == self.columns:
            return
        self.columns = columns
        for chart in self._charts():
            self._grid.removeWidget(chart)
        for k, chart in enumerate(self._charts()):
            self._grid.addWidget(chart, k // columns, k % columns)
        for k in range(4):
            self._grid.setRowStretch(k, 1 if k < 4 // columns else 0)
            self._grid.setColumnStretch(k, 1 if k < columns else 0)

    def _charts(self) -> list[pg.PlotWidget]:
        return [self.pair_plot, self.bpt_plot, self.freq_plot, self.length_plot]

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._arrange(2 if event.size().width() >= 2 * CHART_MIN_WIDTH + self._grid.spacing() else 1)

    def minimumSizeHint(self) -> QSize:
        # One column is always possible: the splitter may give the panel that much.
        return QSize(CHART_MIN_WIDTH, super().minimumSizeHint().height())

    def refresh(self) -> None:
        """Bring every chart up to date at once (e.g. when a run ends)."""
        for update in self._updates:
            update()
        self._seen = {update: self._state.version for update in self._updates}

    def refresh_pairs(self) -> None:
        """Draw the pair-count chart now (a run ended: it shows the last merges at once)."""
        self._refresh_pairs()
        self._seen[self._refresh_pairs] = self._state.version

    def _tick(self) -> None:
        # Round-robin: redraw the next chart whose data changed since it was last drawn.
        version = self._state.version
        for _ in range(len(self._updates)):
            update = self._updates[self._next]
            self._next = (self._next + 1) % len(self._updates)
            if self._seen.get(update) != version:
                self._seen[update] = version
                if update() is not False:  # False: nothing to redraw, try the next chart
                    return

    def _refresh_pairs(self) -> None:
        counts = self._state.counts
        n = len(counts)
        settings = self._state.settings
        kept = settings.inherited_merges if settings else 0
        self.kept_line.setVisible(kept > 0)  # (a new run from scratch hides the last one's line)
        self.kept_line.setPos(kept)
        if not n:  # axes for the run to come (or a neutral 1-1000), not 0.2-0.8 or the last run's
            self.pair_curve.setData([], [])
            self._set_range(self.pair_plot, (0.0, float(self._planned_merges() or 1000)), (0.0, 3.0))
            return
        idx = thin(n)
        y = np.maximum(np.asarray(counts, dtype=np.float64)[idx], 1.0)
        self.pair_curve.setData(idx.astype(np.float64), y)
        top = math.log10(round_up(float(y.max())))  # log axis: ranges are in decades
        self._set_range(self.pair_plot, (0.0, float(max(self._planned_merges(), n))), (0.0, max(top, 1.0)))

    def _refresh_frequencies(self) -> bool:
        points = self._state.frequency_points
        if points is self._frequency_points:
            return False  # set once per run
        self._frequency_points = points
        if points is None or not len(points[0]):
            self.freq_curve.setData([], [])
            self._set_range(self.freq_plot, (0.0, 3.0), (0.0, 3.0))
        else:
            ranks, counts = points
            y = np.maximum(counts.astype(np.float64), 1.0)
            self.freq_curve.setData(ranks.astype(np.float64), y)
            # Whole decades, at least one: with few pre-tokens an auto range spanned a fraction
            # of a decade and its 2·10⁰, 3·10⁰, … labels ran into each other.
            self._set_range(self.freq_plot, (0.0, _decades(float(ranks.max()))), (0.0, _decades(float(y.max()))))
        return True

    def _refresh_lengths(self) -> None:
        state = self._state
        if not state.token_ids:  # 256 one-byte tokens alone make one wall-to-wall bar
            self.length_bars.setData([], [])
            self._set_range(self.length_plot, (0.5, 10.5), (0.0, 100.0))
            return
        counts = np.bincount(state.token_lengths())[1:]  # lengths 1, 2, ...
        edges = np.arange(len(counts) + 1, dtype=np.float64) + 0.5
        self.length_bars.setData(edges, counts.astype(np.float64))
        self._set_range(self.length_plot, (0.5, round_up(len(counts)) + 0.5), (0.0, round_up(float(counts.max()))))

    def _refresh_compression(self) -> None:
        sizes, bpt = self._state.bytes_per_token()
        transition = self._state.transition
        self.transition_line.setVisible(transition is not None and len(sizes) > transition)
        if transition is not None and len(sizes) > transition:
            self.transition_line.setPos(float(sizes[transition]) - 1)  # the size stage 1 reached
        idx = thin(len(sizes))
        # a few hundred points a source: up to 16 lines are redrawn on the GUI thread
        source_idx = thin(min(len(sizes), self._source_merges()), SOURCE_POINTS)
        per_source = self._state.source_bytes_per_token(source_idx)
        self._show_sources(per_source)
        if not len(sizes):
            self.bpt_curve.setData([], [])
            settings = self._state.settings
            self._set_range(self.bpt_plot, (256.0, float(settings.vocab_size if settings else 1000)), (1.0, 2.0))
            return
        x, y = sizes[idx], bpt[idx]
        self.bpt_curve.setData(x, y)
        low, high = float(y.min()), float(y.max())
        if per_source is not None and len(per_source):
            source_x = sizes[source_idx]
            for curve, column in zip(self.source_curves, per_source.T):
                curve.setData(source_x, column, skipFiniteCheck=True)
            low, high = min(low, float(per_source.min())), max(high, float(per_source.max()))
        settings = self._state.settings
        # While it runs the axis holds the planned size; after, the vocabulary it reached.
        planned = float(settings.vocab_size) if settings and self._state.stage.running else 0.0
        right = max(planned, float(x[-1]))
        bottom = math.floor(low * 4) / 4  # bytes per token starts near 1: a quarter is round enough
        self._set_range(self.bpt_plot, (float(x[0]) - 1, right), (bottom, max(round_up(high), bottom + 0.25)))

    def _source_merges(self) -> int:
        """The merges each source's tokens are known after (all of them, or none)."""
        n = len(self._state.sources)
        return len(self._state.source_tokens) // n if n else 0

    def _show_sources(self, per_source: np.ndarray | None) -> None:
        """As many source lines as the run has sources (none without), each in its colour."""
        n = per_source.shape[1] if per_source is not None else 0
        while len(self.source_curves) < n:
            colour = source_colour(len(self.source_curves))
            self.source_curves.append(self.bpt_plot.plot(pen=pg.mkPen(colour, width=1)))  # thin pens draw fastest
        for k, curve in enumerate(self.source_curves):
            if k >= n and curve.isVisible():
                curve.setData([], [])
            curve.setVisible(k < n)
        among = bool(n)
        if among != self._total_among_sources:  # (setPen restyles the curve: only on a change)
            self._total_among_sources = among
            self.bpt_curve.setPen(self._total_pens[among])

    def _planned_merges(self) -> int:
        """The merges planned while a run goes (0 after it: the axis then fits the merges made,
        e.g. a corpus that ran out of pairs after 253 of 4,743)."""
        settings = self._state.settings
        return settings.max_merges if settings and self._state.stage.running else 0

    def _set_range(self, plot: pg.PlotWidget, x: tuple[float, float], y: tuple[float, float]) -> None:
        """Set ``plot``'s view to ``x`` × ``y`` (this turns auto-range off), only if it changed."""
        if self._ranges.get(plot) != (x, y):
            self._ranges[plot] = (x, y)
            plot.setRange(xRange=x, yRange=y, padding=PADDING)
