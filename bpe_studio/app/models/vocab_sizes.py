"""The vocabulary's size after each merge, for the compression chart and Picky BPE's progress.

One more token per merge in plain BPE and SuperBPE; Picky BPE's removals take one away,
and a merge that makes an existing token (removed, then made again) adds none back
unless that token had been removed.
"""

from __future__ import annotations

from core.events import MergeBatch

__all__ = ["vocabulary_sizes"]


def vocabulary_sizes(batch: MergeBatch, known: int, size: int, removed: set[int]) -> range | list[int]:
    """The size after each of ``batch``'s merges.

    Args:
        known: tokens (ids) known before the batch; size: the live vocabulary's size before it;
        removed: ids removed and not made again, updated in place.
    """
    if not batch.splits and not batch.restores:
        return range(size + 1, size + len(batch) + 1)
    sizes: list[int] = []
    splits = iter(batch.splits)
    split = next(splits, None)
    for rank, token_id in zip(batch.ranks, batch.token_ids):
        if token_id >= known:
            known, size = token_id + 1, size + 1
        elif token_id in removed:
            removed.discard(token_id)
            size += 1
        while split is not None and split.rank == rank:
            removed.add(split.token_id)
            size -= 1
            split = next(splits, None)
        sizes.append(size)
    return sizes
