"""The result says what happened: a run that ran out of pairs is not "complete", and the
charts fit the data the run has."""

from __future__ import annotations

from bpe_studio.app.models.run_progress import Stage


def test_a_run_out_of_pairs_says_stopped_early_and_the_charts_fit(qtbot, make_window, tmp_path):
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("the cat sat on the mat. " * 200, encoding="utf-8")
    window = make_window(corpus, 1000)
    window.settings_panel.specials_edit.setPlainText("")
    window.start_training()
    qtbot.waitUntil(lambda: not window.is_training(), timeout=60_000)
    state = window.state
    assert state.stage is Stage.FINISHED, window.banner.text()
    made, planned = len(state.token_ids), 1000 - 256
    assert 0 < made < planned
    window.summary_panel.refresh()
    rows = dict(window.summary_panel.rows())
    assert rows["Result:"] == f"stopped early: no pair left ({made:,} of {planned:,} merges)"
    window.progress_panel.refresh()
    assert window.progress_panel.detail_label.text().startswith(f"stopped early: no pair left ({made:,} of {planned:,}")
    window.charts.refresh()
    # The x axes end near the merges made / vocabulary reached, not at the planned 744 / 1,000.
    (x0, x1), _ = window.charts.pair_plot.getViewBox().viewRange()
    assert x1 < made * 1.2
    (x0, x1), _ = window.charts.bpt_plot.getViewBox().viewRange()
    assert x1 < (256 + made) * 1.1
