"""Cancelling a new run before its first merge keeps the previous result; an empty partial
result is never exported without asking."""

from __future__ import annotations

from bpe_studio.app.models.run_progress import Stage


def test_cancel_during_pretokenization_keeps_the_previous_result(qtbot, make_window, make_corpus, tmp_path, export_and_wait):
    window = make_window(make_corpus(20_000, seed=5), 400)
    with qtbot.waitSignal(window.explore_panel.vocab_ready, timeout=60_000):
        window.start_training()
    previous = window.state.session
    assert previous is not None and not previous.partial and previous.merges
    title = window.current.title

    window.settings_panel.set_corpus(str(make_corpus(3_000_000, seed=6, name="big.txt")))
    window.settings_panel.set_vocab_size(20_000)
    window.start_training()
    assert window.state.stage is Stage.READING
    window.cancel_training()  # still reading: not one merge yet
    qtbot.waitUntil(lambda: not window.is_training(), timeout=30_000)

    assert window.state.session is previous
    assert window.state.stage is Stage.FINISHED
    assert dict(window.summary_panel.rows())["Result:"] == "complete"
    assert window.current.session is previous and window.current.title == title
    assert "previous result" in window.banner.text()
    window.merges_table.refresh()
    assert window.merges_table.merges_model.rowCount() == len(previous.merges)
    paths = export_and_wait(window, tmp_path / "out")
    assert paths and "partial" not in window.banner.text()


def test_an_empty_partial_result_is_not_exported_without_asking(qtbot, make_window, make_corpus, tmp_path, export_and_wait):
    window = make_window(make_corpus(3_000_000, seed=7), 20_000)
    window.start_training()
    window.cancel_training()
    qtbot.waitUntil(lambda: not window.is_training(), timeout=30_000)
    session = window.state.session
    assert session is not None and session.partial and not session.merges
    assert window.export_to(tmp_path / "out") is None
    assert window.banner.kind() == "error" and "before its first merge" in window.banner.text()
    assert not (tmp_path / "out").exists()
    assert export_and_wait(window, tmp_path / "out", allow_empty=True)  # what the dialog does once confirmed
