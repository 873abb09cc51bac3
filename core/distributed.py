"""Counting pre-tokens on a Dask cluster; merging stays here (`core.train` from the counts).

    from distributed import Client
    client = Client("tcp://scheduler:8786")          # or Client(LocalCluster(n_workers=8))
    counts = core.count_pretokens("shards/*.parquet", ["<|endoftext|>"], client=client)
    counts.save("counts.bpc")
    vocab, merges = core.train(counts, core.TrainOptions(32_000, ["<|endoftext|>"])).result()

The corpus is cut into shards exactly as local training cuts it into tasks
(`core.corpus.planning.plan_tasks`): a byte range of an uncompressed file (at exact
pre-token boundaries, or line ends for JSONL), a Parquet row group, or a block of a
compressed file (read here, in order, and shipped). Each shard is one Dask task running
the same counter as a local worker (`core.corpus.counting.count_task`); the partial counts
are added on the cluster as they finish, a few at a time (a tree reduction, `FAN_IN`
tables per addition), and only the final table comes back. The
workers must see the files at the same paths (a shared or replicated file system).

Needs ``pip install 'bpe-studio[dask]'``. A worker that dies is replaced by Dask and its
shard counted again (each shard is counted from its input: the result stays exact). A
scheduler with no worker is waited on for ``worker_timeout`` seconds (a `WaitingForWorkers`
event says so at once, naming the scheduler's address), then counting fails with
`NoWorkersError`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from typing import Any

from core.corpus.counting import check_text_counted, count_task
from core.corpus.documents import Task, check_unchanged
from core.corpus.planning import plan_tasks
from core.corpus.pretoken_counts import PretokenCounts
from core.corpus.sources import ReadOptions, Source, open_corpus
from core.errors import BpeStudioError, OptionsError, OptionsTypeError
from core.events import PretokenizeProgress
from core.pretokenize.counting import count_chunk_bytes
from core.pretokenize.patterns import resolve_pattern
from core.pretokenize.specials import validate_special_tokens
from core.steps import run_steps

__all__ = ["SHARD_BYTES", "WORKER_TIMEOUT", "NoWorkersError", "WaitingForWorkers", "count_on_cluster",
           "count_on_cluster_events", "require_distributed"]

SHARD_BYTES = 32 << 20
"""Default bytes per shard of a large uncompressed file (one Dask task each)."""

FAN_IN = 4
"""Partial tables added by one task of the reduction: each level re-inserts every entry
so fewer levels cost less; more would wait longer for stragglers."""

WORKER_TIMEOUT = 60.0
"""Default seconds to wait for a first worker on a scheduler that has none."""

_cache: dict[str, list[str]] = {}  # per worker process: the regex path's piece cache


def require_distributed() -> Any:
    """The ``distributed`` module, or an ImportError saying what to install."""
    try:
        import distributed
    except ImportError:
        raise ImportError(
            "counting on a Dask cluster needs Dask: pip install 'bpe-studio[dask]'"
        ) from None
    return distributed


@dataclass(frozen=True, slots=True)
class WaitingForWorkers:
    """The scheduler at ``address`` has no worker yet: counting waits up to ``timeout`` seconds
    for one to join (then fails with `NoWorkersError`)."""

    address: str
    timeout: float


class NoWorkersError(BpeStudioError, TimeoutError):
    """No worker joined the scheduler at ``address`` within ``timeout`` seconds."""

    def __init__(self, address: str, timeout: float, option: str = "worker_timeout") -> None:
        super().__init__(f"no Dask worker joined the scheduler at {address} within {timeout:g} s; "
                         f"start workers (dask worker {address}) or raise {option}")
        self.address = address
        self.timeout = timeout


def _wait_for_workers(client: Any, timeout: float) -> Generator[WaitingForWorkers, None, None]:
    """Return at once when the scheduler has a worker; else yield `WaitingForWorkers` and wait
    up to ``timeout`` seconds for one, raising `NoWorkersError` if none joins."""
    if client.scheduler_info().get("workers"):
        return
    address = str(client.scheduler.address)
    yield WaitingForWorkers(address, timeout)
    try:
        client.wait_for_workers(1, timeout=timeout)
    except TimeoutError:  # distributed's WorkerStartTimeoutError is one
        raise NoWorkersError(address, timeout) from None


def _count_shard(task: Task, options: ReadOptions, pattern: str, specials: list[str]) -> PretokenCounts:
    """One shard, on a worker: the local workers' counter."""
    counts, _invalid, _text, documents, input_bytes = count_task(
        task, options, resolve_pattern(pattern), specials, count_chunk_bytes, _cache
    )
    return PretokenCounts(counts, pattern=pattern, special_tokens=specials, documents=documents,
                          input_bytes=input_bytes, read=options)


def _add(*parts: PretokenCounts) -> PretokenCounts:
    """The sum of some partial tables, on a worker (`PretokenCounts.add_all`: one table)."""
    return PretokenCounts.add_all(parts)


def count_on_cluster_events(
    source: Source,
    special_tokens: Iterable[str] | None = None,
    *,
    client: Any,
    pattern: str = "gpt2",
    read: ReadOptions | None = None,
    shard_bytes: int | None = None,
    worker_timeout: float = WORKER_TIMEOUT,
) -> Generator[PretokenizeProgress | WaitingForWorkers, None, PretokenCounts]:
    """`count_on_cluster`, yielding a `PretokenizeProgress` as each shard finishes (and a
    `WaitingForWorkers` first if the scheduler has no worker); the counts are the
    generator's return value. Closing the generator cancels the tasks.

    The input is checked when the generator starts, before any task is submitted."""
    distributed = require_distributed()
    specials = validate_special_tokens(special_tokens)
    compiled = resolve_pattern(pattern)
    if shard_bytes is not None and shard_bytes < 1:
        raise OptionsError(f"shard_bytes must be positive, got {shard_bytes}")
    if not worker_timeout > 0:
        raise OptionsError(f"worker_timeout must be a positive number of seconds, got {worker_timeout}")
    options = _cluster_read_options(source, read)
    corpus = open_corpus(source, options)
    size = corpus.input_bytes
    yield PretokenizeProgress(0, size)
    yield from _wait_for_workers(client, worker_timeout)
    leaves: dict[str, int] = {}
    futures: list[Any] = []
    done = documents = 0
    ready = distributed.as_completed()
    try:
        for task in plan_tasks(corpus, compiled, specials, shard_bytes or SHARD_BYTES):
            future = client.submit(_count_shard, task, options, compiled.source, specials, pure=False)
            leaves[future.key] = task.input_bytes
            futures.append(future)
            ready.add(future)
        if not futures:
            check_text_counted(0, False, options)
            return PretokenCounts(pattern=compiled.source, special_tokens=specials)
        waiting: list[Any] = []  # finished partial tables waiting to be added
        final: Any = None
        outstanding = len(futures)
        for future in ready:
            outstanding -= 1
            if future.status == "error":
                future.result()  # raises the worker's error (a CorpusError names the file)
            if future.key in leaves:
                done += leaves.pop(future.key)
                yield PretokenizeProgress(done, size, documents)
            waiting.append(future)
            if outstanding == 0 and len(waiting) == 1:
                final = future
                break
            if len(waiting) >= FAN_IN or outstanding == 0:
                added = client.submit(_add, *waiting, pure=False)
                futures.append(added)
                ready.add(added)
                outstanding += 1
                waiting = []
        assert final is not None
        counts: PretokenCounts = final.result()
        check_unchanged(corpus)
        check_text_counted(counts.documents, len(counts) > 0, options)
        yield PretokenizeProgress(size, size, counts.documents)
        return counts
    finally:
        ready.clear()
        pending = [f for f in futures if not f.done()]
        if pending:
            client.cancel(pending)
        for future in futures:
            future.release()


def _cluster_read_options(source: object, read: ReadOptions | None) -> ReadOptions:
    if isinstance(source, (str, os.PathLike)) or (
        isinstance(source, (list, tuple)) and all(isinstance(s, (str, os.PathLike)) for s in source)
    ):
        read = read if read is not None else ReadOptions()
        if not isinstance(read, ReadOptions):
            raise OptionsTypeError(f"read must be ReadOptions, got {type(read).__name__}")
        if read.max_bytes is not None:
            raise OptionsError("max_bytes needs the documents in order, which a Dask cluster does not keep; "
                               "use sample, or count without a client")
        return read
    raise OptionsTypeError(f"counting on a Dask cluster needs paths, folders or globs its workers can read, "
                           f"not {type(source).__name__}")


def count_on_cluster(
    source: Source,
    special_tokens: Iterable[str] | None = None,
    *,
    client: Any,
    pattern: str = "gpt2",
    read: ReadOptions | None = None,
    shard_bytes: int | None = None,
    worker_timeout: float = WORKER_TIMEOUT,
) -> PretokenCounts:
    """Count a corpus's pre-tokens on the Dask cluster ``client`` is connected to: the same
    table counting here gives (and so the same merges), whatever the workers
    (``core.count_pretokens(..., client=client)`` comes here).

    ``read.max_bytes`` is refused: a cap needs the shards in order, which a cluster does not keep.
    A scheduler with no worker is waited on (a warning on the ``core.distributed`` logger
    says so at once) for ``worker_timeout`` seconds, then `NoWorkersError` is raised.
    """
    events = count_on_cluster_events(source, special_tokens, client=client, pattern=pattern, read=read,
                                     shard_bytes=shard_bytes, worker_timeout=worker_timeout)
    def warn(event: object) -> None:
        if isinstance(event, WaitingForWorkers):
            logging.getLogger(__name__).warning(
                "waiting up to %g s for a Dask worker to join the scheduler at %s (it has none)",
                event.timeout, event.address)

    return run_steps(events, warn)
