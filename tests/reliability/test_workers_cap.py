"""Issue 13.7: ``--workers`` is capped at a multiple of the cores (and the chunk count), and says so.

``--workers 1000`` started 1,001 encoding processes (7 GB) or 106 training processes.
Now at most `max_workers` (2 per usable core) start, never more than one per chunk, and
a note on stderr says the number was lowered.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import core
from core.workers.processes import MAX_WORKERS_PER_CORE, max_workers, usable_cores
from core.workers.scheduler import WorkerPool


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.update(int(c) for c in (task / "children").read_text().split())
        except OSError:
            pass
    return found


def _most_children_while_running(process) -> int:  # type: ignore[no-untyped-def]
    most = 0
    while process.poll() is None:
        most = max(most, len(_children(process.pid)))
        time.sleep(0.01)
    return most


def test_max_workers_is_a_multiple_of_the_cores() -> None:
    assert max_workers() == MAX_WORKERS_PER_CORE * usable_cores()


@pytest.mark.parametrize("threads", [False, True])
def test_pool_never_starts_more_than_the_cap(threads: bool) -> None:
    pool = WorkerPool(1000, threads=threads, initializer=None if threads else int)
    try:
        assert pool.processes == max_workers()
        while pool.pool is None:
            time.sleep(0.01)
        assert len(pool.pool._pool) == max_workers()  # type: ignore[attr-defined]
    finally:
        pool.close()


@pytest.fixture(scope="module")
def corpus(big_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 8 MB of `big_corpus` (whole lines): 8 chunks of 1 MB, as many as the cap
    of workers on 4 cores (more than on fewer), for a third of the work."""
    data = big_corpus.read_bytes()[: 8 << 20]
    path = tmp_path_factory.mktemp("capped") / "corpus.txt"
    path.write_bytes(data[: data.rindex(b"\n") + 1])
    return path


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="counts processes through /proc")
@pytest.mark.parametrize("command", ["encode", "train"])
def test_a_huge_workers_count_is_capped_and_said(tmp_path: Path, corpus: Path, start_cli, command: str) -> None:  # type: ignore[no-untyped-def]
    if command == "encode":
        tok = tmp_path / "tok"
        core.save_tokenizer(tok, {i: bytes([i]) for i in range(256)}, [], [], "gpt2")
        args = ["encode", corpus, "--tokenizer", tok, "--out", tmp_path / "ids.npy"]
    else:
        args = ["train", corpus, "--vocab-size", "300", "--out", tmp_path / "tok2"]
    # training counts in processes on the regex path (in threads, capped alike, on the native one)
    process = start_cli(*args, "--workers", "1000", env={**os.environ, "QT_QPA_PLATFORM": "offscreen", "BPE_STUDIO_PURE_PYTHON": "1"})
    most = _most_children_while_running(process)
    _, err = process.communicate()
    assert process.returncode == 0, err
    assert 1 <= most <= max_workers(), f"{most} worker processes for a cap of {max_workers()}"
    note = f"--workers 1000 is more than this machine can use; using {max_workers()}"
    assert note in err, err
