"""Pieces: text cut at a pattern's safe cut points, fast, so the regex runs once per distinct piece.

The regex is the slow part. Most text repeats, so the text is first cut at the
pattern's safe cut points (see `core.pretokenize.patterns`) with the C-speed ``re`` module into
*pieces* — for GPT-2, a whitespace run followed by a non-whitespace run. Pre-tokenizing
the pieces one by one gives exactly what the pattern gives on the whole text (tests/core
compare both paths on generated text). Counting (`core.pretokenize.counting`) and encoding
(`core.encode.piece_encoder`) both work on pieces.

Example (GPT-2): ``"Hi there\\n\\nHi"`` -> pieces ``["Hi", " there", "\\n\\nHi"]`` ->
pre-tokens ``["Hi", " there", "\\n", "\\n", "Hi"]``.
"""

from __future__ import annotations

import re
from functools import lru_cache

from core.pretokenize.patterns import Pattern


# Every character the ``regex`` module's ``\s`` matches (Unicode White_Space). The stdlib
# ``re`` module's ``\s`` differs (it also matches \x1c-\x1f), so piece cutting names the
# characters explicitly to agree with the pattern; tests/core checks this list.
WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_WS = re.escape(WHITESPACE)
WHITESPACE_SET = frozenset(WHITESPACE)

# Pieces: text between consecutive safe cut points, matched left to right.
_PIECE_SOURCES = {
    # GPT-2: cut before every whitespace character that follows a non-whitespace one.
    "gpt2": rf"[{_WS}]*[^{_WS}]+|[{_WS}]+",
    # GPT-4: the same, except when the whitespace is \r or \n (punctuation keeps those).
    "gpt4": rf"[{_WS}]*[^{_WS}]+(?:[\r\n][{_WS}]*[^{_WS}]*)*|[{_WS}]+",
}


@lru_cache(maxsize=8)
def _piece_regex(name: str) -> re.Pattern[str] | None:
    source = _PIECE_SOURCES.get(name)
    return re.compile(source) if source else None


def split_pieces(text: str, pattern: Pattern) -> list[str]:
    """Cut ``text`` at ``pattern``'s safe cut points (the whole text for custom patterns).

    ``"".join(split_pieces(t, p)) == t`` and pre-tokenizing each piece with ``p`` gives
    exactly ``p.findall(t)``: ``split_pieces("a b\\n", gpt2) -> ["a", " b", "\\n"]``.
    """
    piece_re = _piece_regex(pattern.name)
    if piece_re is None:
        return [text] if text else []
    return piece_re.findall(text)


def piece_start_chars(pattern: Pattern) -> frozenset[str] | None:
    """The characters a piece can start with where it starts at a safe cut point (``None``
    for custom patterns, which have no cut points): any whitespace for GPT-2; for GPT-4
    any but ``\r`` and ``\n``, which punctuation before them keeps."""
    if pattern.name == "gpt2":
        return WHITESPACE_SET
    if pattern.name == "gpt4":
        return WHITESPACE_SET - {"\r", "\n"}
    return None
