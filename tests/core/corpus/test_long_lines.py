"""A JSONL line too long to hold (`MAX_UNCUT_BYTES`) is named by its line number and the
byte it starts at, the same for a plain and a compressed file and whatever the workers;
and an error after a long line names the right line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import core
from core.corpus import chunks, planning
from core.errors import CorpusError


def _write(path: Path, lines: list[str]) -> Path:
    data = "".join(line + "\n" for line in lines).encode()
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(data, 1))
    else:
        path.write_bytes(data)
    return path


@pytest.mark.parametrize("name", ["long.jsonl", "long.jsonl.gz"])
@pytest.mark.parametrize("workers", [1, 2])
def test_a_line_too_long_is_named_by_its_number(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                name: str, workers: int) -> None:
    limit = 1 << 20
    monkeypatch.setattr(chunks, "MAX_UNCUT_BYTES", limit)
    monkeypatch.setattr(planning, "MAX_UNCUT_BYTES", limit)
    short = [json.dumps({"text": f"line {i}"}) for i in range(1, 6)]
    long = json.dumps({"text": "ab " * limit})
    path = _write(tmp_path / name, [*short, long, *short])
    start = sum(len(line) + 1 for line in short)
    with pytest.raises(CorpusError) as caught:
        core.count_pretokens(path, workers=workers, chunk_size=1 << 16)
    assert str(caught.value) == (f"{path}, line 6 (from byte {start:,} of its text): longer than 1 MiB; "
                                 "split the record, or leave the file out")


@pytest.mark.parametrize("name", ["after.jsonl", "after.jsonl.gz"])
def test_an_error_after_a_64_mib_line_names_its_line(tmp_path: Path, name: str) -> None:
    long = json.dumps({"text": "a" * ((64 << 20) - 100)})
    path = _write(tmp_path / name, [json.dumps({"text": "one"}), long, json.dumps({"text": "three"}), "not json"])
    with pytest.raises(CorpusError, match=r", line 4: not valid JSON"):
        core.count_pretokens(path, workers=2)
