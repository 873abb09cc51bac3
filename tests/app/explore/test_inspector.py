"""The inspector and its token pane: rendering, figures, ids, round trip, huge text.

Rendering is checked through Qt's own document (``toPlainText`` of what the pane shows)
and the anchors of the HTML: one anchor per token, characters cut across tokens shown
once with one byte chip per token. Tokenizers are built here: bytes only (every
multi-byte character is cut) and one trained on a small generated text.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import core  # noqa: E402
from core.encode.tokenizer import Tokenizer  # noqa: E402

from bpe_studio.app.explore.inspector import InspectorPanel, round_trip_report  # noqa: E402
from bpe_studio.app.models.token_render import HIGHLIGHT, SPECIAL_BG  # noqa: E402
from bpe_studio.app.widgets.token_view import TokenView  # noqa: E402

EOT = "<|endoftext|>"


def bytes_only() -> Tokenizer:
    return Tokenizer({i: bytes([i]) for i in range(256)}, [], [EOT])


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Tokenizer:
    words = ["the", "cat", "sat", "on", "mat", "日本", "語", "café", "naïve", "😀", "tokens"]
    text = EOT.join(" ".join(words[(i * 7 + j) % len(words)] for j in range(40)) + "\n" for i in range(60))
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    vocab, merges = core.train_bpe(path, 400, [EOT], workers=1)
    return Tokenizer(vocab, merges, [EOT])


def shown_text(view: TokenView) -> str:
    """What the pane displays, as plain text (word joiners inside special tokens dropped)."""
    return view.toPlainText().replace("\u2060", "").replace("\u00a0", " ")


def anchors(view: TokenView) -> list[int]:
    return [int(k) for k in re.findall(r'href="tok:(\d+)"', view.html_source)]


def render(qtbot, tokenizer: Tokenizer, text: str) -> TokenView:
    view = TokenView()
    qtbot.addWidget(view)
    view.set_encoding(text, tokenizer.encode_with_spans(text), tokenizer)
    return view


def test_every_token_is_one_anchor_in_order(qtbot, trained: Tokenizer) -> None:
    text = "the cat sat on the mat 日本語 😀 café\n\n  tokens" + EOT + "x"
    view = render(qtbot, trained, text)
    assert anchors(view) == list(range(len(trained.encode(text))))


def test_emoji_cut_into_bytes_shows_once_with_chips(qtbot) -> None:
    view = render(qtbot, bytes_only(), "hi 😀!")
    assert shown_text(view) == "hi·😀⟨F0⟩⟨9F⟩⟨98⟩⟨80⟩!"
    assert anchors(view) == list(range(8))


def test_cjk_characters_each_shown_once(qtbot) -> None:
    view = render(qtbot, bytes_only(), "日本")
    assert shown_text(view) == "日⟨E6⟩⟨97⟩⟨A5⟩本⟨E6⟩⟨9C⟩⟨AC⟩"


def test_combining_mark_cut_into_bytes_gets_a_base(qtbot) -> None:
    # "e" + COMBINING ACUTE ACCENT (CC 81): the mark's two byte tokens form one group.
    view = render(qtbot, bytes_only(), "e\u0301")
    assert shown_text(view) == "e◌\u0301⟨CC⟩⟨81⟩"


def test_whole_characters_in_trained_tokens_show_plainly(qtbot, trained: Tokenizer) -> None:
    text = "café naïve 日本"
    spans = trained.encode_with_spans(text)
    view = render(qtbot, trained, text)
    if not any(s.partial for s in spans):
        assert shown_text(view) == "café·naïve·日本"
    else:  # still: every character of the text appears, visible spaces for spaces
        for ch in "cafénaïve日本":
            assert ch in shown_text(view)


def test_whitespace_runs_are_visible_and_newlines_break_lines(qtbot, trained: Tokenizer) -> None:
    view = render(qtbot, trained, "a   b\t\tc\n\n\nd\r\ne")
    assert shown_text(view) == "a···b→→c↵\n↵\n↵\nd\\r↵\ne"


def test_special_tokens_are_one_distinct_token(qtbot, trained: Tokenizer) -> None:
    text = f"one{EOT}two"
    view = render(qtbot, trained, text)
    spans = trained.encode_with_spans(text)
    specials = [k for k, s in enumerate(spans) if s.special]
    assert len(specials) == 1
    assert shown_text(view).replace(" ", "") == f"one{EOT}two"
    special_anchor = re.search(rf'<a href="tok:{specials[0]}" style="([^"]*)"', view.html_source)
    assert special_anchor and SPECIAL_BG in special_anchor.group(1)


def test_highlight_marks_every_occurrence(qtbot, trained: Tokenizer) -> None:
    text = "the cat the mat the"
    view = render(qtbot, trained, text)
    the_id = trained.encode(" the")[0] if len(trained.encode(" the")) == 1 else trained.encode("the")[0]
    view.set_highlight_id(the_id)
    expected = view.occurrences(the_id)
    assert expected
    marked = [int(k) for k, style in re.findall(r'href="tok:(\d+)" style="([^"]*)"', view.html_source) if HIGHLIGHT in style]
    assert marked == expected


def test_describe_names_id_bytes_and_rank(qtbot, trained: Tokenizer) -> None:
    view = render(qtbot, trained, "the cat")
    first = trained.encode_with_spans("the cat")[0]
    line = view.describe(0)
    assert f"id {first.token_id}" in line
    assert trained.token_bytes(first.token_id).hex(" ").upper() in line
    rank = trained.merge_rank(first.token_id)
    assert (f"merge rank {rank:,}" if rank is not None else "byte") in line


@pytest.fixture
def panel(qtbot, trained: Tokenizer) -> InspectorPanel:
    widget = InspectorPanel()
    qtbot.addWidget(widget)
    widget.set_tokenizer(trained)
    return widget


def test_figures_and_ids_match_the_tokenizer(panel: InspectorPanel, trained: Tokenizer) -> None:
    text = "the cat sat 日本語 😀\n"
    panel.set_text(text)
    ids = trained.encode(text)
    assert panel.result["ids"] == ids
    assert panel.figures == {"tokens": len(ids), "chars": len(text), "bytes": len(text.encode())}
    assert f"{len(text.encode()) / len(ids):.2f} bytes/token" in panel.figures_label.text().replace("</b>", "").replace("<b>", "")
    assert eval(panel.ids_text()) == ids  # the Python-list form  # noqa: S307
    panel.ids_format.setCurrentIndex(1)
    assert json.loads(panel.ids_text()) == ids
    panel.copy_ids()
    from PySide6.QtGui import QGuiApplication

    assert json.loads(QGuiApplication.clipboard().text()) == ids


def test_round_trip_passes(panel: InspectorPanel) -> None:
    panel.set_text("naïve café 😀 <|endoftext|> \t\n end")
    assert panel.round_trip_ok is True
    assert "passes" in panel.round_trip_label.text()


def test_round_trip_fails_when_the_vocabulary_lacks_a_byte(qtbot) -> None:
    # core.Tokenizer refuses a vocabulary without all 256 bytes, so take a complete one
    # and empty the entry of byte "x" afterwards: encode still yields the id, decode
    # loses the byte, as a tokenizer whose vocabulary lacks it would.
    broken = bytes_only()
    broken.vocab[ord("x")] = b""
    widget = InspectorPanel()
    qtbot.addWidget(widget)
    widget.set_tokenizer(broken)
    widget.set_text("abc xyz")
    assert widget.round_trip_ok is False
    label = widget.round_trip_label.text()
    assert "fails" in label and "character 4" in label and "“xyz”" in label


def test_round_trip_report_names_the_first_difference() -> None:
    assert round_trip_report("same", "same") is None
    assert "character 2" in round_trip_report("ab cd", "abcd")  # type: ignore[operator]
    assert "end of text" in round_trip_report("abc", "ab")  # type: ignore[operator]


def test_typing_reencodes_after_a_pause(qtbot, panel: InspectorPanel, trained: Tokenizer) -> None:
    with qtbot.waitSignal(panel.encoded, timeout=3000):
        panel.editor.setPlainText("the mat")
    assert panel.result["ids"] == trained.encode("the mat")


def test_huge_text_is_encoded_in_background_and_drawn_partially(qtbot, panel: InspectorPanel, trained: Tokenizer) -> None:
    text = "the cat sat on the mat 日本語 😀\n" * 2000  # 62k characters
    with qtbot.waitSignal(panel.encoded, timeout=30_000):
        panel.editor.setPlainText(text)
        panel.encode_now()
    ids = panel.result["ids"]
    assert ids == trained.encode(text)
    assert len(ids) > panel.token_view.limit
    qtbot.waitUntil(lambda: not panel.token_view.rendering, timeout=30_000)  # laid out in the background
    assert len(anchors(panel.token_view)) == panel.token_view.limit  # groups never split at the limit here
    assert f"of {len(ids):,} tokens" in panel.token_view.html_source
    assert panel.figures["tokens"] == len(ids)


def test_background_renderings_leave_one_document(qtbot, trained: Tokenizer) -> None:
    """Each background rendering hands the pane a new document: the one it replaces goes
    (they piled up, one per keystroke on a long text); the new one comes laid out."""
    from PySide6.QtGui import QTextDocument

    view = TokenView()
    qtbot.addWidget(view)
    view.resize(500, 400)
    view.show()
    for k in range(4):
        text = f"{k} " + "the cat sat on the mat 日本語 😀\n" * 200
        view.set_encoding(text, trained.encode_with_spans(text), trained)
        assert view.rendering
        qtbot.waitUntil(lambda: not view.rendering, timeout=30_000)
        qtbot.wait(10)  # the replaced document is deleted from the event loop
        assert view.findChildren(QTextDocument) == [view.document()]
        assert shown_text(view).startswith(f"{k}·the·cat")
        assert view.document().documentLayout().documentSize().height() > view.viewport().height()


def test_load_file(panel: InspectorPanel, tmp_path: Path, trained: Tokenizer) -> None:
    path = tmp_path / "t.txt"
    path.write_text("the cat\non the mat", encoding="utf-8")
    assert panel.load_file(path) is None
    assert panel.result["ids"] == trained.encode("the cat\non the mat")
    assert panel.load_file(tmp_path / "missing.txt") is not None


class BrokenTokenizer:
    """Encodes like ``inner`` except for texts containing ``trigger``: a bug (KeyError)."""

    def __init__(self, inner: Tokenizer, trigger: str) -> None:
        self._inner, self._trigger = inner, trigger

    def encode_with_spans(self, text: str):
        if self._trigger in text:
            raise KeyError(self._trigger)
        return self._inner.encode_with_spans(text)

    def __getattr__(self, name: str):
        return getattr(self._inner, name)


@pytest.mark.parametrize("size", ["short", "long"], ids=["in-place", "background"])
def test_an_encoding_error_is_shown_in_the_error_line(qtbot, trained: Tokenizer, size: str) -> None:
    widget = InspectorPanel()
    qtbot.addWidget(widget)
    widget.set_tokenizer(BrokenTokenizer(trained, "BOOM"))
    assert widget.error_label.isHidden()
    text = "the cat BOOM" if size == "short" else "the cat sat on the mat\n" * 1000 + "BOOM"
    with qtbot.waitSignal(widget.encoded, timeout=30_000):
        widget.set_text(text)
    assert not widget.error_label.isHidden()
    assert widget.error_label.text() == "Encoding the text failed unexpectedly (KeyError: 'BOOM')"
    assert widget.result["ids"] == [] and widget.round_trip_ok is None
    # The next text that encodes clears it.
    widget.set_text("the cat")
    assert widget.error_label.isHidden() and widget.result["ids"] == trained.encode("the cat")


def test_a_newer_text_supersedes_one_still_encoding(qtbot, panel: InspectorPanel, trained: Tokenizer) -> None:
    long_text = "the cat sat on the mat 日本語 😀\n" * 3000
    panel.set_text(long_text)  # in the background
    panel.set_text("the mat")  # at once; the long text's result must not replace it
    assert panel.result["ids"] == trained.encode("the mat")
    qtbot.waitUntil(lambda: not panel._encoding._jobs[-1].running, timeout=30_000)
    qtbot.wait(50)
    assert panel.result["ids"] == trained.encode("the mat")
    assert panel.text() == "the mat"


def test_a_large_file_is_read_off_the_gui_thread(panel: InspectorPanel, tmp_path: Path, trained: Tokenizer,
                                                 qtbot, monkeypatch) -> None:
    """A file past `BACKGROUND_FILE_BYTES` is read and decoded in a thread: `load_file`
    returns at once, says what it reads, and the text is shown (and encoded) when read; a
    file that cannot be read then keeps the text shown, with the reason."""
    from bpe_studio.app.explore import inspector as inspector_module

    monkeypatch.setattr(inspector_module, "BACKGROUND_FILE_BYTES", 1000)
    text = "the cat sat on the mat\n" * 200 + "caf\xe9 \u65e5\u672c\n"
    path = tmp_path / "big.txt"
    path.write_bytes(text.encode() + b"\xff")
    with qtbot.waitSignal(panel.encoded, timeout=30_000):
        assert panel.load_file(path) is None
        assert panel.figures_label.text().startswith("Reading big.txt")
    assert panel.text() == text + "\ufffd"
    assert panel.result["ids"] == trained.encode(text + "\ufffd")

    gone = tmp_path / "gone.txt"
    gone.write_text("x" * 2000)
    def refused(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(inspector_module.Path, "read_bytes", refused)
    with qtbot.waitSignal(panel._reading.failed, timeout=30_000):
        assert panel.load_file(gone) is None
    qtbot.waitUntil(lambda: not panel.error_label.isHidden(), timeout=5_000)
    assert "Cannot read" in panel.error_label.text() and "gone.txt" in panel.error_label.text()
    assert panel.text() == text + "\ufffd"
