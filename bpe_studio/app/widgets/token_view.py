"""The rendered token pane: text shown cut into tinted tokens, with hover and click.

A read-only QTextBrowser showing `token_render.render_tokens` HTML. Each token is an
anchor, so the pane knows which token is under the mouse: hovering shows a tooltip
(id, readable form, bytes, merge rank) and emits `token_hovered`; clicking selects the
token and emits `token_clicked`. Only the first `limit` tokens are drawn, with a note
saying how many were left out. Beyond a few hundred tokens the HTML is made, parsed and
laid out as a `QTextDocument` in a background job (`LatestJob`: the latest rendering
wins) and only handed to the pane when ready, so no encoding freezes the window;
`rendered` says when the pane shows the latest one.
"""

from __future__ import annotations

import html
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
from PySide6.QtCore import QCoreApplication, Qt, QUrl, Signal
from PySide6.QtGui import QFont, QTextDocument
from PySide6.QtWidgets import QTextBrowser, QWidget

from bpe_studio.app.models.token_render import RenderOptions, render_tokens
from bpe_studio.app.workers.heap import collections_paused
from bpe_studio.app.workers.thread_job import LatestJob
from core.readable import hex_form, readable

DEFAULT_LIMIT = 2000
SYNC_TOKENS = 300
"""Up to this many tokens are drawn at once; more are laid out in the background."""


def left_out_note(limit: int, total: int | None, drawn: int | None = None) -> str:
    """The note under a drawing cut at ``limit`` tokens ("" when nothing was left out).

    ``total``: the text's tokens (None: not known here; the owner says what is drawn);
    ``drawn``: the tokens at hand (the start of a long text), when fewer than ``limit``.
    """
    shown = limit if drawn is None else min(limit, drawn)
    if total is None:
        return ""
    left_out = total - min(total, shown)
    if left_out <= 0:
        return ""
    return (
        f"<p style='color:#b26a00'>… showing the first {shown:,} of {total:,} tokens "
        f"({left_out:,} more not drawn; the figures count them all).</p>"
    )


def build_document(
    text: str, spans: Sequence[Any], total: int | None, token_bytes: Any, options: RenderOptions, font: QFont,
    width: int,
) -> tuple[str, QTextDocument]:
    """The pane's HTML and its document for the first ``options.limit`` of ``total`` tokens,
    parsed, ``width`` pixels wide (runs in a worker thread; the document is handed over to
    the GUI thread)."""
    with collections_paused():
        body = render_tokens(text, spans, token_bytes, options) + left_out_note(options.limit, total, len(spans))
    document = QTextDocument()
    document.setDefaultFont(font)
    document.setHtml(body)  # Qt releases the GIL while it parses
    if width > 0:
        document.setTextWidth(width)
        # Laid out here, at the pane's width: in the GUI thread the layout of a long text
        # stalled it when the pane was shown (both of Compare's panes at once). Qt keeps
        # the GIL meanwhile, so the GUI thread's Python may wait as long, but not its drawing.
        document.documentLayout().documentSize()
    app = QCoreApplication.instance()
    if app is not None:
        document.moveToThread(app.thread())
    return body, document


class TokenView(QTextBrowser):
    """Shows one encoding. `set_encoding` gives it the text, spans and tokenizer."""

    token_hovered = Signal(int)  # token index in the encoding, -1 when leaving tokens
    token_clicked = Signal(int)
    rendered = Signal()  # the pane shows the latest encoding and emphasis

    def __init__(self, parent: QWidget | None = None, *, limit: int = DEFAULT_LIMIT) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setReadOnly(True)
        self.limit = limit
        self._text = ""
        self._spans: Sequence[Any] = ()
        self._total: int | None = 0  # the text's tokens, when ``_spans`` cover only its start
        self._tokenizer: Any = None
        self._options = RenderOptions(limit=limit)
        self._hovered = -1
        self._html = ""
        self._pending = False  # a background rendering is under way
        self._renders = LatestJob("drawing the tokens", name="bpe-studio-token-view", parent=self)
        self._renders.returned.connect(self._on_built)
        self._renders.failed.connect(self._on_build_failed)
        self.anchorClicked.connect(self._on_anchor_clicked)
        self.highlighted.connect(self._on_highlighted)
        self.setPlaceholderText("Tokens appear here.")
        # The scroll bar never comes and goes: a document laid out in the background at the
        # pane's width keeps that width when shown (else laid out again, on the GUI thread).
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)

    # -- content -----------------------------------------------------------------
    @property
    def spans(self) -> Sequence[Any]:
        return self._spans

    @property
    def html_source(self) -> str:
        """The HTML last rendered (tests inspect it)."""
        return self._html

    @property
    def rendering(self) -> bool:
        """True while a rendering is being laid out in the background."""
        return self._pending

    def set_encoding(
        self, text: str, spans: Sequence[Any], tokenizer: Any, *, differing: Collection[int] | None = None,
        total: int | None | bool = False,
    ) -> None:
        """Show ``text`` cut into ``spans`` (from ``tokenizer.encode_with_spans``); ``differing``:
        compare mode's tokens cut differently (see `set_differing`), in the same drawing.
        ``total``: when ``text`` is the start of a longer text, that text's tokens for the
        note under the drawing (None: no note; the owner says what is drawn)."""
        self._text, self._spans, self._tokenizer = text, spans, tokenizer
        self._total = len(spans) if total is False else total
        self._options = RenderOptions(
            highlight_id=self._options.highlight_id,
            limit=self.limit,
            compare=self._options.compare or differing is not None,
            differing=self._drawn(differing) if differing is not None else (),
        )
        self._render()

    def clear_encoding(self) -> None:
        self._renders.cancel()
        self._pending = False
        self._text, self._spans, self._tokenizer = "", (), None
        self._html = ""
        self.clear()
        self.rendered.emit()

    def set_highlight_id(self, token_id: int | None) -> None:
        """Emphasise every occurrence of ``token_id`` (the vocabulary selection)."""
        self._set_options(highlight_id=token_id)

    def set_selected_index(self, index: int | None) -> None:
        self._set_options(selected_index=index)

    def set_differing(self, indices: Collection[int]) -> None:
        """Compare mode: tint tokens at ``indices`` as cut differently, the rest as shared."""
        self._set_options(compare=True, differing=self._drawn(indices))

    def _drawn(self, indices: Collection[int]) -> frozenset[int]:
        """Those of ``indices`` that are drawn (below `limit`): Compare hands over an array
        of all it marks (~60k indices for 200k characters)."""
        if isinstance(indices, np.ndarray):
            return frozenset(indices[indices < self.limit].tolist())
        return frozenset(k for k in indices if k < self.limit)

    def occurrences(self, token_id: int) -> list[int]:
        """Indices of the tokens equal to ``token_id``."""
        return [k for k, s in enumerate(self._spans) if s.token_id == token_id]

    def shutdown(self, timeout_ms: int = 30_000) -> bool:
        """Drop the pending rendering and wait for the background ones (the window is closing)."""
        return self._renders.shutdown(timeout_ms)

    def _set_options(self, **changes: Any) -> None:
        fields = {
            "highlight_id": self._options.highlight_id,
            "selected_index": self._options.selected_index,
            "differing": self._options.differing,
            "compare": self._options.compare,
            "limit": self.limit,
        }
        fields.update(changes)
        new = RenderOptions(**fields)
        if new != self._options:
            self._options = new
            self._render()

    def _render(self) -> None:
        if self._tokenizer is None:
            self.clear_encoding()
            return
        if min(len(self._spans), self.limit) > SYNC_TOKENS:
            self._pending = True
            # Only the drawn tokens go to the worker (a slice, a copy: later edits cannot touch it).
            self._renders.start(build_document, self._text, self._spans[: self.limit], self._total,
                                self._tokenizer.token_bytes, self._options, QFont(self.font()),
                                self.viewport().width())
            return
        self._renders.cancel()  # an older, longer drawing must not replace this one
        body = render_tokens(self._text, self._spans, self._tokenizer.token_bytes, self._options)
        body += left_out_note(self.limit, self._total, len(self._spans))
        self._show(body, None)

    def _on_built(self, built: tuple[str, QTextDocument]) -> None:
        self._show(*built)

    def _on_build_failed(self, message: str) -> None:
        self._pending = False
        self._html = ""
        self.setPlainText(message)
        self.rendered.emit()

    def _show(self, body: str, document: QTextDocument | None) -> None:
        self._pending = False
        self._html = body
        bar = self.verticalScrollBar()
        position = bar.value()
        if document is None:
            self.setHtml(body)
        else:
            shown = self.document()
            ours = shown.parent() is self  # setDocument deletes its own first one, keeps ours
            document.setParent(self)
            self.setDocument(document)
            if ours:  # one per rendering: freed in an event of its own
                shown.deleteLater()
        bar.setValue(position)
        self.rendered.emit()

    # -- hover and click -----------------------------------------------------------
    def describe(self, index: int) -> str:
        """One line about token ``index``: id, readable form, bytes and merge rank."""
        if not 0 <= index < len(self._spans) or self._tokenizer is None:
            return ""
        span = self._spans[index]
        token = self._tokenizer.token_bytes(span.token_id)
        rank = self._tokenizer.merge_rank(span.token_id)
        kind = "special token" if span.special else ("byte" if rank is None else f"merge rank {rank:,}")
        part = " · part of a character" if span.partial else ""
        return (
            f"token #{index + 1}: id {span.token_id} · “{readable(token)}” · "
            f"bytes {hex_form(token)} · {kind}{part}"
        )

    @staticmethod
    def _index_of(url: QUrl | str) -> int:
        href = url.toString() if isinstance(url, QUrl) else url
        if href.startswith("tok:"):
            try:
                return int(href[4:])
            except ValueError:
                return -1
        return -1

    def _on_anchor_clicked(self, url: QUrl) -> None:
        index = self._index_of(url)
        if index >= 0:
            self.set_selected_index(index)
            self.token_clicked.emit(index)

    def _on_highlighted(self, url: QUrl) -> None:
        index = self._index_of(url)
        if index != self._hovered:
            self._hovered = index
            # The viewport's own tooltip, not an event filter: with a filter every paint
            # event of the pane ran Python, and waited for the GIL while a worker held it.
            self.viewport().setToolTip(html.escape(self.describe(index)) if index >= 0 else "")
            self.token_hovered.emit(index)
