"""Right-to-left text in the token pane: tokens stay in logical order (left to right, like
the ids), each one drawn over exactly its own letters."""

from __future__ import annotations

from collections import defaultdict

import core
from bpe_studio.app.widgets.token_view import TokenView
from core.encode.tokenizer import Tokenizer

ARABIC = "مرحبا بالعالم، هذا نص عربي قصير للتجربة. "


def token_extents(view: TokenView) -> dict[int, tuple[float, float, int]]:
    """Token index -> (left x, right x, line) of its letters as laid out in the pane."""
    doc = view.document()
    doc.setTextWidth(4000)  # one line: positions compare directly
    positions: dict[int, list[int]] = defaultdict(list)
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            href = fragment.charFormat().anchorHref()
            if href.startswith("tok:"):
                positions[int(href[4:])].extend(range(fragment.position(), fragment.position() + fragment.length()))
            it += 1
        block = block.next()
    extents = {}
    for k, chars in positions.items():
        block = doc.findBlock(chars[0])
        layout = block.layout()
        xs = []
        for pos in chars:
            line = layout.lineForTextPosition(pos - block.position())
            xs += [line.cursorToX(pos - block.position())[0], line.cursorToX(pos + 1 - block.position())[0]]
        extents[k] = (min(xs), max(xs), block.blockNumber())
    return extents


def test_arabic_tokens_are_drawn_in_logical_order_over_their_letters(qtbot, tmp_path):
    (tmp_path / "ar.txt").write_text(ARABIC * 300, encoding="utf-8")
    vocab, merges = core.train_bpe(tmp_path / "ar.txt", 330, [], workers=1)
    tokenizer = Tokenizer(vocab, merges)
    spans = tokenizer.encode_with_spans(ARABIC)
    assert len(spans) > 8 and all(not s.partial for s in spans)  # whole letters per token
    view = TokenView()
    qtbot.addWidget(view)
    view.resize(900, 300)
    view.set_encoding(ARABIC, spans, tokenizer)
    extents = token_extents(view)
    assert sorted(extents) == list(range(len(spans)))
    for k in range(len(spans) - 1):
        left, right = extents[k], extents[k + 1]
        assert left[2] == right[2]
        # Token k ends where token k+1 begins, left to right: no interleaving.
        assert left[1] <= right[0] + 0.5, (k, left, right)
    # Each token's characters are exactly its text (tints sit under their own letters).
    plain = view.document().toPlainText()
    assert plain.count("\u200e") == len(spans)  # one left-to-right mark before each token
    assert plain.replace("\u200e", "").replace("·", " ") == ARABIC
