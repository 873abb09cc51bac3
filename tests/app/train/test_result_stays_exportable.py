"""The result you see is the result you export: the Result panel's Export and Save session act
on the training result it shows, even after another tokenizer was opened in Explore; a failed
run keeps the previous result on show and exportable, with the failure above it, and the
failure notice goes once a new run starts."""

from __future__ import annotations

import core
from bpe_studio.app.models.session import load_session
from bpe_studio.app.models.run_progress import Stage
from core.formats import load_tokenizer_json, save_tokenizer


def train_and_wait_for_the_tokenizer(qtbot, window) -> None:
    with qtbot.waitSignal(window.explore_panel.vocab_ready, timeout=60_000):
        window.start_training()
    qtbot.waitUntil(lambda: not window.is_training(), timeout=30_000)


def test_export_under_the_result_exports_it_after_another_tokenizer_was_opened(
        qtbot, make_window, make_corpus, tmp_path, monkeypatch):
    window = make_window(make_corpus(20_000, seed=3), 400)
    train_and_wait_for_the_tokenizer(qtbot, window)
    trained = window.state.session
    assert trained is not None and trained.merges

    other_vocab, other_merges = core.train_bpe(make_corpus(8_000, seed=9, name="other.txt"), 300, [], workers=1)
    save_tokenizer(tmp_path / "other", other_vocab, other_merges, [], "gpt2")
    with qtbot.waitSignal(window.explore_panel.vocab_ready, timeout=30_000):
        window.explore_panel.open_tokenizer(tmp_path / "other" / "tokenizer.json")
    assert window.current.session is None and window.current.tokenizer is not None  # the opened one is current

    out = tmp_path / "out"
    monkeypatch.setattr(window.dialogs, "choose_folder", lambda *_args: str(out))
    window.summary_panel.export_button.click()
    qtbot.waitUntil(lambda: not window.exports.busy, timeout=30_000)
    _vocab, merges, _specials, _pattern = load_tokenizer_json(out / "tokenizer.json")
    assert list(merges) == list(trained.merges) != list(other_merges)
    assert window.banner.kind() == "info" and "Trained on corpus.txt" in window.banner.text()

    # Save session under the result saves that result too (the opened tokenizer has none).
    path = tmp_path / "run.bpesession"
    monkeypatch.setattr(window.dialogs, "save_file", lambda *_args: str(path))
    window.summary_panel.save_button.click()
    qtbot.waitUntil(lambda: not window.sessions.busy, timeout=30_000)
    assert window.banner.kind() == "info", window.banner.text()
    assert load_session(path).merges == trained.merges
    # The menu's Export still acts on the current (opened) tokenizer, as its name says.
    assert "other" in window.export_action.text() or "tokenizer.json" in window.export_action.text()


def test_a_failed_run_keeps_the_previous_result_visible_and_exportable(
        qtbot, make_window, make_corpus, tmp_path, monkeypatch, export_and_wait):
    window = make_window(make_corpus(20_000, seed=4), 400)
    train_and_wait_for_the_tokenizer(qtbot, window)
    previous = window.state.session
    rows = window.summary_panel.rows()
    title = window.current.title

    window.settings_panel.set_corpus(str(tmp_path / "missing.txt"))
    window.start_training()
    qtbot.waitUntil(lambda: not window.is_training(), timeout=60_000)
    summary = window.summary_panel
    summary.refresh()
    assert window.state.stage is Stage.FAILED
    assert window.banner.kind() == "error" and "missing.txt" in window.banner.text()
    # the previous result, still on show, with the failure above it
    assert window.state.session is previous
    assert summary.rows() == rows
    assert not summary.failed_label.isHidden()
    assert "failed" in summary.failed_label.text() and "missing.txt" in summary.failed_label.text()
    assert summary.failed_label.y() < summary.export_button.y()
    assert summary.empty_label.isHidden()
    assert summary.export_button.isEnabled() and summary.save_button.isEnabled()
    window.merges_table.refresh()
    assert window.merges_table.merges_model.rowCount() == len(previous.merges)
    assert window.current.session is previous and window.current.title == title
    window.progress_panel.refresh()
    assert window.progress_panel.status_text().startswith("Failed") and "missing.txt" in window.progress_panel.status_text()
    out = tmp_path / "out"
    monkeypatch.setattr(window.dialogs, "choose_folder", lambda *_args: str(out))
    summary.export_button.click()
    qtbot.waitUntil(lambda: not window.exports.busy, timeout=30_000)
    _vocab, merges, _specials, _pattern = load_tokenizer_json(out / "tokenizer.json")
    assert list(merges) == list(previous.merges)

    # A new run: no stale failure notice once it starts, nor after it succeeds.
    window.settings_panel.set_corpus(str(make_corpus(20_000, seed=5, name="second.txt")))
    window.start_training()
    summary.refresh()
    assert summary.failed_label.isHidden() and window.banner.text() == ""
    qtbot.waitUntil(lambda: not window.is_training(), timeout=60_000)
    summary.refresh()
    assert window.state.stage is Stage.FINISHED and window.state.session is not previous
    assert summary.failed_label.isHidden()
    assert window.banner.text() == ""


def test_a_failed_first_run_shows_no_result(qtbot, make_window, tmp_path):
    window = make_window(tmp_path / "missing.txt", 300)
    window.start_training()
    qtbot.waitUntil(lambda: not window.is_training(), timeout=60_000)
    summary = window.summary_panel
    summary.refresh()
    assert window.state.stage is Stage.FAILED and window.state.session is None
    assert summary.failed_label.isHidden() and not summary.empty_label.isHidden()
    assert not summary.export_button.isEnabled()
