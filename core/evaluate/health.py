"""Vocabulary health: tokens that are junk, or that a model would never learn.

- *unreachable*: no text encodes to the token alone — ``encode(text) != [id]`` where
  ``text`` is the token's bytes as text (invalid bytes kept, as the tokenizer reads a
  file): it only ever appears inside a later merge;
- *partial*: the bytes are not whole UTF-8 (a piece of a character);
- *unused*: produced at most ``rare`` times on the held-out text (candidates for
  under-trained "glitch" tokens);
- *repetitive*: at least ``min_length`` bytes made of one unit of 1-3 bytes repeated
  (``=====``, ``-----``, sixteen spaces);
- `overlap` of two vocabularies, by token bytes: shared, only in A, only in B, and how
  much of A's first k tokens (by rank) are in B.
Special tokens are left out of every check, and single bytes out of *partial* and
*unused* (every byte-level vocabulary needs all 256).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.encode.tokenizer import Tokenizer

__all__ = ["Health", "Overlap", "health", "overlap"]

_REPEAT = re.compile(rb"(.{1,3}?)\1+", re.DOTALL)


@dataclass(frozen=True)
class Health:
    """Ids (ordinary tokens only) in each category, in id order."""

    size: int
    unreachable: list[int]
    partial: list[int]
    repetitive: list[int]
    unused: list[int] | None
    """``None`` when no held-out counts were given."""

    def summary(self) -> dict[str, int | None]:
        return {"tokens": self.size, "unreachable": len(self.unreachable), "partial": len(self.partial),
                "repetitive": len(self.repetitive), "unused": None if self.unused is None else len(self.unused)}


def _ordinary(tokenizer: Tokenizer) -> list[int]:
    specials = set(tokenizer.special_ids.values())
    return [i for i in sorted(tokenizer.vocab) if i not in specials]


def is_repetitive(token: bytes, min_length: int) -> bool:
    """``token`` is at least ``min_length`` bytes of one 1-3 byte unit repeated."""
    if len(token) < min_length:
        return False
    m = _REPEAT.fullmatch(token)
    return m is not None


def health(tokenizer: Tokenizer, counts: np.ndarray | None = None, *, rare: int = 0,
           min_length: int = 5) -> Health:
    """Check every ordinary token (see the module docstring).

    Args:
        counts: how often each id was produced on held-out text (`core.evaluate.evaluate`'s
            ``Evaluation.counts``); without it there is no ``unused`` list.
        rare: ids produced at most this often count as unused.
        min_length: the shortest repetitive token reported, in bytes.
    """
    unreachable, partial, repetitive, unused = [], [], [], []
    for token_id in _ordinary(tokenizer):
        token = tokenizer.vocab[token_id]
        single = len(token) == 1
        try:
            token.decode("utf-8")
        except UnicodeDecodeError:
            if not single:
                partial.append(token_id)
        if tokenizer.encode(token, ordinary=True) != [token_id]:
            unreachable.append(token_id)
        if is_repetitive(token, min_length):
            repetitive.append(token_id)
        if counts is not None and not single and (token_id >= len(counts) or counts[token_id] <= rare):
            unused.append(token_id)
    return Health(len(tokenizer), unreachable, partial, repetitive, unused if counts is not None else None)


@dataclass(frozen=True)
class Overlap:
    """Two vocabularies compared by token bytes (special tokens left out)."""

    shared: int
    only_a: int
    only_b: int
    by_rank: list[tuple[int, int]]
    """``(k, how many of A's first k tokens are in B)``."""


def overlap(a: Tokenizer, b: Tokenizer, ranks: Sequence[int] = (256, 1000, 5000, 10000, 50000)) -> Overlap:
    """Compare ``a`` and ``b`` (see `Overlap`); ``ranks`` are the prefix sizes of A looked at."""
    tokens_a = [a.vocab[i] for i in _ordinary(a)]
    set_b = {b.vocab[i] for i in _ordinary(b)}
    set_a = set(tokens_a)
    by_rank = []
    for k in ranks:
        if k > len(tokens_a):
            break
        by_rank.append((k, sum(1 for t in tokens_a[:k] if t in set_b)))
    if not by_rank or by_rank[-1][0] != len(tokens_a):
        by_rank.append((len(tokens_a), len(set_a & set_b)))
    return Overlap(len(set_a & set_b), len(set_a - set_b), len(set_b - set_a), by_rank)
