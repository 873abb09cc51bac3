"""One `PretokenCounts` read from 8 threads at once never raises (issue 38, item 12).

Fresh counts hold the native table counting made; the first reads turn it into other
forms (lists, a dict, packed bytes) while the native table refused a second reader with
``RuntimeError`` (14 runs of 20 failed). Every read — iteration, ``len``, lookups,
`packed_words`, `columns`, `save` — now works from any number of threads, with the same
answers as from one.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import core
from core import PretokenCounts


def _text(tmp_path: Path) -> Path:
    rng = random.Random(3)
    words = ["".join(rng.choices("abcdefghij", k=rng.randint(1, 12))) for _ in range(50_000)]
    path = tmp_path / "c.txt"
    path.write_text(" ".join(rng.choice(words) for _ in range(150_000)) + " Ünïcode 42 ok")
    return path


def _reads(counts: PretokenCounts, tmp_path: Path, worker: int) -> list[Callable[[], Any]]:
    return [
        lambda: len(counts),
        lambda: sorted(counts)[:3],
        lambda: counts.get(b" abc", 0),
        lambda: b" ok" in counts,
        lambda: counts.packed_words() is None,
        lambda: sorted(zip(*counts.columns()))[:3],
        lambda: [int(a.sum()) for a in counts.lengths_and_counts()],
        lambda: counts.total,
        lambda: counts.total_bytes,
        lambda: len(counts.chunk().packed or counts.chunk().counts or b""),
        lambda: counts.to_bytes(),
        lambda: counts.save(tmp_path / f"t{worker}.bpc"),
        lambda: sorted(counts.items())[:3],
        lambda: counts == counts,
        lambda: repr(counts),
    ]


def _read_at_once(make: Callable[[], PretokenCounts], tmp_path: Path) -> list[str]:
    counts = make()
    start = threading.Barrier(8)
    errors: list[str] = []

    def work(worker: int) -> None:
        try:
            start.wait()
            reads = _reads(counts, tmp_path, worker)
            for k in range(4):  # the 8 threads together make every read, several at once
                reads[(worker * 2 + k) % len(reads)]()
        except Exception as e:  # noqa: BLE001 - any error is the failure
            errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


@pytest.mark.parametrize(("workers", "runs"), [(1, 5), (2, 20)])  # 2: the table kept as two (the racier)
def test_fresh_counts_read_by_8_threads_never_raise(tmp_path: Path, workers: int, runs: int) -> None:
    pytest.importorskip("core.pretokenize._native", reason="the native pre-tokenizer is not built")
    path = _text(tmp_path)
    expected = core.count_pretokens(path, workers=workers)
    expected_dict, expected_bytes = dict(expected), expected.to_bytes()
    failed = [errors for _ in range(runs)
              if (errors := _read_at_once(lambda: core.count_pretokens(path, workers=workers), tmp_path))]
    assert not failed, f"{len(failed)} runs of {runs} raised: {failed[0][:3]}"
    assert dict(expected) == expected_dict
    for saved in tmp_path.glob("t*.bpc"):
        assert saved.read_bytes() == expected_bytes


def test_loaded_and_added_counts_read_by_8_threads_never_raise(tmp_path: Path, path_kind) -> None:
    counts = core.count_pretokens(_text(tmp_path), workers=1)
    counts.save(tmp_path / "c.bpc")
    makers = [lambda: PretokenCounts.load(tmp_path / "c.bpc"),
              lambda: PretokenCounts.load(tmp_path / "c.bpc") + PretokenCounts.from_pairs({b" ok": 1})]
    for make in makers:
        failed = [errors for _ in range(5) if (errors := _read_at_once(make, tmp_path))]
        assert not failed, failed[0][:3]
