"""Counting a corpus's pre-tokens into `PretokenCounts`: the one counting path.

`check_counting` checks the input (paths, folders, globs, or an iterable of texts), the
workers and the chunk size, before any work; `count_events` counts it in worker threads or
processes (`core.corpus.counting`), yielding progress, and returns the counts. `core.train`
counts through it, then trains from its counts (`core.training.trainer`); `count_pretokens`
is the public face, here or on a Dask cluster (`core.distributed`).
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from core.corpus.counting import count_documents
from core.corpus.documents import Task, check_unchanged, text_tasks
from core.corpus.named_counts import NamedCounts, check_source_names
from core.corpus.planning import plan_tasks
from core.corpus.pretoken_counts import PretokenCounts
from core.corpus.sources import Corpus, ReadOptions, Source, open_corpus
from core.errors import CorpusError, OptionsError, OptionsTypeError
from core.events import PretokenizeProgress
from core.pretokenize.counting import CountTable, count_chunk_bytes
from core.pretokenize.patterns import Pattern, resolve_pattern
from core.pretokenize.specials import validate_special_tokens
from core.steps import map_steps, run_steps

__all__ = ["CountingRun", "NamedCountingRun", "check_counting", "check_named_counting", "count_events",
           "count_named_events", "count_pretokens", "split_input"]

MIN_CHUNK_BYTES = 1 << 20
MAX_CHUNK_BYTES = 2 << 20


def split_input(input: object) -> tuple[Source | None, Iterator[str] | None]:
    """``(sources, None)`` for a path, a glob, a folder or a list or tuple of them;
    ``(None, texts)`` for any other iterable (each str a document).

    Raises:
        TypeError: ``None``, bytes, or something that is not iterable.
    """
    if isinstance(input, (str, os.PathLike)):
        return input, None
    if isinstance(input, (list, tuple)) and all(isinstance(item, (str, os.PathLike)) for item in input):
        return input, None  # a list of texts would be a list of paths: pass iter(texts)
    if input is None or isinstance(input, (bytes, bytearray, memoryview)) or not isinstance(input, Iterable):
        raise OptionsTypeError(
            f"the input must be a path, a folder, a glob or a list of them, an iterable of texts, or "
            f"PretokenCounts; got {type(input).__name__}"
        )
    return None, iter(input)


@dataclass(frozen=True)
class CountingRun:
    """A checked counting run: what `count_events` counts, and how."""

    corpus: Corpus | Iterator[str]
    size: int
    specials: list[str]
    pattern: Pattern
    workers: int
    chunk_size: int
    read: ReadOptions


def check_counting(
    input: object,
    specials: list[str],
    pattern: Pattern,
    workers: int | None,
    chunk_size: int | None,
    read: ReadOptions,
) -> CountingRun:
    """Check the workers and chunk size, then the corpus (raising on a bad one)."""
    source, texts = split_input(input)
    workers = (os.cpu_count() or 1) if workers is None else workers
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise OptionsError(f"workers must be at least 1, got {workers!r}")
    if chunk_size is not None and chunk_size < 1:
        raise OptionsError(f"chunk_size must be positive, got {chunk_size}")
    if not isinstance(read, ReadOptions):
        raise OptionsTypeError(f"read must be ReadOptions, got {type(read).__name__}")
    corpus: Corpus | Iterator[str]
    if texts is not None:
        corpus, size = texts, 0
    else:
        assert source is not None
        corpus = open_corpus(source, read)
        size = corpus.input_bytes
    if chunk_size is None:
        # in one process a chunk is also the longest stretch without an event to cancel at
        largest = MAX_CHUNK_BYTES if workers > 1 else MIN_CHUNK_BYTES
        chunk_size = min(largest, max(MIN_CHUNK_BYTES, size // (8 * workers)))
    return CountingRun(corpus, size, specials, pattern, workers, chunk_size, read)


def count_events(run: CountingRun) -> Generator[PretokenizeProgress, None, PretokenCounts]:
    """Count the corpus in ``run.workers`` processes or threads, yielding progress; return the
    counts. Closing the generator stops the workers."""
    yield PretokenizeProgress(0, run.size)
    table = CountTable()
    done = documents = 0
    corpus = run.corpus
    if isinstance(corpus, Corpus):
        tasks: Iterator[Task] = plan_tasks(corpus, run.pattern, run.specials, run.chunk_size)
    else:
        tasks = text_tasks(corpus, run.chunk_size)
    for step in count_documents(tasks, run.read, run.pattern, run.specials, run.workers, count_chunk_bytes,
                                run.size):
        if step.counts is not None:
            table.add(step.counts)
            done += step.input_bytes
            documents += step.documents
        read = done + step.counting
        yield PretokenizeProgress(read, max(run.size, read), documents)
    if isinstance(corpus, Corpus):
        check_unchanged(corpus)
    return PretokenCounts.from_table(table, pattern=run.pattern.source, special_tokens=run.specials,
                                     documents=documents, input_bytes=done, read=run.read)


@dataclass(frozen=True)
class NamedCountingRun:
    """Checked counting runs of named sources, counted one after another into `NamedCounts`."""

    runs: tuple[tuple[str, CountingRun], ...]

    @property
    def specials(self) -> list[str]:
        return self.runs[0][1].specials


def check_named_counting(
    sources: Mapping[Any, object],
    specials: list[str],
    pattern: Pattern,
    workers: int | None,
    chunk_size: int | None,
    read: ReadOptions,
) -> NamedCountingRun:
    """Check the names, then each source (`check_counting`), before any work."""
    names = check_source_names(sources)
    for name in names:
        if isinstance(sources[name], PretokenCounts):
            raise OptionsTypeError(f"source {name!r}: give each named source as paths or texts; counts of named "
                                   "sources are NamedCounts({name: counts, ...})")
    return NamedCountingRun(tuple((name, _named_check(name, sources[name], specials, pattern, workers, chunk_size,
                                                      read)) for name in names))


def _named_check(name: str, input: object, specials: list[str], pattern: Pattern, workers: int | None,
                 chunk_size: int | None, read: ReadOptions) -> CountingRun:
    try:
        return check_counting(input, specials, pattern, workers, chunk_size, read)
    except TypeError as e:
        raise OptionsTypeError(f"source {name!r}: {e}") from None


def count_named_events(named: NamedCountingRun) -> Generator[PretokenizeProgress, None, NamedCounts]:
    """Count each source in turn (`count_events`), yielding progress over them all; return
    their counts."""
    total = sum(run.size for _, run in named.runs)
    done = documents = 0
    shares: dict[str, PretokenCounts] = {}
    for name, run in named.runs:
        def over_all(progress: PretokenizeProgress, done: int = done, documents: int = documents) -> PretokenizeProgress:
            return PretokenizeProgress(done + progress.done, max(total, done + progress.total),
                                       documents + progress.documents)

        try:
            counts = yield from map_steps(count_events(run), over_all)
        except CorpusError as e:  # (an empty source, say): which one
            raise CorpusError(f"source {name!r}: {e}") from None
        shares[name] = counts
        done += max(run.size, counts.input_bytes)
        documents += counts.documents
    return NamedCounts(shares)


def count_pretokens(
    input: Source | Iterable[str] | Mapping[str, Source | Iterable[str]],
    special_tokens: Iterable[str] = (),
    *,
    pattern: str = "gpt2",
    workers: int | None = None,
    read: ReadOptions | None = None,
    client: Any = None,
    chunk_size: int | None = None,
    worker_timeout: float = 60.0,
) -> PretokenCounts:
    """Count a corpus's pre-tokens exactly as `core.train` does, to train from later or to
    add to other counts: ``core.train(count_pretokens(src, specials), TrainOptions(n, specials))``
    gives the merges of ``core.train(src, TrainOptions(n, specials))``.

    Args:
        input: paths, folders, globs (or a list of them), or an iterable of texts (each str
            a document; a list of texts as ``iter(texts)``); or named sources, a mapping
            from a name to any of those (``{"en": "data/en/", "hi": "hi.jsonl.zst"}``),
            which gives `NamedCounts`: their sum, each source's counts kept.
        special_tokens: a list of strings that split the text (not counted).
        pattern: ``"gpt2"``, ``"gpt4"`` or a regex.
        workers: local processes or threads (default: all cores).
        read: what to read (`ReadOptions`: field, sample + seed, document cap, max bytes).
        client: a Dask ``distributed.Client``: count on its cluster (`core.distributed`;
            sources only, and no ``max_bytes``: a cap needs the shards in order).
        chunk_size: bytes per task (default: sized from the corpus); any value gives the same counts.
        worker_timeout: with ``client``, seconds to wait for a first worker on a scheduler that
            has none (`core.distributed.NoWorkersError` after).
    """
    specials = validate_special_tokens(special_tokens)
    compiled = resolve_pattern(pattern)
    read = read if read is not None else ReadOptions()
    if isinstance(input, Mapping):
        if client is not None:
            names = check_source_names(input)
            return NamedCounts({name: count_pretokens(input[name], specials, pattern=pattern, read=read, client=client,
                                                      chunk_size=chunk_size, worker_timeout=worker_timeout)
                                for name in names})
        events: Generator[PretokenizeProgress, None, PretokenCounts] = count_named_events(
            check_named_counting(input, specials, compiled, workers, chunk_size, read))
    elif client is not None:
        from core.distributed import count_on_cluster

        return count_on_cluster(input, specials, client=client, pattern=compiled.source, read=read,
                                shard_bytes=chunk_size, worker_timeout=worker_timeout)
    else:
        events = count_events(check_counting(input, specials, compiled, workers, chunk_size, read))
    return run_steps(events)
