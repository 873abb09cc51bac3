"""With the built-in sample (or any corpus with ``<|endoftext|>`` between documents) the
special-tokens field starts with ``<|endoftext|>`` and says why; with a corpus without
it the field stays empty, as on the command line."""

from __future__ import annotations

import gzip

from bpe_studio.app.train.separator_hint import SEPARATOR, find_separator


def test_the_sample_starts_with_the_separator_and_says_why(qtbot, make_window, tmp_path) -> None:
    window = make_window()  # first launch: the built-in sample
    panel = window.settings_panel
    assert "sample_corpus" in panel.corpus()
    assert panel.special_tokens() == [SEPARATOR]
    assert panel.settings().special_tokens == (SEPARATOR,)
    hint = panel.specials_hint
    assert hint.isVisibleTo(panel) and "between this corpus's documents" in hint.text() and "never merged" in hint.text()
    assert panel.merges_hint.text().endswith("minimum 257")  # the minimum counts it

    # A plain file without it: the field is empty again (it was filled in, not typed).
    plain = tmp_path / "plain.txt"
    plain.write_text("just some text, no separators here\n" * 100, encoding="utf-8")
    panel.set_corpus(str(plain))
    assert panel.special_tokens() == [] and not hint.isVisibleTo(panel)

    # Compressed, separator after the first document: found.
    packed = tmp_path / "docs.txt.gz"
    packed.write_bytes(gzip.compress(("a story. " * 50 + SEPARATOR + "another one.").encode()))
    panel.set_corpus(str(packed))
    assert panel.special_tokens() == [SEPARATOR]

    # Typed by the user: kept whatever the corpus; a hint says to add the separator.
    panel.specials_edit.setPlainText("<|pad|>")
    panel.set_corpus(str(plain))
    assert panel.special_tokens() == ["<|pad|>"] and not hint.isVisibleTo(panel)
    panel.use_sample_corpus()
    assert panel.special_tokens() == ["<|pad|>"]
    assert hint.isVisibleTo(panel) and "add it here" in hint.text()


def test_find_separator_reads_only_the_first_megabyte(tmp_path) -> None:
    late = tmp_path / "late.txt"
    late.write_bytes(b"x" * (2 << 20) + SEPARATOR.encode())
    assert find_separator(str(late)) is None
    early = tmp_path / "folder"
    early.mkdir()
    (early / "a.txt").write_text(f"one{SEPARATOR}two", encoding="utf-8")
    assert find_separator(str(early)) == SEPARATOR
    assert find_separator(str(tmp_path / "missing.txt")) is None
