"""The rendered token pane: text shown cut into tinted tokens, with hover and click.

A read-only QTextBrowser showing `token_render.render_tokens` HTML. Each token is an
anchor, so the pane knows which token is under the mouse: hovering shows a tooltip
(id, readable form, bytes, merge rank) and emits `token_hovered`; clicking selects the
token and emits `token_clicked`. Only the first `limit` tokens are drawn, with a note
saying how many were left out, so a huge text never freezes the window.
"""

from __future__ import annotations

import html
from collections.abc import Collection, Sequence
from typing import Any

from PySide6.QtCore import QEvent, QObject, QUrl, Signal
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import QTextBrowser, QToolTip, QWidget

from bpe_studio.app.models.token_render import RenderOptions, render_tokens
from core.readable import hex_form, readable

DEFAULT_LIMIT = 3000


class TokenView(QTextBrowser):
    """Shows one encoding. `set_encoding` gives it the text, spans and tokenizer."""

    token_hovered = Signal(int)  # token index in the encoding, -1 when leaving tokens
    token_clicked = Signal(int)

    def __init__(self, parent: QWidget | None = None, *, limit: int = DEFAULT_LIMIT) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setReadOnly(True)
        self.limit = limit
        self._text = ""
        self._spans: Sequence[Any] = ()
        self._tokenizer: Any = None
        self._options = RenderOptions(limit=limit)
        self._hovered = -1
        self._html = ""
        self.anchorClicked.connect(self._on_anchor_clicked)
        self.highlighted.connect(self._on_highlighted)
        self.viewport().installEventFilter(self)
        self.setPlaceholderText("Tokens appear here.")

    # -- content -----------------------------------------------------------------
    @property
    def spans(self) -> Sequence[Any]:
        return self._spans

    @property
    def html_source(self) -> str:
        """The HTML last rendered (tests inspect it)."""
        return self._html

    def set_encoding(self, text: str, spans: Sequence[Any], tokenizer: Any) -> None:
        """Show ``text`` cut into ``spans`` (from ``tokenizer.encode_with_spans``)."""
        self._text, self._spans, self._tokenizer = text, spans, tokenizer
        self._options = RenderOptions(
            highlight_id=self._options.highlight_id,
            limit=self.limit,
            compare=self._options.compare,
            differing=(),
        )
        self._render()

    def clear_encoding(self) -> None:
        self._text, self._spans, self._tokenizer = "", (), None
        self._html = ""
        self.clear()

    def set_highlight_id(self, token_id: int | None) -> None:
        """Emphasise every occurrence of ``token_id`` (the vocabulary selection)."""
        self._set_options(highlight_id=token_id)

    def set_selected_index(self, index: int | None) -> None:
        self._set_options(selected_index=index)

    def set_differing(self, indices: Collection[int]) -> None:
        """Compare mode: tint tokens at ``indices`` as cut differently, the rest as shared."""
        self._set_options(compare=True, differing=frozenset(indices))

    def occurrences(self, token_id: int) -> list[int]:
        """Indices of the tokens equal to ``token_id``."""
        return [k for k, s in enumerate(self._spans) if s.token_id == token_id]

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
            self._html = ""
            self.clear()
            return
        body = render_tokens(self._text, self._spans, self._tokenizer.token_bytes, self._options)
        left_out = len(self._spans) - min(len(self._spans), self.limit)
        if left_out > 0:
            body += (
                f"<p style='color:#b26a00'>… showing the first {self.limit:,} of "
                f"{len(self._spans):,} tokens ({left_out:,} more not drawn; the figures "
                "count them all).</p>"
            )
        self._html = body
        bar = self.verticalScrollBar()
        position = bar.value()
        self.setHtml(body)
        bar.setValue(position)

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
            self.token_hovered.emit(index)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.viewport() and event.type() == QEvent.Type.ToolTip:
            assert isinstance(event, QHelpEvent)
            index = self._index_of(self.anchorAt(event.pos()))
            if index >= 0:
                QToolTip.showText(event.globalPos(), html.escape(self.describe(index)), self)
            else:
                QToolTip.hideText()
            return True
        return super().eventFilter(watched, event)

