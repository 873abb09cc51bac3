"""The training charts at 1024×700 and 1600×1000: tick labels that never run into each
other, units in the axis titles, and nothing left over from the last run when a new one starts."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QPainter, QPicture

from core import TrainOptions
from bpe_studio.app.models.session import Session, TrainSettings

GAP = 3
"""Pixels kept between two tick labels along their axis."""


def big_session(corpus: str, rounds: int = 20, inherited: int = 0) -> Session:
    """5,120 merges (each byte doubled, tripled, ... ``rounds`` times), pair counts from a
    million down, 60,000 distinct pre-tokens: wide numbers on every axis."""
    vocab = {i: bytes([i]) for i in range(256)}
    merges = [(bytes([b]) * k, bytes([b])) for k in range(1, rounds + 1) for b in range(256)]
    for left, right in merges:
        vocab[len(vocab)] = left + right
    n = len(merges)
    stats = {"elapsed": 1.0, "frequency_ranks": list(range(1, 60_001, 7)),
             "frequency_counts": [max(1, 2_000_000 // r) for r in range(1, 60_001, 7)]}
    return Session(TrainSettings(corpus, TrainOptions(len(vocab)), inherited_merges=inherited), vocab, merges,
                   [1_000_000 // (i + 1) + 2 for i in range(n)], [9_000_000 - 1000 * i for i in range(n)],
                   stats=stats)


def tick_labels(axis) -> list:  # noqa: ANN001
    """The tick labels ``axis`` draws now: (rect, text) in its own coordinates."""
    picture = QPicture()
    painter = QPainter(picture)
    try:
        if axis.style["tickFont"]:
            painter.setFont(axis.style["tickFont"])
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [(rect, text) for rect, _flags, text in (specs[2] if specs else [])]


def overlapping(axis) -> list[str]:  # noqa: ANN001
    """Pairs of tick labels of ``axis`` closer than `GAP` along it."""
    labels = tick_labels(axis)
    horizontal = axis.orientation in ("bottom", "top")
    spans = sorted(((r.left(), r.right()) if horizontal else (r.top(), r.bottom()), text) for r, text in labels)
    return [f"{a!r} {sa} and {b!r} {sb}" for (sa, a), (sb, b) in zip(spans, spans[1:]) if sb[0] < sa[1] + GAP]


@pytest.fixture(autouse=True)
def idle_at_the_end(make_window):  # noqa: ANN001, ANN201
    """The runs started here are pretend ones: the windows end idle (closing one that seems
    to train would wait for the run)."""
    made = []
    yield made
    for window in made:
        window.state.reset()


def charts_at(qtbot, make_window, size, made):  # noqa: ANN001, ANN201
    window = make_window()
    window.ask_before_quitting = False
    made.append(window)
    window.resize(*size)
    qtbot.waitExposed(window)
    qtbot.wait(50)
    return window


@pytest.mark.parametrize("size", [(1024, 700), (1600, 1000)])
def test_tick_labels_never_overlap(qtbot, make_window, idle_at_the_end, size) -> None:
    window = charts_at(qtbot, make_window, size, idle_at_the_end)
    charts = window.charts
    for when in ("empty", "result", "new run"):
        if when == "result":
            window.state.load(big_session(window.settings_panel.corpus()))
        elif when == "new run":
            window.state.start(TrainSettings("x.txt", TrainOptions(50_000)))
        charts.refresh()
        qtbot.wait(30)
        for chart in charts._charts():
            for name in ("left", "bottom"):
                axis = chart.getPlotItem().getAxis(name)
                labels = tick_labels(axis)
                assert len(labels) >= 2, (when, chart.getPlotItem().titleLabel.text, name, labels)
                assert not overlapping(axis), (when, size, chart.getPlotItem().titleLabel.text, name,
                                               overlapping(axis))


def test_axis_titles_carry_units(qtbot, make_window, idle_at_the_end) -> None:
    charts = charts_at(qtbot, make_window, (1024, 700), idle_at_the_end).charts
    titles = {chart.getPlotItem().titleLabel.text: (chart.getPlotItem().getAxis("bottom").labelString(),
                                                    chart.getPlotItem().getAxis("left").labelString())
              for chart in charts._charts()}
    units = {"Pair count": ("merges", "occurrences"), "Bytes per token": ("tokens", "bytes per token"),
             "Pre-token counts": ("pre-tokens", "occurrences"), "Token length": ("bytes", "tokens")}
    for title, (x_unit, y_unit) in units.items():
        x, y = titles[title]
        assert x_unit in x and y_unit in y, (title, x, y)


def test_a_new_run_leaves_nothing_of_the_last_one(qtbot, make_window, idle_at_the_end) -> None:
    """A continued run (its kept merges marked by a line), then a new run from scratch: the
    charts look as they would in a fresh window."""
    window = charts_at(qtbot, make_window, (1024, 700), idle_at_the_end)
    charts, state = window.charts, window.state
    state.load(big_session(window.settings_panel.corpus(), inherited=700))
    charts.refresh()
    assert charts.kept_line.isVisible()
    new = TrainSettings("x.txt", TrainOptions(600))
    state.start(new)
    charts.refresh()
    qtbot.wait(20)
    seen = {c.getPlotItem().titleLabel.text: c.viewRange() for c in charts._charts()}
    assert not charts.kept_line.isVisible() and not charts.transition_line.isVisible()

    fresh = charts_at(qtbot, make_window, (1024, 700), idle_at_the_end)
    fresh.state.start(new)
    fresh.charts.refresh()
    qtbot.wait(20)
    assert seen == {c.getPlotItem().titleLabel.text: c.viewRange() for c in fresh.charts._charts()}
    for chart in charts._charts():  # no curve keeps the last run's points
        for item in chart.getPlotItem().listDataItems():
            x, _y = item.getData()
            assert x is None or len(x) == 0, chart.getPlotItem().titleLabel.text
