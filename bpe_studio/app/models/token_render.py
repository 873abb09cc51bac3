"""Text cut into tokens, as HTML for a Qt text browser: tints, visible whitespace, chips. No Qt.

`render_tokens` turns the spans of one encoding (``Tokenizer.encode_with_spans``) into
the HTML the token pane shows:

- each token is an anchor ``<a href="tok:K">`` (K = its index in the encoding) so the
  pane can tell which token is under the mouse, tinted with alternating pastel colours
  and always dark text, so it reads the same on light and dark palettes;
- whitespace is drawn (``·`` ``→`` ``↵``; a newline also breaks the line), controls are
  escaped, special tokens are drawn as dark purple boxes;
- tokens that hold only part of a character (``partial``) are grouped: the character is
  shown once, followed by one small hex chip per token holding its bytes, e.g.
  ``😀⟨F0 9F⟩⟨98 80⟩`` for an emoji cut into two tokens;
- only the first ``limit`` tokens are rendered (Qt lays out ~100k anchors slowly); the
  caller says how many were left out;
- in a text with right-to-left letters (Arabic, Hebrew) every token is preceded by a
  left-to-right mark, so tokens stay in logical order, left to right like the ids, each
  one's letters drawn right to left under its own tint (without the marks, the bidi
  algorithm reordered a whole Arabic run across token boundaries and the tints no longer
  sat under their letters).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import regex

from core.readable import readable_parts

_RTL = regex.compile(r"[\p{Bidi_Class=R}\p{Bidi_Class=AL}]")
LRM = "\u200e"  # LEFT-TO-RIGHT MARK: a strong left-to-right character of zero width

# Pastel backgrounds, dark text: readable in light and dark themes alike.
TINTS = ("#ffe0b2", "#bbdefb", "#c8e6c9", "#f8bbd0", "#e1d5f5")
DIFF_TINTS = ("#ff8a80", "#ffcc80")  # compare view: tokens the other side cuts differently
SAME_TINTS = ("#e3e7ea", "#cfd8dc")  # compare view: tokens both sides share
HIGHLIGHT = "#ffd600"  # occurrences of the token selected in the vocabulary
SELECTED = "#4dd0e1"  # the token clicked in this pane
SPECIAL_BG, SPECIAL_FG = "#6a1b9a", "#ffffff"
TEXT_FG = "#1a1a1a"
SYMBOL_FG = "#757575"  # visible whitespace symbols, lighter than the text
ESCAPE_FG = "#b71c1c"  # control escapes, code-point and byte chips


@dataclass(frozen=True, slots=True)
class RenderOptions:
    """What to emphasise: a vocabulary id, a clicked token, tokens that differ."""

    highlight_id: int | None = None
    selected_index: int | None = None
    differing: Collection[int] = ()  # token indices drawn with DIFF_TINTS (compare mode)
    compare: bool = False  # use SAME_TINTS / DIFF_TINTS instead of TINTS
    limit: int = 3000


def _style(bg: str, fg: str = TEXT_FG, extra: str = "") -> str:
    return f"background-color:{bg}; color:{fg}; text-decoration:none;{extra}"


def _pieces_html(token: bytes, chip_size: bool = False) -> str:
    """The readable pieces of ``token`` as HTML (symbols greyed, escapes and chips red)."""
    out = []
    for kind, piece in readable_parts(token):
        text = html.escape(piece)
        if kind == "text":
            out.append(text)
        elif kind == "space":
            # A newline symbol is followed by a real line break so lines stay lines.
            text = text.replace("↵", "↵<br>")
            out.append(f'<span style="color:{SYMBOL_FG}">{text}</span>')
        else:
            out.append(f'<span style="color:{ESCAPE_FG}; font-size:small">{text}</span>')
    return "".join(out)


def _groups(spans: Sequence[Any]) -> list[list[int]]:
    """Token indices grouped: a run of partial tokens covering the same characters
    forms one group (overlapping character ranges chain), every other token its own."""
    groups: list[list[int]] = []
    group_end = -1
    for k, span in enumerate(spans):
        if span.partial and groups and spans[groups[-1][-1]].partial and span.char_start < group_end:
            groups[-1].append(k)
            group_end = max(group_end, span.char_end)
        else:
            groups.append([k])
            group_end = span.char_end
    return groups


def render_tokens(
    text: str,
    spans: Sequence[Any],
    token_bytes: Callable[[int], bytes],
    options: RenderOptions = RenderOptions(),  # noqa: B008 (frozen, safe to share)
) -> str:
    """HTML for ``text`` cut into ``spans`` (TokenSpan-like objects, in order).

    Args:
        text: the encoded text (the spans' character offsets index into it).
        spans: objects with token_id, char_start, char_end, partial and special.
        token_bytes: the bytes of a token id.
        options: emphasis and the number of tokens to render.
    """
    shown = spans[: options.limit]
    out = [f'<div style="font-family:monospace; color:{TEXT_FG}">']
    tint_k = 0
    separator = LRM if _RTL.search(text) else ""
    for group in _groups(shown):
        first = shown[group[0]]
        out.append(separator)
        if len(group) == 1 and not first.partial:
            k = group[0]
            out.append(_token_html(k, first, token_bytes(first.token_id), tint_k, options))
            tint_k += 1
            continue
        # A character cut across tokens: show it once, then one byte chip per token.
        start = min(shown[k].char_start for k in group)
        end = max(shown[k].char_end for k in group)
        chars = text[start:end].encode("utf-8", errors="surrogateescape")
        out.append(f'<span style="color:{TEXT_FG}">{_pieces_html(chars)}</span>')
        for k in group:
            span = shown[k]
            bg, fg, extra = _colours(k, span, tint_k, options)
            chip = html.escape("⟨" + token_bytes(span.token_id).hex(" ").upper() + "⟩")
            out.append(
                f'<a href="tok:{k}" style="{_style(bg, fg, extra)}">'
                f'<span style="font-size:small; color:{ESCAPE_FG if fg == TEXT_FG else fg}">{chip}</span></a>'
            )
            tint_k += 1
    out.append("</div>")
    return "".join(out)


def _colours(k: int, span: Any, tint_k: int, options: RenderOptions) -> tuple[str, str, str]:
    if options.selected_index == k:
        return SELECTED, TEXT_FG, " font-weight:bold;"
    if options.highlight_id is not None and span.token_id == options.highlight_id:
        return HIGHLIGHT, TEXT_FG, " font-weight:bold;"
    if span.special:
        return SPECIAL_BG, SPECIAL_FG, " font-weight:bold;"
    if options.compare:
        tints = DIFF_TINTS if k in options.differing else SAME_TINTS
        extra = " text-decoration:underline;" if k in options.differing else ""
        return tints[tint_k % len(tints)], TEXT_FG, extra
    return TINTS[tint_k % len(TINTS)], TEXT_FG, ""


def _token_html(k: int, span: Any, token: bytes, tint_k: int, options: RenderOptions) -> str:
    bg, fg, extra = _colours(k, span, tint_k, options)
    if span.special:
        # Word joiners keep the name on one line ("|" is a line-break opportunity).
        name = "\u2060".join(token.decode("utf-8", errors="replace"))
        body = "&nbsp;" + html.escape(name) + "&nbsp;"
    else:
        body = _pieces_html(token)
    return f'<a href="tok:{k}" style="{_style(bg, fg, extra)}">{body}</a>'
