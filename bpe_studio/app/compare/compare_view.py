"""Compare two tokenizers on the same text, side by side.

One text pane; under it the two renderings (tokenizer A left, B right) with their token
counts and bytes per token. A token is "cut differently" when the other tokenizer has no
token with exactly the same byte span; those are tinted red/orange and underlined, the
shared ones grey, so the places where the two disagree stand out. Texts beyond a couple
of thousand characters are encoded and compared in a background job (`LatestJob`: the
latest text wins), like the inspector's, and only the first tokens are drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from bpe_studio.app.models.sample_text import SAMPLE_TEXT
from bpe_studio.app.widgets.splitters import splitter
from bpe_studio.app.widgets.token_view import TokenView
from bpe_studio.app.workers.heap import collections_paused
from bpe_studio.app.workers.thread_job import LatestJob, one_line
from core.encode.tokenizer import TokenSpans

DEBOUNCE_MS = 250
MAX_CHARS = 200_000  # compare is for reading; longer texts are cut with a note
BACKGROUND_CHARS = 2_000  # longer texts are compared off the GUI thread


def _byte_ranges(spans: TokenSpans) -> np.ndarray:
    """Each span's byte range as one int64, start << 32 | end (compared texts are far below 4 GB)."""
    return (np.array(spans.byte_starts, dtype=np.int64) << 32) | np.array(spans.byte_ends, dtype=np.int64)


def differing_indices(spans: TokenSpans, other: TokenSpans) -> np.ndarray:
    """Indices of ``spans`` whose byte range is not a token of ``other``, ascending.

    Example: A cuts "hello" as [hel][lo], B as [hello] -> both A tokens differ, and B's one.
    """
    return np.flatnonzero(~np.isin(_byte_ranges(spans), _byte_ranges(other)))


def compare_texts(text: str, tokenizer_a: Any, tokenizer_b: Any) -> dict[str, Any]:
    """Encode ``text`` with both tokenizers and find the tokens each cuts differently (any
    thread). An encoding error is kept as that side's message, never raised."""
    with collections_paused():
        return _compare_texts(text, tokenizer_a, tokenizer_b)


def _compare_texts(text: str, tokenizer_a: Any, tokenizer_b: Any) -> dict[str, Any]:
    spans: list[Any] = []
    errors: list[str | None] = []
    for tokenizer in (tokenizer_a, tokenizer_b):
        try:
            spans.append(tokenizer.encode_with_spans(text))
            errors.append(None)
        except Exception as e:  # noqa: BLE001 - shown to the user, never raised
            spans.append(None)
            errors.append(one_line(e))
    result: dict[str, Any] = {"text": text, "spans": spans, "errors": errors}
    if None not in spans:
        result["diff"] = (differing_indices(spans[0], spans[1]), differing_indices(spans[1], spans[0]))
        result["bytes"] = len(text.encode("utf-8", errors="surrogatepass"))
    return result


class _Side(QWidget):
    """One tokenizer's rendering with its heading."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.heading = QLabel(f"<b>{name}</b>")
        self.heading.setWordWrap(True)
        self.view = TokenView()
        self.view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.detail = QLabel(" ")
        self.detail.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.heading)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.detail)
        self.view.token_hovered.connect(lambda k: k >= 0 and self.detail.setText(self.view.describe(k)))
        self.view.token_clicked.connect(lambda k: self.detail.setText(self.view.describe(k)))


class CompareView(QWidget):
    """Two tokenizers, one text. `set_tokenizers` lists the choices (title, tokenizer)."""

    open_requested = Signal()  # the user wants to open another tokenizer to compare
    compared = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._choices: list[tuple[str, Any]] = []
        self.stats: dict[str, Any] = {}
        self._note = ""
        self._titles: tuple[str, str] = ("", "")
        self._comparing = LatestJob("comparing the tokenizers", name="bpe-studio-compare", parent=self)
        self._comparing.returned.connect(self._show)
        self.combo_a = QComboBox()
        self.combo_b = QComboBox()
        for combo in (self.combo_a, self.combo_b):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
            combo.setMinimumContentsLength(18)
        self.open_button = QPushButton("Open tokenizer to compare…")
        self.summary = QLabel("Open or train two tokenizers to compare them.")
        self.summary.setWordWrap(True)
        self._comparing.failed.connect(self.summary.setText)  # a bug while comparing, in words
        self.editor = QPlainTextEdit(SAMPLE_TEXT)
        self.editor.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.editor.setPlaceholderText("Text to tokenize with both tokenizers…")
        self.side_a, self.side_b = _Side("A"), _Side("B")

        bar = QHBoxLayout()
        bar.addWidget(QLabel("A:"))
        bar.addWidget(self.combo_a, 1)
        bar.addWidget(QLabel("B:"))
        bar.addWidget(self.combo_b, 1)
        bar.addWidget(self.open_button)

        sides = splitter(Qt.Orientation.Horizontal, [self.side_a, self.side_b])
        panes = splitter(Qt.Orientation.Vertical, [self.editor, sides], stretch=[1, 4], sizes=[130, 600])

        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.summary)
        layout.addWidget(panes, 1)

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self.compare_now)
        self.editor.textChanged.connect(self._debounce.start)
        self.combo_a.currentIndexChanged.connect(self.compare_now)
        self.combo_b.currentIndexChanged.connect(self.compare_now)
        self.open_button.clicked.connect(self.open_requested)

    def set_tokenizers(self, choices: Sequence[tuple[str, Any]], *, a: int | None = None, b: int | None = None) -> None:
        """Offer ``choices`` in both lists; ``a``/``b`` pick indices (default: keep, else 0 and 1)."""
        keep_a, keep_b = self.combo_a.currentIndex(), self.combo_b.currentIndex()
        self._choices = list(choices)
        for combo in (self.combo_a, self.combo_b):
            combo.blockSignals(True)
            combo.clear()
            for title, _ in self._choices:
                combo.addItem(title)
            combo.blockSignals(False)
        n = len(self._choices)
        pick_a = a if a is not None else (keep_a if 0 <= keep_a < n else 0)
        pick_b = b if b is not None else (keep_b if 0 <= keep_b < n and keep_b != pick_a else (1 if n > 1 else 0))
        self.combo_a.setCurrentIndex(pick_a if n else -1)
        self.combo_b.setCurrentIndex(min(pick_b, n - 1) if n else -1)
        self.compare_now()

    def set_text(self, text: str) -> None:
        self.editor.setPlainText(text)
        self.compare_now()

    @property
    def comparing(self) -> bool:
        """True while a long text is being compared in the background."""
        return self._comparing.running

    def shutdown(self, timeout_ms: int = 30_000) -> bool:
        """Stop the background work (the window is closing)."""
        done = self._comparing.shutdown(timeout_ms)
        return all([done, self.side_a.view.shutdown(timeout_ms), self.side_b.view.shutdown(timeout_ms)])

    def compare_now(self) -> None:
        """Encode the text with both tokenizers and mark where they cut differently (in the
        background for long texts; `compared` follows)."""
        self._debounce.stop()
        ia, ib = self.combo_a.currentIndex(), self.combo_b.currentIndex()
        if not self._choices or ia < 0 or ib < 0:
            return
        text = self.editor.toPlainText()
        self._note = ""
        if len(text) > MAX_CHARS:
            text, self._note = text[:MAX_CHARS], f" (first {MAX_CHARS:,} characters compared)"
        (title_a, tokenizer_a), (title_b, tokenizer_b) = self._choices[ia], self._choices[ib]
        self._titles = (title_a, title_b)
        self._tokenizers = (tokenizer_a, tokenizer_b)
        if len(text) >= BACKGROUND_CHARS:
            self.summary.setText(f"Comparing {len(text):,} characters…")
            self._comparing.start(compare_texts, text, tokenizer_a, tokenizer_b)
            return
        self._comparing.cancel()  # an older, longer text still comparing must not replace this one
        self._show(compare_texts(text, tokenizer_a, tokenizer_b))

    def _show(self, result: dict[str, Any]) -> None:
        text, (spans_a, spans_b), errors = result["text"], result["spans"], result["errors"]
        (title_a, title_b), note = self._titles, self._note
        no_diff = np.zeros(0, dtype=np.intp)
        diff_a, diff_b = result.get("diff", (no_diff, no_diff))
        for side, title, tokenizer, spans, error, diff in (
            (self.side_a, title_a, self._tokenizers[0], spans_a, errors[0], diff_a),
            (self.side_b, title_b, self._tokenizers[1], spans_b, errors[1], diff_b),
        ):
            if error is not None:
                side.view.clear_encoding()
                side.heading.setText(f"<b>{side.name}: {title}</b> — <span style='color:#c62828'>cannot encode: {error}</span>")
            else:
                side.view.set_encoding(text, spans, tokenizer, differing=diff)
        if "diff" not in result:
            self.stats = {}
            return
        nbytes = result["bytes"]
        for side, title, spans, diff in ((self.side_a, title_a, spans_a, diff_a), (self.side_b, title_b, spans_b, diff_b)):
            per = f"{nbytes / len(spans):.2f}" if spans else "–"
            side.heading.setText(
                f"<b>{side.name}: {title}</b> — <b>{len(spans):,}</b> tokens · <b>{per}</b> bytes/token · "
                f"<span style='color:#c62828'>{len(diff):,} cut differently</span>"
            )
        self.stats = {"a": len(spans_a), "b": len(spans_b), "diff_a": diff_a, "diff_b": diff_b, "bytes": nbytes}
        if len(diff_a) == 0 and len(diff_b) == 0:
            verdict = "Both tokenizers cut this text identically."
        else:
            delta = len(spans_a) - len(spans_b)
            if delta:
                count = f"{'A' if delta < 0 else 'B'} needs {abs(delta):,} fewer tokens. "
            else:
                count = "Same number of tokens, cut differently. "
            verdict = (
                count + "Tokens tinted red/orange and underlined are cut differently by the other "
                "tokenizer; grey ones are the same on both sides."
            )
        self.summary.setText(verdict + note)
        self.compared.emit()
