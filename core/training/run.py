"""`TrainRun`: one training run, to iterate (progress, merge batches) or to wait on.

`core.train` checks its input and returns a run that has not started: iterating it does
the work, yielding `PretokenizeProgress` (several), `CountingDone`, a `MergeBatch` per
batch of merges and a final `Finished`; `result` runs it to the end and gives
``(vocab, merges)``; `close` (or leaving a ``with`` block) cancels it and stops its worker
processes at once.

    with core.train("corpus.txt", core.TrainOptions(10_000, ["<|endoftext|>"])) as run:
        for event in run:
            ...                           # a GUI or a progress bar follows it
    vocab, merges = run.result()           # the finished run's result
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from types import TracebackType

from typing import TYPE_CHECKING

from array import array

from core.errors import OptionsError
from core.events import BatchedTrainEvent, CountingDone, Finished, MergeBatch, TrainEvent, initial_token_bytes

if TYPE_CHECKING:
    from core.encode.tokenizer import Tokenizer
    from core.training.provenance import Provenance
    from core.pretokenize.patterns import Pattern
    from core.variants.base import Variant

__all__ = ["TrainRun"]


class TrainRun:
    """A checked training run. Iterate it once (it is its own iterator), or call `result`.

    Attributes:
        special_tokens: the run's special tokens in id order (an initial tokenizer's first):
            ``initial_token_bytes(run.special_tokens)`` is the vocabulary before the first
            `MergeBatch`, which `MergeBatch.extend_vocab` grows.
    """

    def __init__(self, stream: Generator[BatchedTrainEvent], special_tokens: list[str],
                 variant: Variant | None = None, pattern: Pattern | None = None) -> None:
        self._stream = stream
        self.special_tokens = tuple(special_tokens)
        self.variant = variant
        self._pattern = pattern
        self._finished: Finished | None = None
        self._closed = False
        self.sources: tuple[str, ...] = ()
        self._counts = array("q")
        self._per_source = array("q")
        self._chosen = array("q")

    def __iter__(self) -> Iterator[BatchedTrainEvent]:
        return self

    def __next__(self) -> BatchedTrainEvent:
        if self._closed:
            raise StopIteration
        try:
            event = next(self._stream)
        except BaseException:
            self._closed = True
            raise
        if isinstance(event, Finished):
            self._finished = event
        elif isinstance(event, CountingDone):
            self.sources = event.sources
        elif isinstance(event, MergeBatch) and event.per_source is not None:
            self._counts.extend(event.counts)
            self._per_source.extend(event.per_source)
            if event.chosen is not None:
                self._chosen.extend(event.chosen)
        return event

    def result(self) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
        """``(vocab, merges)``: id -> token bytes, and the merges in the order learned — the
        run taken to its end first if it is not there yet.

        Raises:
            RuntimeError: the run was closed before it finished.
        """
        for _ in self:
            pass
        if self._finished is None:
            raise RuntimeError("this training run was closed before it finished: it has no result")
        return self._finished.vocab, self._finished.merges

    def tokenizer(self) -> Tokenizer:
        """The trained tokenizer (the run taken to its end first): a `core.Tokenizer` that
        encodes as the run's variant specifies (Picky: replaying merges and splits;
        SuperBPE: its stage-2 pre-tokens, then ranks).

        Raises:
            RuntimeError: the run was closed before it finished.
        """
        vocab, merges = self.result()
        assert self._finished is not None
        if self.variant is not None:
            from core.pretokenize.patterns import resolve_pattern

            return self.variant.tokenizer(self._finished, list(self.special_tokens), self._pattern or resolve_pattern())
        from core.encode.tokenizer import Tokenizer

        return Tokenizer(vocab, merges, list(self.special_tokens), pattern=self._pattern or "gpt2")

    def provenance(self) -> list[Provenance]:
        """One `Provenance` per merge, in rank order: each named source's count of the merged
        pair at the merge (the run taken to its end first; plain BPE on named sources).

        Raises:
            ValueError: the run was not on named sources.
            RuntimeError: the run was closed before it finished.
        """
        from core.training.provenance import provenance_records

        _vocab, merges = self.result()
        if not self.sources:
            raise OptionsError("provenance needs named sources: train on {name: source, ...}")
        if len(self._counts) != len(merges):
            assert self.variant is not None
            raise OptionsError(f"provenance is kept for plain and parity-aware BPE on named sources, not yet for "
                               f"{self.variant.title}")
        return provenance_records(self.sources, [left + right for left, right in merges], self._counts,
                                  self._per_source, self._chosen)

    @property
    def finished(self) -> Finished | None:
        """The run's `Finished` event, once it finished (with what a variant recorded)."""
        return self._finished

    def merge_events(self) -> Iterator[TrainEvent]:
        """The same run with one `MergeEvent` per merge (with its token bytes) instead of
        batches, and Picky's `SplitEvent`s after their merge. Closing this iterator closes the run."""
        token_bytes = initial_token_bytes(self.special_tokens)
        try:
            for event in self:
                if isinstance(event, MergeBatch):
                    event.extend_vocab(token_bytes)
                    yield from event.events(token_bytes)
                else:
                    yield event
        finally:
            self.close()

    def close(self) -> None:
        """Cancel the run (if not finished): its worker processes stop at once."""
        self._closed = True
        self._stream.close()

    def __enter__(self) -> TrainRun:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
