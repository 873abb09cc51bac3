"""Pre-tokenization: cut text into pre-tokens and count them, fast and exactly.

The regex is the slow part (~5 MB/s). Most text repeats, so the text is first cut at the
pattern's safe cut points (see `core.pretokenize.patterns`) with the C-speed ``re`` module into
*pieces* — for GPT-2, a whitespace run followed by a non-whitespace run — the pieces are
counted with `collections.Counter`, and the real pattern runs once per distinct piece.
Pre-tokenizing the pieces one by one gives exactly what the pattern gives on the whole
text (tests/core compare both paths on generated text).

Example (GPT-2): ``"Hi there\\n\\nHi"`` -> pieces ``["Hi", " there", "\\n\\nHi"]`` ->
pre-tokens ``["Hi", " there", "\\n", "\\n", "Hi"]``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache


from core.pretokenize.patterns import Pattern
from core.pretokenize.specials import split_on_specials


# Every character the ``regex`` module's ``\s`` matches (Unicode White_Space). The stdlib
# ``re`` module's ``\s`` differs (it also matches \x1c-\x1f), so piece cutting names the
# characters explicitly to agree with the pattern; tests/core checks this list.
WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_WS = re.escape(WHITESPACE)

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


PIECE_CACHE_ENTRIES = 1 << 18
"""At most this many distinct pieces are kept in a `count_pretokens` cache (tens of MB)."""


def count_pretokens(
    text: str,
    pattern: Pattern,
    special_tokens: Sequence[str],
    cache: dict[str, list[str]] | None = None,
) -> dict[str, int]:
    """Count the pre-tokens of ``text`` (special tokens split it and are not counted).

    ``count_pretokens("ab ab<|e|>ab", gpt2, ["<|e|>"]) -> {"ab": 2, " ab": 1}``

    Args:
        cache: piece -> pre-tokens, shared by the calls for the chunks of one file so
            they do not run the regex again over the pieces they have in common;
            emptied when it would grow past `PIECE_CACHE_ENTRIES`.
    """
    pieces: Counter[str] = Counter()
    for segment, is_special in split_on_specials(text, special_tokens):
        if not is_special:
            pieces.update(split_pieces(segment, pattern))
    if cache is None:
        cache = {}
    elif len(cache) + len(pieces) > PIECE_CACHE_ENTRIES:
        cache.clear()
    counts: dict[str, int] = {}
    get = counts.get
    findall = pattern.findall
    for piece, n in pieces.items():
        tokens = cache.get(piece)
        if tokens is None:
            tokens = cache[piece] = findall(piece)
        for token in tokens:
            counts[token] = get(token, 0) + n
    return counts


_INVALID_BYTE = re.compile("[\udc80-\udcff]")


def count_invalid_bytes(text: str) -> int:
    """Bytes that were not valid UTF-8, as surrogate escapes in ``text``."""
    return len(_INVALID_BYTE.findall(text))
