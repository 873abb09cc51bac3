"""Pasting megabytes into the inspector: the window stays responsive and memory bounded.

The paste goes through the clipboard as a user's does. Before, the whole text went into
the editor (Qt laid it out in the GUI thread) and was encoded with spans (tens of bytes
per character, minutes for tens of megabytes); now the editor holds its start, read-only,
the first tokens are drawn at once and the rest is encoded in a stream.
"""

from __future__ import annotations

import os
import time

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import core  # noqa: E402
from core.encode.tokenizer import Tokenizer  # noqa: E402

from bpe_studio.app.explore.inspector import InspectorPanel, round_trip_report  # noqa: E402

from tests.app.conftest import generate_corpus  # noqa: E402

EOT = "<|endoftext|>"
PASTED_CHARS = 8_000_000
MOST_WORK = 0.25  # seconds of the GUI thread's own CPU between two 5 ms ticks
LONGEST_GAP = 1.5  # seconds of wall time: no visible freeze even on a busy shared machine
BYTES_PER_CHAR = 24  # the process's growth while the paste is shown (it was ~60)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Tokenizer:
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(generate_corpus(300_000, seed=5), encoding="utf-8")
    vocab, merges = core.train_bpe(path, 1000, [EOT], workers=1)
    return Tokenizer(vocab, merges, [EOT])


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_pasting_megabytes_never_blocks_the_window(qtbot, trained: Tokenizer, heartbeat) -> None:
    from PySide6.QtCore import QTimer
    from PySide6.QtGui import QGuiApplication

    panel = InspectorPanel()
    qtbot.addWidget(panel)
    panel.resize(1000, 650)
    panel.show()
    qtbot.waitExposed(panel)
    panel.set_tokenizer(trained)
    text = (generate_corpus(1_000_000, seed=9) * (PASTED_CHARS // 1_000_000 + 1))[:PASTED_CHARS]
    first = trained.encode(text[:5000])[:100]
    QGuiApplication.clipboard().setText(text)
    qtbot.wait(50)

    base = peak = rss()

    def sample() -> None:
        nonlocal peak
        peak = max(peak, rss())

    sampler = QTimer()
    sampler.setInterval(20)
    sampler.timeout.connect(sample)
    sampler.start()
    handed_over: list[int] = []  # the paste given as UTF-8, decoded off the GUI thread
    panel.editor.too_long_data.connect(lambda before, data, after: handed_over.append(data.size()))
    heartbeat.restart()
    started = time.perf_counter()
    with qtbot.waitSignal(panel.encoded, timeout=180_000):
        panel.editor.selectAll()
        panel.editor.paste()
        # The first screen's tokens are drawn before the whole text is encoded.
        view = panel.token_view
        qtbot.waitUntil(lambda: [s.token_id for s in view.spans[:100]] == first and not view.rendering, timeout=60_000)
        assert panel.result.get("text") is not text  # still encoding
        first_drawn = time.perf_counter() - started
    qtbot.waitUntil(lambda: not panel.token_view.rendering, timeout=30_000)
    sampler.stop()
    sample()
    print(f"\nfirst tokens drawn after {first_drawn:.2f} s; GUI thread: longest gap {heartbeat.worst * 1000:.0f} ms, "
          f"most own work {heartbeat.worst_work * 1000:.0f} ms; memory +{(peak - base) / 1e6:.0f} MB")
    assert heartbeat.worst_work < MOST_WORK
    assert heartbeat.worst < LONGEST_GAP
    assert peak - base < BYTES_PER_CHAR * PASTED_CHARS

    assert handed_over == [len(text.encode())]
    ids = trained.encode(text)
    assert panel.text() == text and panel.long
    assert list(panel.result["ids"]) == ids
    assert panel.figures == {"tokens": len(ids), "chars": len(text), "bytes": len(text.encode())}
    assert panel.round_trip_ok is True
    # The editor holds the start, read-only, and says so; the drawn tokens are the text's first.
    assert panel.editor.isReadOnly() and text.startswith(panel.editor.toPlainText())
    assert len(panel.editor.toPlainText()) < len(text) // 10
    assert panel.long_note.isVisible() and f"{len(text):,} characters" in panel.long_note.text()
    drawn = [s.token_id for s in panel.token_view.spans[: panel.token_view.limit]]
    assert len(drawn) == panel.token_view.limit and drawn == ids[: len(drawn)]
    # A vocabulary selection counts its occurrences in the whole text.
    assert panel.result["ids"].count(ids[5]) == ids.count(ids[5])

    # "Edit the start only" makes the shown start an ordinary, editable text.
    with qtbot.waitSignal(panel.encoded, timeout=60_000):
        panel.edit_start_button.click()
    assert not panel.long and not panel.editor.isReadOnly() and not panel.long_note.isVisible()
    assert panel.result["ids"] == trained.encode(panel.text()) and len(panel.text()) < len(text)


def test_a_short_paste_is_an_ordinary_edit(qtbot, trained: Tokenizer) -> None:
    from PySide6.QtGui import QGuiApplication

    panel = InspectorPanel()
    qtbot.addWidget(panel)
    panel.set_tokenizer(trained)
    panel.set_text("ab")
    QGuiApplication.clipboard().setText("the cat")
    cursor = panel.editor.textCursor()
    cursor.setPosition(1)
    panel.editor.setTextCursor(cursor)
    panel.editor.paste()
    assert panel.text() == "athe catb" and not panel.long and not panel.editor.isReadOnly()


def test_a_paste_that_makes_the_text_too_long_keeps_what_surrounds_it(qtbot, trained: Tokenizer) -> None:
    from PySide6.QtGui import QGuiApplication

    panel = InspectorPanel()
    qtbot.addWidget(panel)
    panel.set_tokenizer(trained)
    panel.set_text("first line\nsecond")
    pasted = "xy\n" * 400_000  # 1.2 M characters
    QGuiApplication.clipboard().setText(pasted)
    cursor = panel.editor.textCursor()
    cursor.setPosition(6)
    cursor.setPosition(8, cursor.MoveMode.KeepAnchor)  # "li" replaced
    panel.editor.setTextCursor(cursor)
    with qtbot.waitSignal(panel.encoded, timeout=60_000):
        panel.editor.paste()
    assert panel.long and panel.text() == "first " + pasted + "ne\nsecond"
    assert list(panel.result["ids"]) == trained.encode(panel.text())


def test_a_long_texts_round_trip_failure_is_located_as_for_a_short_one(qtbot) -> None:
    """A vocabulary whose "x" decodes to nothing: the stream's report is the whole text's."""
    broken = Tokenizer({i: bytes([i]) for i in range(256)}, [], [EOT])
    broken.vocab[ord("x")] = b""
    text = "abc 日本語 " * 150_000 + "abc xyz" + " end" * 1000
    panel = InspectorPanel()
    qtbot.addWidget(panel)
    panel.set_tokenizer(broken)
    with qtbot.waitSignal(panel.encoded, timeout=120_000):
        panel.set_text(text)
    assert panel.long and panel.round_trip_ok is False
    expected = round_trip_report(text, broken.decode(broken.encode(text)))
    assert expected is not None and expected in panel.round_trip_label.text()


def test_a_pasted_texts_bytes_are_decoded_whole_across_the_pieces() -> None:
    """`join_paste` decodes a megabyte at a time: a character cut by a piece's end is whole."""
    from PySide6.QtCore import QByteArray

    from bpe_studio.app.widgets.text_editor import PASTE_PIECE, join_paste

    text = "x" * (PASTE_PIECE - 1) + "日本語 🙂" * 3 + "y" * PASTE_PIECE + "é"
    data = text.encode()
    assert join_paste("before ", QByteArray(data), " after") == "before " + text + " after"
    assert join_paste("", data[:-1], "") == text[:-1] + "\ufffd"  # a cut character: replaced, as Qt would
