"""Compare view: two tokenizers on one text, counts and the spans they cut differently."""

from __future__ import annotations

import os
import re

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from core.encode.tokenizer import Tokenizer  # noqa: E402

from bpe_studio.app.compare.compare_view import CompareView, differing_indices  # noqa: E402
from bpe_studio.app.models.token_render import DIFF_TINTS, SAME_TINTS  # noqa: E402

EOT = "<|endoftext|>"


def bytes_only() -> Tokenizer:
    return Tokenizer({i: bytes([i]) for i in range(256)}, [], [EOT])


def with_merges(*pairs: tuple[bytes, bytes]) -> Tokenizer:
    vocab = {i: bytes([i]) for i in range(256)}
    for a, b in pairs:
        vocab[len(vocab)] = a + b
    return Tokenizer(vocab, list(pairs), [EOT])


HELLO = with_merges((b"h", b"e"), (b"l", b"l"), (b"he", b"ll"), (b"hell", b"o"))  # "hello" -> 1 token


def byte_cuts(tok: Tokenizer, text: str) -> set[tuple[int, int]]:
    """Oracle: the byte ranges of the tokens, from decode_bytes of each id."""
    cuts, pos = set(), 0
    for i in tok.encode(text):
        n = len(tok.decode_bytes([i]))
        cuts.add((pos, pos + n))
        pos += n
    return cuts


def test_differing_indices_against_byte_range_oracle() -> None:
    text = "hello help 😀 hell" + EOT
    a, b = HELLO.encode_with_spans(text), bytes_only().encode_with_spans(text)
    cuts_a, cuts_b = byte_cuts(HELLO, text), byte_cuts(bytes_only(), text)
    assert {(a[k].byte_start, a[k].byte_end) for k in differing_indices(a, b)} == cuts_a - cuts_b
    assert {(b[k].byte_start, b[k].byte_end) for k in differing_indices(b, a)} == cuts_b - cuts_a


@pytest.fixture
def view(qtbot) -> CompareView:
    widget = CompareView()
    qtbot.addWidget(widget)
    widget.resize(1200, 800)
    return widget


def styles(html_source: str) -> dict[int, str]:
    return {int(k): s for k, s in re.findall(r'href="tok:(\d+)" style="([^"]*)"', html_source)}


def test_compare_marks_tokens_cut_differently(view: CompareView) -> None:
    text = "hello world"
    view.set_text(text)
    view.set_tokenizers([("merged", HELLO), ("bytes", bytes_only())])
    assert view.stats["a"] == len(HELLO.encode(text)) == 7
    assert view.stats["b"] == len(text)
    assert view.stats["diff_a"].tolist() == [0]  # "hello" as one token
    assert view.stats["diff_b"].tolist() == [0, 1, 2, 3, 4]  # its five bytes on the other side
    sa, sb = styles(view.side_a.view.html_source), styles(view.side_b.view.html_source)
    assert any(t in sa[0] for t in DIFF_TINTS) and "underline" in sa[0]
    assert all(any(t in sa[k] for t in SAME_TINTS) for k in range(1, 7))
    assert all(any(t in sb[k] for t in DIFF_TINTS) for k in range(5))
    assert "7 tokens" in view.side_a.heading.text().replace("<b>", "").replace("</b>", "")
    assert "A needs 4 fewer tokens" in view.summary.text()


def test_identical_tokenizers_show_no_difference(view: CompareView) -> None:
    view.set_tokenizers([("one", HELLO), ("two", HELLO)])
    view.set_text("hello there, hello 😀")
    assert len(view.stats["diff_a"]) == 0 and len(view.stats["diff_b"]) == 0
    assert "identically" in view.summary.text()


def test_typing_recompares(qtbot, view: CompareView) -> None:
    view.set_tokenizers([("merged", HELLO), ("bytes", bytes_only())])
    with qtbot.waitSignal(view.compared, timeout=3000):
        view.editor.setPlainText("hello")
    assert view.stats["a"] == 1 and view.stats["b"] == 5


def test_choosing_sides(view: CompareView) -> None:
    view.set_text("hello")
    view.set_tokenizers([("merged", HELLO), ("bytes", bytes_only())], a=1, b=0)
    assert view.stats["a"] == 5 and view.stats["b"] == 1
    view.combo_a.setCurrentIndex(0)
    assert view.stats["a"] == 1
