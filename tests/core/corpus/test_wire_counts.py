"""Counts travel between processes in one form: the packed bytes, whether the native
scanner or the `regex` path (a custom pattern) counted them; a dict only where the native
module is forced off. A worker's job is a named `Job`, its result a named `Counted`."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from core.corpus import counting
from core.corpus.planning import plan_tasks
from core.corpus.sources import ReadOptions, open_corpus
from core.pretokenize.counting import CountTable, count_chunk, count_chunk_bytes, pack_counts
from core.pretokenize.patterns import resolve_pattern

native = pytest.importorskip("core.pretokenize._native")

CUSTOM = r"\s?\w+|\s?[^\s\w]+|\s+"
DATA = "naïve café, the cat\u00a0sat <|e|> 東京 🙂 don't\n\n  x".encode() + b" \xff\xfe tail"


def _table(chunk) -> tuple[dict[bytes, int], int]:  # type: ignore[no-untyped-def]
    total = CountTable()
    total.add(pickle.loads(pickle.dumps(chunk)))
    words, counts = total.items()
    return dict(zip(words, counts)), total.invalid


@pytest.mark.parametrize("pattern", [CUSTOM, "gpt2"])
def test_both_paths_send_packed_counts_equal_to_the_pure_python_dict(pattern: str, monkeypatch) -> None:
    compiled = resolve_pattern(pattern)
    chunk = count_chunk(DATA, compiled, ["<|e|>"])
    assert chunk.packed is not None and chunk.counts is None
    monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
    pure = count_chunk(DATA, compiled, ["<|e|>"])
    assert pure.packed is None and pure.counts  # the fallback where the extension may not run
    assert _table(chunk) == _table(pure) == (pure.counts, 2)
    assert list(_table(chunk)[0]) == list(pure.counts)  # first-seen order kept


def test_pack_counts_is_the_native_layout() -> None:
    table = native.Counts()
    table.scan(b"ab ab cd \xff", 1)
    words, counts = table.items()
    assert pack_counts(words, counts, table.invalid) == table.packed()
    empty = native.Counts()
    empty.add_packed(pack_counts([], [], 0))
    assert empty.items() == ([], [])


def test_a_worker_job_is_named_and_its_counts_come_back_packed(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_bytes(DATA * 50)
    compiled = resolve_pattern(CUSTOM)
    options = ReadOptions()
    task = next(iter(plan_tasks(open_corpus(path, options), compiled, ["<|e|>"], 1 << 20)))
    job = counting.Job(task, options, CUSTOM, ["<|e|>"], count_chunk_bytes)
    counted = counting._count_job(pickle.loads(pickle.dumps(job)))
    assert counted.counts.packed is not None and counted.counts.counts is None
    assert counted.invalid == 100 and counted.documents == 1 and counted.input_bytes == len(DATA) * 50
    assert _table(counted.counts) == _table(count_chunk(DATA * 50, compiled, ["<|e|>"]))
