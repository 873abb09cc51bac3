"""Trainer options: ``max_token_length``, ``min_frequency`` and continued training (``initial``).

Adds checking the options and, for continued training, laying out an existing tokenizer
for the merge loop (the exact rules: docs/semantics.md, "Trainer options"):

- ``max_token_length`` L: a pair whose merged token would be longer than L bytes is
  never chosen; the best of the other pairs is merged instead.
- ``min_frequency`` F: training stops when the best pair occurs fewer than F times.
- ``initial``: an existing byte-level BPE tokenizer. Its merges are made first, in rank
  order, on the new corpus's pre-tokens (whatever their counts there, even 0); then
  merges are learned until ``vocab_size``. Its tokens keep their ids, its special tokens
  too; special tokens given that it lacks, then the new merges, take the ids after its
  largest. Its pattern must be the run's pattern (a different one is refused: the
  inherited merges were learned on pre-tokens cut that way).

The merge loop numbers tokens its own way — the 256 bytes, the special tokens, then one
id per merge — so `InitialVocab` keeps the map from those ids to the tokenizer's own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Union

from core.errors import InvalidPatternError
from core.pretokenize.patterns import Pattern

if TYPE_CHECKING:
    from core.encode.tokenizer import Tokenizer

__all__ = ["InitialVocab", "TrainOptions", "check_train_options"]

InitialTokenizer = Union["Tokenizer", str, "os.PathLike[str]"]


@dataclass(frozen=True)
class InitialVocab:
    """An existing tokenizer laid out for the merge loop.

    Attributes:
        token_bytes: the loop's tokens before any merge: the 256 bytes, then every special token.
        forced: the inherited merges as pairs of the loop's ids, in rank order.
        external_ids: the loop's id -> the tokenizer's id, for the bytes, special tokens and
            inherited merges; new tokens follow ``next_id``.
        next_id: the first id after the tokenizer's largest.
    """

    token_bytes: list[bytes]
    forced: list[tuple[int, int]]
    external_ids: list[int]
    next_id: int

    def final_vocab(self, token_bytes: list[bytes]) -> dict[int, bytes]:
        """``{id: bytes}`` in the tokenizer's ids, from the loop's grown token list."""
        known = len(self.external_ids)
        vocab = {self.external_ids[i]: token_bytes[i] for i in range(known)}
        for offset, token in enumerate(token_bytes[known:]):
            vocab[self.next_id + offset] = token
        return dict(sorted(vocab.items()))


@dataclass(frozen=True)
class TrainOptions:
    """The checked options; `initial` is ``None`` unless training continues a tokenizer."""

    max_token_length: int | None = None
    min_frequency: int = 1
    initial: InitialVocab | None = field(default=None)


def check_train_options(
    *,
    max_token_length: int | None,
    min_frequency: int,
    initial: InitialTokenizer | None,
    special_tokens: list[str],
    pattern: Pattern,
    vocab_size: int,
) -> tuple[TrainOptions, list[str]]:
    """Check the options; give them and the run's special tokens (the initial tokenizer's first).

    Raises:
        ValueError: ``max_token_length`` < 2, ``min_frequency`` < 1, ``vocab_size`` smaller
            than the initial tokenizer, or an initial tokenizer that is not byte-level BPE.
        InvalidPatternError: the initial tokenizer's pattern is not ``pattern``.
        FormatError, FileNotFoundError: ``initial`` is a path that does not load.
    """
    if max_token_length is not None:
        if isinstance(max_token_length, bool) or not isinstance(max_token_length, int):
            raise TypeError(f"max_token_length must be an integer, got {max_token_length!r}")
        if max_token_length < 2:
            raise ValueError(
                f"max_token_length must be at least 2 (bytes of a merged token), got {max_token_length}"
            )
    if isinstance(min_frequency, bool) or not isinstance(min_frequency, int):
        raise TypeError(f"min_frequency must be an integer, got {min_frequency!r}")
    if min_frequency < 1:
        raise ValueError(f"min_frequency must be at least 1, got {min_frequency}")
    if initial is None:
        return TrainOptions(max_token_length, min_frequency), special_tokens
    layout, specials = _lay_out(_as_tokenizer(initial), special_tokens, pattern)
    smallest = len(layout.external_ids)  # its tokens and the new special tokens
    if vocab_size < smallest:
        raise ValueError(
            f"vocab_size {vocab_size} is too small: the initial tokenizer and the new special tokens "
            f"already make {smallest} tokens"
        )
    return TrainOptions(max_token_length, min_frequency, layout), specials


def _as_tokenizer(initial: InitialTokenizer) -> Tokenizer:
    from core.encode.tokenizer import Tokenizer  # only here: training alone does not load numpy

    if isinstance(initial, Tokenizer):
        return initial
    if isinstance(initial, (str, os.PathLike)):
        return Tokenizer.load(initial)
    raise TypeError(f"initial must be a Tokenizer or the path of one, got {type(initial).__name__}")


def _describe(pattern: Pattern) -> str:
    return repr(pattern.name) if pattern.name != "custom" else repr(pattern.source)


def _lay_out(tok: Tokenizer, special_tokens: list[str], pattern: Pattern) -> tuple[InitialVocab, list[str]]:
    if tok.pattern.source != pattern.source:
        raise InvalidPatternError(
            f"the initial tokenizer splits text with the pattern {_describe(tok.pattern)}, not "
            f"{_describe(pattern)}; continue training with its pattern (its merges were learned on those pre-tokens)"
        )
    special_ids = dict(sorted(tok.special_ids.items(), key=lambda item: item[1]))
    specials = list(special_ids) + [t for t in special_tokens if t not in special_ids]
    # ordinary tokens by bytes, the lowest id winning (as the tokenizer encodes)
    by_bytes: dict[bytes, int] = {}
    special_id_set = set(special_ids.values())
    for token_id in sorted(tok.vocab):
        if token_id not in special_id_set:
            by_bytes.setdefault(tok.vocab[token_id], token_id)
    external = [by_bytes[bytes([b])] for b in range(256)] + [special_ids[t] for t in special_ids]
    loop_id = {ext: i for i, ext in enumerate(external)}
    forced: list[tuple[int, int]] = []
    for left, right in tok.merges:
        made = by_bytes[left + right]
        if made in loop_id:
            raise ValueError(
                f"the initial tokenizer makes the token {left + right!r} by two merges; "
                "continued training needs each merge to make a new token"
            )
        forced.append((loop_id[by_bytes[left]], loop_id[by_bytes[right]]))
        loop_id[made] = len(external)
        external.append(made)
    extra = len(tok.vocab) - len(external)
    if extra:
        raise ValueError(
            f"the initial tokenizer has {extra} tokens that are neither a byte, a special token nor made "
            "by a merge; continued training needs a byte-level BPE tokenizer"
        )
    next_id = max(tok.vocab) + 1
    new_specials = specials[len(special_ids):]
    token_bytes = [bytes([b]) for b in range(256)] + [t.encode("utf-8") for t in specials]
    # the new special tokens come before the merges in the loop's numbering, after every
    # existing token in the tokenizer's: re-number the loop's ids past them
    if new_specials:
        shift = len(new_specials)
        first_merge = 256 + len(special_ids)
        forced = [(a + shift if a >= first_merge else a, b + shift if b >= first_merge else b) for a, b in forced]
        external = (
            external[:first_merge]
            + list(range(next_id, next_id + shift))
            + external[first_merge:]
        )
        next_id += shift
    return InitialVocab(token_bytes, forced, external, next_id), specials
