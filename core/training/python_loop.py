"""The merge loop in Python: the incremental algorithm `core.training.merge` describes,
merge by merge, over lists of ids (the compiled kernel's twin: the tests compare them).

`PythonMerges` holds one run's words, pair counts, pair -> words index and lazy heap:
`best` is the pair the next merge takes, `merge` makes a given pair now (parity-aware BPE
chooses the pair per language), `run` makes up to n merges as training does.
`merge_pairs_python` is `run` as a generator of one merge at a time.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import numpy as np

__all__ = ["PythonMerges", "count_pairs", "merge_pairs_python", "tie_break_key"]

_SHIFT = 32  # pair code = left << _SHIFT | right: any id the kernel takes (int32) fits
_MASK = (1 << _SHIFT) - 1
_ORDER_INVERTING = {i: chr(256 - i) for i in range(256)}
_END = chr(300)


def tie_break_key(token: bytes) -> str:
    """A key whose ascending order is the *descending* lexicographic order of tokens.

    Heap entries are ``(-count, key(left) + key(right), pair)``; Python's min-heap then
    pops the highest count first and, among equal counts, the greatest
    ``(left, right)`` pair — docs/semantics.md: ``(b"BA", b"A") > (b"B", b"ZZ") > (b"A", b"C")``.
    Each byte ``b`` becomes ``chr(256 - b)`` and an end mark above them all follows, so
    a proper prefix sorts after its extensions (``b"A" < b"AB"`` turns into
    ``key(b"A") > key(b"AB")``) and concatenated keys compare like tuples.
    """
    return token.decode("latin-1").translate(_ORDER_INVERTING) + _END


def count_pairs(
    words: list[bytes], counts: list[int]
) -> tuple[dict[int, int], dict[int, list[int] | np.ndarray]]:
    """Weighted counts of every adjacent byte pair, and for each pair the words containing it.

    Pair codes are ``left << 32 | right`` (`_SHIFT`). Vectorized with numpy over the whole table.
    """
    import numpy as np  # only here: training alone does not load numpy

    lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    if int(lengths.sum()) <= len(words):
        return {}, {}
    flat = np.frombuffer(b"".join(words), dtype=np.uint8)
    has_next = np.ones(len(flat), dtype=bool)
    has_next[np.cumsum(lengths) - 1] = False
    left = np.flatnonzero(has_next)
    del has_next
    # one sortable int64 per pair occurrence: the two bytes in the high bits, word below
    keys = np.repeat(np.arange(len(words), dtype=np.int64), lengths - 1)
    keys |= flat[left].astype(np.int64) << 40
    keys |= flat[left + 1].astype(np.int64) << 32
    del left, flat
    keys.sort()
    codes, owners = keys >> 32, keys & 0xFFFFFFFF
    del keys
    weights = np.asarray(counts, dtype=np.int64)[owners]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    totals = np.add.reduceat(weights, starts)
    pair_counts = dict(zip(_pair_codes(codes[starts]).tolist(), totals.tolist()))
    # owners within one pair group are sorted; drop repeats (a pair twice in a word)
    keep = np.r_[True, (codes[1:] != codes[:-1]) | (owners[1:] != owners[:-1])]
    codes_k, owners_k = codes[keep], owners[keep]
    group_starts = np.flatnonzero(np.r_[True, codes_k[1:] != codes_k[:-1]])
    # compact int32 arrays: a Python list of ints would cost many times the memory
    groups = np.split(owners_k.astype(np.int32), group_starts[1:])
    pair_words: dict[int, list[int] | np.ndarray] = dict(zip(_pair_codes(codes_k[group_starts]).tolist(), groups))
    return pair_counts, pair_words


def _pair_codes(byte_pairs: np.ndarray) -> np.ndarray:
    """``left << 8 | right`` (two bytes) as the loop's codes, ``left << _SHIFT | right``."""
    return ((byte_pairs >> 8) << _SHIFT) | (byte_pairs & 0xFF)


class PythonMerges:
    """One run of the Python merge loop over ``words`` (distinct pre-tokens as bytes, each
    replaced in place by a list of ids once a merge reaches it) and their ``counts``.

    ``token_bytes`` (id -> bytes) grows by one entry per merge; new ids follow its length.
    Options as `core.training.merge.merge_pairs`; ``sources``: each word's source and how
    many there are (then each merge also gives its count per source).
    """

    def __init__(
        self,
        words: list[bytes],
        counts: list[int],
        token_bytes: list[bytes],
        *,
        max_token_length: int | None = None,
        min_frequency: int = 1,
        forced: Sequence[tuple[int, int]] = (),
        max_words: int = 0,
        colon_rule: bool = False,
        sources: tuple[Sequence[int], int] | None = None,
    ) -> None:
        self.pair_counts, self.pair_words = count_pairs(words, counts)
        self.counts = counts
        self.token_bytes = token_bytes
        self.keys = [tie_break_key(t) for t in token_bytes]
        self.words = cast("list[Sequence[int]]", words)  # bytes at first, lists of ids once merged
        self.heap = [(-c, self.keys[code >> _SHIFT] + self.keys[code & _MASK], code)
                     for code, c in self.pair_counts.items()]
        heapq.heapify(self.heap)
        self.max_token_length, self.min_frequency = max_token_length, min_frequency
        self.forced = list(forced)
        self.max_words, self.colon_rule, self.sources = max_words, colon_rule, sources

    def best(self) -> tuple[int, int, int] | None:
        """``(left, right, count)`` of the best pair that may be merged (the heap's top, not
        taken), or ``None`` when none is left."""
        heap, get, token_bytes = self.heap, self.pair_counts.get, self.token_bytes
        while heap:
            neg, key, best = heap[0]
            actual = get(best, 0)
            if actual == -neg:
                a, b = best >> _SHIFT, best & _MASK
                if self.max_token_length and len(token_bytes[a]) + len(token_bytes[b]) > self.max_token_length:
                    heapq.heappop(heap)  # never chosen; its count only goes down, so it never returns
                    continue
                if (self.max_words or self.colon_rule) and not _words_allowed(
                        token_bytes[a] + token_bytes[b], self.max_words, self.colon_rule):
                    heapq.heappop(heap)  # the same
                    continue
                return a, b, actual
            heapq.heappop(heap)
            if actual > 0:
                heapq.heappush(heap, (-actual, key, best))
        return None

    def run(self, num_merges: int) -> Iterator[tuple[Any, ...]]:
        """Up to ``num_merges`` merges (the forced ones first): each ``(left, right, new_id,
        count, tokens_removed)``, and with sources a sixth, its count per source (a tuple).
        Stops early when no pair is left (or none occurs ``min_frequency`` times)."""
        for step in range(num_merges):
            if self.forced:  # made whatever its count, even 0
                a, b = self.forced.pop(0)
            else:
                found = self.best()
                if found is None or found[2] < self.min_frequency:
                    return
                a, b, _count = found
                heapq.heappop(self.heap)
            yield self.merge(a, b)

    def merge(self, a: int, b: int) -> tuple[Any, ...]:
        """Merge the pair ``(a, b)`` now, whatever its count: ``(a, b, new_id, count,
        tokens_removed)`` and with sources the count per source."""
        pair_counts, pair_words, counts, sources = self.pair_counts, self.pair_words, self.counts, self.sources
        get = pair_counts.get
        best = a << _SHIFT | b
        count = get(best, 0)
        token_bytes, keys, word_ids = self.token_bytes, self.keys, self.words
        z = len(token_bytes)
        token_bytes.append(token_bytes[a] + token_bytes[b])
        keys.append(tie_break_key(token_bytes[z]))
        removed = 0
        per_source = [0] * sources[1] if sources is not None else None
        new_pairs: set[int] = set()
        holders = pair_words.pop(best, [])
        # pairs of bytes come from count_pairs as arrays; pairs with merged tokens are
        # created here, as lists
        for w in holders.tolist() if not isinstance(holders, list) else holders:
            word = word_ids[w]
            n = len(word)
            # the index may list a word that no longer holds the pair: index() skips
            # it at C speed
            try:
                i = word.index(a)
            except ValueError:
                continue
            c = counts[w]
            out: list[int] | None = None
            pos = 0
            while i < n - 1:
                if word[i + 1] != b:
                    try:
                        i = word.index(a, i + 1)
                    except ValueError:
                        break
                    continue
                if out is None:
                    out = list(word[:i])
                else:
                    out.extend(word[pos:i])
                if out:
                    prev = out[-1]
                    code = prev << _SHIFT | a
                    pair_counts[code] -= c
                    code = prev << _SHIFT | z
                    pair_counts[code] = get(code, 0) + c
                    new_pairs.add(code)
                    cast("list[int]", pair_words.setdefault(code, [])).append(w)  # a new pair: a list
                if i + 2 < n:
                    nxt = word[i + 2]
                    code = b << _SHIFT | nxt
                    pair_counts[code] -= c
                    code = z << _SHIFT | nxt
                    pair_counts[code] = get(code, 0) + c
                    new_pairs.add(code)
                    cast("list[int]", pair_words.setdefault(code, [])).append(w)
                out.append(z)
                removed += c
                if per_source is not None:  # (a a a holds (a, a) twice)
                    per_source[sources[0][w]] += c * (1 + (a == b and i + 2 < n and word[i + 2] == a))  # type: ignore[index]
                pos = i + 2
                try:
                    i = word.index(a, pos)
                except ValueError:
                    break
            if out is not None:
                out.extend(word[pos:])
                word_ids[w] = out
        # what is left of the merged pair's count is stale: every occurrence is gone
        pair_counts.pop(best, None)
        heap = self.heap
        for code in new_pairs:
            c = pair_counts[code]
            if c > 0:
                heapq.heappush(heap, (-c, keys[code >> _SHIFT] + keys[code & _MASK], code))
            else:
                del pair_counts[code]
        return (a, b, z, count, removed) if per_source is None else (a, b, z, count, removed, tuple(per_source))


def merge_pairs_python(
    words: list[bytes],
    counts: list[int],
    token_bytes: list[bytes],
    num_merges: int,
    **options: Any,
) -> Iterator[tuple[Any, ...]]:
    """Run up to ``num_merges`` merges (`PythonMerges.run`); yield ``(left, right, new_id,
    count, tokens_removed)`` (and with ``sources`` the count per source). ``options`` as
    `PythonMerges`."""
    yield from PythonMerges(words, counts, token_bytes, **options).run(num_merges)


def _words_allowed(token: bytes, max_words: int, colon_rule: bool) -> bool:
    """SuperBPE's stage-2 rule (``max_words`` 0: no limit on words)."""
    if colon_rule and b": " in token:
        return False
    return not max_words or sum(1 for word in token.split(b" ") if word) <= max_words
