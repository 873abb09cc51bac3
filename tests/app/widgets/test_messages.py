"""Messages keep what they name: HTML entities are not shown as text, and a message that
starts with a file name does not get its first letter capitalised."""

from __future__ import annotations

from bpe_studio.app.widgets.messages import as_sentence


def test_as_sentence_capitalises_only_a_plain_word() -> None:
    assert as_sentence("add a tokenizer first") == "Add a tokenizer first"
    assert as_sentence("encoding failed unexpectedly (KeyError: 'x')") == "Encoding failed unexpectedly (KeyError: 'x')"
    for kept in ("stdlib_all.txt is 32 MB; the inspector opens files up to 20 MB.", "./data is empty",
                 "gpt2 is not a folder", "<|endoftext|> is given twice", "iPhone", "Already a sentence", ""):
        assert as_sentence(kept) == kept


def test_the_inspector_keeps_a_file_name_as_written(qtbot, tmp_path, monkeypatch) -> None:
    from bpe_studio.app.explore import inspector as inspector_module
    from bpe_studio.app.explore.inspector import InspectorPanel

    monkeypatch.setattr(inspector_module, "MAX_FILE_BYTES", 10)
    big = tmp_path / "stdlib_all.txt"
    big.write_text("x" * 100, encoding="utf-8")
    panel = InspectorPanel()
    qtbot.addWidget(panel)
    error = panel.load_file(big)
    assert error is not None and error.startswith("stdlib_all.txt is ")
    panel._show_error(error)
    assert panel.error_label.text().startswith("stdlib_all.txt is ")


def test_the_occurrences_line_shows_a_token_with_html_characters_as_it_is(qtbot) -> None:
    from core.encode.tokenizer import Tokenizer
    from bpe_studio.app.compare.compare_view import CompareView
    from bpe_studio.app.explore.explore_panel import ExplorePanel

    vocab = {i: bytes([i]) for i in range(256)}
    merges = [(b"'", b"&"), (b"'&", b"'")]
    for left, right in merges:
        vocab[len(vocab)] = left + right
    panel = ExplorePanel(compare=CompareView())
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.vocab_ready, timeout=30_000):
        panel.set_tokenizer(Tokenizer(vocab, merges), title="entities")
    panel.browser.select_token(len(vocab) - 1)
    qtbot.waitUntil(lambda: "occur" in panel.occurrences_label.text())
    shown = panel.occurrences_label.text()
    assert shown.startswith("“'&'”"), shown
    # What is drawn is that text, not its entities: plain text, or rich text escaped once.
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QTextDocument

    if panel.occurrences_label.textFormat() != Qt.TextFormat.PlainText:
        document = QTextDocument()
        document.setHtml(shown)
        shown = document.toPlainText()
    assert "&#x27;" not in shown and "&amp;" not in shown and shown.startswith("“'&'”")
