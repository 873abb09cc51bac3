"""Incremental BPE merging: the hot loop of training, over plain integer data.

Words are the distinct pre-tokens as lists of token ids, each with its count. The loop
keeps the count of every adjacent pair, an index pair -> words that contain it, and a
max-heap of pairs. Each merge touches only the words that contain the merged pair and,
in them, only the neighbours of each merged occurrence.

The heap is lazy: counts of existing pairs only ever go down (a merge only removes
occurrences), and every pair that contains the new token is complete when its merge
ends. So entries are pushed only for those new pairs, and an entry popped with a stale,
too-high count is pushed back with its real count. Ties between equal counts go to the
lexicographically greater ``(left_bytes, right_bytes)`` pair, via `tie_break_key`.

Example: words ``[[97, 98, 97, 98], [97, 98]]`` (``"abab"``, ``"ab"``), counts ``[1, 2]``:
the first merge is (97, 98) -> 256 with count 4, leaving ``[[256, 256], [256]]``.

Options (docs/semantics.md): ``max_token_length`` — a pair whose merged token would be
longer in bytes is never chosen (popped and dropped: its count can only go down, so it
never returns); ``min_frequency`` — no merge once the best pair occurs fewer times;
``forced`` — pairs of ids merged first, in order, whatever their counts (continued
training replays an existing tokenizer's merges this way); ``max_words`` and ``colon_rule``
— SuperBPE's stage-2 rule (`core.variants.superbpe.allowed`): a pair whose token holds
``b": "`` or more than ``max_words`` words is never chosen, as a too long one.

`merge_pairs` hands the merges over in batches of columns (``array('q')`` of left ids,
right ids, new ids, counts and tokens removed), as the kernel's ``step`` returns them; the
Python loop's merges are grouped the same way. With named sources (``sources``: each
word's source), a sixth column gives each merge's count per source, one merge after
another (provenance: they add up to the merge's count).
"""

from __future__ import annotations

import functools
import heapq
import os
import time
from array import array
from itertools import accumulate
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

if TYPE_CHECKING:
    import numpy as np

    from core.training._merge_kernel import MergeState


def _load_kernel() -> type[MergeState] | None:
    try:
        from core.training._merge_kernel import MergeState
    except ImportError:  # not built (no C compiler at install time): the Python loop runs
        return None
    return MergeState


_MergeState = _load_kernel()

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
    # compact int32 arrays: a Python list of ints would cost ~10x the memory
    groups = np.split(owners_k.astype(np.int32), group_starts[1:])
    pair_words: dict[int, list[int] | np.ndarray] = dict(zip(_pair_codes(codes_k[group_starts]).tolist(), groups))
    return pair_counts, pair_words


def _pair_codes(byte_pairs: np.ndarray) -> np.ndarray:
    """``left << 8 | right`` (two bytes) as the loop's codes, ``left << _SHIFT | right``."""
    return ((byte_pairs >> 8) << _SHIFT) | (byte_pairs & 0xFF)


KERNEL_BATCH = 64
"""Merges per call into the compiled kernel, and per batch; a consumer can cancel between batches."""

PYTHON_BATCH_SECONDS = 0.02
"""The Python loop's merges are grouped into batches of at most `KERNEL_BATCH`, cut short
when they take this long (a merge of the Python loop can take tens of milliseconds: a
consumer must still be able to cancel promptly)."""

MergeColumns = tuple["array[int]", ...]
"""One batch of merges as columns ``(left_ids, right_ids, new_ids, counts, tokens_removed)``,
and with named sources ``per_source`` (each merge's count per source, merge after merge)."""


class PackedWords(NamedTuple):
    """Words and their counts as a native pre-token table gives them
    (`core.pretokenize.counting.CountTable.packed_words`): every word's bytes one after
    another, and each word's length and count as native int64 — no Python object per word,
    which for millions of words is a second saved before merging starts."""

    blob: bytes
    lengths: bytes
    counts: bytes

    def unpacked(self) -> tuple[list[bytes], list[int]]:
        """``(words, counts)`` as lists."""
        lengths, counts = array("q"), array("q")
        lengths.frombytes(self.lengths)
        counts.frombytes(self.counts)
        blob = self.blob
        words = [blob[end - n : end] for end, n in zip(accumulate(lengths), lengths)]
        return words, counts.tolist()


def merge_pairs(
    words: list[bytes] | PackedWords,
    counts: list[int] | None,
    token_bytes: list[bytes],
    num_merges: int,
    *,
    max_token_length: int | None = None,
    min_frequency: int = 1,
    forced: Sequence[tuple[int, int]] = (),
    max_words: int = 0,
    colon_rule: bool = False,
    sources: tuple[Sequence[int], int] | None = None,
) -> Iterator[MergeColumns]:
    """Run up to ``num_merges`` merges: their batches of columns. (The kernel starts at
    once, reading the words; the merges run as the batches are taken.)

    Each batch is ``(left_ids, right_ids, new_ids, counts, tokens_removed)``, five
    ``array('q')`` of one value per merge, in order: the merges `merge_pairs_python` yields
    one by one, at most `KERNEL_BATCH` at a time. When a batch is yielded, ``token_bytes``
    has grown by exactly the batch's new tokens.

    The compiled kernel (``core.training._merge_kernel``, built by ``pip install``) runs the
    merges when it is available, unless the environment variable ``BPE_STUDIO_PURE_PYTHON``
    is ``"1"``; otherwise (no C compiler at install time, or counts whose sum does not fit
    in 64 bits) the Python loop runs. ``words`` are left unchanged either way (the Python
    loop works on a copy). Each count and tokens_removed must fit in 64 bits (``array('q')``).
    ``words`` may also be a `PackedWords` (with ``counts`` None), which the kernel reads as
    it is.
    """
    python_loop = functools.partial(
        merge_pairs_python, max_token_length=max_token_length, min_frequency=min_frequency, forced=forced,
        max_words=max_words, colon_rule=colon_rule, sources=sources,
    )

    def lists() -> tuple[list[bytes], list[int]]:
        if isinstance(words, PackedWords):
            return words.unpacked()
        assert counts is not None
        return list(words), counts

    if _MergeState is None or os.environ.get("BPE_STUDIO_PURE_PYTHON") == "1":
        return _as_batches(python_loop(*lists(), token_bytes, num_merges))
    kernel_words: list[bytes] | tuple[bytes, bytes] = words if not isinstance(words, PackedWords) else (
        words.blob, words.lengths)
    kernel_counts: list[int] | bytes = words.counts if isinstance(words, PackedWords) else cast("list[int]", counts)
    try:
        state = _MergeState(kernel_words, kernel_counts, token_bytes,
                            **_kernel_options(max_token_length, min_frequency, forced, max_words, colon_rule, sources))
    except OverflowError:  # the kernel keeps counts in int64 and checks their sum first
        return _as_batches(python_loop(*lists(), token_bytes, num_merges))
    # the kernel has its own copy: the words are not held while it merges (a generator
    # would keep this call's arguments to its end)
    return _kernel_batches(state, num_merges)


def _kernel_batches(state: MergeState, num_merges: int) -> Iterator[MergeColumns]:
    remaining = num_merges
    while remaining > 0:
        columns = state.step(min(KERNEL_BATCH, remaining))
        if not columns[0]:
            return
        batch = tuple(array("q", column) for column in columns)
        yield batch
        remaining -= len(batch[0])


def _kernel_options(max_token_length: int | None, min_frequency: int, forced: Sequence[tuple[int, int]],
                    max_words: int, colon_rule: bool, sources: tuple[Sequence[int], int] | None) -> dict[str, Any]:
    """The kernel's keyword arguments for the options that are set (none by default)."""
    options: dict[str, Any] = {}
    if sources is not None:
        options["sources"], options["nsources"] = array("H", sources[0]).tobytes(), sources[1]
    if max_words:
        options["max_words"] = max_words
    if colon_rule:
        options["colon_rule"] = True
    if max_token_length:
        options["max_token_length"] = max_token_length
    if min_frequency > 1:
        options["min_frequency"] = min_frequency
    if forced:
        options["forced"] = array("i", [i for pair in forced for i in pair]).tobytes()
    return options


def _as_batches(merges: Iterator[tuple[Any, ...]]) -> Iterator[MergeColumns]:
    """The Python loop's merges grouped into columns like the kernel's batches (a merge's
    counts per source, when it has them, one after another in a sixth)."""
    columns: MergeColumns = ()
    started = time.monotonic()
    for merge in merges:
        if not columns:
            columns = tuple(array("q") for _ in merge)
        for column, value in zip(columns[:5], merge):
            column.append(value)
        if len(merge) > 5:
            columns[5].extend(merge[5])
        if len(columns[0]) == KERNEL_BATCH or time.monotonic() - started >= PYTHON_BATCH_SECONDS:
            yield columns
            columns = ()
            started = time.monotonic()
    if columns:
        yield columns


def merge_pairs_python(
    words: list[bytes],
    counts: list[int],
    token_bytes: list[bytes],
    num_merges: int,
    *,
    max_token_length: int | None = None,
    min_frequency: int = 1,
    forced: Sequence[tuple[int, int]] = (),
    max_words: int = 0,
    colon_rule: bool = False,
    sources: tuple[Sequence[int], int] | None = None,
) -> Iterator[tuple[Any, ...]]:
    """Run up to ``num_merges`` merges; yield ``(left, right, new_id, count, tokens_removed)``
    (and with ``sources``, each word's source and how many there are, a sixth: the merge's
    count per source, a tuple).

    ``words`` are the distinct pre-tokens as bytes; they are replaced in place by lists
    of ids as merges reach them. ``token_bytes`` (id -> bytes) grows by one entry per
    merge and new ids follow its current length. ``tokens_removed`` is how many tokens
    the merge took off the corpus (count-weighted merged occurrences). Stops early when
    no pair is left (or none occurs ``min_frequency`` times). Options: see the module docstring.
    """
    pair_counts, pair_words = count_pairs(words, counts)
    keys = [tie_break_key(t) for t in token_bytes]
    word_ids = cast("list[Sequence[int]]", words)  # bytes at first, lists of ids once merged
    heap = [(-c, keys[code >> _SHIFT] + keys[code & _MASK], code) for code, c in pair_counts.items()]
    heapq.heapify(heap)
    heappop, heappush = heapq.heappop, heapq.heappush
    get = pair_counts.get

    for step in range(num_merges):
        if step < len(forced):  # made whatever its count, even 0
            best = forced[step][0] << _SHIFT | forced[step][1]
            neg = -get(best, 0)
        else:
            while heap:
                neg, _key, best = heap[0]
                actual = get(best, 0)
                if actual == -neg:
                    if max_token_length and len(token_bytes[best >> _SHIFT]) + len(token_bytes[best & _MASK]) > max_token_length:
                        heappop(heap)  # never chosen; its count only goes down, so it never returns
                        continue
                    if (max_words or colon_rule) and not _words_allowed(
                            token_bytes[best >> _SHIFT] + token_bytes[best & _MASK], max_words, colon_rule):
                        heappop(heap)  # the same
                        continue
                    break
                heappop(heap)
                if actual > 0:
                    heappush(heap, (-actual, _key, best))
            else:
                return
            if -neg < min_frequency:
                return
            heappop(heap)
        a, b = best >> _SHIFT, best & _MASK
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
        for code in new_pairs:
            c = pair_counts[code]
            if c > 0:
                heappush(heap, (-c, keys[code >> _SHIFT] + keys[code & _MASK], code))
            else:
                del pair_counts[code]
        yield (a, b, z, -neg, removed) if per_source is None else (a, b, z, -neg, removed, tuple(per_source))


def _words_allowed(token: bytes, max_words: int, colon_rule: bool) -> bool:
    """SuperBPE's stage-2 rule (``max_words`` 0: no limit on words)."""
    if colon_rule and b": " in token:
        return False
    return not max_words or sum(1 for word in token.split(b" ") if word) <= max_words
