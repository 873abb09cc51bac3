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
training replays an existing tokenizer's merges this way; ``forced_counts=False`` lets the
kernel keep none of their counts: it reports 0 for each, and all the tokens they removed
with the last, which is all SuperBPE's stage 2 reads of them); ``max_words`` and ``colon_rule``
— SuperBPE's stage-2 rule (`core.variants.superbpe.allowed`): a pair whose token holds
``b": "`` or more than ``max_words`` words is never chosen, as a too long one. ``prune``
(the kernel only; the merges are the same) lets the pairs rarer than the heap's threshold
leave the pair map, counted again if the threshold comes down to them: most pairs of
SuperBPE's stage 2 occur once and are never merged (2: at every merge, for the tests).

`merge_pairs` hands the merges over in batches of columns (``array('q')`` of left ids,
right ids, new ids, counts and tokens removed), as the kernel's ``step`` returns them; the
Python loop's merges (`core.training.python_loop`) are grouped the same way. With named sources (``sources``: each
word's source), a sixth column gives each merge's count per source, one merge after
another (provenance: they add up to the merge's count).
"""

from __future__ import annotations

import functools
import time
from array import array
from itertools import accumulate
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from core.pretokenize.native import python_forced

# the Python loop (and its helpers, used elsewhere too) lives in core.training.python_loop
from core.training.python_loop import PythonMerges, count_pairs, merge_pairs_python, tie_break_key

if TYPE_CHECKING:
    from core.training._merge_kernel import MergeState

__all__ = ["KERNEL_BATCH", "MergeColumns", "MergeLoop", "PackedWords", "PythonMerges", "count_pairs",
           "merge_pairs", "merge_pairs_python", "tie_break_key"]


def _load_kernel() -> type[MergeState] | None:
    try:
        from core.training._merge_kernel import MergeState
    except ImportError:  # not built (no C compiler at install time): the Python loop runs
        return None
    return MergeState


_MergeState = _load_kernel()

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
    forced_counts: bool = True,
    prune: int = 0,
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

    if _MergeState is None or python_forced():
        return _as_batches(python_loop(*lists(), token_bytes, num_merges))
    kernel_words: list[bytes] | tuple[bytes, bytes] = words if not isinstance(words, PackedWords) else (
        words.blob, words.lengths)
    kernel_counts: list[int] | bytes = words.counts if isinstance(words, PackedWords) else cast("list[int]", counts)
    try:
        state = _MergeState(kernel_words, kernel_counts, token_bytes,
                            **_kernel_options(max_token_length, min_frequency, forced, max_words, colon_rule, sources,
                                              forced_counts, prune))
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
                    max_words: int, colon_rule: bool, sources: tuple[Sequence[int], int] | None,
                    forced_counts: bool = True, prune: int = 0) -> dict[str, Any]:
    """The kernel's keyword arguments for the options that are set (none by default)."""
    options: dict[str, Any] = {} if forced_counts else {"forced_counts": False}
    if prune:
        options["prune"] = prune
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


class MergeLoop:
    """One run's merge loop, compiled (when built and not forced off) or in Python, merge by
    merge: the best pair, or the merge of a chosen pair (parity-aware BPE). ``token_bytes``
    grows by one token per merge, as with `merge_pairs`."""

    def __init__(self, words: list[bytes] | PackedWords, counts: list[int] | None, token_bytes: list[bytes]) -> None:
        self._kernel: MergeState | None = None
        self._python: PythonMerges | None = None
        if _MergeState is not None and not python_forced():
            try:
                if isinstance(words, PackedWords):
                    self._kernel = _MergeState((words.blob, words.lengths), words.counts, token_bytes)
                else:
                    assert counts is not None
                    self._kernel = _MergeState(words, counts, token_bytes)
                return
            except OverflowError:  # counts past int64: the Python loop
                pass
        if isinstance(words, PackedWords):
            words, counts = words.unpacked()
        assert counts is not None
        self._python = PythonMerges(list(words), counts, token_bytes)

    def best(self) -> tuple[int, int, int] | None:
        """``(left, right, count)`` of the best pair (not merged), or ``None`` when none is left."""
        return self._kernel.best() if self._kernel is not None else cast(PythonMerges, self._python).best()

    @staticmethod
    def merge_all(loops: Sequence[MergeLoop], left: int, right: int) -> list[tuple[int, int]]:
        """`merge` in each of ``loops`` (in one call into the kernel when every loop is compiled)."""
        kernels = tuple(loop._kernel for loop in loops if loop._kernel is not None)
        if loops and len(kernels) == len(loops):
            from core.training._merge_kernel import merge_many

            values = array("q", merge_many(kernels, left, right))
            return list(zip(values[0::2], values[1::2]))
        return [loop.merge(left, right) for loop in loops]

    def merge(self, left: int, right: int) -> tuple[int, int]:
        """Merge ``(left, right)`` now, whatever its count: ``(its count, tokens removed)``."""
        if self._kernel is not None:
            columns = self._kernel.merge(left, right)
            return array("q", columns[3])[0], array("q", columns[4])[0]
        _a, _b, _z, count, removed = cast(PythonMerges, self._python).merge(left, right)
        return count, removed
