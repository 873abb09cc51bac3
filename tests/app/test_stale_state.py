"""Nothing stale: a new corpus, a filtered-out token, another tokenizer, a first launch and
empty charts each show what is true now."""

from __future__ import annotations

import math

import core
from bpe_studio.app.compare.compare_view import CompareView  # noqa: E402
from bpe_studio.app.explore.explore_panel import ExplorePanel
from bpe_studio.app.explore.inspector import HOVER_HINT
from core.encode.tokenizer import Tokenizer


def test_a_new_corpus_marks_the_result_as_trained_on_the_old_one(qtbot, make_window, make_corpus):
    window = make_window(make_corpus(10_000, seed=1, name="first.txt"), 300)
    window.start_training()
    qtbot.waitUntil(lambda: not window.is_training(), timeout=60_000)
    window.summary_panel.refresh()
    assert window.summary_panel.stale_label.isHidden()
    window.settings_panel.set_corpus(str(make_corpus(10_000, seed=2, name="second.txt")))
    notice = window.summary_panel.stale_label
    assert not notice.isHidden()
    assert "trained on first.txt" in notice.text() and "second.txt" in notice.text()


def test_first_launch_progress_invites_to_train_the_chosen_sample(qtbot, make_window):
    window = make_window()
    window.progress_panel.refresh()
    text = window.progress_panel.detail_label.text()
    assert "choose a corpus" not in text and "Train" in text


def small_tokenizer(tmp_path) -> Tokenizer:
    (tmp_path / "c.txt").write_text("the theme then there other " * 200, encoding="utf-8")
    vocab, merges = core.train_bpe(tmp_path / "c.txt", 300, [], workers=1)
    return Tokenizer(vocab, merges)


def test_filtered_out_token_leaves_the_tree_and_hover_line_resets(qtbot, tmp_path):
    panel = ExplorePanel(compare=CompareView())
    qtbot.addWidget(panel)
    tok = small_tokenizer(tmp_path)
    with qtbot.waitSignal(panel.vocab_ready, timeout=30_000):
        panel.set_tokenizer(tok, title="one")
    the = next(i for i, b in tok.vocab.items() if b == b" the")
    assert panel.browser.select_token(the)
    qtbot.waitUntil(lambda: panel.tree.token_id == the)
    assert panel.tree.topLevelItemCount() == 1
    panel.browser.filter_edit.setText("zzz")  # nothing matches
    panel.browser.apply_filter()
    qtbot.waitUntil(lambda: panel.tree.token_id is None, timeout=2000)
    assert panel.tree.topLevelItemCount() == 0
    assert panel.browser.selected_id is None

    # The inspector's hover line about a token of the previous tokenizer goes away.
    inspector = panel.inspector
    inspector._on_click(0)
    assert inspector.detail_label.text().startswith("token #1")
    with qtbot.waitSignal(panel.vocab_ready, timeout=30_000):
        panel.set_tokenizer(small_tokenizer(tmp_path), title="two")
    assert inspector.detail_label.text() == HOVER_HINT


def test_empty_charts_have_meaningful_axes_and_drop_the_last_runs(qtbot, make_window, tmp_path):
    window = make_window()
    charts = window.charts
    charts.refresh()
    for plot in (charts.pair_plot, charts.freq_plot, charts.length_plot, charts.bpt_plot):
        (x0, x1), (y0, y1) = plot.getViewBox().viewRange()
        assert x1 - x0 >= 0.99 and y1 - y0 >= 0.99, (plot, x0, x1, y0, y1)  # not 0..1's 0.2-0.8 ticks
    # A small run: its log axes span whole decades (no crowded sub-decade labels).
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("ab ab ab ac ac ad " * 50, encoding="utf-8")
    window.settings_panel.set_corpus(str(corpus))
    window.settings_panel.set_vocab_size(300)
    window.start_training()
    qtbot.waitUntil(lambda: not window.is_training(), timeout=60_000)
    charts.refresh()
    (x0, x1), (y0, y1) = charts.freq_plot.getViewBox().viewRange()
    padding = 0.1
    assert x1 - x0 >= 1 and abs(round(x1) - x1) <= padding and abs(round(y1) - y1) <= padding
    finished_range = charts.pair_plot.getViewBox().viewRange()[0]
    # The next run starts from its own axes, not the last run's.
    window.settings_panel.set_vocab_size(5000)
    window.state.start(window.settings_panel.settings())
    charts.refresh()
    assert charts.pair_plot.getViewBox().viewRange()[0] != finished_range
    assert math.isclose(charts.pair_plot.getViewBox().viewRange()[0][1], 5000 - 256, rel_tol=0.05)
    window.state.reset()
