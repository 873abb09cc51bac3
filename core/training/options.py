"""What to train: the public `TrainOptions`, checked when made, and their layout for the merge loop.

`TrainOptions` says what to train — vocabulary size, special tokens, pattern, max token
length, min frequency, an initial tokenizer, workers — and refuses a bad value when it is
made, with one error naming the argument. Special tokens the result could not be saved
with are refused here too, not after training (`_check_savable_specials`). The exact rules of the trainer options
(docs/semantics.md, "Trainer options"):

- ``max_token_length`` L: a pair whose merged token would be longer than L bytes is
  never chosen; the best of the other pairs is merged instead.
- ``min_frequency`` F: training stops when the best pair occurs fewer than F times.
- ``initial``: an existing byte-level BPE tokenizer. Its merges are made first, in rank
  order, on the new corpus's pre-tokens (whatever their counts there, even 0); then
  merges are learned until ``vocab_size``. Its tokens keep their ids, its special tokens
  too; special tokens given that it lacks, then the new merges, take the ids after its
  largest. Its pattern must be the run's pattern (a different one is refused: the
  inherited merges were learned on pre-tokens cut that way).

`merge_options` turns them into what the merge loop needs (`MergeOptions`): the initial
tokenizer is loaded there (it needs its files) and laid out as an `InitialLayout` — the
loop numbers tokens its own way (the 256 bytes, the special tokens, then one id per
merge), so the layout keeps the map from those ids to the tokenizer's own.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Union

from core.errors import InvalidPatternError, InvalidSpecialTokensError, OptionsError, OptionsTypeError
from core.pretokenize.patterns import Pattern, resolve_pattern
from core.pretokenize.specials import validate_special_tokens

if TYPE_CHECKING:
    from core.encode.tokenizer import Tokenizer
    from core.variants.base import Variant

__all__ = ["InitialLayout", "MergeOptions", "TrainOptions", "merge_options"]

InitialTokenizer = Union["Tokenizer", str, "os.PathLike[str]"]


@dataclass(frozen=True)
class TrainOptions:
    """What to train, checked when made.

    Args:
        vocab_size: the vocabulary size to reach: 256 bytes + special tokens + merges.
        special_tokens: strings that split the text and get their own ids (256, 257, ...),
            in that order; a list or tuple of strings (kept as a tuple).
        pattern: ``"gpt2"``, ``"gpt4"`` or a regex for pre-tokenization.
        max_token_length: never merge a pair whose token would be longer (bytes); at least 2.
        min_frequency: stop when the best pair occurs fewer times; at least 1.
        initial: continue training this byte-level tokenizer (a `Tokenizer` or a path
            `Tokenizer.load` opens): its merges first, then new ones up to ``vocab_size``;
            its ids and its special tokens (which come first) stay. Its pattern must be
            ``pattern``. It is loaded when training starts.
        workers: processes or threads for pre-tokenization (default: all cores).
        variant: a training variant (`core.variants`: ``Picky(threshold=0.9)``,
            ``SuperBPE(transition=...)``), or ``None`` for plain BPE.

    Raises:
        TypeError, ValueError: a value of the wrong type or out of range (the message names
            the argument); InvalidSpecialTokensError, InvalidPatternError: bad special
            tokens or pattern (empty, given twice, not UTF-8, or text the saved files
            could not tell apart from an ordinary token's).

    Example: ``TrainOptions(10_000, ["<|endoftext|>"], pattern="gpt4")``.
    """

    vocab_size: int
    special_tokens: Sequence[str] = ()  # kept as a tuple
    _: KW_ONLY
    pattern: str = "gpt2"
    max_token_length: int | None = None
    min_frequency: int = 1
    initial: InitialTokenizer | None = None
    workers: int | None = None
    variant: Variant | None = None

    def __post_init__(self) -> None:
        # a str is refused, not split into characters (validate_special_tokens)
        object.__setattr__(self, "special_tokens", tuple(validate_special_tokens(self.special_tokens)))
        _check_int("vocab_size", self.vocab_size)
        smallest = 256 + len(self.special_tokens)
        if self.vocab_size < smallest:
            raise OptionsError(
                f"vocab_size {self.vocab_size} is too small: it needs at least 256 byte tokens "
                f"+ {len(self.special_tokens)} special tokens = {smallest}"
            )
        if not isinstance(self.pattern, str):
            raise OptionsTypeError(f"pattern must be 'gpt2', 'gpt4' or a regex string, got {self.pattern!r}")
        resolve_pattern(self.pattern)  # raises InvalidPatternError (an empty pattern too)
        if self.max_token_length is not None:
            _check_int("max_token_length", self.max_token_length)
            if self.max_token_length < 2:
                raise OptionsError(
                    f"max_token_length must be at least 2 (bytes of a merged token), got {self.max_token_length}"
                )
        _check_int("min_frequency", self.min_frequency)
        if self.min_frequency < 1:
            raise OptionsError(f"min_frequency must be at least 1, got {self.min_frequency}")
        if self.workers is not None:
            _check_int("workers", self.workers)
            if self.workers < 1:
                raise OptionsError(f"workers must be at least 1 (or None: all cores), got {self.workers}")
        _check_initial(self.initial)
        if self.variant is not None:
            from core.variants.base import Variant  # only here: plain training does not load it

            if not isinstance(self.variant, Variant):
                raise OptionsTypeError(f"variant must be a core.variants variant (Picky, SuperBPE) or None, "
                                       f"got {type(self.variant).__name__}")
            self.variant.check(self)
        pattern = self.compiled_pattern
        _check_savable_specials(self.special_tokens, self.variant.cuts(pattern) if self.variant else (pattern,))

    @property
    def compiled_pattern(self) -> Pattern:
        """The pattern, resolved (`core.pretokenize.patterns.resolve_pattern`)."""
        return resolve_pattern(self.pattern)


def _check_savable_specials(special_tokens: Sequence[str], cuts: Sequence[Pattern]) -> None:
    """Refuse a special token the trained tokenizer could not be saved with.

    vocab.json writes a special token as its text and every other token in GPT-2's byte
    map, so a special token that reads, in that map, as other bytes would be written like
    the ordinary token of those bytes: a single byte's (``"a"``, ``"Ġ"``: always in the
    vocabulary, `check_writable_special_tokens`), or one training can learn because it is
    one pre-token of a pattern in ``cuts`` (``"Ġthe"`` spells ``" the"``). ``" "``,
    ``"\\n"`` and the like are outside the map's alphabet and save as themselves;
    ``"<|Ġ|>"`` spells ``"<| |>"``, which no pre-token holds, so it is never learned.
    """
    from core.formats.base import check_writable_special_tokens  # only here: no file code to train
    from core.formats.bytes_unicode import unicode_to_bytes

    check_writable_special_tokens(special_tokens)
    table = unicode_to_bytes()
    for token in special_tokens:
        if not all(char in table for char in token):
            continue
        spelled = bytes(table[char] for char in token)
        if spelled == token.encode("utf-8"):
            continue  # its own bytes: the text is cut at the special token, never learned
        try:
            ordinary = spelled.decode("utf-8")
        except UnicodeDecodeError:  # only a corpus that is not UTF-8 could hold it: save says so then
            continue
        if any(cut.findall(ordinary) == [ordinary] for cut in cuts):
            raise InvalidSpecialTokensError(
                f"the special token {token!r} is how vocab.json writes the ordinary token {ordinary!r} "
                "(GPT-2's byte map), so the two could not be told apart if training learns it; "
                "give the special token as plain text, such as '<|sep|>'"
            )


def _check_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionsTypeError(f"{name} must be an integer, got {value!r}")


def _check_initial(initial: object) -> None:
    if initial is None:
        return
    if isinstance(initial, (str, os.PathLike)):
        if not os.fspath(initial):
            raise OptionsError("initial is an empty path; give the tokenizer's folder or file, or None")
        return
    # a Tokenizer exists only if its module is loaded: no import (and no numpy) to check
    module = sys.modules.get("core.encode.tokenizer")
    if module is None or not isinstance(initial, module.Tokenizer):
        raise OptionsTypeError(f"initial must be a Tokenizer or the path of one, got {type(initial).__name__}")


@dataclass(frozen=True)
class InitialLayout:
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
class MergeOptions:
    """What the merge loop takes of `TrainOptions`; ``initial`` is ``None`` unless training
    continues a tokenizer."""

    max_token_length: int | None = None
    min_frequency: int = 1
    initial: InitialLayout | None = None


def merge_options(options: TrainOptions) -> tuple[MergeOptions, list[str]]:
    """The merge loop's options and the run's special tokens (an initial tokenizer's first),
    loading and laying out ``options.initial``.

    Raises:
        ValueError: ``vocab_size`` smaller than the initial tokenizer, or an initial
            tokenizer that is not byte-level BPE.
        InvalidPatternError: the initial tokenizer's pattern is not ``options.pattern``.
        FormatError, FileNotFoundError: ``initial`` is a path that does not load.
    """
    specials = list(options.special_tokens)
    if options.initial is None:
        return MergeOptions(options.max_token_length, options.min_frequency), specials
    layout, specials = _lay_out(_as_tokenizer(options.initial), specials, options.compiled_pattern)
    smallest = len(layout.external_ids)  # its tokens and the new special tokens
    if options.vocab_size < smallest:
        raise OptionsError(
            f"vocab_size {options.vocab_size} is too small: the initial tokenizer and the new special tokens "
            f"already make {smallest} tokens"
        )
    return MergeOptions(options.max_token_length, options.min_frequency, layout), specials


def _as_tokenizer(initial: InitialTokenizer) -> Tokenizer:
    from core.encode.tokenizer import Tokenizer  # only here: training alone does not load numpy

    if isinstance(initial, Tokenizer):
        return initial
    if isinstance(initial, (str, os.PathLike)):
        return Tokenizer.load(initial)
    raise OptionsTypeError(f"initial must be a Tokenizer or the path of one, got {type(initial).__name__}")


def _describe(pattern: Pattern) -> str:
    return repr(pattern.name) if pattern.name != "custom" else repr(pattern.source)


def _lay_out(tok: Tokenizer, special_tokens: list[str], pattern: Pattern) -> tuple[InitialLayout, list[str]]:
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
            raise OptionsError(
                f"the initial tokenizer makes the token {left + right!r} by two merges; "
                "continued training needs each merge to make a new token"
            )
        forced.append((loop_id[by_bytes[left]], loop_id[by_bytes[right]]))
        loop_id[made] = len(external)
        external.append(made)
    extra = len(tok.vocab) - len(external)
    if extra:
        raise OptionsError(
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
    return InitialLayout(token_bytes, forced, external, next_id), specials
