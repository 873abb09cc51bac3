"""Counting on a Dask cluster (`core.distributed`): a 2-process LocalCluster counts a
multi-shard corpus (plain text cut into byte ranges, JSONL.gz, Parquet row groups) into
exactly the local counts, so training from them gives `train_bpe`'s merges; bad input
fails before any task runs; a killed worker's shard is counted again, exactly."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import random
import signal
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import core

distributed = pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")
import core.distributed as cd  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

EOT = "<|endoftext|>"
WORDS = ["the", " cat", " sat", "\n", "  ", " über", " 東京", " 42", " don't", "!!", " low", " lower", "🙂", "\t"]

pytestmark = [
    # distributed's own noise on start-up and shutdown, not ours
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore:.*Port .* is already in use.*:UserWarning"),
]


def _text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(WORDS) for _ in range(n))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("shards")
    rng = random.Random(5)
    plain = root / "a.txt"
    plain.write_bytes((_text(rng, 30_000) + EOT + _text(rng, 5000)).encode() + b"\xff end")
    with gzip.open(root / "b.jsonl.gz", "wt", encoding="utf-8") as f:
        for i in range(300):
            f.write(json.dumps({"text": _text(rng, rng.randint(0, 60))}) + "\n")
    pq.write_table(pa.table({"text": [_text(rng, rng.randint(0, 60)) for _ in range(300)]}), root / "c.parquet",
                   row_group_size=50)
    return [plain, root / "b.jsonl.gz", root / "c.parquet"]


@contextlib.contextmanager
def _quiet_cluster(**options: object) -> Iterator[distributed.Client]:
    """A client of a `LocalCluster` made with ``options``, without its warnings and logs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(dashboard_address=None, silence_logs=40, **options)
        client = distributed.Client(cluster)
    try:
        yield client
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            client.close()
            cluster.close()


@pytest.fixture(scope="module")
def client():
    with _quiet_cluster(n_workers=2, processes=True, threads_per_worker=1) as client:
        yield client


def _run(events):
    seen = []
    while True:
        try:
            seen.append(next(events))
        except StopIteration as stop:
            return stop.value, seen


def test_cluster_counts_equal_local_counts_and_train_identically(client, corpus) -> None:
    counts, progress = _run(cd.count_on_cluster_events(corpus, [EOT], client=client, shard_bytes=20_000))
    local = core.count_pretokens(corpus, [EOT], workers=2)
    assert counts == local  # the table, documents, input bytes and invalid bytes
    assert counts.documents == 1 + 300 + 300 and counts.invalid_bytes == 1
    assert counts.to_bytes() == local.to_bytes()
    # one progress event per shard (the plain file is cut into several), then the total
    shards = len(progress) - 2
    assert shards >= 3 + 6
    assert [p.done for p in progress] == sorted(p.done for p in progress)
    assert progress[-1].done == progress[-1].total == local.input_bytes
    assert core.train(counts, core.TrainOptions(600, counts.special_tokens, pattern=counts.pattern)).result() == core.train_bpe(corpus, 600, [EOT])


def test_cluster_counts_follow_the_read_options(client, corpus) -> None:
    options = {"sample": 0.5, "seed": 3, "doc_max_chars": 40}
    counts = core.count_pretokens(corpus[1:], [EOT], client=client, read=core.ReadOptions(**options))
    assert counts == core.count_pretokens(corpus[1:], [EOT], workers=1, read=core.ReadOptions(**options))


def test_bad_input_fails_before_any_task(client, corpus, tmp_path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    submitted = []
    original = client.submit
    client.submit = lambda *a, **k: submitted.append(a) or original(*a, **k)  # type: ignore[method-assign]
    try:
        with pytest.raises(core.CorpusError, match="empty.txt is empty"):  # (among others: an empty document)
            core.count_pretokens([empty], [EOT], client=client)
        with pytest.raises(FileNotFoundError, match="missing.txt"):
            core.count_pretokens(tmp_path / "missing.txt", client=client)
        with pytest.raises(core.InvalidPatternError):
            core.count_pretokens(corpus, client=client, pattern="(")
    finally:
        del client.submit
    assert submitted == []


def test_an_error_deep_in_a_shard_reaches_the_caller(client, tmp_path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"text": "fine"}) + "\n" + "{not json\n", encoding="utf-8")
    with pytest.raises(core.CorpusError, match="bad.jsonl, line 2: not valid JSON"):
        core.count_pretokens(path, client=client)


def test_closing_the_events_cancels_the_tasks(client, corpus) -> None:
    events = cd.count_on_cluster_events(corpus, [EOT], client=client, shard_bytes=5_000)
    next(events)
    next(events)
    events.close()
    # the scheduler forgets every task of ours (cancelled or released) in a moment
    deadline = time.monotonic() + 30
    while _our_tasks(client) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _our_tasks(client) == []


def _our_tasks(client) -> list[str]:
    keys = client.run_on_scheduler(lambda dask_scheduler: [str(k) for k in dask_scheduler.tasks])
    return [k for k in keys if "_count_shard" in k or "_add" in k]


def test_a_killed_worker_is_replaced_and_the_counts_stay_exact(client, corpus) -> None:
    pids = client.run(os.getpid)
    events = cd.count_on_cluster_events(corpus, [EOT], client=client, shard_bytes=5_000)
    next(events)
    next(events)  # tasks are running
    os.kill(next(iter(pids.values())), signal.SIGKILL)
    counts, _ = _run(events)
    assert counts == core.count_pretokens(corpus, [EOT], workers=1)
    client.wait_for_workers(2, timeout=60)


@pytest.fixture()
def empty_scheduler():
    """A real scheduler on TCP that no worker ever joins."""
    with _quiet_cluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1") as client:
        yield client


def test_a_scheduler_without_workers_says_so_at_once_then_fails_after_the_timeout(empty_scheduler, corpus) -> None:
    address = empty_scheduler.scheduler.address
    assert address.startswith("tcp://")
    events = cd.count_on_cluster_events(corpus, [EOT], client=empty_scheduler, worker_timeout=1.5)
    started = time.monotonic()
    assert isinstance(next(events), core.PretokenizeProgress)
    waiting = next(events)
    assert waiting == cd.WaitingForWorkers(address, 1.5)
    assert time.monotonic() - started < 5  # said at once, not after the wait
    with pytest.raises(cd.NoWorkersError, match=f"no Dask worker joined the scheduler at {address} within 1.5 s; "
                       f"start workers \\(dask worker {address}\\) or raise worker_timeout"):
        next(events)
    assert 1.4 < time.monotonic() - started < 20
    assert _our_tasks(empty_scheduler) == []  # nothing was submitted
    with pytest.raises(TimeoutError, match="within 0.5 s"):
        core.count_pretokens(corpus, [EOT], client=empty_scheduler, worker_timeout=0.5)
    with pytest.raises(ValueError, match="worker_timeout must be a positive"):
        core.count_pretokens(corpus, [EOT], client=empty_scheduler, worker_timeout=0)


def test_a_cluster_with_workers_does_not_announce_a_wait(client, corpus) -> None:
    _counts, events = _run(cd.count_on_cluster_events(corpus[1:], [EOT], client=client))
    assert all(isinstance(e, core.PretokenizeProgress) for e in events)


def test_a_sample_that_keeps_no_document_fails_on_the_cluster_as_locally(client, corpus) -> None:
    read = core.ReadOptions(sample=1e-9, seed=1)
    with pytest.raises(core.CorpusError, match="sampling kept no document"):
        core.count_pretokens(corpus[1:], [EOT], workers=1, read=read)
    with pytest.raises(core.CorpusError, match="sampling kept no document"):
        core.count_pretokens(corpus[1:], [EOT], client=client, read=read)


def test_cluster_counts_named_sources_source_by_source(client, corpus) -> None:
    named = {"plain": corpus[0], "rest": corpus[1:]}
    counts = core.count_pretokens(named, [EOT], client=client)
    local = core.count_pretokens(named, [EOT], workers=2)
    assert counts.sources == ("plain", "rest") and counts == local
    assert counts.source("rest") == core.count_pretokens(corpus[1:], [EOT], workers=1)
    assert counts.to_bytes() == local.to_bytes()
