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


def test_each_small_file_is_opened_once_and_never_statted_by_path(folder: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The cost of a folder of tiny files is per file: one open (with its fstat and read),
    no stat by path, no second look at the end of the run; the counts are the same. (Counted
    on the Python path; the C one, `_file_starts.c`, makes the same calls a file.)"""
    import builtins
    import io
    import os

    expected = dict(core.count_pretokens(folder, workers=1))
    monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
    calls = {"stat": 0, "open": 0}

    def counted(name: str, real):  # type: ignore[no-untyped-def]
        def call(path, *args, **kw):  # type: ignore[no-untyped-def]
            if str(path).startswith(str(folder)) and str(path).endswith(".txt"):  # (the files, not the folder)
                calls[name] += 1
            return real(path, *args, **kw)
        return call

    monkeypatch.setattr(os, "stat", counted("stat", os.stat))
    monkeypatch.setattr(os, "open", counted("open", os.open))
    monkeypatch.setattr(builtins, "open", counted("open", builtins.open))
    monkeypatch.setattr(io, "open", counted("open", io.open))
    counts = core.count_pretokens(folder, workers=1)
    assert dict(counts) == expected
    assert calls == {"stat": 0, "open": 600}


def test_a_small_file_encoded_alone_gives_the_ids_of_its_checked_bytes(tmp_path: Path) -> None:
    """One small file is read once, by its check; its ids are those of its bytes."""
    path = tmp_path / "small.txt"
    path.write_bytes("héllo wörld\r\n  tabs\t\tand <|endoftext|> a special ".encode() + b"\xff\xfe")
    vocab, merges = core.train_bpe(path, 270, [EOT], workers=1)
    tok = core.Tokenizer(vocab, merges, [EOT])
    encode_corpus(path, tok, tmp_path / "ids.npy", doc_separator=None, workers=1)
    assert np.load(tmp_path / "ids.npy").tolist() == tok.encode(path.read_bytes())


@pytest.mark.parametrize("pure", ["0", "1"])
def test_a_bad_file_among_many_is_told_as_when_alone(folder: Path, tmp_path: Path, pure: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The files' starts are read ahead in batches (in C on two threads, or in Python): a bad
    one far into the list is still the one reported, with the reason a single file gets."""
    import os

    monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", pure)
    files = sorted(folder.rglob("*.txt"))
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    loop = tmp_path / "loop.txt"
    loop.symlink_to(loop)
    cases = [(fifo, CorpusError, "is a FIFO"), (tmp_path / "gone.txt", FileNotFoundError, "corpus file not found"),
             (loop, CorpusError, "leads back to itself")]
    for bad, error, message in cases:
        with pytest.raises(error, match=message) as raised:
            open_corpus(files[:400] + [bad] + files[400:])
        assert str(bad) in str(raised.value)
    grown = tmp_path / "grown.txt"
    grown.write_bytes(b"abc")
    corpus = open_corpus(files + [grown])
    assert [f.data for f in corpus.files] == [p.read_bytes() for p in files] + [b"abc"]
    assert corpus.files[-1].size == 3 and corpus.files[-1].identity == (grown.stat().st_dev, grown.stat().st_ino)
