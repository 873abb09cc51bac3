"""The fairness measures in the Evaluate tab: a Reference chooser (``en`` by default when a
row is called so), the Rényi, premium and Gini columns, and the bar chart of the premium
per language, one bar series per tokenizer — checked against `core.evaluate.measures.evaluate`
run independently on the same development folder."""

from __future__ import annotations

from pathlib import Path

import pytest

import core
from bpe_studio.app.evaluate.evaluate_panel import NONE, EvaluatePanel
from bpe_studio.app.evaluate.inputs import CURRENT
from bpe_studio.app.evaluate.results_table import GINI, HEADERS, PREMIUM
from core.evaluate.measures import evaluate, row_names
from core.formats import save_tokenizer
from core.variants import ParityAware

from tests.app.train.test_parity_window import TEXTS

RENYI = HEADERS.index("Rényi")


@pytest.fixture
def setup(tmp_path: Path) -> tuple[core.Tokenizer, Path, Path]:
    """A parity-aware tokenizer (the "current" one), a plain one saved in a folder, and a
    development folder of the same sentences in three languages."""
    dev = tmp_path / "dev"
    dev.mkdir()
    sources = {}
    for name, (text, copies) in TEXTS.items():
        sources[name] = str(tmp_path / f"{name}.txt")
        Path(sources[name]).write_text(text * copies + "\n", encoding="utf-8")
        (dev / f"{name}.txt").write_text(text * 3 + "\n", encoding="utf-8")
    parity = ParityAware(dev={name: str(dev / f"{name}.txt") for name in sources})
    current = core.train(sources, core.TrainOptions(400, workers=1, variant=parity)).tokenizer()
    vocab, merges = core.train(sources, core.TrainOptions(400, workers=1)).result()
    save_tokenizer(tmp_path / "plain", vocab, merges, [], "gpt2")
    return current, tmp_path / "plain", dev


def make_panel(qtbot, current, plain: Path) -> EvaluatePanel:
    panel = EvaluatePanel()
    qtbot.addWidget(panel)
    panel.resize(1000, 700)
    panel.show()
    panel.set_current_tokenizer(current)
    panel.add_tokenizer(str(plain))
    return panel


def run(qtbot, panel: EvaluatePanel) -> None:
    with qtbot.waitSignal(panel.finished, timeout=60_000):
        panel.run()


def test_premium_gini_and_the_premium_chart_match_core(qtbot, setup) -> None:
    current, plain, dev = setup
    panel = make_panel(qtbot, current, plain)
    assert panel.reference_name() is None  # no source yet
    panel.add_source(str(dev))
    assert panel.reference.currentText() == "en"  # the default when a row is called so
    assert [panel.reference.itemText(i) for i in range(panel.reference.count())] == [NONE, "el", "en", "es"]
    run(qtbot, panel)
    assert panel.status.text().endswith("premium over en.")

    expected = evaluate({CURRENT: current, "plain": str(plain)}, [str(dev)], reference="en", baseline="plain")
    rows = expected.rows
    table = panel.table
    assert table.rowCount() == len(rows) == 6
    for r, row in enumerate(rows):
        assert table.item(r, 0).text() == row.tokenizer and table.item(r, 1).toolTip() == row.source
        assert table.item(r, PREMIUM).text() == f"{row.premium:.3f}"
        assert table.item(r, GINI).text() == f"{expected.gini[row.tokenizer]:.3f}"
        assert table.item(r, RENYI).text() == f"{row.renyi_efficiency:.3f}"
        if "en" in row_names(row.source):
            assert table.item(r, PREMIUM).text() == "1.000"
    assert panel.result is not None and panel.result.gini == pytest.approx(expected.gini)
    assert f"{CURRENT} {expected.gini[CURRENT]:.3f}" in panel.gini_label.text()

    # The chart: the premium, one bar per (tokenizer, row), one series per tokenizer, a line at 1.
    chart = panel.chart
    assert panel.measure.currentData() == "premium" and chart.parity_line is not None
    assert set(chart.bars) == {CURRENT, "plain"}
    heights = chart.bar_heights()
    assert heights == pytest.approx({(row.tokenizer, row.source): row.premium for row in rows})
    assert len(heights) == len(rows)
    panel.measure.setCurrentIndex(panel.measure.findData("tokens"))
    assert chart.bar_heights() == {(row.tokenizer, row.source): row.tokens for row in rows}
    assert chart.parity_line is None

    # Another reference: its rows cost 1, and the run passes it on.
    panel.reference.setCurrentText("el")
    run(qtbot, panel)
    against = evaluate({CURRENT: current, "plain": str(plain)}, [str(dev)], reference="el")
    assert [panel.table.item(r, PREMIUM).text() for r in range(6)] == [f"{row.premium:.3f}" for row in against.rows]
    assert panel.reference.currentText() == "el"


def test_no_reference_without_a_row_called_en(qtbot, setup) -> None:
    current, plain, dev = setup
    (dev / "en.txt").unlink()
    panel = make_panel(qtbot, current, plain)
    panel.add_source(str(dev))
    assert panel.reference.currentText() == NONE and panel.reference_name() is None
    run(qtbot, panel)
    assert all(panel.table.item(r, PREMIUM).text() == "" for r in range(panel.table.rowCount()))
    assert panel.table.item(0, GINI).text() != ""  # Gini needs no reference
    assert panel.measure.currentData() == "bytes_per_token" and panel.chart.parity_line is None
    assert len(panel.chart.bar_heights()) == panel.table.rowCount()

    panel.reference.setCurrentText("xx")  # a reference that is no row: one message
    with qtbot.waitSignal(panel.error, timeout=30_000) as blocker:
        panel.run()
    assert "the reference 'xx' is not a row" in blocker.args[0]
