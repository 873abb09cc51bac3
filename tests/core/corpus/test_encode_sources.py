"""Encoding a corpus source: documents in order, each followed by the separator's id.

The expected ids come from `Tokenizer.encode` on each document alone (the plain API, not
the corpus path), so a pre-token spanning two documents, a lost or repeated document, or a
misplaced separator shows.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import zstandard

import core
from core.corpus.sources import ReadOptions
from core.encode.corpus import encode_corpus, separator_id

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> core.Tokenizer:
    root = tmp_path_factory.mktemp("tok")
    text = ("The quick brown fox jumps over the lazy dog. Ünïcödé 東京 123\n" * 50)
    (root / "c.txt").write_text(text)
    vocab, merges = core.train_bpe(root / "c.txt", 400, [EOT, "<|pad|>"], workers=1)
    return core.Tokenizer(vocab, merges, [EOT, "<|pad|>"])


def _docs(n: int) -> list[str]:
    return [f"fox {i} jumps" + "  \n" * (i % 3) + " over" * (i % 5) for i in range(n)]


def _expected(tok: core.Tokenizer, docs: list[str], sep: int | None) -> list[int]:
    ids: list[int] = []
    for doc in docs:
        ids += tok.encode(doc) + ([sep] if sep is not None else [])
    return ids


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".jsonl.zst", ".parquet"])
def test_documents_in_order_with_separators(tmp_path: Path, tokenizer, suffix: str, workers: int) -> None:
    docs = _docs(3000)
    path = tmp_path / f"d{suffix}"
    if suffix == ".parquet":
        pa = pytest.importorskip("pyarrow")
        pq = pytest.importorskip("pyarrow.parquet")
        pq.write_table(pa.table({"body": docs}), path, row_group_size=500)
    else:
        raw = "".join(json.dumps({"body": d}) + "\n" for d in docs).encode()
        path.write_bytes({".jsonl": raw, ".jsonl.gz": gzip.compress(raw),
                          ".jsonl.zst": zstandard.ZstdCompressor().compress(raw)}[suffix])
    out = tmp_path / "ids.npy"
    finished = encode_corpus(path, tokenizer, out, read=ReadOptions("body"), workers=workers)
    eot = tokenizer.special_ids[EOT]
    assert np.load(out).tolist() == _expected(tokenizer, docs, eot)
    assert finished.tokens == len(np.load(out))
    encode_corpus(path, tokenizer, out, read=ReadOptions("body"), doc_separator="<|pad|>", workers=workers)
    assert np.load(out).tolist() == _expected(tokenizer, docs, tokenizer.special_ids["<|pad|>"])
    encode_corpus(path, tokenizer, out, read=ReadOptions("body"), doc_separator=None, workers=workers)
    assert np.load(out).tolist() == _expected(tokenizer, docs, None)


def test_a_folder_of_text_files(tmp_path: Path, tokenizer) -> None:
    docs = _docs(40)
    for i, doc in enumerate(docs):
        (tmp_path / f"{i:03d}.txt").write_text(doc)
    out = tmp_path.parent / f"{tmp_path.name}-ids.npy"
    encode_corpus(tmp_path, tokenizer, out, workers=2)
    assert np.load(out).tolist() == _expected(tokenizer, docs, tokenizer.special_ids[EOT])


def test_a_single_plain_file_without_separator_is_the_plain_encoding(tmp_path: Path, tokenizer) -> None:
    text = "".join(_docs(200))
    (tmp_path / "c.txt").write_text(text)
    encode_corpus(tmp_path / "c.txt", tokenizer, tmp_path / "a.npy", doc_separator=None, workers=1)
    assert np.load(tmp_path / "a.npy").tolist() == tokenizer.encode(text)
    encode_corpus(tmp_path / "c.txt", tokenizer, tmp_path / "b.npy", workers=1)
    assert np.load(tmp_path / "b.npy").tolist() == tokenizer.encode(text) + [tokenizer.special_ids[EOT]]


def test_separator_choices(tokenizer) -> None:
    assert separator_id(tokenizer, True) == tokenizer.special_ids[EOT]
    assert separator_id(tokenizer, None) is None
    assert separator_id(tokenizer, "<|pad|>") == tokenizer.special_ids["<|pad|>"]
    assert separator_id(tokenizer, "T") == tokenizer.encode("T")[0]
    with pytest.raises(ValueError, match="not one token of this tokenizer"):
        separator_id(tokenizer, "<|nope|>")
    plain = core.Tokenizer(dict(enumerate(bytes([i]) for i in range(256))), [])
    assert separator_id(plain, True) is None  # no <|endoftext|>: no separator by default


@pytest.mark.parametrize("bad", ["/bin/ls", "/dev/zero"])
def test_encode_applies_the_corpus_checks(tmp_path: Path, tokenizer, bad: str) -> None:
    if not Path(bad).exists():
        pytest.skip(f"no {bad}")
    with pytest.raises(core.CorpusError):
        encode_corpus(bad, tokenizer, tmp_path / "ids.npy")
    assert not list(tmp_path.iterdir())


def test_a_bad_line_leaves_nothing(tmp_path: Path, tokenizer) -> None:
    lines = [json.dumps({"text": d}) for d in _docs(5000)]
    lines[4000] = "{broken"
    (tmp_path / "d.jsonl").write_text("\n".join(lines))
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(core.CorpusError, match=r"d\.jsonl, line 4001"):
        encode_corpus(tmp_path / "d.jsonl", tokenizer, out / "ids.npy", workers=2)
    assert not list(out.iterdir())


def test_text_files_in_worker_threads_or_processes(tmp_path: Path, tokenizer, path_kind: str) -> None:
    """Text encodes in worker threads with the native encoder, in processes on the Python
    path: the same ids, in order, over many small chunks of plain and compressed files."""
    docs = _docs(60)
    folder = tmp_path / "corpus"
    folder.mkdir()
    for i, doc in enumerate(docs):
        data = doc.encode()
        (folder / f"{i:03d}.txt{'.gz' if i % 3 == 0 else ''}").write_bytes(gzip.compress(data) if i % 3 == 0 else data)
    out = tmp_path / "ids.npy"
    encode_corpus(folder, tokenizer, out, workers=2)
    assert np.load(out).tolist() == _expected(tokenizer, docs, tokenizer.special_ids[EOT])
