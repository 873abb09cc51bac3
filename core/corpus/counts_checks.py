"""What pre-token counts may hold, checked where counts come in: pairs from any engine,
and sums of counts.

Training and the counts file (`core.corpus.bpc_file`) compute in 63 bits: the pre-tokens
of one table may add up to at most 2**63 - 1 bytes (each length times its count). Pairs
are refused one by one, naming the pair; a sum is refused before it is added (the bytes of
a sum are the sum of the parts' bytes), naming the pre-token that weighs most in it.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from core.corpus.bpc_file import MAX_CORPUS_BYTES
from core.errors import OptionsError, OptionsTypeError

if TYPE_CHECKING:
    from core.corpus.pretoken_counts import PretokenCounts

__all__ = ["sum_of_columns", "table_of_pairs", "too_large"]


def table_of_pairs(pairs: Iterable[tuple[bytes | str, int]] | Mapping[bytes | str, int]) -> dict[bytes, int]:
    """``{pre-token bytes: count}`` of ``(pre-token, count)`` pairs, repeats added up
    (`PretokenCounts.from_pairs` says what is refused).

    ``table_of_pairs([("ab", 2), (b"ab", 3)]) -> {b"ab": 5}``
    """
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    table: dict[bytes, int] = {}
    get = table.get
    corpus_bytes = 0
    for number, (token, n) in enumerate(items):
        if isinstance(token, str):
            try:
                token = token.encode("utf-8", errors="surrogateescape")
            except UnicodeEncodeError as e:
                raise OptionsError(f"pair {number}: the pre-token {token!r} is not UTF-8 text (a lone surrogate "
                                   f"at character {e.start}); give it as bytes") from None
        if not isinstance(token, bytes):
            raise OptionsTypeError(f"pair {number}: a pre-token must be non-empty bytes or str, got {token!r}")
        if not token:
            raise OptionsError(f"pair {number}: a pre-token must be non-empty bytes or str, got {token!r}")
        try:
            if isinstance(n, bool):
                raise TypeError
            n = operator.index(n)  # an int, or a numpy integer
        except TypeError:
            raise OptionsTypeError(f"pair {number}: the count of {token!r} must be a positive integer, "
                                   f"got {n!r}") from None
        if n < 1:
            raise OptionsError(f"pair {number}: the count of {token!r} must be a positive integer, got {n!r}")
        corpus_bytes += n * len(token)
        if corpus_bytes > MAX_CORPUS_BYTES:
            raise OptionsError(f"pair {number}: the counts add up to more than 2**63 - 1 bytes of "
                               f"pre-tokens (the count of {token!r} is {n}), more than training can count")
        table[token] = get(token, 0) + n
    return table


def sum_of_columns(parts: Iterable[PretokenCounts]) -> Iterator[tuple[bytes, int]]:
    """The ``(pre-token, count)`` pairs of the sum of ``parts``, added in Python (exact at
    any size: only to name the pre-token of a sum too large for the native table)."""
    total: dict[bytes, int] = {}
    for part in parts:
        for word, count in zip(*part.columns()):
            total[word] = total.get(word, 0) + count
    return iter(total.items())


def too_large(what: str, pairs: Iterable[tuple[bytes, int]]) -> ValueError:
    """The error of counts whose pre-tokens add up past 2**63 - 1 bytes (``what``: "these
    counts add up"), naming the pre-token that weighs most (its length times its count)."""
    token, count = max(pairs, key=lambda pair: len(pair[0]) * pair[1])
    return ValueError(f"{what} to more than 2**63 - 1 bytes of pre-tokens, more than training and the counts "
                      f"file can count ({token!r} alone is counted {count:,} times); train from fewer or smaller parts")
