"""The vocabulary browser's "Show:" health filters, on a tokenizer with planted bad tokens.

The expected rows are worked out by hand from the merges (not by calling the checks), and
the checks run in a worker: the browser shows the rows once the result arrives.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from core.encode.tokenizer import Tokenizer  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402

from bpe_studio.app.explore.vocab_browser import VocabBrowser  # noqa: E402
from bpe_studio.app.explore.vocab_model import TOKEN_ID_ROLE  # noqa: E402
from bpe_studio.app.models.vocab_data import VocabData  # noqa: E402

EOT = "<|endoftext|>"
# b c -> "bc" (rank 0) comes before a b -> "ab", so "abc" (made as ab + c) never comes
# out of encoding "abc" (a, b, c -> a, bc): unreachable. "\xc3" + "\xa9" is "é" (whole);
# "é" + "\xc3" is a character and a half: not whole UTF-8, and unreachable too (the
# pre-tokenizer cuts the stray byte off from "é"). "=====" is repetitive.
MERGES = [(b"b", b"c"), (b"a", b"b"), (b"ab", b"c"), (b"\xc3", b"\xa9"), (b"\xc3\xa9", b"\xc3"),
          (b"=", b"="), (b"==", b"=="), (b"====", b"=")]
PARTIAL = "é".encode() + b"\xc3"


def tokenizer() -> Tokenizer:
    vocab = {i: bytes([i]) for i in range(256)}
    vocab[256] = EOT.encode()
    for a, b in MERGES:
        vocab[len(vocab)] = a + b
    return Tokenizer(vocab, MERGES, [EOT])


def shown(browser: VocabBrowser) -> list[bytes]:
    model = browser.model
    ids = [model.data(model.index(r, 0), TOKEN_ID_ROLE) for r in range(model.rowCount())]
    return sorted(browser.model.vocab.token_bytes[browser.model.vocab.row_of_id[i]] for i in ids)


def choose(qtbot, browser: VocabBrowser, label: str) -> None:
    browser.show_combo.setCurrentIndex(browser.show_combo.findText(label))
    qtbot.waitUntil(lambda: not browser.checking_health, timeout=10_000)


def test_health_filters_show_the_planted_tokens_and_combine_with_the_text_filter(qtbot) -> None:
    tok = tokenizer()
    browser = VocabBrowser()
    qtbot.addWidget(browser)
    browser.set_vocab(VocabData.from_tokenizer(tok), tok)
    assert len(shown(browser)) == 257 + len(MERGES)

    browser.show_combo.setCurrentIndex(browser.show_combo.findText("Unreachable"))
    # Checked in a worker: the window goes on at once, showing nothing until it is known.
    assert browser.checking_health and shown(browser) == []
    assert "checking" in browser.count_label.text()
    choose(qtbot, browser, "Unreachable")
    assert shown(browser) == [b"abc", PARTIAL]
    assert browser.count_label.text().startswith(f"2 of {257 + len(MERGES)} tokens shown")

    choose(qtbot, browser, "Not whole UTF-8")
    assert shown(browser) == [PARTIAL]

    choose(qtbot, browser, "Long repetitive")
    assert shown(browser) == [b"====="]

    # With the text filter: both must hold.
    choose(qtbot, browser, "Unreachable")
    browser.filter_edit.setText("ab")
    browser.apply_filter()
    assert shown(browser) == [b"abc"]
    browser.filter_edit.setText("bc")
    browser.apply_filter()
    assert shown(browser) == [b"abc"]
    browser.filter_edit.setText("=")
    browser.apply_filter()
    assert shown(browser) == []

    choose(qtbot, browser, "All tokens")
    assert shown(browser) == [b"=", b"==", b"====", b"====="]


def test_a_new_tokenizer_is_checked_again(qtbot) -> None:
    tok = tokenizer()
    browser = VocabBrowser()
    qtbot.addWidget(browser)
    browser.set_vocab(VocabData.from_tokenizer(tok), tok)
    choose(qtbot, browser, "Unreachable")
    assert shown(browser) == [b"abc", PARTIAL]
    # Same bytes, merges in an order where every token is reachable.
    merges = [m for m in MERGES if m != (b"b", b"c")] + [(b"b", b"c")]
    vocab = {i: bytes([i]) for i in range(256)} | {256: EOT.encode()}
    for a, b in merges:
        vocab[len(vocab)] = a + b
    other = Tokenizer(vocab, merges, [EOT])
    browser.set_vocab(VocabData.from_tokenizer(other), other)
    qtbot.waitUntil(lambda: not browser.checking_health, timeout=10_000)
    assert shown(browser) == [PARTIAL]
    assert browser.shutdown()
