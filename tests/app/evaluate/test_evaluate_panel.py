"""The Evaluate tab driven as a user would: add tokenizers and sources, run in the
background, read the table and chart, export; a bad source is one message, no frozen window."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from bpe_studio.app.evaluate.evaluate_panel import EvaluatePanel  # noqa: E402
from bpe_studio.app.evaluate.inputs import CURRENT  # noqa: E402
from core.encode.tokenizer import Tokenizer  # noqa: E402
from core.formats import save_tokenizer  # noqa: E402
from core.training.reference import train_bpe_reference  # noqa: E402

TEXT = "The cat sat on the mat; the dog sat on the log.\n" * 30 + "naïve café\n"
HELD = "A cat and a dog. Der Hund.\n" * 4


def _setup(tmp_path: Path) -> tuple[Tokenizer, Path, Path]:
    vocab, merges = train_bpe_reference(TEXT, 300, ["<|endoftext|>"])
    current = Tokenizer(vocab, merges, ["<|endoftext|>"])
    v, m = train_bpe_reference(TEXT, 270, ["<|endoftext|>"])
    save_tokenizer(tmp_path / "small", v, m, ["<|endoftext|>"], "gpt2")
    held = tmp_path / "held"
    held.mkdir()
    (held / "a.txt").write_text(HELD, encoding="utf-8")
    (held / "b.txt").write_text(TEXT[:200], encoding="utf-8")
    return current, tmp_path / "small", held


def test_panel_evaluates_in_the_background_and_exports(qtbot, tmp_path: Path) -> None:
    current, small, held = _setup(tmp_path)
    panel = EvaluatePanel()
    qtbot.addWidget(panel)
    panel.show()
    assert not panel.run_button.isEnabled()
    panel.set_current_tokenizer(current)
    panel.add_tokenizer(str(small))
    panel.add_source(str(held))
    assert panel.run_button.isEnabled()
    assert panel.baseline.currentText() == "small"
    assert panel.progress.text() == "not evaluated yet"
    with qtbot.waitSignal(panel.finished, timeout=30_000):
        panel.run()
        assert panel.job is not None and not panel.run_button.isEnabled()
    assert panel.progress.text() == "100%"
    table = panel.table
    assert table.rowCount() == 4
    cells = [[table.item(r, c).text() for c in range(table.columnCount())] for r in range(4)]
    assert [c[0] for c in cells] == [CURRENT, "small", CURRENT, "small"]
    assert Path(cells[0][1]).name == "a.txt" and Path(cells[2][1]).name == "b.txt"
    assert cells[0][3] == f"{len(current.encode(HELD)):,}"
    assert cells[1][3] == f"{len(Tokenizer.load(small).encode(HELD)):,}"
    assert cells[1][9] == "1.000"
    assert len(panel.chart.plotItem.items) == 2  # one bar series per tokenizer
    assert panel.export_csv_button.isEnabled()
    panel.export(str(tmp_path / "o.csv"), "csv")
    panel.export(str(tmp_path / "o.json"), "json")
    rows = list(csv.DictReader((tmp_path / "o.csv").read_text(encoding="utf-8").splitlines()))
    assert [int(r["tokens"]) for r in rows] == [int(c[3].replace(",", "")) for c in cells]
    assert json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))[0]["tokenizer"] == CURRENT
    panel.resize(1000, 700)
    qtbot.wait(20)
    panel.grab().save(str(tmp_path / "evaluate.png"))


def test_bad_source_is_one_message(qtbot, tmp_path: Path) -> None:
    current, _, _ = _setup(tmp_path)
    (tmp_path / "empty.txt").write_bytes(b"")
    panel = EvaluatePanel()
    qtbot.addWidget(panel)
    panel.set_current_tokenizer(current)
    panel.add_source(str(tmp_path / "empty.txt"))
    with qtbot.waitSignal(panel.error, timeout=30_000) as blocker:
        panel.run()
    assert "empty.txt is empty" in blocker.args[0]
    qtbot.waitUntil(lambda: panel.run_button.isEnabled(), timeout=10_000)
    assert panel.table.rowCount() == 0


def test_window_has_the_tab_and_passes_the_trained_tokenizer(qtbot, make_window, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    window = make_window(corpus, vocab_size=300)
    panel = window.evaluate_panel
    assert window.tabs.tabText(window.tabs.indexOf(panel)) == "Evaluate"
    window.start_training()
    qtbot.waitUntil(lambda: panel.current is not None, timeout=60_000)
    assert panel.current is window.current.tokenizer  # the one Export and Encode act on
    assert len(panel.current) > 256  # trained: merges beyond the bytes
    assert panel.tokenizer_list.item(0).text() == CURRENT
    # The trained one: the window hands the ladder its training corpus's compression curve.
    sizes, bpt = window.state.bytes_per_token()
    assert panel.training_curve is not None and len(sizes) > 0
    assert list(panel.training_curve[0]) == list(sizes) and list(panel.training_curve[1]) == list(bpt)


def test_ladder_health_and_lm(qtbot, tmp_path: Path) -> None:
    current, small, held = _setup(tmp_path)
    panel = EvaluatePanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.set_current_tokenizer(current)
    panel.add_source(str(held / "a.txt"))
    panel.sizes.setText(f"270,{len(current)}")
    with qtbot.waitSignal(panel.finished, timeout=30_000):
        panel.run()
    names = [panel.table.item(r, 0).text() for r in range(panel.table.rowCount())]
    assert names == [f"{CURRENT} @ 270", f"{CURRENT} @ {len(current)}"]
    assert panel.table.item(0, 3).text() == f"{len(Tokenizer.load(small).encode(HELD)):,}"
    assert panel.chart.getAxis("bottom").labelText == "vocabulary size"

    health = panel.health_view
    with qtbot.waitSignal(health.finished, timeout=30_000):
        health.check_button.click()
    titles = [health.tree.topLevelItem(i).text(0) for i in range(health.tree.topLevelItemCount())]
    assert [t.split(" (")[0] for t in titles] == ["unreachable", "partial UTF-8", "repetitive", "unused on held-out text"]
    assert health.report.unused is not None

    lm = panel.lm_panel
    with qtbot.waitSignal(panel.error, timeout=5_000):
        lm.run_button.click()  # no training text yet: one message
    (tmp_path / "train.txt").write_text(TEXT, encoding="utf-8")
    lm.train_edit.setText(str(tmp_path / "train.txt"))
    with qtbot.waitSignal(lm.finished, timeout=30_000):
        lm.run_button.click()
    assert "bits per byte on held-out text" in lm.status.text()
    assert len(lm.samples.spans) == 3 * 40
    panel.views.setCurrentWidget(lm)
    panel.resize(1000, 700)
    qtbot.wait(20)
    panel.grab().save(str(tmp_path / "lm.png"))


def test_shrink_from_the_tab(qtbot, tmp_path: Path) -> None:
    current, small, _ = _setup(tmp_path)
    panel = EvaluatePanel()
    qtbot.addWidget(panel)
    panel.set_current_tokenizer(current)
    with qtbot.waitSignal(panel.finished, timeout=30_000):
        panel.shrink_to(270, str(tmp_path / "cut"))
    assert "270 tokens" in panel.status.text()
    for name in ("vocab.json", "merges.txt"):
        assert (tmp_path / "cut" / name).read_bytes() == (small / name).read_bytes()
    with qtbot.waitSignal(panel.error, timeout=30_000) as blocker:
        panel.shrink_to(100_000, str(tmp_path / "big"))
    assert "above the tokenizer's vocabulary" in blocker.args[0]
    qtbot.waitUntil(lambda: not panel.shrink_job.running, timeout=10_000)
    assert not (tmp_path / "big").exists()


def test_closing_the_window_stops_a_running_evaluation(qtbot, make_window, tmp_path: Path) -> None:
    current, _, held = _setup(tmp_path)
    big = tmp_path / "big.txt"
    big.write_text(TEXT * 2000, encoding="utf-8")  # ~100 KB a row: several rows to go
    window = make_window()
    panel = window.evaluate_panel
    panel.set_current_tokenizer(current)
    for _ in range(5):
        panel.add_source(str(big))
    panel.run()
    job = panel.job
    assert job is not None and job.running
    window.close()
    assert job._thread.isFinished()


def test_ladder_draws_the_training_corpus_curve_for_the_trained_tokenizer(qtbot, tmp_path: Path) -> None:
    from PySide6.QtCore import Qt

    current, _small, held = _setup(tmp_path)
    panel = EvaluatePanel()
    qtbot.addWidget(panel)
    panel.add_source(str(held / "a.txt"))
    panel.sizes.setText(f"270,{len(current)}")
    sizes, bpt = [257.0, 280.0, float(len(current))], [1.0, 1.6, 2.1]
    panel.set_current_tokenizer(current, (sizes, bpt))  # as the window gives a trained one
    with qtbot.waitSignal(panel.finished, timeout=30_000):
        panel.run()
    line = panel.training_line
    assert line is not None and line.name() == "training corpus"
    xs, ys = line.getData()
    assert list(xs) == sizes and list(ys) == bpt
    assert line.opts["pen"].style() == Qt.PenStyle.DashLine
    legend = [label.text for _sample, label in panel.chart.plotItem.legend.items]
    assert "training corpus" in legend and "a.txt" in legend

    # An opened tokenizer (no training curve): the ladder alone.
    panel.set_current_tokenizer(current)
    with qtbot.waitSignal(panel.finished, timeout=30_000):
        panel.run()
    assert panel.training_line is None
    assert [label.text for _sample, label in panel.chart.plotItem.legend.items] == ["a.txt"]
