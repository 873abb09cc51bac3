"""Training events: the small records the trainer yields while it trains.

A front end (the GUI's training process, the terminal progress display) follows a training
run (`core.train`'s `TrainRun`) by iterating these; `TrainRun.result` just runs it to the end.

Merges come in two shapes. A run yields a `MergeBatch` per batch of merges: columns of
token ids straight from the merge loop, cheap to pickle and to append to arrays.
`TrainRun.merge_events` flattens each batch into one `MergeEvent` per merge, with the
token bytes. Growing the vocabulary from a batch has one home,
`MergeBatch.extend_vocab`, starting from `initial_token_bytes`.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from core.errors import OptionsError


@dataclass(frozen=True, slots=True)
class PretokenizeProgress:
    """Reading and pre-tokenizing: ``done`` of ``total`` input bytes are counted (bytes on
    disk: compressed bytes for a compressed file), in ``documents`` documents so far."""

    done: int
    total: int
    documents: int = 0


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
        documents: documents read (plain files, JSONL records, Parquet rows, texts), after sampling.
        input_bytes: bytes of input read (on disk: compressed bytes for compressed files).
        sources: the names of the named sources trained on, in order (``()``: one corpus);
            each `MergeBatch` then gives its merges' counts per source (``per_source``).
    """

    distinct: int
    total: int
    invalid_bytes: int
    corpus_bytes: int
    frequencies: array[int]
    longest_pretoken: bytes
    documents: int = 0
    input_bytes: int = 0
    sources: tuple[str, ...] = ()


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
    stage: int = 0
    """0 for one-stage training; SuperBPE's merges say their stage, 1 or 2."""

    @property
    def token(self) -> bytes:
        return self.left + self.right


@dataclass(frozen=True, slots=True)
class SplitEvent:
    """Picky BPE removed ``token`` (id ``token_id``) from the vocabulary right after the
    merge at rank ``rank``: each of its ``occurrences`` in the corpus became ``pieces``.

    Example: after merging ``(b" th", b"e")``, ``b" th"`` (id 300) is left in few places
    but ``b" the"``: ``SplitEvent(rank=57, token_id=300, token=b" th", pieces=(b" t", b"h"),
    occurrences=12)``.
    """

    rank: int
    token_id: int
    token: bytes
    pieces: tuple[bytes, ...]
    occurrences: int


def initial_token_bytes(special_tokens: Iterable[str]) -> list[bytes]:
    """The vocabulary before any merge, as a list id -> bytes (SPEC §1): the 256 single bytes,
    then the special tokens in the order given. `MergeBatch.extend_vocab` grows it."""
    return [bytes([i]) for i in range(256)] + [token.encode("utf-8") for token in special_tokens]


@dataclass(frozen=True, slots=True)
class MergeBatch:
    """Consecutive merges as columns: merge ``i`` of the batch, at rank ``first_rank + i``,
    joined tokens ``left_ids[i]`` and ``right_ids[i]`` into the new token ``token_ids[i]``.

    Each column is an ``array('q')``, one value per merge: compact, quick to pickle, and
    ``numpy.asarray(column)`` views it without a copy. The ids refer to the vocabulary as it
    grows; `extend_vocab` turns them into bytes. Treat the columns as read-only.

    Attributes:
        first_rank: rank (0-based) of the batch's first merge; the ranks are consecutive.
        token_ids: the new token of each merge; consecutive, following the vocabulary so far.
        left_ids, right_ids: the merged pair of each merge.
        counts: the pair count at the time of each merge.
        corpus_tokens: pre-token part of the corpus in tokens after each merge, so
            ``corpus_bytes / corpus_tokens[i]`` is the bytes-per-token compression so far
            (after the merge's splits, for Picky BPE).
        stage: 0 for one-stage training; SuperBPE's batches say their stage (1 or 2; a
            batch never spans the transition).
        splits: Picky BPE's removals during the batch, in order (each after its merge).
        restores: a merge may make a token that exists already (Picky BPE: removed, or
            made by another pair, it keeps its first id); otherwise each id is the next.
        per_source: with named sources (`CountingDone.sources`), each merge's pair count per
            source at the time of the merge, merge after merge (``len(sources)`` values a
            merge, adding up to its count): where the merge's pairs came from; else ``None``.
        chosen: parity-aware BPE: per merge, the index of the source it was made for (-1:
            all sources together); else ``None``.

    Example: training on ``"low low"`` up to 258 tokens makes one batch: ``first_rank=0,
    token_ids=[256, 257], left_ids=[111, 108], right_ids=[119, 256], counts=[2, 2],
    corpus_tokens=[5, 3]``, that is ``o`` + ``w`` -> ``ow`` (id 256), then ``l`` + ``ow`` -> ``low``.
    """

    first_rank: int
    token_ids: array[int]
    left_ids: array[int]
    right_ids: array[int]
    counts: array[int]
    corpus_tokens: array[int]
    stage: int = 0
    splits: tuple[SplitEvent, ...] = ()
    restores: bool = False
    per_source: array[int] | None = None
    chosen: array[int] | None = None

    def __len__(self) -> int:
        return len(self.token_ids)

    @property
    def ranks(self) -> range:
        return range(self.first_rank, self.first_rank + len(self.token_ids))

    def extend_vocab(self, token_bytes: list[bytes]) -> None:
        """Append the batch's new tokens to ``token_bytes`` (id -> bytes): for each merge in
        order, ``token_bytes[left] + token_bytes[right]`` (a merge may use a token made
        earlier in the same batch).

        Args:
            token_bytes: every token before this batch: `initial_token_bytes`, grown by the
                earlier batches.

        Raises:
            ValueError: a new id that does not follow ``token_bytes``, or an id made again
                with other bytes (a batch skipped or applied twice).
        """
        append = token_bytes.append
        for token_id, left, right in zip(self.token_ids, self.left_ids, self.right_ids):
            known = len(token_bytes)
            if token_id == known and left < known and right < known:
                append(token_bytes[left] + token_bytes[right])
            elif (not self.restores or max(token_id, left, right) >= known
                  or token_bytes[token_id] != token_bytes[left] + token_bytes[right]):
                raise OptionsError(
                    f"the batch makes token id {token_id}, but the vocabulary holds {len(token_bytes)} "
                    "tokens; extend it with every batch, in order"
                )

    def events(self, token_bytes: Sequence[bytes]) -> Iterator[MergeEvent | SplitEvent]:
        """One `MergeEvent` per merge of the batch, each followed by its `SplitEvent`s.

        Args:
            token_bytes: id -> bytes, holding the batch's own tokens (after `extend_vocab`).
        """
        splits = iter(self.splits)
        split = next(splits, None)
        for rank, token_id, left, right, count, tokens in zip(
            self.ranks, self.token_ids, self.left_ids, self.right_ids, self.counts, self.corpus_tokens
        ):
            yield MergeEvent(rank, token_id, token_bytes[left], token_bytes[right], count, tokens, self.stage)
            while split is not None and split.rank == rank:
                yield split
                split = next(splits, None)

    @classmethod
    def concat(cls, batches: Sequence[MergeBatch]) -> MergeBatch:
        """The consecutive ``batches`` (at least one) as one batch."""
        first = batches[0]
        if len(batches) == 1:
            return first
        columns: tuple[array[int], ...] = tuple(array("q") for _ in range(5))
        rank = first.first_rank
        splits: list[SplitEvent] = []
        for batch in batches:
            if batch.first_rank != rank:
                raise OptionsError(f"batches are not consecutive: rank {batch.first_rank} follows {rank - 1}")
            if batch.stage != first.stage:
                raise OptionsError(f"batches of stages {first.stage} and {batch.stage} cannot be joined")
            rank += len(batch)
            splits += batch.splits
            for column, part in zip(columns, (batch.token_ids, batch.left_ids, batch.right_ids,
                                              batch.counts, batch.corpus_tokens)):
                column.extend(part)
        token_ids, left_ids, right_ids, counts, corpus_tokens = columns

        def joined(name: str) -> array[int] | None:  # per_source, chosen: kept when every batch has them
            parts = [getattr(batch, name) for batch in batches]
            if any(part is None for part in parts):
                return None
            out = array("q")
            for part in parts:
                out.extend(part)
            return out

        return cls(first.first_rank, token_ids, left_ids, right_ids, counts, corpus_tokens, first.stage, tuple(splits),
                   any(b.restores for b in batches), per_source=joined("per_source"), chosen=joined("chosen"))


@dataclass(frozen=True, slots=True)
class Finished:
    """Training finished (vocabulary full, or no pair left).

    Attributes:
        vocab, merges: the run's result (`core.TrainRun.result`).
        splits: Picky BPE's removals, in order (with ``merges``, the event list its tokenizer replays).
        stage1_merges: SuperBPE's merges of stage 1 (the first ones of ``merges``).
    """

    vocab: dict[int, bytes]
    merges: list[tuple[bytes, bytes]]
    splits: tuple[SplitEvent, ...] = ()
    stage1_merges: int | None = None


TrainEvent = PretokenizeProgress | CountingDone | MergeEvent | SplitEvent | Finished
"""What `TrainRun.merge_events` yields."""

BatchedTrainEvent = PretokenizeProgress | CountingDone | MergeBatch | Finished
"""What a `TrainRun` yields."""
