"""Counting pre-tokens: special tokens split the text, pieces are counted, the regex runs once per distinct piece.

``count_pretokens("ab ab<|e|>ab", gpt2, ["<|e|>"]) -> {"ab": 2, " ab": 1}``: the text is
cut into pieces (`core.pretokenize.pieces`), the pieces counted with `collections.Counter`
at C speed, and each distinct piece pre-tokenized once (through a cache kept across the
chunks of one file), its pre-tokens counted as many times as the piece occurs.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from core.pretokenize.patterns import Pattern
from core.pretokenize.pieces import split_pieces
from core.pretokenize.specials import split_on_specials


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


def count_chunk_bytes(
    data: bytes,
    pattern: Pattern,
    special_tokens: Sequence[str],
    cache: dict[str, list[str]] | None = None,
) -> tuple[dict[bytes, int], int]:
    """Pre-token counts (as bytes) and invalid UTF-8 bytes of one chunk of a corpus: the one
    per-chunk counter that training uses for every kind of input (`core.corpus.documents`)."""
    text = data.decode("utf-8", errors="surrogateescape")
    counts = count_pretokens(text, pattern, special_tokens, cache)
    encoded = {t.encode("utf-8", errors="surrogateescape"): n for t, n in counts.items()}
    return encoded, count_invalid_bytes(text)
