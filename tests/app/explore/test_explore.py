"""The Explore panel: open tokenizers from files, browse, merge trees, links to the inspector.

Files are written by the project itself (core.formats.save_tokenizer into tmp_path); the
original GPT-2 files are read from /work/shared when present.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import regex

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import core  # noqa: E402
from core import formats  # noqa: E402
from core.encode.tokenizer import Tokenizer  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402

from bpe_studio.app.compare.compare_view import CompareView  # noqa: E402
from bpe_studio.app.explore.explore_panel import ExplorePanel  # noqa: E402
from bpe_studio.app.models.token_render import HIGHLIGHT  # noqa: E402
from bpe_studio.app.models.vocab_data import COL_LENGTH  # noqa: E402

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def trained_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Tokenizer]:
    words = ["the", "there", "then", "cat", "category", "日本", "語", "😀", "naïve"]
    text = EOT.join(" ".join(words[(i * 5 + j) % len(words)] for j in range(50)) + "\n" for i in range(50))
    root = tmp_path_factory.mktemp("tok")
    (root / "corpus.txt").write_text(text, encoding="utf-8")
    vocab, merges = core.train_bpe(root / "corpus.txt", 350, [EOT], workers=1)
    formats.save_tokenizer(root / "out", vocab, merges, [EOT], "gpt2")
    return root / "out", Tokenizer(vocab, merges, [EOT])


def open_and_wait(qtbot, panel: ExplorePanel, path: Path) -> None:
    """Open a tokenizer and wait until its vocabulary columns are built (a thread)."""
    with qtbot.waitSignal(panel.vocab_ready, timeout=60_000):
        assert panel.open_tokenizer(path), panel.error_label.text()


@pytest.fixture
def panel(qtbot) -> ExplorePanel:
    widget = ExplorePanel(compare=CompareView())
    qtbot.addWidget(widget)
    widget.resize(1200, 800)
    return widget


def test_open_gpt2_files_written_by_the_project(qtbot, panel: ExplorePanel, trained_files: tuple[Path, Tokenizer]) -> None:
    out, original = trained_files
    open_and_wait(qtbot, panel, out / "vocab.json")
    assert panel.error_label.isHidden()
    assert panel.tokenizer.vocab == original.vocab
    assert panel.tokenizer.merges == original.merges
    assert panel.tokenizer.special_tokens == [EOT]
    assert panel.browser.model.rowCount() == len(original.vocab)
    # The inspector works on it: same ids as the tokenizer built from training.
    text = panel.inspector.text()
    assert panel.inspector.result["ids"] == original.encode(text)


@pytest.mark.parametrize("name", ["", "tokenizer.json", "merges.txt", "tokenizer.tiktoken"])
def test_open_directory_tokenizer_json_or_merges(qtbot, panel: ExplorePanel, trained_files: tuple[Path, Tokenizer], name: str) -> None:
    out, original = trained_files
    open_and_wait(qtbot, panel, out / name if name else out)
    assert panel.tokenizer.encode("the category 😀") == original.encode("the category 😀")


def test_open_a_tiktoken_file_without_settings_says_what_is_missing(qtbot, panel: ExplorePanel, trained_files: tuple[Path, Tokenizer], tmp_path: Path) -> None:
    out, _ = trained_files
    (tmp_path / "ranks.tiktoken").write_bytes((out / "tokenizer.tiktoken").read_bytes())
    with qtbot.waitSignal(panel.open_failed, timeout=10_000):
        panel.open_tokenizer(tmp_path / "ranks.tiktoken")  # read in the background
    assert "holds no pre-tokenization pattern" in panel.error_label.text()


def test_open_a_broken_file_shows_the_reason(qtbot, panel: ExplorePanel, tmp_path: Path) -> None:
    # A vocabulary lacking a byte: core refuses it; the panel says why, no traceback.
    vocab = {chr(0x41 + i) if i < 26 else f"t{i}": i for i in range(30)}
    (tmp_path / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (tmp_path / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    with qtbot.waitSignal(panel.open_failed, timeout=10_000):
        panel.open_tokenizer(tmp_path / "vocab.json")  # read in the background
    assert not panel.error_label.isHidden()
    assert "byte" in panel.error_label.text() and "Cannot open" in panel.error_label.text()
    assert not panel.open_tokenizer(tmp_path / "nothing-here.json")
    assert "Cannot open" in panel.error_label.text()


def test_selecting_a_token_shows_its_merge_tree_and_occurrences(qtbot, panel: ExplorePanel, trained_files: tuple[Path, Tokenizer]) -> None:
    out, tok = trained_files
    open_and_wait(qtbot, panel, out)
    panel.inspector.set_text("the category then the cat")
    the_id = tok.encode(" the")[0]
    assert len(tok.encode(" the")) == 1
    with qtbot.waitSignal(panel.browser.token_selected, timeout=2000):
        assert panel.browser.select_token(the_id)
    # The tree's leaves are the token's bytes, left to right.
    leaves = panel.tree.leaves()
    assert b"".join(tok.token_bytes(i) for i in leaves) == b" the"
    assert all(len(tok.token_bytes(i)) == 1 for i in leaves)
    # Its occurrences are highlighted in the inspector and counted.
    view = panel.inspector.token_view
    expected = [k for k, i in enumerate(tok.encode("the category then the cat")) if i == the_id]
    assert expected and view.occurrences(the_id) == expected
    assert HIGHLIGHT in view.html_source
    assert ("once" if len(expected) == 1 else f"{len(expected)} times") in panel.occurrences_label.text()


def test_clicking_a_token_in_the_inspector_selects_it(qtbot, panel: ExplorePanel, trained_files: tuple[Path, Tokenizer]) -> None:
    out, tok = trained_files
    open_and_wait(qtbot, panel, out)
    panel.inspector.set_text("category")
    first = tok.encode("category")[0]
    from PySide6.QtCore import QUrl

    with qtbot.waitSignal(panel.browser.token_selected, timeout=2000) as blocker:
        panel.inspector.token_view.anchorClicked.emit(QUrl("tok:0"))
    assert blocker.args == [first]
    assert panel.tree.token_id == first


def test_filter_as_you_type_is_debounced_and_sorting_works(qtbot, panel: ExplorePanel, trained_files: tuple[Path, Tokenizer]) -> None:
    out, tok = trained_files
    open_and_wait(qtbot, panel, out)
    browser = panel.browser
    total = browser.model.rowCount()
    browser.filter_edit.setText("·th")
    assert browser.model.rowCount() == total  # not yet: the filter waits for typing to pause
    qtbot.waitUntil(lambda: browser.model.rowCount() < total, timeout=2000)
    expected = sorted(i for i, b in tok.vocab.items() if b" th" in b)
    assert sorted(browser.model.data(browser.model.index(r, 0), Qt.ItemDataRole.UserRole + 1) for r in range(browser.model.rowCount())) == expected
    browser.table.sortByColumn(COL_LENGTH, Qt.SortOrder.DescendingOrder)
    top = browser.model.data(browser.model.index(0, COL_LENGTH))
    assert int(top) == max(len(tok.vocab[i]) for i in expected)
    browser.regex_box.setChecked(True)
    browser.filter_edit.setText("th(")
    browser.apply_filter()
    assert not browser.error_label.isHidden() and "regular expression" in browser.error_label.text()


def test_set_tokenizer_with_merge_counts(qtbot, panel: ExplorePanel, trained_files: tuple[Path, Tokenizer]) -> None:
    _, tok = trained_files
    counts = {256 + 1 + r: 1000 - r for r in range(len(tok.merges))}
    with qtbot.waitSignal(panel.vocab_ready, timeout=30_000):
        panel.set_tokenizer(tok, merge_counts=counts, title="Trained")
    assert "Trained" in panel.heading.text()
    assert f"— {len(tok):,} tokens · {len(tok.merges):,} merges" in panel.heading.text()
    row = panel.vocab.row_of_id[257]
    assert panel.vocab.cell_text(row, 7) == "1,000"


def test_original_gpt2_files_open_and_browse(qtbot, panel: ExplorePanel, shared_dir: Path) -> None:
    vocab_path = shared_dir / "fixtures" / "gpt2_vocab.json"
    t0 = time.perf_counter()
    open_and_wait(qtbot, panel, vocab_path)
    seconds = time.perf_counter() - t0
    print(f"\nopening the GPT-2 files (load + vocabulary columns + inspector): {seconds:.2f} s")
    assert panel.browser.model.rowCount() == 50_257
    assert panel.tokenizer.special_tokens == [EOT]
    # Well-known GPT-2 ids: " the" is 262, "Hello world" is [15496, 995].
    assert panel.tokenizer.encode("Hello world") == [15496, 995]
    panel.browser.filter_edit.setText("·the")
    panel.browser.apply_filter()
    ids = {panel.browser.model.data(panel.browser.model.index(r, 0), Qt.ItemDataRole.UserRole + 1) for r in range(panel.browser.model.rowCount())}
    assert 262 in ids
    assert panel.browser.select_token(262)
    # GPT-2 builds " the" as (" t" + "he"): leaves are the bytes " ", "t", "h", "e".
    assert panel.tree.leaves() == [220, 83, 71, 68]
    assert panel.inspector.round_trip_ok is True


def test_a_failure_building_the_columns_is_shown_in_the_panel(qtbot, panel: ExplorePanel, trained_files: tuple[Path, Tokenizer], monkeypatch) -> None:
    from bpe_studio.app.models.vocab_data import VocabData

    _, tok = trained_files

    def broken(*_args, **_kwargs):
        raise KeyError("readable")

    monkeypatch.setattr(VocabData, "from_tokenizer", broken)
    ready: list[bool] = []
    panel.vocab_ready.connect(lambda: ready.append(True))
    with qtbot.waitSignal(panel._columns.failed, timeout=10_000):
        panel.set_tokenizer(tok, title="Broken one")
    assert not panel.error_label.isHidden()
    assert panel.error_label.text() == "Cannot show Broken one: reading the vocabulary failed unexpectedly (KeyError: 'readable')"
    assert panel.tokenizer is None and ready == []
    assert "reading" not in panel.heading.text()


def shown_ids(browser) -> list[int]:
    model = browser.model
    return sorted(model.data(model.index(r, 0), Qt.ItemDataRole.UserRole + 1) for r in range(model.rowCount()))


def test_filter_matches_a_typed_space_and_regex_whitespace(qtbot, panel: ExplorePanel, trained_files: tuple[Path, Tokenizer]) -> None:
    out, tok = trained_files
    open_and_wait(qtbot, panel, out)
    browser = panel.browser
    with_space_th = sorted(i for i, b in tok.vocab.items() if b" th" in b)
    assert with_space_th
    browser.filter_edit.setFocus()
    qtbot.keyClicks(browser.filter_edit, " th")  # what a keyboard gives: a real space
    qtbot.waitUntil(lambda: shown_ids(browser) == with_space_th, timeout=2000)
    # Regex mode: \s finds the tokens holding whitespace (spaces, newlines).
    browser.regex_box.setChecked(True)
    browser.filter_edit.setText(r"\sth")
    browser.apply_filter()
    assert browser.error_label.isHidden()
    assert shown_ids(browser) == with_space_th
    browser.filter_edit.setText(r"^\s")
    browser.apply_filter()
    starts_with_space = sorted(i for i, b in tok.vocab.items() if regex.match(r"\s", b.decode("utf-8", "replace")))
    assert {9, 10, 32} <= set(starts_with_space)
    assert shown_ids(browser) == starts_with_space


def test_the_heading_says_the_size_once(qtbot, panel: ExplorePanel, trained_files: tuple[Path, Tokenizer]) -> None:
    _, tok = trained_files
    title = f"Trained on a.txt ({len(tok):,} tokens)"
    with qtbot.waitSignal(panel.vocab_ready, timeout=30_000):
        panel.set_tokenizer(tok, title=title)
    assert panel.heading.text().count(f"{len(tok):,} tokens") == 1
    assert f"— {len(tok.merges):,} merges" in panel.heading.text()
