"""The Explore tab inside the main window: a finished training shows up in it."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import core  # noqa: E402


def test_training_result_reaches_the_explore_tab(qtbot, make_window, make_corpus, tmp_path) -> None:
    corpus = make_corpus(60_000, seed=3)
    window = make_window(corpus, 400, ["<|endoftext|>"])
    window.settings_panel.workers_spin.setValue(1)
    explore = window.explore_panel
    assert window.tabs.indexOf(explore) >= 0
    with qtbot.waitSignal(explore.vocab_ready, timeout=60_000):
        window.start_training()
    vocab, merges = core.train_bpe(corpus, 400, ["<|endoftext|>"], workers=1)
    assert explore.tokenizer.merges == merges
    assert explore.browser.model.rowCount() == len(vocab)
    # Pair counts from training fill the Count column of merged tokens.
    assert (explore.vocab.counts[explore.vocab.ranks >= 0] > 0).all()
    # The inspector encodes with the trained tokenizer.
    assert explore.inspector.result["ids"] == explore.tokenizer.encode(explore.inspector.text())
    window.tabs.setCurrentWidget(explore)
    window.resize(1200, 800)
    qtbot.wait(50)
    window.grab().save(str(tmp_path / "explore.png"))


def test_open_tokenizer_action_exists(make_window) -> None:
    window = make_window()
    action = window.open_tokenizer_action
    assert action.shortcut().toString() == "Ctrl+Shift+T"
    assert action in window.menuBar().actions()[0].menu().actions()


def test_closing_the_window_ends_every_background_thread(qtbot, make_window, make_corpus) -> None:
    from core.encode.tokenizer import Tokenizer

    corpus = make_corpus(20_000, seed=4)
    vocab, merges = core.train_bpe(corpus, 400, ["<|endoftext|>"], workers=1)
    tokenizer = Tokenizer(vocab, merges, ["<|endoftext|>"])
    window = make_window()
    explore = window.explore_panel
    explore.set_tokenizer(tokenizer, title="Closing")  # the vocabulary columns: a job
    explore.inspector.set_tokenizer(tokenizer)
    explore.inspector.set_text(corpus.read_text(encoding="utf-8"))  # long: encoded by a job
    jobs = explore._columns._jobs + explore.inspector._encoding._jobs
    assert len(jobs) == 2
    window.close()  # cancels them; the window closes itself once they have ended (never blocking)
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=30_000)
    assert all(job._thread.isFinished() for job in jobs)
