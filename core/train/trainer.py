"""Byte-level BPE training: exact, parallel, streaming, cancellable.

The recipe (the exact rules: docs/semantics.md):
1. Check the input: the file, the vocabulary size, the special tokens, the pattern.
2. Read the corpus as tasks of documents (`core.corpus.documents`): files cut into chunks at
   exact pre-token boundaries (`core.corpus.chunks`), JSONL at line ends, Parquet by row
   group, compressed streams read once here and handed over in blocks.
3. Count pre-tokens per task in worker processes (`core.pretokenize.counting`); add the counts
   into a `PretokenCounts` (`core.corpus.pretoken_counts.count_events`: the same path as
   `core.count_pretokens`). Training from counts made elsewhere (`train_bpe_from_counts`)
   starts at step 4.
4. Merge the most frequent pair, repeatedly (`core.train.merge`, with its compiled kernel), until
   the vocabulary is full — after an initial tokenizer's merges, within the options
   (`core.train.options`: ``max_token_length``, ``min_frequency``, ``initial``).

`train_bpe_batches` yields an event after each step of the way (`core.events`), the merges
in batches of columns (`MergeBatch`) as the merge loop hands them over; `train_bpe` runs it
to the end, and `train_bpe_events` flattens it into one `MergeEvent` per merge. Closing
either iterator stops the workers at once.
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Generator, Iterable, Iterator
from itertools import accumulate

import numpy as np

from core.corpus.pretoken_counts import Counting, PretokenCounts, check_counting, count_events
from core.corpus.sources import ReadOptions, Source
from core.errors import CorpusError
from core.events import (
    BatchedTrainEvent,
    CountingDone,
    Finished,
    MergeBatch,
    PretokenizeProgress,
    TrainEvent,
    initial_token_bytes,
)
from core.train.merge import PackedWords, merge_pairs
from core.train.options import InitialTokenizer, TrainOptions, check_train_options
from core.pretokenize.patterns import Pattern, resolve_pattern
from core.pretokenize.specials import validate_special_tokens

__all__ = [
    "CorpusError", "train_bpe", "train_bpe_batches", "train_bpe_batches_from_iterator", "train_bpe_events",
    "train_bpe_from_counts", "train_bpe_from_counts_batches", "train_bpe_from_counts_events", "train_bpe_from_iterator",
]


def train_bpe(
    source: Source,
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    pattern: str = "gpt2",
    workers: int | None = None,
    field: str = "text",
    max_bytes: int | None = None,
    sample: float | None = None,
    seed: int = 0,
    doc_max_chars: int | None = None,
    max_token_length: int | None = None,
    min_frequency: int = 1,
    initial: InitialTokenizer | None = None,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Train a byte-level BPE tokenizer on a corpus.

    Args:
        source: a file, a directory (its files, recursively, in sorted order, hidden ones
            skipped), a glob pattern, or a list of them. Plain UTF-8 text (invalid bytes
            are kept byte-exact), JSONL (``.jsonl``, ``.ndjson``) or Parquet, any but
            Parquet optionally ``.gz``, ``.bz2``, ``.xz`` or ``.zst``. Each plain file,
            JSONL record and Parquet row is a document: nothing is counted or merged
            across a document boundary, as if a special token stood there.
        vocab_size: the vocabulary size to reach: 256 bytes + special tokens + merges.
        special_tokens: strings that split the text and get their own ids (256, 257, ...).
        pattern: ``"gpt2"``, ``"gpt4"`` or a regex for pre-tokenization.
        workers: processes for pre-tokenization (default: all cores).
        field: the JSONL field / Parquet column holding the text.
        max_bytes: stop reading after this many bytes of text (the last document is cut there).
        sample: keep this fraction of the documents, chosen by a hash of ``seed`` and each
            document's position (reproducible whatever the workers).
        seed: the sampling seed.
        doc_max_chars: cut each document after this many characters.
        max_token_length: never merge a pair whose token would be longer (bytes); at least 2.
        min_frequency: stop when the best pair occurs fewer times; at least 1.
        initial: continue training this byte-level tokenizer (a `Tokenizer` or a path
            `Tokenizer.load` opens): its merges first, in rank order, then new ones up to
            ``vocab_size``; its ids and special tokens' ids stay. Its pattern must be
            ``pattern``. See docs/semantics.md, "Trainer options".

    Returns:
        ``(vocab, merges)``: id -> token bytes, and the merges in the order learned.
        Training stops early when no pair is left to merge.

    Example: on a file holding ``"low low"``, ``train_bpe(path, 258, [])[1] ==
    [(b"o", b"w"), (b"l", b"ow")]`` — ``(l, o)`` and ``(o, w)`` both occur twice and the
    tie goes to the greater pair.
    """
    return _finish(train_bpe_batches(
        source, vocab_size, special_tokens, pattern=pattern, workers=workers, field=field,
        max_bytes=max_bytes, sample=sample, seed=seed, doc_max_chars=doc_max_chars,
        max_token_length=max_token_length, min_frequency=min_frequency, initial=initial,
    ))


def train_bpe_from_iterator(
    texts: Iterable[str],
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    pattern: str = "gpt2",
    workers: int | None = None,
    max_bytes: int | None = None,
    sample: float | None = None,
    seed: int = 0,
    doc_max_chars: int | None = None,
    max_token_length: int | None = None,
    min_frequency: int = 1,
    initial: InitialTokenizer | None = None,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Train like `train_bpe` on an iterable of strings, each one a document.

    The iterable is read once, in order, a few MB ahead of the workers (so a streamed
    Hugging Face dataset works: ``(row["text"] for row in dataset)``). A document's
    position, for ``sample``, is its index.
    """
    return _finish(train_bpe_batches_from_iterator(
        texts, vocab_size, special_tokens, pattern=pattern, workers=workers,
        max_bytes=max_bytes, sample=sample, seed=seed, doc_max_chars=doc_max_chars,
        max_token_length=max_token_length, min_frequency=min_frequency, initial=initial,
    ))


def _finish(stream: Iterator[BatchedTrainEvent]) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    finished = None
    for event in stream:
        if isinstance(event, Finished):
            finished = event
    assert finished is not None
    return finished.vocab, finished.merges


def train_bpe_events(
    source: Source,
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    pattern: str = "gpt2",
    workers: int | None = None,
    field: str = "text",
    max_bytes: int | None = None,
    sample: float | None = None,
    seed: int = 0,
    doc_max_chars: int | None = None,
    chunk_size: int | None = None,
    max_token_length: int | None = None,
    min_frequency: int = 1,
    initial: InitialTokenizer | None = None,
) -> Iterator[TrainEvent]:
    """Train like `train_bpe`, yielding events as it goes, one per merge.

    The input is checked at once (this call raises on bad input, before any work: every
    file of the corpus, and the first record of each JSONL or Parquet file); the returned
    iterator then yields `PretokenizeProgress` (several), `CountingDone`, one `MergeEvent`
    per merge and a final `Finished`. What is found only while reading (a bad line deep in
    a file, a corrupt compressed stream, a file changed during the run) raises from the
    iterator, before any result. Closing the iterator (or dropping it) cancels training
    and stops the worker processes. `train_bpe_batches` yields the same merges in batches
    of columns, which is cheaper when merges come by the thousand.

    Args:
        chunk_size: bytes per pre-tokenization chunk (default: sized from the corpus and
            the number of workers). Any value gives the same result.
        max_token_length, min_frequency, initial: as `train_bpe` takes them.
    """
    run = _check_run(source, None, vocab_size, special_tokens, pattern, workers, chunk_size,
                     ReadOptions(field, sample, seed, doc_max_chars, max_bytes),
                     TrainOptions(max_token_length, min_frequency), initial)
    return _one_event_per_merge(_train(*run), initial_token_bytes(run[0][2]))


def train_bpe_batches(
    source: Source,
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    pattern: str = "gpt2",
    workers: int | None = None,
    field: str = "text",
    max_bytes: int | None = None,
    sample: float | None = None,
    seed: int = 0,
    doc_max_chars: int | None = None,
    chunk_size: int | None = None,
    max_token_length: int | None = None,
    min_frequency: int = 1,
    initial: InitialTokenizer | None = None,
) -> Iterator[BatchedTrainEvent]:
    """Train like `train_bpe_events`, yielding the merges in batches (`MergeBatch`).

    The same stream as `train_bpe_events`, except that each run of consecutive merges
    (up to `core.train.merge.KERNEL_BATCH`) comes as one `MergeBatch` of id columns instead
    of one `MergeEvent` per merge; `MergeBatch.extend_vocab` turns the ids into bytes,
    `MergeBatch.events` into `MergeEvent`s. Closing the iterator cancels training.

        tokens = core.initial_token_bytes(specials)
        for event in core.train_bpe_batches(path, 10_000, specials):
            if isinstance(event, core.MergeBatch):
                event.extend_vocab(tokens)   # tokens[event.token_ids[-1]] is the newest token

    With ``initial``, the batches number tokens as training does (the 256 bytes, the
    special tokens — the initial tokenizer's first — then one id per merge, its merges
    first), from ``initial_token_bytes(the initial tokenizer's specials + the new ones)``;
    `Finished` has the tokenizer's own ids, the same ones when it was trained here.
    """
    return _train(*_check_run(source, None, vocab_size, special_tokens, pattern, workers, chunk_size,
                              ReadOptions(field, sample, seed, doc_max_chars, max_bytes),
                              TrainOptions(max_token_length, min_frequency), initial))


def train_bpe_batches_from_iterator(
    texts: Iterable[str],
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    pattern: str = "gpt2",
    workers: int | None = None,
    max_bytes: int | None = None,
    sample: float | None = None,
    seed: int = 0,
    doc_max_chars: int | None = None,
    chunk_size: int | None = None,
    max_token_length: int | None = None,
    min_frequency: int = 1,
    initial: InitialTokenizer | None = None,
) -> Iterator[BatchedTrainEvent]:
    """`train_bpe_batches` on an iterable of strings, each one a document (see
    `train_bpe_from_iterator`); a progress event's total is the bytes read so far (the
    length is not known)."""
    if isinstance(texts, (str, bytes)):
        raise TypeError("texts must be an iterable of strings (documents), not a single string")
    return _train(*_check_run(None, iter(texts), vocab_size, special_tokens, pattern, workers, chunk_size,
                              ReadOptions("text", sample, seed, doc_max_chars, max_bytes),
                              TrainOptions(max_token_length, min_frequency), initial))


def train_bpe_from_counts(
    counts: PretokenCounts,
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    max_token_length: int | None = None,
    min_frequency: int = 1,
    initial: InitialTokenizer | None = None,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Train from pre-token counts (`core.count_pretokens`, `PretokenCounts.load`, or
    ``a + b`` of counts made anywhere): exactly the merges `train_bpe` gives on the
    counted corpus with the same options.

    Args:
        special_tokens: the special tokens, in id order (default: the ones the counts were
            made with); they must be the ones the counts were made with (with ``initial``,
            its special tokens and these).
        The rest: as `train_bpe` takes them; the pattern is the one the counts were made with.
    """
    return _finish(train_bpe_from_counts_batches(
        counts, vocab_size, special_tokens, max_token_length=max_token_length,
        min_frequency=min_frequency, initial=initial,
    ))


def train_bpe_from_counts_events(
    counts: PretokenCounts,
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    max_token_length: int | None = None,
    min_frequency: int = 1,
    initial: InitialTokenizer | None = None,
) -> Iterator[TrainEvent]:
    """`train_bpe_from_counts`, yielding `CountingDone`, one `MergeEvent` per merge and
    `Finished` (as `train_bpe_events` does after counting)."""
    specials, train_options = _check_counts_run(counts, vocab_size, special_tokens,
                                                TrainOptions(max_token_length, min_frequency), initial)
    return _one_event_per_merge(_train_from_counts(counts, vocab_size, specials, train_options),
                                initial_token_bytes(specials))


def train_bpe_from_counts_batches(
    counts: PretokenCounts,
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    max_token_length: int | None = None,
    min_frequency: int = 1,
    initial: InitialTokenizer | None = None,
) -> Iterator[BatchedTrainEvent]:
    """`train_bpe_from_counts`, yielding the merges in batches (as `train_bpe_batches`)."""
    specials, train_options = _check_counts_run(counts, vocab_size, special_tokens,
                                                TrainOptions(max_token_length, min_frequency), initial)
    return _train_from_counts(counts, vocab_size, specials, train_options)


def _check_counts_run(
    counts: PretokenCounts,
    vocab_size: int,
    special_tokens: Iterable[str] | None,
    train_options: TrainOptions,
    initial: InitialTokenizer | None,
) -> tuple[list[str], TrainOptions]:
    if not isinstance(counts, PretokenCounts):
        raise TypeError(f"counts must be PretokenCounts, got {type(counts).__name__}")
    if special_tokens is None:
        special_tokens = counts.special_tokens
    specials = validate_special_tokens(special_tokens)
    train_options, specials = _check_training(vocab_size, specials, resolve_pattern(counts.pattern),
                                              train_options, initial)
    if set(specials) != set(counts.special_tokens):
        raise ValueError(
            f"these pre-token counts were made with the special tokens {list(counts.special_tokens)}, "
            f"not {specials}: train with the special tokens they were counted with, or count again"
        )
    return specials, train_options


_Run = tuple[Counting, int, TrainOptions]


def _check_run(
    source: Source | None,
    texts: Iterator[str] | None,
    vocab_size: int,
    special_tokens: Iterable[str] | None,
    pattern: str,
    workers: int | None,
    chunk_size: int | None,
    options: ReadOptions,
    train_options: TrainOptions,
    initial: InitialTokenizer | None,
) -> _Run:
    """Check everything but the corpus, then the corpus (raising on a bad one), and give
    `_train`'s arguments (``train_options`` completed with the ``initial`` tokenizer,
    whose special tokens come first)."""
    specials = validate_special_tokens(special_tokens)
    compiled = resolve_pattern(pattern)
    train_options, specials = _check_training(vocab_size, specials, compiled, train_options, initial)
    return check_counting(source, texts, specials, compiled, workers, chunk_size, options), vocab_size, train_options


def _check_training(
    vocab_size: int,
    specials: list[str],
    pattern: Pattern,
    train_options: TrainOptions,
    initial: InitialTokenizer | None,
) -> tuple[TrainOptions, list[str]]:
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TypeError(f"vocab_size must be an integer, got {vocab_size!r}")
    if vocab_size < 256 + len(specials):
        raise ValueError(
            f"vocab_size {vocab_size} is too small: it needs at least 256 byte tokens "
            f"+ {len(specials)} special tokens = {256 + len(specials)}"
        )
    return check_train_options(
        max_token_length=train_options.max_token_length, min_frequency=train_options.min_frequency,
        initial=initial, special_tokens=specials, pattern=pattern, vocab_size=vocab_size,
    )


def _one_event_per_merge(stream: Generator[BatchedTrainEvent], token_bytes: list[bytes]) -> Iterator[TrainEvent]:
    try:
        for event in stream:
            if isinstance(event, MergeBatch):
                event.extend_vocab(token_bytes)
                yield from event.events(token_bytes)
            else:
                yield event
    finally:
        stream.close()  # a cancel reaches the trainer (and its workers) at once


def _train(counting: Counting, vocab_size: int, train_options: TrainOptions) -> Generator[BatchedTrainEvent]:
    """Count (`core.corpus.pretoken_counts.count_events`), then train from the counts."""
    counts = yield from count_events(*counting)
    yield from _train_from_counts(counts, vocab_size, counting[2], train_options)


def _train_from_counts(
    counts: PretokenCounts, vocab_size: int, specials: list[str], train_options: TrainOptions
) -> Generator[BatchedTrainEvent]:
    # the statistics in numpy: with millions of distinct pre-tokens, Python's sort and sums
    # took a second (7.5M on 500 MB)
    packed = counts.packed_words()  # the native table's: no Python object per pre-token
    words: list[bytes] | PackedWords
    if packed is not None:
        words, word_counts = PackedWords(*packed), None
        lengths, occurrences = np.frombuffer(words.lengths, np.int64), np.frombuffer(words.counts, np.int64)
    else:
        words, word_counts = counts.items()
        lengths, occurrences = counts.lengths_and_counts()
    longest = int(lengths.argmax()) if len(lengths) else -1
    if longest < 0:
        longest_pretoken = b""
    elif isinstance(words, PackedWords):
        start = int(lengths[:longest].sum())
        longest_pretoken = words.blob[start : start + int(lengths[longest])]
    else:
        longest_pretoken = words[longest]
    frequencies = array("q", np.sort(occurrences)[::-1].tobytes())
    corpus_bytes = int(lengths @ occurrences)
    corpus_tokens = corpus_bytes
    yield CountingDone(
        distinct=len(lengths),
        total=int(occurrences.sum()),
        invalid_bytes=counts.invalid_bytes,
        corpus_bytes=corpus_bytes,
        frequencies=frequencies,
        longest_pretoken=longest_pretoken,
        documents=counts.documents,
        input_bytes=counts.input_bytes,
    )

    token_bytes = initial_token_bytes(specials)
    merges: list[tuple[bytes, bytes]] = []
    num_merges = vocab_size - len(token_bytes)  # an initial tokenizer's merges included
    initial = train_options.initial
    rank = 0
    batches = merge_pairs(
        words, word_counts, token_bytes, num_merges, max_token_length=train_options.max_token_length,
        min_frequency=train_options.min_frequency, forced=initial.forced if initial else (),
    )
    # the kernel has its own copy: the words and their arrays are not held while it merges
    del words, word_counts, packed, lengths, occurrences
    for lefts, rights, new_ids, pair_counts, removed in batches:
        # all at C speed: no Python work per merge
        after = array("q", accumulate(removed, operator.sub, initial=corpus_tokens))
        del after[0]
        corpus_tokens = after[-1]
        # merge_pairs has already appended this batch's tokens to token_bytes
        merges += zip(map(token_bytes.__getitem__, lefts), map(token_bytes.__getitem__, rights))
        yield MergeBatch(rank, new_ids, lefts, rights, pair_counts, after)
        rank += len(new_ids)
    vocab = initial.final_vocab(token_bytes) if initial else dict(enumerate(token_bytes))
    yield Finished(vocab=vocab, merges=merges)
