"""Every form of a corpus trains exactly like the oracle on one text joined by a special token.

The same documents as a ``.txt`` joined by ``<|endoftext|>``, as ``.jsonl`` (plain, gzip,
bzip2, xz, zstd), as Parquet, as folders of shards and as an iterator give the merges of
`train_bpe_reference` on the joined text, at 1 and 2 workers and with chunks small enough
that every file is cut into many tasks.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import random
from pathlib import Path

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core.errors import CorpusError
from core.training.reference import train_bpe_reference

EOT = "<|endoftext|>"
WORDS = ["the", " cat", " sat", "\n", "\n\n", "  ", " über", " naïve", " 東京", " 42", "3.14", " don't",
         "it's", "!!", " ", "\t", "Hello", " world", "ab", "\u00a0x", "a\r\n", "🙂", "—", "<|", "|>"]


def make_documents(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    docs = ["".join(rng.choice(WORDS) for _ in range(rng.randint(0, 40))) for _ in range(n)]
    docs[3] = ""  # an empty document is still a document
    docs[7] = "special inside<|endoftext|>a document"
    docs[8] = "   "  # whitespace only: its run must not join the next document's
    return docs


def write_jsonl(path: Path, docs: list[str], field: str = "text") -> bytes:
    data = "".join(json.dumps({"id": i, field: d}, ensure_ascii=i % 2 == 0) + "\n" for i, d in enumerate(docs))
    raw = data.encode("utf-8")
    compress = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress,
                ".zst": zstandard.ZstdCompressor().compress}.get(path.suffix, lambda b: b)
    path.write_bytes(compress(raw))
    return raw


@pytest.fixture(scope="module")
def docs() -> list[str]:
    return make_documents(400)


@pytest.fixture(scope="module")
def expected(docs: list[str]) -> list[tuple[bytes, bytes]]:
    return train_bpe_reference(EOT.join(docs), 420, [EOT])[1]


def _forms(root: Path, docs: list[str]) -> dict[str, object]:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    (root / "joined.txt").write_text(EOT.join(docs), encoding="utf-8")
    (root / "joined.txt.gz").write_bytes(gzip.compress(EOT.join(docs).encode()))
    for suffix in ("", ".gz", ".bz2", ".xz", ".zst"):
        write_jsonl(root / f"docs.jsonl{suffix}", docs)
    write_jsonl(root / "docs.ndjson", docs)
    pq.write_table(pa.table({"id": list(range(len(docs))), "text": docs}), root / "docs.parquet", row_group_size=37)
    shards = root / "shards"
    (shards / "sub").mkdir(parents=True)
    write_jsonl(shards / "a.jsonl", docs[:150])
    write_jsonl(shards / "sub" / "b.jsonl.zst", docs[150:300])
    pq.write_table(pa.table({"text": docs[300:]}), shards / "sub" / "c.parquet", row_group_size=20)
    (shards / ".hidden.txt").write_text("never read: hidden files are skipped")
    files = root / "files"
    files.mkdir()
    for i, doc in enumerate(docs):
        if doc:  # an empty file is refused; an empty document adds nothing
            (files / f"{i:04d}.txt").write_text(doc, encoding="utf-8")
    return {
        "txt": root / "joined.txt",
        "txt.gz": root / "joined.txt.gz",
        "jsonl": root / "docs.jsonl",
        "ndjson": root / "docs.ndjson",
        "jsonl.gz": root / "docs.jsonl.gz",
        "jsonl.bz2": root / "docs.jsonl.bz2",
        "jsonl.xz": root / "docs.jsonl.xz",
        "jsonl.zst": root / "docs.jsonl.zst",
        "parquet": root / "docs.parquet",
        "folder of mixed shards": shards,
        "folder of text files": files,
        "glob": str(root / "files" / "*.txt"),
        "list": [shards / "a.jsonl", shards / "sub" / "b.jsonl.zst", shards / "sub" / "c.parquet"],
    }


@pytest.fixture(scope="module")
def forms(tmp_path_factory: pytest.TempPathFactory, docs: list[str]) -> dict[str, object]:
    return _forms(tmp_path_factory.mktemp("forms"), docs)


FORMS = ["txt", "txt.gz", "jsonl", "ndjson", "jsonl.gz", "jsonl.bz2", "jsonl.xz", "jsonl.zst", "parquet",
         "folder of mixed shards", "folder of text files", "glob", "list"]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("form", FORMS)
def test_every_form_gives_the_oracles_merges(
    forms: dict[str, object], docs: list[str], expected, form: str, workers: int
) -> None:
    events = list(core.train(forms[form], core.TrainOptions(420, [EOT], workers=workers), chunk_size=700).merge_events())
    assert events[-1].merges == expected
    counting = next(e for e in events if isinstance(e, core.CountingDone))
    progress = [e for e in events if isinstance(e, core.PretokenizeProgress)]
    assert progress[-1].done == progress[-1].total > 0  # input bytes, compressed ones for compressed files
    one_file_each = form in ("folder of text files", "glob")  # no file for an empty document
    documents = {"txt": 1, "txt.gz": 1}.get(form, sum(map(bool, docs)) if one_file_each else len(docs))
    assert counting.documents == progress[-1].documents == documents


@pytest.mark.parametrize("workers", [1, 2])
def test_iterator_gives_the_oracles_merges(docs: list[str], expected, workers: int) -> None:
    assert core.train(iter(iter(docs)), core.TrainOptions(420, [EOT], workers=workers)).result()[1] == expected
    events = list(core.train(iter((d for d in docs)), core.TrainOptions(420, [EOT], workers=workers), chunk_size=500))
    assert events[-1].merges == expected


def test_document_boundary_acts_as_a_special_token_even_when_none_is_given(tmp_path: Path) -> None:
    """No special token in the list: documents still never join (the oracle needs one, as a separator)."""
    docs = [d.replace(EOT, "") for d in make_documents(300, seed=5)]
    write_jsonl(tmp_path / "d.jsonl", docs)
    expected = train_bpe_reference(EOT.join(docs), 400, [EOT])[1]
    for workers in (1, 2):
        assert core.train_bpe(tmp_path / "d.jsonl", 399, [], workers=workers)[1] == expected


def test_single_plain_file_still_splits_at_its_special_tokens(tmp_path: Path) -> None:
    text = "a b<|x|>c d\n" * 200
    (tmp_path / "one.txt").write_text(text)
    expected = train_bpe_reference(text, 300, ["<|x|>"])[1]
    assert core.train_bpe(tmp_path / "one.txt", 300, ["<|x|>"], workers=1)[1] == expected


def test_custom_pattern_over_documents(forms: dict[str, object], docs: list[str]) -> None:
    pattern = r"\p{L}+|\p{N}+|\s+|[^\s\p{L}\p{N}]+"
    expected = train_bpe_reference(EOT.join(docs), 400, [EOT], pattern=pattern)[1]
    for form in ("jsonl.zst", "parquet", "txt.gz"):
        assert core.train_bpe(forms[form], 400, [EOT], pattern=pattern, workers=2)[1] == expected


_text = st.text(st.sampled_from("ab \n\t.1é東\u00a0<|>"), max_size=30)


@settings(max_examples=40, deadline=None)
@given(docs=st.lists(_text, min_size=1, max_size=12), chunk=st.integers(1, 40))
def test_any_documents_any_chunks(docs: list[str], chunk: int) -> None:
    """Property: documents through the iterator == the oracle on the joined text (and no
    text at all is an error, not a tokenizer of the 256 bytes)."""
    if not any(docs):
        with pytest.raises(CorpusError, match="the corpus holds no text"):
            list(core.train(iter(docs), core.TrainOptions(300, [EOT], workers=1), chunk_size=chunk))
        return
    expected = train_bpe_reference(EOT.join(docs), 300, [EOT])[1]
    events = list(core.train(iter(docs), core.TrainOptions(300, [EOT], workers=1), chunk_size=chunk))
    assert events[-1].merges == expected


@settings(max_examples=30, deadline=None)
@given(text=st.text(st.sampled_from("ab \n\t.1é東\u00a0\u3000<|endoftext|>"), max_size=300),
       chunk=st.integers(1, 64), pattern=st.sampled_from(["gpt2", "gpt4"]))
def test_compressed_text_cut_anywhere(tmp_path_factory: pytest.TempPathFactory, text: str, chunk: int,
                                      pattern: str) -> None:
    """Property: a .txt.gz read as a stream and cut into blocks at exact boundaries (any
    block size) == the oracle on the text."""
    path = tmp_path_factory.mktemp("gz") / "t.txt.gz"
    path.write_bytes(gzip.compress(text.encode("utf-8")))
    if not text:
        return
    expected = train_bpe_reference(text, 300, [EOT], pattern=pattern)[1]
    events = list(core.train(path, core.TrainOptions(300, [EOT], pattern=pattern, workers=1), chunk_size=chunk))
    assert events[-1].merges == expected
