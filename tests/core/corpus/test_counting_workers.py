"""Counting with workers: threads for the native pre-tokenizer on text, processes otherwise.

Plain and compressed text counted by the native pre-tokenizer go to worker threads, in
shares of consecutive tasks counted into a table per thread and balanced by stealing
(`core.corpus.shares`); JSONL, the regex path and custom patterns go to worker processes. Whatever the workers
(1, 2, 3) and the chunk size, the counts equal the oracle's (`core.training.reference`), in the
same first-seen order, ``max_bytes`` takes the same documents, and closing the count stops
the threads between two tasks, leaving no thread and no process behind.
"""

from __future__ import annotations

import gzip
import json
import multiprocessing
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zstandard

import core
import core.corpus.counting as counting
import core.corpus.shares as shares
from core.corpus.chunks import plan_chunks
from core.corpus.documents import FileRange
from core.corpus.count_run import check_counting, count_events
from core.corpus.sources import ReadOptions
from core.pretokenize.patterns import resolve_pattern
from core.training.reference import count_invalid_bytes as reference_invalid
from core.training.reference import reference_counts

pytest.importorskip("core.pretokenize._native", reason="the native pre-tokenizer is not built")

EOT = "<|endoftext|>"
WORDS = ["the", " cat", " sat", "\n", "\n\n", "  ", " über", " naïve", " 東京", " 42", "3.14", " don't", "!!",
         " ", "\t", "Hello", " world", "🙂", "—", "<|", "|>", EOT, EOT]
CHUNK = 2048


@pytest.fixture(autouse=True)
def native(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BPE_STUDIO_PURE_PYTHON", raising=False)


def _text(size: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    words = [rng.choice(WORDS) for _ in range(size // 4)]
    words += [f" w{rng.randint(0, 3000)}" for _ in range(size // 40)]  # many distinct pre-tokens
    rng.shuffle(words)
    return "".join(words).encode() + b" \xff\xfe bytes that are not UTF-8"


@pytest.fixture(scope="module")
def text() -> bytes:
    return _text(120_000)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory, text: bytes) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("counting")
    docs = text.decode("utf-8", errors="replace").split(EOT)
    jsonl = "".join(json.dumps({"text": d}) + "\n" for d in docs).encode()
    forms = {
        "plain.txt": text,
        "gzip.txt.gz": gzip.compress(text),
        "zstd.txt.zst": zstandard.ZstdCompressor().compress(text),
        "lines.jsonl": jsonl,
        "lines.jsonl.zst": zstandard.ZstdCompressor().compress(jsonl),
    }
    for name, data in forms.items():
        (root / name).write_bytes(data)
    return {name: root / name for name in forms}


def _oracle_text(name: str, text: bytes) -> bytes:
    """The text the oracle counts: JSONL documents joined by the special token (a document
    boundary acts as one)."""
    if "jsonl" in name:
        return EOT.join(text.decode("utf-8", errors="replace").split(EOT)).encode()
    return text


class PoolKinds:
    """Records the kind of workers of every count: threads (`ShareCounter`) or processes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.kinds: list[str] = []
        real_pool, real_shares = counting.WorkerPool, counting.ShareCounter

        def pool(*args: Any, **kwargs: Any) -> Any:
            self.kinds.append("threads" if kwargs.get("threads") else "processes")
            return real_pool(*args, **kwargs)

        def shares(*args: Any, **kwargs: Any) -> Any:
            self.kinds.append("threads")
            return real_shares(*args, **kwargs)

        monkeypatch.setattr(counting, "WorkerPool", pool)
        monkeypatch.setattr(counting, "ShareCounter", shares)


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4"])
@pytest.mark.parametrize("name", ["plain.txt", "gzip.txt.gz", "zstd.txt.zst", "lines.jsonl", "lines.jsonl.zst"])
def test_counts_equal_the_oracle_in_the_same_order_at_any_workers(
    files: dict[str, Path], text: bytes, name: str, pattern: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    kinds = PoolKinds(monkeypatch)
    expected = reference_counts(_oracle_text(name, text), [EOT], pattern=pattern)
    first = None
    for workers in (1, 2, 3):
        counts = core.count_pretokens(files[name], [EOT], pattern=pattern, workers=workers, chunk_size=CHUNK)
        assert counts.as_dict() == expected
        if "jsonl" not in name:
            assert counts.invalid_bytes == reference_invalid(text.decode("utf-8", errors="surrogateescape"))
        if first is None:
            first = counts.columns()
        assert counts.columns() == first  # the same first-seen order, whoever counted what
    assert kinds.kinds == ["threads"] * 2  # JSONL too: scanning, not parsing, is most of the work


def test_regex_path_and_custom_patterns_count_in_processes(
    files: dict[str, Path], text: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    kinds = PoolKinds(monkeypatch)
    custom = r"\w+|\s+|[^\w\s]+"
    expected = reference_counts(text, [EOT], pattern=custom)
    assert core.count_pretokens(files["plain.txt"], [EOT], pattern=custom, workers=2, chunk_size=CHUNK).as_dict() == expected
    monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
    expected = reference_counts(text, [EOT])
    assert core.count_pretokens(files["plain.txt"], [EOT], workers=2, chunk_size=CHUNK).as_dict() == expected
    assert kinds.kinds == ["processes", "processes"]


@pytest.mark.parametrize("workers", [2, 3])
@pytest.mark.parametrize("name", ["plain.txt", "zstd.txt.zst"])
def test_a_slow_threads_share_is_stolen_and_cut_and_the_counts_stay_exact(
    files: dict[str, Path], text: bytes, name: str, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a slow thread (a busy core): the first to claim a task from a share with work left
    # after it waits there until another thread has stolen from that share, on any machine
    monkeypatch.setattr(shares, "MIN_PIECE_BYTES", 64)
    stolen: list[object] = []
    counted: list[object] = []
    slow: list[str] = []
    a_steal, slowing = threading.Event(), threading.Event()
    real_steal, real_next, real_count = shares.ShareCounter._steal, shares.ShareCounter._next_task, counting.count_task

    def steal(self: shares.ShareCounter) -> Any:
        share = real_steal(self)
        if share is not None:
            stolen.extend(share.todo)
            a_steal.set()
        return share

    def next_task(self: shares.ShareCounter, share: Any) -> Any:
        share, task = real_next(self, share)
        with self._cond:
            if slowing.is_set() and not slow and share is not None and share.left >= 2 * shares.MIN_PIECE_BYTES:
                slow.append(threading.current_thread().name)
        return share, task

    def count_task(task: Any, *args: Any) -> Any:
        counted.append(task)
        if slow and slow[0] == threading.current_thread().name:
            a_steal.wait(timeout=10)
            time.sleep(0.005)
        return real_count(task, *args)

    monkeypatch.setattr(shares.ShareCounter, "_steal", steal)
    monkeypatch.setattr(shares.ShareCounter, "_next_task", next_task)
    monkeypatch.setattr(counting, "count_task", count_task)
    alone = core.count_pretokens(files[name], [EOT], workers=1, chunk_size=CHUNK)
    slowing.set()
    counts = core.count_pretokens(files[name], [EOT], workers=workers, chunk_size=CHUNK)
    assert counts.as_dict() == reference_counts(text, [EOT])
    assert counts.columns() == alone.columns()
    assert counts.invalid_bytes == alone.invalid_bytes and counts.documents == alone.documents
    assert stolen
    if name == "plain.txt":  # some of it cut (as its thread took it) at a boundary that the plan did not have
        planned = {start for start, _end in plan_chunks(files[name], len(text), resolve_pattern("gpt2"), [EOT], CHUNK)}
        assert any(isinstance(task, FileRange) and task.start not in planned for task in counted)


@pytest.mark.parametrize("name", ["plain.txt", "zstd.txt.zst", "lines.jsonl"])
@pytest.mark.parametrize("cap", [1, 777, 20_000, 99_999])
def test_max_bytes_takes_the_same_text_at_any_workers(files: dict[str, Path], name: str, cap: int) -> None:
    results = []
    for workers in (1, 2, 3):
        counts = core.count_pretokens(files[name], [EOT], workers=workers, chunk_size=CHUNK, read=core.ReadOptions(max_bytes=cap))
        results.append((counts.columns(), counts.invalid_bytes, counts.documents, counts.input_bytes))
    assert results[1] == results[0] and results[2] == results[0]
    assert 0 < sum(results[0][0][1])


def test_max_bytes_in_threads_equals_the_oracle_on_the_text_taken(tmp_path: Path) -> None:
    # ASCII words and no special token: the cap cuts the text at exactly that byte
    rng = random.Random(3)
    text = "".join(rng.choice(["the", " cat", " sat", "\n", "  ", " on", " mat", "."]) for _ in range(40_000)).encode()
    (tmp_path / "a.txt").write_bytes(text)
    for cap in (5_000, 50_001, len(text) - 1):
        counts = core.count_pretokens(tmp_path / "a.txt", [], workers=2, chunk_size=CHUNK, read=core.ReadOptions(max_bytes=cap))
        assert counts.as_dict() == reference_counts(text[:cap], [])


def _counting(path: Path, workers: int) -> Iterator[object]:
    return count_events(check_counting(path, [EOT], resolve_pattern("gpt2"), workers, CHUNK, ReadOptions()))


def test_closing_the_count_stops_the_threads_between_tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(_text(2_000_000, seed=2))
    counted: list[object] = []
    real = counting.count_task

    def count_task(task: Any, *args: Any) -> Any:
        counted.append(task)
        return real(task, *args)

    monkeypatch.setattr(counting, "count_task", count_task)
    threads_before = threading.active_count()
    events = _counting(path, 2)
    for event in events:
        if getattr(event, "done", 0) > 0:
            break
    events.close()  # type: ignore[attr-defined]
    assert threading.active_count() == threads_before
    assert multiprocessing.active_children() == []
    assert len(counted) < path.stat().st_size // CHUNK  # the threads did not count on to the end
    # and a new count after the closed one is whole
    assert core.count_pretokens(path, [EOT], workers=2, chunk_size=CHUNK).as_dict() == reference_counts(path, [EOT])


def test_an_error_in_a_thread_is_raised_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(_text(200_000))
    real = counting.count_task
    calls: list[object] = []

    def count_task(task: Any, *args: Any) -> Any:
        calls.append(task)
        if len(calls) == 7 and threading.current_thread() is not threading.main_thread():
            raise core.CorpusError("the seventh task cannot be read")
        return real(task, *args)

    monkeypatch.setattr(counting, "count_task", count_task)
    threads_before = threading.active_count()
    with pytest.raises(core.CorpusError, match="seventh"):
        for _ in _counting(path, 2):
            pass
    assert threading.active_count() == threads_before


def test_progress_in_threads_moves_task_by_task_and_never_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(_text(400_000))
    real_count = counting.count_task

    def count_task(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.002)  # ~200 tasks counted in well under a tenth of a second: the consumer
        return real_count(*args, **kwargs)  # thread, on a busy machine, saw only the end

    monkeypatch.setattr(counting, "count_task", count_task)
    events = list(_counting(path, 2))
    done = [event.done for event in events if isinstance(event, core.PretokenizeProgress)]
    assert done == sorted(done)
    assert done[-1] == path.stat().st_size
    # two shares, but progress after (about) each of the ~200 tasks
    assert len(set(done)) > 20
