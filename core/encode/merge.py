"""BPE of one pre-token in Python: the reference the compiled kernel is tested against.

Adds `merge_word`. It is also the fallback when the C kernel (``_bpe_kernel.c``) is not
built; every other path — the native encoder, and custom patterns cut by ``regex`` — merges
in the C kernel, so these two are the only merge loops that must be kept equal (the tests
compare them on every kind of word, `tests/core/encode`).

The rule: merge the adjacent pair whose merge has the lowest rank, the leftmost on ties,
until no pair has a merge. With ``merges=[(a, b) -> x, (x, c) -> y]``:
``[a, b, c, a, b]`` -> ``[x, c, x]`` -> ``[y, x]``.

The symbols form a linked list; a heap holds ``(rank, position)`` of each pair with a merge,
so the lowest rank and, among equal ranks, the leftmost pair comes first, in O(n log n)
for any length (a huge run of one character included). An entry made stale by an earlier
merge is recognised (the pair now at its position has another rank: a rank names one
pair) and skipped.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

__all__ = ["merge_word"]


def merge_word(ids: Sequence[int], pair_rank: dict[tuple[int, int], int], new_id: Sequence[int]) -> list[int]:
    """The merged ids of one pre-token's symbols ``ids``.

    Args:
        ids: the ids of the pre-token's bytes.
        pair_rank: ``(left id, right id) -> rank`` of each merge.
        new_id: ``rank -> id`` of the merged token.
    """
    n = len(ids)
    if n < 2:
        return list(ids)
    ids = list(ids)
    nxt = list(range(1, n + 1))
    prv = list(range(-1, n - 1))
    alive = [True] * n
    get = pair_rank.get
    heap = [(rank, i) for i in range(n - 1) if (rank := get((ids[i], ids[i + 1]))) is not None]
    heapq.heapify(heap)
    while heap:
        rank, i = heapq.heappop(heap)
        j = nxt[i]
        if not alive[i] or j >= n or get((ids[i], ids[j])) != rank:
            continue  # stale
        ids[i] = new_id[rank]
        alive[j] = False
        nxt[i] = k = nxt[j]
        if k < n:
            prv[k] = i
            if (found := get((ids[i], ids[k]))) is not None:
                heapq.heappush(heap, (found, i))
        h = prv[i]
        if h >= 0 and (found := get((ids[h], ids[i]))) is not None:
            heapq.heappush(heap, (found, h))
    return [ids[i] for i in range(n) if alive[i]]
