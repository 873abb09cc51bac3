"""BPE of many pre-tokens at once with numpy: the encoder's cold-cache kernel.

Adds `MergeTable` and `bpe_batch`, and `bpe_long` for single very long words. Each word (a pre-token's symbol ids) is merged exactly
as the one-word loop does — at each step the adjacent pair with the lowest merge rank, the
leftmost on ties — but all words take their step together, so each round is a handful of
numpy operations over every active pair instead of Python work per pair. A word leaves the
rounds when it has no pair with a merge. Example with ``merges=[(a, b) -> x, (x, c) -> y]``:
``words [a b c], [b a b]`` -> round 1 ``[x c], [b x]`` -> round 2 ``[y], [b x]``.

Plain data in and out (flat int arrays and word lengths), so a compiled kernel could
replace it without touching its callers.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_NONE = np.iinfo(np.int64).max


@dataclass(frozen=True)
class MergeTable:
    """The merges as sorted pair keys (``left * base + right``) with their rank and result."""

    keys: np.ndarray
    ranks: np.ndarray
    new_ids: np.ndarray
    base: int

    @classmethod
    def build(cls, pair_rank: dict[tuple[int, int], int], new_id: Sequence[int], base: int) -> MergeTable:
        """From ``{(left, right): rank}`` and ``new_id[rank]``; ``base`` exceeds every id."""
        if not pair_rank:
            empty = np.empty(0, np.int64)
            return cls(empty, empty, empty, base)
        pairs = np.array(list(pair_rank), dtype=np.int64)
        keys = pairs[:, 0] * base + pairs[:, 1]
        ranks = np.fromiter(pair_rank.values(), np.int64, len(pair_rank))
        order = np.argsort(keys)
        ranks = ranks[order]
        return cls(keys[order], ranks, np.asarray(new_id, dtype=np.int64)[ranks], base)

    def lookup(self, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rank (``_NONE`` if no merge) and merged id of each pair ``(left[i], right[i])``."""
        if len(self.keys) == 0:
            return np.full(len(left), _NONE, np.int64), np.zeros(len(left), np.int64)
        keys = left * self.base + right
        at = np.searchsorted(self.keys, keys)
        at[at == len(self.keys)] = 0
        found = self.keys[at] == keys
        return np.where(found, self.ranks[at], _NONE), self.new_ids[at]


def bpe_batch(ids: np.ndarray, lengths: np.ndarray, table: MergeTable) -> tuple[np.ndarray, np.ndarray]:
    """Merge every word of a batch: ``(flat symbol ids, word lengths) -> the same, merged``.

    ``rank[i]``/``new[i]`` describe the pair of symbol ``i`` and the next one (``_NONE`` for
    a word's last symbol). A round merges one pair per word, drops the right symbol, and
    looks up only the two pairs next to each merged symbol again.

    Args:
        ids: all words' symbol ids, one word after another (int64).
        lengths: each word's number of symbols (every word non-empty).
        table: the merges.
    """
    ids = np.array(ids, dtype=np.int64)  # a copy: merged in place
    lengths = np.asarray(lengths, dtype=np.int64)
    words = np.arange(len(lengths))  # the original index of each word still merging
    starts = np.cumsum(lengths) - lengths
    rank, new = table.lookup(ids[:-1], ids[1:])
    rank = np.append(rank, _NONE)
    new = np.append(new, 0)
    rank[starts[1:] - 1] = _NONE  # a word's last symbol pairs with nothing
    out_words: list[np.ndarray] = []
    out_lengths: list[np.ndarray] = []
    out_ids: list[np.ndarray] = []
    while len(words):
        best = np.minimum.reduceat(rank, starts)
        finished = best == _NONE
        word_of = np.repeat(np.arange(len(lengths)), lengths)
        if finished.any():
            out_words.append(words[finished])
            out_lengths.append(lengths[finished])
            out_ids.append(ids[finished[word_of]])
            if finished.all():
                break
        alive = ~finished
        # The leftmost lowest-ranked pair of each word still merging.
        at = np.flatnonzero((rank == best[word_of]) & alive[word_of])
        owner = word_of[at]
        at = at[np.concatenate(([True], owner[1:] != owner[:-1]))]
        ids[at] = new[at]
        keep = alive[word_of]
        keep[at + 1] = False
        moved = np.cumsum(keep)[at] - 1  # where each merged symbol is after compaction
        ids, rank, new = ids[keep], rank[keep], new[keep]
        lengths = lengths[alive] - 1
        words = words[alive]
        starts = np.cumsum(lengths) - lengths
        last = starts + lengths - 1
        # Pairs to look up again: (merged, next) unless it ends the word, (previous, merged).
        right = moved[moved < last]
        left = moved[moved > starts] - 1
        changed = np.concatenate((left, right))
        rank[moved[moved == last]] = _NONE
        if len(changed):
            rank[changed], new[changed] = table.lookup(ids[changed], ids[changed + 1])
    if not out_words:
        return np.empty(0, np.int64), np.zeros(0, np.int64)
    # Put the words back in their original order.
    all_words = np.concatenate(out_words)
    all_lengths = np.concatenate(out_lengths)
    all_ids = np.concatenate(out_ids)
    order = np.argsort(all_words, kind="stable")
    sorted_lengths = all_lengths[order]
    source_starts = (np.cumsum(all_lengths) - all_lengths)[order]
    target_starts = np.cumsum(sorted_lengths) - sorted_lengths
    gather = np.repeat(source_starts - target_starts, sorted_lengths) + np.arange(int(sorted_lengths.sum()))
    return all_ids[gather], sorted_lengths


def bpe_long(ids: list[int], pair_rank: dict[tuple[int, int], int], new_id: Sequence[int]) -> list[int]:
    """BPE of one long word in O(n log n): the same merges as the one-word loop.

    The symbols form a linked list; a heap holds ``(rank, position)`` of every pair with a
    merge, so the lowest rank and, among equal ranks, the leftmost pair comes first.
    Entries made stale by an earlier merge are recognised (the ids changed) and skipped.
    """
    n = len(ids)
    ids = list(ids)
    nxt = list(range(1, n + 1))
    prv = list(range(-1, n - 1))
    alive = [True] * n
    heap = [(rank, i, ids[i], ids[i + 1]) for i in range(n - 1)
            if (rank := pair_rank.get((ids[i], ids[i + 1]))) is not None]
    heapq.heapify(heap)
    while heap:
        rank, i, left, right = heapq.heappop(heap)
        j = nxt[i]
        if not alive[i] or j >= n or ids[i] != left or ids[j] != right:
            continue
        ids[i] = new_id[rank]
        alive[j] = False
        nxt[i] = k = nxt[j]
        if k < n:
            prv[k] = i
            found = pair_rank.get((ids[i], ids[k]))
            if found is not None:
                heapq.heappush(heap, (found, i, ids[i], ids[k]))
        h = prv[i]
        if h >= 0:
            found = pair_rank.get((ids[h], ids[i]))
            if found is not None:
                heapq.heappush(heap, (found, h, ids[h], ids[i]))
    return [ids[i] for i in range(n) if alive[i]]
