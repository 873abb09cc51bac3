"""The window's custom pattern field reads names as the library does: any case is the
name, an unknown name or a pattern matching the empty string is flagged with the reason."""

from __future__ import annotations


def test_names_and_empty_matches_in_the_pattern_field(qtbot, make_window, make_corpus):  # type: ignore[no-untyped-def]
    window = make_window(make_corpus(10_000), 300)
    panel = window.settings_panel
    panel.pattern_combo.setCurrentIndex(panel.pattern_combo.findData("custom"))
    panel.regex_edit.setText(" GPT4 ")
    assert panel.regex_status.property("invalid") is False
    assert panel.regex_status.text() == "✓ the built-in gpt4 pattern"
    for text, reason in (("gpt3", "not a known pattern name; the names are 'gpt2', 'gpt4'"),
                         (r"\b", "matches the empty string")):
        panel.regex_edit.setText(text)
        assert panel.regex_status.property("invalid") is True
        assert reason in panel.regex_status.text()
        window.start_training()
        assert not window.is_training()
        assert window.banner.kind() == "error" and reason in window.banner.text()
