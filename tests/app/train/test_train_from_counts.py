"""File › Open pre-token counts…: training in the window from .bpc files (``bpe-studio
count``) gives exactly the merges of training on the counted corpus."""

from __future__ import annotations

from pathlib import Path

import core

EOT = "<|endoftext|>"


def test_training_from_counts_files_equals_training_on_the_corpus(qtbot, make_window, make_corpus, tmp_path: Path) -> None:
    first, second = make_corpus(60_000, seed=1, name="a.txt"), make_corpus(60_000, seed=2, name="b.txt")
    for corpus, name in ((first, "a.bpc"), (second, "b.bpc")):
        core.count_pretokens(corpus, [EOT], pattern="gpt4", workers=1).save(tmp_path / name)
    window = make_window(vocab_size=600)
    window.open_counts([str(tmp_path / "a.bpc"), str(tmp_path / "b.bpc")])
    panel = window.settings_panel
    assert panel.pattern() == "gpt4" and panel.special_tokens() == [EOT]  # what they were counted with
    window.start_training()
    qtbot.waitUntil(lambda: not window.is_training() and window.state.session is not None, timeout=60_000)
    assert window.banner.kind() != "error", window.banner.text()
    _, merges = core.train_bpe([first, second], 600, [EOT], pattern="gpt4", workers=1)
    assert window.state.session.merges == merges


def test_counts_with_other_settings_or_a_foreign_file_are_refused_in_words(qtbot, make_window, make_corpus, tmp_path: Path) -> None:
    corpus = make_corpus(20_000)
    core.count_pretokens(corpus, [EOT], workers=1).save(tmp_path / "c.bpc")
    window = make_window(vocab_size=400)
    (tmp_path / "foreign.bpc").write_bytes(b"not counts at all")
    window.open_counts([str(tmp_path / "foreign.bpc")])
    assert window.banner.kind() == "error" and "foreign.bpc is not a pre-token counts file" in window.banner.text()
    window.open_counts([str(tmp_path / "c.bpc")])
    window.settings_panel.specials_edit.setPlainText("<|other|>")  # changed after opening
    window.start_training()
    qtbot.waitUntil(lambda: window.banner.kind() == "error", timeout=10_000)
    assert "c.bpc was counted with the special tokens ['<|endoftext|>']" in window.banner.text()
    assert not window.is_training()
