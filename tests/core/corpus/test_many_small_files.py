"""A folder of many small files: one task holds many files (not one task per file), each
file still one document, with the counts and ids of reading them one by one; an empty file
among them is an empty document (only a corpus without any text is an error); and the
time `encode_corpus` reports includes checking the files."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

import core
from core.corpus import sources
from core.corpus.documents import Files
from core.corpus.planning import plan_tasks
from core.corpus.sources import open_corpus
from core.encode.corpus import encode_corpus
from core.errors import CorpusError
from core.pretokenize.patterns import resolve_pattern

EOT = "<|endoftext|>"


def _docs(n: int) -> list[str]:
    return [f"doc {i} says" + " hello" * (i % 4) + ("\n" if i % 3 else "  ") + "é!" * (i % 2) for i in range(n)]


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "many"
    for i, doc in enumerate(_docs(600)):
        sub = root / f"{i // 100:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"{i:04d}.txt").write_bytes(doc.encode() + (b"\xff" if i % 7 == 0 else b""))
    return root


def test_small_files_are_planned_together(folder: Path) -> None:
    corpus = open_corpus(folder)
    tasks = list(plan_tasks(corpus, resolve_pattern("gpt2"), [], 1 << 20))
    assert len(tasks) == 1 and isinstance(tasks[0], Files) and len(tasks[0].files) == 600
    assert [f.path for f in tasks[0].files] == sorted(folder.rglob("*.txt"))


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("chunk_size", [None, 700])
def test_their_counts_are_those_of_each_file_as_a_document(folder: Path, workers: int, chunk_size: int | None) -> None:
    counts = core.count_pretokens(folder, workers=workers, chunk_size=chunk_size)
    texts = [p.read_bytes().decode("utf-8", "surrogateescape") for p in sorted(folder.rglob("*.txt"))]
    one_by_one = core.PretokenCounts.add_all(
        [core.count_pretokens(p, workers=1) for p in sorted(folder.rglob("*.txt"))])
    assert dict(counts) == dict(one_by_one)
    assert counts.documents == len(texts) and counts.invalid_bytes == one_by_one.invalid_bytes > 0


def test_sampling_many_small_files_keeps_the_same_documents(folder: Path) -> None:
    read = core.ReadOptions(sample=0.5, seed=3)
    a = core.count_pretokens(folder, workers=1, read=read)
    b = core.count_pretokens(folder, workers=2, read=read, chunk_size=300)
    assert dict(a) == dict(b) and a.documents == b.documents and 200 < a.documents < 400


def test_an_empty_file_in_a_folder_is_an_empty_document(folder: Path, tmp_path: Path) -> None:
    before = core.count_pretokens(folder, workers=1)
    (folder / "00" / "0000b-empty.txt").write_bytes(b"")
    (folder / "00" / "0000c-empty.txt.gz").write_bytes(__import__("gzip").compress(b""))
    after = core.count_pretokens(folder, workers=2)
    assert dict(after) == dict(before) and after.documents == before.documents + 2
    run = core.train(folder, core.TrainOptions(300, workers=1)).result()
    assert run == core.train(sorted(p for p in folder.rglob("*") if p.is_file() and p.stat().st_size),
                             core.TrainOptions(300, workers=1)).result()
    assert dict(core.count_pretokens(f"{folder}/*/*.txt", workers=1)) == dict(before)


def test_a_corpus_without_text_is_still_an_error(tmp_path: Path) -> None:
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "a.txt").write_bytes(b"")
    with pytest.raises(CorpusError, match=r"a\.txt is empty; there is nothing to train on"):
        core.count_pretokens(tmp_path / "e" / "a.txt")
    (tmp_path / "e" / "b.txt").write_bytes(b"")
    with pytest.raises(CorpusError, match="the 2 files of the corpus are all empty; there is nothing to train on"):
        core.count_pretokens(tmp_path / "e")


def test_the_encode_time_includes_checking_the_files(folder: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    vocab, merges = core.train_bpe(next(folder.rglob("*.txt")), 260, [EOT], workers=1)
    tok = core.Tokenizer(vocab, merges, [EOT])
    check = sources.check_sample

    def slow_check(*args: object, **kw: object) -> None:
        time.sleep(0.001)  # 600 files: 0.6 s of checking
        check(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(sources, "check_sample", slow_check)
    started = time.monotonic()
    finished = encode_corpus(folder, tok, tmp_path / "ids.npy", workers=1)
    took = time.monotonic() - started
    assert 0.6 <= finished.seconds <= took
    expected = np.concatenate([np.append(tok.encode(p.read_bytes()), tok.special_ids[EOT])
                               for p in sorted(folder.rglob("*.txt"))])
    assert np.load(tmp_path / "ids.npy").tolist() == expected.tolist()
