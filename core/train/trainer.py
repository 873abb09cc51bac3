"""Byte-level BPE training: exact, parallel, streaming, cancellable.

The recipe (the exact rules: docs/semantics.md):
1. Check the input: the file, the vocabulary size, the special tokens, the pattern.
2. Cut the file into chunks at exact pre-token boundaries (`core.corpus.chunks`).
3. Count pre-tokens per chunk in worker processes (`core.pretokenize.counting`); add the counts.
4. Merge the most frequent pair, repeatedly (`core.train.merge`, with its compiled kernel), until
   the vocabulary is full.

`train_bpe_batches` yields an event after each step of the way (`core.events`), the merges
in batches of columns (`MergeBatch`) as the merge loop hands them over; `train_bpe` runs it
to the end, and `train_bpe_events` flattens it into one `MergeEvent` per merge. Closing
either iterator stops the workers at once.
"""

from __future__ import annotations

import operator
import os
import signal
from array import array
from collections.abc import Generator, Iterable, Iterator
from itertools import accumulate
from pathlib import Path

from core.corpus.check import check_corpus
from core.corpus.chunks import plan_chunks
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
from core.train.merge import merge_pairs
from core.pretokenize.patterns import Pattern, resolve_pattern
from core.pretokenize.counting import ChunkCounts, PretokenCounts, count_chunk
from core.corpus.scheduler import WorkerPool, results_in_order
from core.pretokenize.specials import validate_special_tokens

__all__ = ["CorpusError", "train_bpe", "train_bpe_batches", "train_bpe_events"]

MIN_CHUNK_BYTES = 1 << 20
MAX_CHUNK_BYTES = 2 << 20
PROGRESS_INTERVAL = 0.1  # seconds between progress events while workers count


def train_bpe(
    input_path: str | os.PathLike[str],
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    pattern: str = "gpt2",
    workers: int | None = None,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Train a byte-level BPE tokenizer on a text file.

    Args:
        input_path: the corpus, a UTF-8 text file (invalid bytes are kept byte-exact).
        vocab_size: the vocabulary size to reach: 256 bytes + special tokens + merges.
        special_tokens: strings that split the text and get their own ids (256, 257, ...).
        pattern: ``"gpt2"``, ``"gpt4"`` or a regex for pre-tokenization.
        workers: processes for pre-tokenization (default: all cores).

    Returns:
        ``(vocab, merges)``: id -> token bytes, and the merges in the order learned.
        Training stops early when no pair is left to merge.

    Example: on a file holding ``"low low"``, ``train_bpe(path, 258, [])[1] ==
    [(b"o", b"w"), (b"l", b"ow")]`` — ``(l, o)`` and ``(o, w)`` both occur twice and the
    tie goes to the greater pair.
    """
    finished = None
    for event in train_bpe_batches(
        input_path, vocab_size, special_tokens, pattern=pattern, workers=workers
    ):
        if isinstance(event, Finished):
            finished = event
    assert finished is not None
    return finished.vocab, finished.merges


def train_bpe_events(
    input_path: str | os.PathLike[str],
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    pattern: str = "gpt2",
    workers: int | None = None,
    chunk_size: int | None = None,
) -> Iterator[TrainEvent]:
    """Train like `train_bpe`, yielding events as it goes, one per merge.

    The input is checked at once (this call raises on bad input, before any work); the
    returned iterator then yields `PretokenizeProgress` (several), `CountingDone`, one
    `MergeEvent` per merge and a final `Finished`. Closing the iterator (or dropping it)
    cancels training and stops the worker processes. `train_bpe_batches` yields the same
    merges in batches of columns, which is cheaper when merges come by the thousand.

    Args:
        chunk_size: bytes per pre-tokenization chunk (default: sized from the file and
            the number of workers). Any value gives the same result.
    """
    path, size, vocab_size, specials, compiled, workers, chunk_size = _check_run(
        input_path, vocab_size, special_tokens, pattern, workers, chunk_size
    )
    stream = _train(path, size, vocab_size, specials, compiled, workers, chunk_size)
    return _one_event_per_merge(stream, initial_token_bytes(specials))


def train_bpe_batches(
    input_path: str | os.PathLike[str],
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    pattern: str = "gpt2",
    workers: int | None = None,
    chunk_size: int | None = None,
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
    """
    return _train(*_check_run(input_path, vocab_size, special_tokens, pattern, workers, chunk_size))


def _check_run(
    input_path: str | os.PathLike[str],
    vocab_size: int,
    special_tokens: Iterable[str] | None,
    pattern: str,
    workers: int | None,
    chunk_size: int | None,
) -> tuple[Path, int, int, list[str], Pattern, int, int]:
    """Check the input (raising on a bad one) and give `_train`'s arguments."""
    path, size = check_corpus(input_path)
    specials = validate_special_tokens(special_tokens)
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TypeError(f"vocab_size must be an integer, got {vocab_size!r}")
    if vocab_size < 256 + len(specials):
        raise ValueError(
            f"vocab_size {vocab_size} is too small: it needs at least 256 byte tokens "
            f"+ {len(specials)} special tokens = {256 + len(specials)}"
        )
    compiled = resolve_pattern(pattern)
    workers = (os.cpu_count() or 1) if workers is None else workers
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if chunk_size is None:
        # in one process a chunk is also the longest stretch without an event to cancel at
        largest = MAX_CHUNK_BYTES if workers > 1 else MIN_CHUNK_BYTES
        chunk_size = min(largest, max(MIN_CHUNK_BYTES, size // (8 * workers)))
    elif chunk_size < 1:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    return path, size, vocab_size, specials, compiled, workers, chunk_size


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


def _train(
    path: Path,
    size: int,
    vocab_size: int,
    specials: list[str],
    pattern: Pattern,
    workers: int,
    chunk_size: int,
) -> Generator[BatchedTrainEvent]:
    yield PretokenizeProgress(0, size)
    counts = PretokenCounts()
    chunks = plan_chunks(path, size, pattern, specials, chunk_size)
    for done, chunk_counts in _count_chunks(path, chunks, pattern, specials, workers):
        if chunk_counts is not None:
            counts.add(chunk_counts)
        yield PretokenizeProgress(done, size)

    words, word_counts = counts.items()
    invalid = counts.invalid
    del counts
    frequencies = array("q", sorted(word_counts, reverse=True))
    corpus_bytes = sum(len(w) * c for w, c in zip(words, word_counts))
    corpus_tokens = corpus_bytes
    yield CountingDone(
        distinct=len(words),
        total=sum(frequencies),
        invalid_bytes=invalid,
        corpus_bytes=corpus_bytes,
        frequencies=frequencies,
        longest_pretoken=max(words, key=len, default=b""),
    )

    token_bytes = initial_token_bytes(specials)
    merges: list[tuple[bytes, bytes]] = []
    num_merges = vocab_size - len(token_bytes)
    rank = 0
    for lefts, rights, new_ids, pair_counts, removed in merge_pairs(words, word_counts, token_bytes, num_merges):
        # all at C speed: no Python work per merge
        after = array("q", accumulate(removed, operator.sub, initial=corpus_tokens))
        del after[0]
        corpus_tokens = after[-1]
        # merge_pairs has already appended this batch's tokens to token_bytes
        merges += zip(map(token_bytes.__getitem__, lefts), map(token_bytes.__getitem__, rights))
        yield MergeBatch(rank, new_ids, lefts, rights, pair_counts, after)
        rank += len(new_ids)
    yield Finished(vocab=dict(enumerate(token_bytes)), merges=merges)


def _count_chunk(
    path: str,
    start: int,
    end: int,
    pattern: Pattern,
    specials: list[str],
    cache: dict[str, list[str]],
) -> ChunkCounts:
    """Pre-token counts of one chunk of the file (compact: see `core.pretokenize.counting`)."""
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    return count_chunk(data, pattern, specials, cache)


def _init_worker() -> None:
    """Let a worker whose parent has gone die quietly (not with a BrokenPipeError traceback)."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)


_worker_cache: dict[str, list[str]] = {}
"""Each worker process's piece cache, kept across the chunks it counts."""

ChunkTask = tuple[str, int, int, str, list[str]]
"""A chunk to count: ``(path, start, end, pattern source, special tokens)``."""


def _count_chunk_task(task: ChunkTask, _warm: object = None) -> ChunkCounts:
    path, start, end, pattern_source, specials = task
    return _count_chunk(path, start, end, resolve_pattern(pattern_source), specials, _worker_cache)


def _count_chunks(
    path: Path,
    chunks: list[tuple[int, int]],
    pattern: Pattern,
    specials: list[str],
    workers: int,
) -> Iterator[tuple[int, ChunkCounts | None]]:
    """Yield ``(bytes done, counts)`` per chunk, in order, and ``(done, None)``
    every `PROGRESS_INTERVAL` while waiting, so a consumer can cancel between events.

    This process is one of the ``workers``: it counts chunks itself from the start, while
    the other ``workers - 1`` processes are still starting (spawning and importing takes a
    few tenths of a second), and takes the next chunk whenever none of theirs is ready
    (`core.corpus.scheduler`).
    """
    cache: dict[str, list[str]] = {}
    tasks: list[ChunkTask] = [(str(path), start, end, pattern.source, specials) for start, end in chunks]

    def count_here(task: ChunkTask) -> ChunkCounts:
        return _count_chunk(task[0], task[1], task[2], pattern, specials, cache)

    done = 0
    helpers = min(workers, len(chunks)) - 1
    if helpers == 0:
        for task in tasks:
            done += task[2] - task[1]
            yield done, count_here(task)
        return
    # Spawned, not forked: a forked worker would inherit this process's pipes (a GUI's
    # reading end would never see this process die) and outlive a killed parent.
    pool = WorkerPool(helpers, fork=False, initializer=_init_worker)
    try:
        position = 0
        for counted in results_in_order(tasks, pool, _count_chunk_task, run_here=count_here, poll=PROGRESS_INTERVAL):
            if counted is None:
                yield done, None
                continue
            done += tasks[position][2] - tasks[position][1]
            position += 1
            yield done, counted
    finally:
        pool.close()
