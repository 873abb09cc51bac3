"""Picky BPE (Chizhov et al., EMNLP 2024): a merge may remove the tokens it was made of.

The rules (VARIANTS.md, section 1): after merging ``(l, r)`` into ``l + r``, which made
``m`` new occurrences, each of ``l`` and ``r`` (left first; once if ``l == r``) longer than
one byte is removed when ``m / (m + rem) > threshold``, ``rem`` being its occurrences left:
it leaves the vocabulary (a slot is free again) and each occurrence becomes the pieces it
was built of (`walk`: down its first parents to live tokens or single bytes). A later merge
that makes its bytes again restores it, with its first id. Training goes on until the
vocabulary holds ``vocab_size`` live tokens.

`PickyLoop` is the incremental merge loop with removals (pair counts, pair -> words and
token -> words indexes, a lazy heap; a removal rewrites only the words that hold the
token): compiled in ``core/variants/_picky_kernel.c``, in Python in
`core.variants.picky_loop` (the fallback), with the same events. The vocabulary is compact: bytes, special tokens, then live tokens numbered in
order of first creation. `PickyTokenizer` encodes a pre-token by replaying the event list
(merges and splits, in order), as the authors' code does; it saves that list as text
beside ``vocab.json`` (``picky_events.txt``).

Example: ``TrainOptions(10_000, ["<|endoftext|>"], variant=Picky(threshold=0.9))``.
"""

from __future__ import annotations

import operator
import time
from array import array
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import TYPE_CHECKING, ClassVar

from core.errors import OptionsError, OptionsTypeError
from core.events import Finished, MergeBatch, SplitEvent, initial_token_bytes
from core.pretokenize.native import python_forced
from core.training.merge import PackedWords
from core.formats.picky_events import EVENTS_NAME, Event, events_text, read_events
from core.variants.base import Variant

if TYPE_CHECKING:
    from core.corpus.pretoken_counts import PretokenCounts
    from core.encode.tokenizer import Tokenizer
    from core.events import BatchedTrainEvent
    from core.pretokenize.patterns import Pattern
    from core.variants._picky_kernel import PickyState
    from core.variants.picky_loop import PythonPickyLoop

__all__ = ["EVENTS_NAME", "Event", "Picky", "PickyLoop", "events_text", "picky_events", "read_events"]

_BATCH = 64
_BATCH_SECONDS = 0.02


def _load_kernel() -> type[PickyState] | None:
    try:
        from core.variants._picky_kernel import PickyState
    except ImportError:  # not built (no C compiler at install time): the Python loop runs
        return None
    return PickyState


_PickyState = _load_kernel()


@dataclass(frozen=True)
class Picky(Variant):
    """Picky BPE: after each merge, remove a part that now lives mostly inside the new token.

    Args:
        threshold: remove a part when more than this share of its occurrences went into
            the merge (IoS, in (0, 1]; the paper uses 0.6-0.9; 1.0 never removes).
    """

    threshold: float = 0.9

    name: ClassVar[str] = "picky"
    title: ClassVar[str] = "Picky BPE"
    summary: ClassVar[str] = ("removes a token once a merge has taken nearly all its occurrences "
                              "(intermediate tokens such as \" th\" for \" the\"), freeing its slot")

    def __post_init__(self) -> None:
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, (int, float)):
            raise OptionsTypeError(f"threshold must be a number in (0, 1], got {self.threshold!r}")
        if not 0.0 < self.threshold <= 1.0:
            raise OptionsError(f"threshold must be in (0, 1] (1 removes nothing), got {self.threshold}")
        object.__setattr__(self, "threshold", float(self.threshold))

    def merge(
        self, counts: list[PretokenCounts], vocab_size: int, specials: list[str]
    ) -> Generator[BatchedTrainEvent]:
        from core.training.trainer import packed_input

        words, word_counts, corpus_bytes, counting_done = packed_input(counts.pop(0))  # (the table let go)
        yield counting_done
        del counting_done
        loop = PickyLoop(words, word_counts, specials, self.threshold)
        del words, word_counts
        yield from loop.batches(vocab_size, corpus_bytes)
        yield loop.finished()

    def tokenizer(self, finished: Finished, specials: list[str], pattern: Pattern) -> Tokenizer:
        from core.encode.tokenizer import PickyTokenizer

        return PickyTokenizer(finished.vocab, picky_events(finished.merges, finished.splits), specials,
                              pattern=pattern, threshold=self.threshold)


class PickyLoop:
    """The incremental merge loop with Picky's removals, over distinct pre-tokens and counts.

    Ids are the loop's own: 0-255 the bytes, then the special tokens, then each distinct
    token in order of first creation (a token made again keeps its id). The compiled
    kernel (``core.variants._picky_kernel``) runs the merges when it is built, unless the
    environment variable ``BPE_STUDIO_PURE_PYTHON`` is ``"1"``; otherwise (no C compiler at
    install time, or counts too large for it) `core.variants.picky_loop.PythonPickyLoop`
    does, with the same results. ``words`` may be a `PackedWords` (``counts`` None), which
    the kernel reads as it is.
    """

    tokens: list[bytes]  # id -> bytes
    live: dict[int, None]  # the live merged tokens (a dict: set semantics, insertion order)
    parents: dict[int, tuple[int, int]]  # each merged token's first parents
    merges: list[tuple[int, int, int]]  # (left, right, new) per merge
    splits: list[SplitEvent]

    def __init__(self, words: list[bytes] | PackedWords, counts: list[int] | None, specials: Sequence[str],
                 threshold: float) -> None:
        self.threshold = threshold
        self._state = _kernel_state(words, counts, specials, threshold)
        self._python: PythonPickyLoop | None = None
        if self._state is None:
            from core.variants.picky_loop import PythonPickyLoop

            if isinstance(words, PackedWords):
                words, counts = words.unpacked()
            assert counts is not None
            self._python = python = PythonPickyLoop(words, counts, specials, threshold)
            self.tokens, self.live, self.parents = python.tokens, python.live, python.parents
            self.merges, self.splits = python.merges, python.splits
        else:
            self.tokens, self.live, self.parents, self.merges, self.splits = initial_token_bytes(specials), {}, {}, [], []
        self._first_merged = len(self.tokens)

    @property
    def compiled(self) -> bool:
        """Whether the compiled kernel makes the merges."""
        return self._state is not None

    def batches(self, vocab_size: int, corpus_tokens: int) -> Iterator[MergeBatch]:
        """Merge until ``vocab_size`` live tokens (or no pair is left), in batches of at most
        64 merges, cut short after 20 ms."""
        if self._state is not None:
            yield from self._kernel_batches(self._state, vocab_size, corpus_tokens)
            return
        assert self._python is not None
        step = self._python.step
        columns: tuple[array[int], ...] = tuple(array("q") for _ in range(5))
        splits_before = 0
        restores = False
        started = time.monotonic()
        while self._first_merged + len(self.live) < vocab_size:
            merge = step()
            if merge is None:
                break
            left, right, new, count, removed, restored = merge
            corpus_tokens -= removed
            restores |= restored
            for column, value in zip(columns, (new, left, right, count, corpus_tokens)):
                column.append(value)
            if len(columns[0]) == _BATCH or time.monotonic() - started >= _BATCH_SECONDS:
                yield self._batch(columns, splits_before, restores)
                columns = tuple(array("q") for _ in range(5))
                splits_before, restores, started = len(self.splits), False, time.monotonic()
        if columns[0]:
            yield self._batch(columns, splits_before, restores)

    def _kernel_batches(self, state: PickyState, vocab_size: int, corpus_tokens: int) -> Iterator[MergeBatch]:
        """The kernel's steps as batches; the tokens, live set, parents, merges and splits
        follow each one (as the Python loop keeps them)."""
        tokens, live, parents, merges = self.tokens, self.live, self.parents, self.merges
        while self._first_merged + len(live) < vocab_size:
            *columns, splits = state.step(_BATCH, vocab_size, _BATCH_SECONDS)
            lefts, rights, new_ids, counts, removed, restored = (array("q", column) for column in columns)
            if not new_ids:
                return
            splits_before = len(self.splits)
            pending = iter(splits)
            split = next(pending, None)
            for rank, left, right, new in zip(range(len(merges), len(merges) + len(new_ids)), lefts, rights, new_ids):
                if new == len(tokens):
                    tokens.append(tokens[left] + tokens[right])
                    parents[new] = (left, right)
                live[new] = None
                merges.append((left, right, new))
                while split is not None and split[0] == rank:
                    _, token_id, pieces, occurrences = split
                    del live[token_id]
                    self.splits.append(SplitEvent(rank, token_id, tokens[token_id],
                                                  tuple(tokens[p] for p in array("i", pieces)), occurrences))
                    split = next(pending, None)
            running = array("q", accumulate(removed, operator.sub, initial=corpus_tokens))[1:]  # after each merge
            corpus_tokens = running[-1]
            yield self._batch((new_ids, lefts, rights, counts, running), splits_before, any(restored))

    def _batch(self, columns: tuple[array[int], ...], splits_before: int, restores: bool) -> MergeBatch:
        new_ids, lefts, rights, counts, tokens = columns
        return MergeBatch(len(self.merges) - len(new_ids), new_ids, lefts, rights, counts, tokens,
                          splits=tuple(self.splits[splits_before:]), restores=restores)

    def walk(self, x: int) -> list[int]:
        """The pieces of token ``x``: itself if live or one byte, else its first parents' pieces."""
        if x < self._first_merged or x in self.live:
            return [x]
        left, right = self.parents[x]
        return self.walk(left) + self.walk(right)

    def finished(self) -> Finished:
        """The compact vocabulary, every merge and every split."""
        tokens = self.tokens
        vocab = dict(enumerate(tokens[: self._first_merged]))
        for token_id in sorted(self.live):
            vocab[len(vocab)] = tokens[token_id]
        merges = [(tokens[a], tokens[b]) for a, b, _ in self.merges]
        return Finished(vocab=vocab, merges=merges, splits=tuple(self.splits))


def _kernel_state(words: list[bytes] | PackedWords, counts: list[int] | None, specials: Sequence[str],
                  threshold: float) -> PickyState | None:
    """The compiled loop's state over the words, or None for the Python loop (kernel not
    built, ``BPE_STUDIO_PURE_PYTHON=1``, or counts it cannot hold)."""
    if _PickyState is None or python_forced():
        return None
    try:
        if not isinstance(words, PackedWords):  # the kernel reads the packed form only
            assert counts is not None
            words = PackedWords(b"".join(words), array("q", map(len, words)).tobytes(), array("q", counts).tobytes())
        return _PickyState(words.blob, words.lengths, words.counts, [s.encode("utf-8") for s in specials], threshold)
    except OverflowError:  # counts beyond int64, or weighted bytes of 2**53 or more (not exact in doubles)
        return None


# ---------------------------------------------------------------------- the event list (file: formats/picky_events)


def picky_events(merges: Sequence[tuple[bytes, bytes]], splits: Sequence[SplitEvent]) -> list[Event]:
    """Merges and splits in the order they happened (a split follows the merge of its rank)."""
    events: list[Event] = []
    position = 0
    for rank, (left, right) in enumerate(merges):
        events.append(("merge", left, right))
        while position < len(splits) and splits[position].rank == rank:
            events.append(("split", splits[position].token, splits[position].pieces))
            position += 1
    return events
