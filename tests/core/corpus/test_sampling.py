"""Sampling and caps: reproducible, independent of workers, chunks and compression, and exact.

The expected documents are computed here from the documented definitions (docs/corpora.md):
a JSONL line at byte offset ``o`` of file ``i`` is kept when the first 8 bytes of
``blake2b(f"{seed}/{i}/{o}", digest_size=8)`` (little-endian) fall under
``sample * 2**64``; ``doc_max_chars`` keeps a document's first N characters;
``max_bytes`` keeps whole documents while they fit and cuts the next at a character
boundary. The oracle then trains on those documents joined by the special token.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import zstandard

import core
from tests.training import train_run
from core.training.reference import train_bpe_reference

EOT = "<|endoftext|>"


def _docs(n: int) -> list[str]:
    return [f"doc {i}: " + " ".join(f"w{(i * j) % 23}é" for j in range(i % 17)) + "\n" for i in range(n)]


@pytest.fixture()
def jsonl(tmp_path: Path) -> tuple[Path, Path, list[str], list[int]]:
    docs = _docs(600)
    lines = [json.dumps({"text": d}) + "\n" for d in docs]
    raw = "".join(lines).encode()
    offsets, position = [], 0
    for line in lines:
        offsets.append(position)
        position += len(line.encode())
    (tmp_path / "d.jsonl").write_bytes(raw)
    (tmp_path / "d.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(raw))
    return tmp_path / "d.jsonl", tmp_path / "d.jsonl.zst", docs, offsets


def _kept(seed: int, offset: int, fraction: float) -> bool:
    digest = hashlib.blake2b(f"{seed}/0/{offset}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") < fraction * 2**64


def _run(source, **kw):
    events = list(train_run(source, 400, [EOT], **kw).merge_events())
    counting = next(e for e in events if isinstance(e, core.CountingDone))
    return events[-1].merges, counting.documents


def test_sample_is_the_documented_hash_and_reproducible(jsonl) -> None:
    plain, zst, docs, offsets = jsonl
    chosen = [d for d, o in zip(docs, offsets) if _kept(7, o, 0.3)]
    assert 120 < len(chosen) < 240
    expected = train_bpe_reference(EOT.join(chosen), 400, [EOT])[1]
    runs = [_run(source, sample=0.3, seed=7, workers=workers, chunk_size=chunk)
            for source in (plain, zst) for workers, chunk in ((1, 500), (2, 900), (2, None))]
    for merges, documents in runs:
        assert documents == len(chosen)
        assert merges == expected
    other = _run(plain, sample=0.3, seed=8, workers=1)
    assert other[0] != expected  # another seed, other documents


def test_sample_of_one_keeps_everything(jsonl) -> None:
    plain, _, docs, _ = jsonl
    assert _run(plain, sample=1.0, workers=1) == _run(plain, workers=1)


def test_doc_max_chars_cuts_each_document(jsonl) -> None:
    plain, zst, docs, _ = jsonl
    expected = train_bpe_reference(EOT.join(d[:12] for d in docs), 400, [EOT])[1]
    for source in (plain, zst):
        assert _run(source, doc_max_chars=12, workers=2, chunk_size=700)[0] == expected


def test_doc_max_chars_never_cuts_a_special_token(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("ab cd" + EOT + "ef gh")
    (tmp_path / "b.txt").write_text("xy zz" * 10)
    expected = train_bpe_reference("ab cd" + EOT + ("xy zz" * 10)[:8], 300, [EOT])[1]
    assert core.train(tmp_path, core.TrainOptions(300, [EOT], workers=1), read=core.ReadOptions(doc_max_chars=8)).result()[1] == expected


def _capped(docs: list[str], cap: int) -> list[str]:
    out, room = [], cap
    for doc in docs:
        data = doc.encode()
        if len(data) >= room:
            k = room
            while k > 0 and 0x80 <= data[k] < 0xC0:
                k -= 1
            out.append(data[:k].decode())
            break
        out.append(doc)
        room -= len(data)
    return out


@pytest.mark.parametrize("cap", [1, 5000, 12345])
def test_max_bytes_stops_at_the_cap(jsonl, cap: int) -> None:
    plain, zst, docs, _ = jsonl
    chosen = _capped(docs, cap)
    expected = train_bpe_reference(EOT.join(chosen), 400, [EOT])[1]
    for source in (plain, zst):
        for workers, chunk in ((1, 400), (2, 1000)):
            merges, documents = _run(source, max_bytes=cap, workers=workers, chunk_size=chunk)
            assert merges == expected
            assert documents == len(chosen)


def test_max_bytes_cuts_a_single_plain_file(tmp_path: Path) -> None:
    text = "héllo wörld, " * 3000
    (tmp_path / "big.txt").write_text(text)
    data = text.encode()[:10_001]
    expected = train_bpe_reference(data.decode("utf-8", errors="ignore"), 350, [])[1]
    for workers in (1, 2):
        assert core.train(tmp_path / "big.txt", core.TrainOptions(350, [], workers=workers), read=core.ReadOptions(max_bytes=10_001)).result()[1] == expected


def test_bad_options_are_refused_before_any_work(jsonl) -> None:
    plain = jsonl[0]
    for kw in ({"sample": 0}, {"sample": 1.5}, {"max_bytes": 0}, {"doc_max_chars": -1}, {"field": ""}):
        with pytest.raises(ValueError):
            train_run(plain, 300, [], **kw)


def test_sample_of_plain_files_keeps_whole_files(tmp_path: Path) -> None:
    docs = _docs(60)
    for i, doc in enumerate(docs):
        (tmp_path / f"{i:02d}.txt").write_text(doc)
    chosen = [d for i, d in enumerate(docs) if _kept_file(5, i, 0.5)]
    expected = train_bpe_reference(EOT.join(chosen), 400, [EOT])[1]
    for workers in (1, 2):
        merges, documents = _run(tmp_path, sample=0.5, seed=5, workers=workers)
        assert (merges, documents) == (expected, len(chosen))


def _kept_file(seed: int, index: int, fraction: float) -> bool:
    digest = hashlib.blake2b(f"{seed}/{index}/0".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") < fraction * 2**64
