"""Evaluate is easy to read: the legend never covers a bar, the size ladder draws one line per
tokenizer and source (each listed once, coloured per tokenizer) and fills "vs base", the
boxes are labelled, and Health, the language model and Shrink name the tokenizer they use."""

from __future__ import annotations

import io
import json
from argparse import Namespace
from pathlib import Path

from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QLabel

from bpe_studio.app.evaluate.evaluate_panel import EvaluatePanel
from bpe_studio.app.evaluate.inputs import CURRENT
from tests.app.evaluate.test_evaluate_panel import HELD, TEXT, _setup


def make_panel(qtbot, tmp_path: Path):
    current, small, held = _setup(tmp_path)
    panel = EvaluatePanel()
    qtbot.addWidget(panel)
    panel.resize(1000, 700)
    panel.show()
    qtbot.waitExposed(panel)
    panel.set_current_tokenizer(current)
    panel.add_tokenizer(str(small))
    return panel, current, small, held


def run(qtbot, panel) -> None:
    with qtbot.waitSignal(panel.finished, timeout=60_000):
        panel.run()


def bar_rects(chart) -> list[QRectF]:
    import pyqtgraph as pg

    box = chart.getPlotItem().getViewBox()
    rects = []
    for item in chart.getPlotItem().items:
        if isinstance(item, pg.BarGraphItem):
            o = item.opts
            for x, h in zip(o["x"], o["height"]):
                rects.append(box.mapViewToScene(QRectF(x - o["width"] / 2, 0, o["width"], h)).boundingRect())
    return rects


def test_the_legend_never_covers_a_bar(qtbot, tmp_path: Path) -> None:
    panel, _current, _small, held = make_panel(qtbot, tmp_path)
    (held / "c.txt").write_text(TEXT, encoding="utf-8")  # three groups; the third is the tallest
    panel.add_source(str(held))
    run(qtbot, panel)
    qtbot.wait(100)
    rects = bar_rects(panel.chart)
    assert len(rects) == 6
    legend = panel.chart.getPlotItem().legend.sceneBoundingRect()
    assert not any(legend.intersects(r) for r in rects), (legend, rects)
    # Dark text, readable on white.
    for _sample, label in panel.chart.getPlotItem().legend.items:
        assert QColor(label.opts["color"]).lightness() < 100


def test_the_ladder_draws_a_line_per_tokenizer_and_source_and_fills_vs_base(qtbot, tmp_path: Path) -> None:
    panel, current, small, _held = make_panel(qtbot, tmp_path)
    records = [{"text": HELD, "lang": "en"}, {"text": TEXT[:300], "lang": "de"}]
    jsonl = tmp_path / "heldout.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    panel.add_source(str(jsonl))
    panel.group_by.setText("lang")
    panel.sizes.setText("260,270")
    panel.baseline.setCurrentText("(none)")
    run(qtbot, panel)
    table = panel.table
    rows = [[table.item(r, c).text() for c in range(table.columnCount())] for r in range(table.rowCount())]
    assert len(rows) == 2 * 2 * 2  # tokenizers x sizes x groups
    assert all(row[9] for row in rows)  # vs base filled
    assert {row[9] for row in rows if row[0] == f"{CURRENT} @ 270"} == {"1.000"}  # the baseline's largest rung
    legend = [label.text for _sample, label in panel.chart.getPlotItem().legend.items]
    assert legend[:2] == [CURRENT, "small"]  # each tokenizer once, then each source once
    assert sorted(legend[2:]) == ["heldout.jsonl [lang=de]", "heldout.jsonl [lang=en]"]
    curves = panel.chart.getPlotItem().listDataItems()
    assert len(curves) == 4
    colours = {}
    for curve in curves:
        xs, _ys = curve.getData()
        assert list(xs) == sorted(set(xs)) and len(xs) == 2  # a line over the sizes, no stair step
        colours.setdefault(curve.opts["pen"].color().name(), []).append(curve)
    assert len(colours) == 2 and all(len(c) == 2 for c in colours.values())  # one colour per tokenizer


def test_boxes_are_labelled_and_each_tool_names_its_tokenizer(qtbot, tmp_path: Path, monkeypatch) -> None:
    panel, current, small, held = make_panel(qtbot, tmp_path)
    buddies = {label.buddy(): label.text().replace("&", "") for label in panel.findChildren(QLabel) if label.buddy()}
    assert buddies[panel.group_by] == "Group by"
    assert buddies[panel.baseline] == "Baseline"
    assert buddies[panel.sizes] == "Size ladder"

    title, question = panel.shrink_prompt()
    assert CURRENT in title and f"“{CURRENT}” ({len(current):,} tokens)" in question
    asked = {}

    def get_int(_parent, title, label, *args):
        asked.update(title=title, label=label)
        return 0, False

    monkeypatch.setattr("PySide6.QtWidgets.QInputDialog.getInt", get_int)
    panel.shrink_button.click()
    assert CURRENT in asked["title"] and CURRENT in asked["label"]
    with qtbot.waitSignal(panel.finished, timeout=30_000):
        panel.shrink_to(270, str(tmp_path / "cut"))
    assert f"“{CURRENT}”" in panel.status.text() and "270 tokens" in panel.status.text()

    panel.add_source(str(held / "a.txt"))
    lm = panel.lm_panel
    (tmp_path / "train.txt").write_text(TEXT, encoding="utf-8")
    lm.train_edit.setText(str(tmp_path / "train.txt"))
    with qtbot.waitSignal(lm.finished, timeout=30_000):
        panel.run_lm()
    assert lm.status.text().startswith(f"“{CURRENT}” ({len(current):,} tokens): bits per byte")
    health = panel.health_view
    with qtbot.waitSignal(health.finished, timeout=30_000):
        panel.check_health()
    assert health.status.text().startswith(f"“{CURRENT}”: ")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bpe_studio_lm_says_what_it_is_doing_on_a_terminal(tmp_path: Path) -> None:
    from bpe_studio.cli.evaluate import run_lm

    _current, small, held = _setup(tmp_path)
    train = tmp_path / "train.txt"
    train.write_text(TEXT, encoding="utf-8")
    args = Namespace(tokenizers=[str(small)], train=[str(train)], on=[str(held)], field="text", samples=1,
                     sample_tokens=5, seed=0)
    out, err = io.StringIO(), Terminal()
    assert run_lm(args, out, err) == 0
    steps = err.getvalue()
    for step in ("encoding the training text", "counting the model", "measuring the held-out text"):
        assert f"small (1/1): {step}" in steps
    assert steps.endswith("\r")  # the line is cleared before the table
    out2, quiet = io.StringIO(), io.StringIO()  # not a terminal: nothing on stderr
    run_lm(args, out2, quiet)
    assert quiet.getvalue() == "" and out2.getvalue() == out.getvalue()
