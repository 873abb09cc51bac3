"""Training events: the small records `core.train_bpe_events` yields while it trains.

A front end (the GUI's worker thread, the terminal progress display) follows a training
run by iterating these; `core.train_bpe` just runs the iterator to the end.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PretokenizeProgress:
    """Reading and pre-tokenizing: ``done`` of ``total`` input bytes are counted."""

    done: int
    total: int


@dataclass(frozen=True, slots=True)
class CountingDone:
    """Pre-token counting finished.

    Attributes:
        distinct: number of distinct pre-tokens.
        total: number of pre-tokens in the corpus (special tokens not included).
        invalid_bytes: bytes that were not valid UTF-8 (kept byte-exact).
        corpus_bytes: bytes of the corpus that are pre-tokens (special tokens excluded).
        frequencies: counts of the distinct pre-tokens, sorted descending, as a compact
            ``array('q')`` (``numpy.asarray(frequencies)`` views it without a copy).
        longest_pretoken: the longest pre-token in bytes.
    """

    distinct: int
    total: int
    invalid_bytes: int
    corpus_bytes: int
    frequencies: array[int]
    longest_pretoken: bytes


@dataclass(frozen=True, slots=True)
class MergeEvent:
    """One merge: ``left + right`` became token ``token_id`` at rank ``rank`` (0-based).

    Attributes:
        count: the pair count at the time of the merge.
        corpus_tokens: pre-token part of the corpus in tokens after this merge, so
            ``corpus_bytes / corpus_tokens`` is the bytes-per-token compression so far.
    """

    rank: int
    token_id: int
    left: bytes
    right: bytes
    count: int
    corpus_tokens: int

    @property
    def token(self) -> bytes:
        return self.left + self.right


@dataclass(frozen=True, slots=True)
class Finished:
    """Training finished (vocabulary full, or no pair left)."""

    vocab: dict[int, bytes]
    merges: list[tuple[bytes, bytes]]


TrainEvent = PretokenizeProgress | CountingDone | MergeEvent | Finished
