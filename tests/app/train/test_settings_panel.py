"""The settings panel as a user types into it: sizes below the minimum are shown and refused."""

from __future__ import annotations

from PySide6.QtCore import Qt


def type_vocab_size(qtbot, spin, text: str) -> None:
    spin.setFocus()
    spin.selectAll()
    qtbot.keyClicks(spin, text)


def test_a_typed_vocabulary_below_the_minimum_stays_and_is_refused(qtbot, make_window, make_corpus):
    window = make_window(make_corpus(10_000), 2000)
    panel = window.settings_panel
    panel.specials_edit.setPlainText("<|endoftext|>")
    spin = panel.vocab_spin
    type_vocab_size(qtbot, spin, "100")
    qtbot.keyClick(spin, Qt.Key.Key_Tab)  # leaving the field must not replace what was typed
    assert spin.value() == 100
    assert spin.text() == "100"
    assert "at least 257" in panel.merges_hint.text()
    assert spin.property("invalid") is True
    # Ctrl+Enter right after: refused with the trainer's reason, nothing trains.
    window.train_action.trigger()
    assert not window.is_training()
    assert window.banner.kind() == "error"
    assert "too small" in window.banner.text() and "257" in window.banner.text()
    # Set by other means (a session, the command line) it is not clamped either.
    panel.set_vocab_size(100)
    assert spin.value() == 100
    window.start_training()
    assert not window.is_training()
    # A valid size clears the mark and trains.
    type_vocab_size(qtbot, spin, "300")
    assert spin.property("invalid") is False
    assert panel.merges_hint.text().startswith("43 merges")
    assert panel.validation_error() is None


def test_the_default_special_tokens_are_the_command_lines(qtbot, make_window, tmp_path):
    from bpe_studio.cli import _command_parser

    args = _command_parser().parse_args(["train", "corpus.txt", "--vocab-size", "300", "--out", str(tmp_path)])
    plain = tmp_path / "plain.txt"
    plain.write_text("text without any document separator\n" * 50, encoding="utf-8")
    window = make_window(plain)  # first launch: nothing restored
    assert window.settings_panel.settings().special_tokens == tuple(args.special_tokens) == ()
    # Stated where it is chosen.
    panel = window.settings_panel
    assert "none" in panel.specials_edit.placeholderText() and "command line" in panel.specials_edit.placeholderText()
    # A corpus with <|endoftext|> between documents (the sample) starts with it, and says why
    # (tests/app/train/test_separator_hint.py).
    panel.use_sample_corpus()
    assert panel.special_tokens() == ["<|endoftext|>"] and panel.specials_hint.isVisibleTo(panel)
