"""Runs that cannot be right are one clear error, exit status 2, nothing written: an empty
Parquet file, a sample that keeps no document, a corpus of empty documents, random bytes,
a damaged Parquet page."""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path

import pytest

import core
from core.corpus.check import not_text_share
from core.errors import CorpusError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _one_error(result: object, *needles: str) -> str:
    assert result.returncode == 2, result.stderr[-2000:]  # type: ignore[attr-defined]
    lines = result.stderr.strip().splitlines()  # type: ignore[attr-defined]
    assert len(lines) == 1 and lines[0].startswith("bpe-studio: error: "), lines
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def _nothing_written(out: Path) -> None:
    assert not out.exists() or not list(out.iterdir()), list(out.iterdir())


@pytest.mark.parametrize("command", ["train", "count"])
def test_a_parquet_file_with_no_rows(tmp_path: Path, run_cli: Callable[..., object], command: str) -> None:
    path = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"text": pa.array([], pa.string())}), path)
    out = tmp_path / ("tok" if command == "train" else "c.bpc")
    args = ["--vocab-size", "300"] if command == "train" else []
    result = run_cli(command, path, *args, "--out", out)
    _one_error(result, str(path), "holds no rows")
    assert not out.exists() or (out.is_dir() and not list(out.iterdir()))


def test_a_sample_that_keeps_no_document(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(f'{{"text": "document number {i}"}}\n' for i in range(200)), encoding="utf-8")
    out = tmp_path / "tok"
    result = run_cli("train", path, "--vocab-size", "300", "--sample", "1e-12", "--out", out)
    _one_error(result, "kept no document", "larger fraction")
    _nothing_written(out)
    with pytest.raises(CorpusError, match="kept no document"):
        core.count_pretokens(path, workers=1, read=core.ReadOptions(sample=1e-12))


@pytest.mark.parametrize("command", ["train", "count"])
@pytest.mark.parametrize("form", ["parquet nulls", "jsonl empty texts"])
def test_a_corpus_of_no_text_is_refused(tmp_path: Path, run_cli: Callable[..., object], command: str,
                                        form: str) -> None:
    if form == "parquet nulls":
        path = tmp_path / "nulls.parquet"
        pq.write_table(pa.table({"text": pa.array([None, None], pa.string())}), path)
        found = "no record has text in the field 'text'"
    else:
        path = tmp_path / "empty.jsonl"
        path.write_text('{"text": ""}\n{"text": ""}\n{"text": ""}\n', encoding="utf-8")
        found = "its 3 documents are all empty"
    out = tmp_path / ("tok" if command == "train" else "c.bpc")
    args = ["--vocab-size", "300"] if command == "train" else []
    result = run_cli(command, path, *args, "--out", out)
    _one_error(result, "the corpus holds no text", found, "--field")
    _nothing_written(out) if command == "train" else None
    assert command == "train" or not out.exists()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_random_bytes_are_refused_naming_the_share(tmp_path: Path, run_cli: Callable[..., object],
                                                   workers: str) -> None:
    path = tmp_path / "random.bin"
    path.write_bytes(random.Random(3).randbytes(1 << 20))
    out = tmp_path / "tok"
    result = run_cli("train", path, "--vocab-size", "300", "--out", out, "--workers", workers)
    line = _one_error(result, str(path), "does not look like UTF-8 text", "invalid UTF-8 or control bytes")
    assert "% of its first 1,048,576 bytes" in line
    _nothing_written(out)


def test_text_with_a_few_bad_bytes_still_trains_byte_exact(tmp_path: Path) -> None:
    rng = random.Random(5)
    words = [rng.choice([b"the", b" cat", b" sat", b"\n", b" \xff\xfe", b" caf\xc3\xa9", b" \xe9t\xe9"])
             for _ in range(20_000)]
    data = b"".join(words)
    assert 0.005 < not_text_share(data) < 0.3
    path = tmp_path / "mixed.txt"
    path.write_bytes(data)
    from core.training.reference import reference_counts

    counts = core.count_pretokens(path, workers=2)
    assert counts.as_dict() == reference_counts(data, [])


def test_a_damaged_parquet_page_names_the_file(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    path = tmp_path / "damaged.parquet"
    pq.write_table(pa.table({"text": [f"doc {i} " * 50 for i in range(2000)]}), path, row_group_size=500)
    data = bytearray(path.read_bytes())
    data[4:68] = b"\xff" * 64  # the first page's header
    path.write_bytes(bytes(data))
    out = tmp_path / "tok"
    for workers in ("1", "2"):
        result = run_cli("train", path, "--vocab-size", "300", "--out", out, "--workers", workers)
        _one_error(result, str(path), "is corrupt")
        _nothing_written(out)
    assert os.path.exists(path)
