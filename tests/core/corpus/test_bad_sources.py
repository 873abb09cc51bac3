"""Bad corpora get one clear error naming the file (and line, field or columns), before any result.

What can be seen from a file's start (an empty or binary file, a first record without the
field, a Parquet file without the column, a bad compressed header, a FIFO) is refused by
the call itself, before any worker starts; what is deeper (line 3,000 is not JSON, a
compressed file cut short, a file changed during the run) stops the run with the same
kind of message before any result is produced.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest
import zstandard

import core
from tests.training import train_run
from core.corpus.sources import text_fields
from core.errors import CorpusError


def _train(source, workers: int = 1, **kw):
    return list(train_run(source, 300, ["<|endoftext|>"], workers=workers, **kw).merge_events())


def _lines(n: int, bad_at: int | None = None, bad: str = "{not json") -> str:
    return "".join(bad + "\n" if i == bad_at else json.dumps({"text": f"line {i} text"}) + "\n" for i in range(n))


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".jsonl.zst"])
@pytest.mark.parametrize("workers", [1, 2])
def test_a_line_deep_in_the_file_that_is_not_json(tmp_path: Path, suffix: str, workers: int) -> None:
    raw = _lines(5000, bad_at=3210).encode()
    path = tmp_path / f"c{suffix}"
    path.write_bytes({".jsonl": raw, ".jsonl.gz": gzip.compress(raw),
                      ".jsonl.zst": zstandard.ZstdCompressor().compress(raw)}[suffix])
    with pytest.raises(CorpusError, match=rf"c{suffix}, line 3211: not valid JSON"):
        _train(path, workers=workers, chunk_size=4096)


def test_first_line_without_the_field_is_refused_at_once(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"content": "x", "id": 3}) + "\n")
    with pytest.raises(CorpusError) as error:
        core.train(path, core.TrainOptions(300, [])).merge_events()  # the call itself raises
    assert "c.jsonl, line 1: no field 'text' (its fields: content, id)" in str(error.value)
    assert "(field=)" in str(error.value)  # the argument, not the CLI flag
    assert core.train(path, core.TrainOptions(300, [], workers=1), read=core.ReadOptions(field="content")).result()[0]


def test_a_later_record_without_the_field(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(_lines(50) + json.dumps({"body": "x"}) + "\n")
    with pytest.raises(CorpusError, match=r"c\.jsonl, line 51: no field 'text' \(its fields: body\)"):
        _train(path)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_null_text_is_no_document_as_in_parquet(tmp_path: Path, workers: int) -> None:
    """``{"text": null}`` is skipped, as a Parquet null is (it stopped the run), first line
    included; the merges are those of the file without it."""
    records = [json.dumps({"text": f"line {i} text" * (i % 5)}) for i in range(400)]
    with_nulls = tmp_path / "n.jsonl"
    with_nulls.write_text("\n".join(['{"text": null}', *records[:200], '{"text": null, "id": 3}', *records[200:]]) + "\n")
    without = tmp_path / "w.jsonl"
    without.write_text("\n".join(records) + "\n")
    def merges(events: list) -> list:  # noqa: ANN001
        return [(e.left, e.right, e.count) for e in events if hasattr(e, "left")]

    assert merges(_train(with_nulls, workers=workers, chunk_size=1 << 12)) == merges(_train(without, workers=workers))


@pytest.mark.parametrize(("line", "words"), [("[1, 2]", "a JSON list, not an object"),
                                             ('{"text": 5}', "holds a int, not a string")])
def test_records_of_the_wrong_shape(tmp_path: Path, line: str, words: str) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(CorpusError, match=words):
        _train(path)


def test_parquet_without_the_column_lists_its_columns(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"content": ["a b"], "url": ["u"], "n": [1]}), tmp_path / "p.parquet")
    with pytest.raises(CorpusError, match=r"p\.parquet: no column 'text' \(its columns: content, url, n\)"):
        core.train(tmp_path / "p.parquet", core.TrainOptions(300, [])).merge_events()
    with pytest.raises(CorpusError, match="'n' holds int64, not strings; choose a text column.*content, url"):
        core.train(tmp_path / "p.parquet", core.TrainOptions(300, []), read=core.ReadOptions(field="n")).merge_events()


@pytest.mark.parametrize("workers", [1, 2])
def test_parquet_strings_dictionary_encoded_are_text(tmp_path: Path, workers: int) -> None:
    """A string column written dictionary-encoded (a pandas category) is read as its strings
    (it was refused: "holds dictionary<values=string ...>, not strings")."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    texts = [f"row {i % 7} says hello to row {i % 5}" if i % 9 else None for i in range(300)]
    pq.write_table(pa.table({"text": pa.array(texts).dictionary_encode()}), tmp_path / "d.parquet")
    pq.write_table(pa.table({"text": pa.array(texts)}), tmp_path / "p.parquet")
    assert text_fields(tmp_path / "d.parquet") == ["text"]  # (the window's field chooser)

    def merges(name: str) -> list:  # noqa: ANN202
        return core.train(tmp_path / name, core.TrainOptions(300, [], workers=workers)).result()[1]

    assert merges("d.parquet") == merges("p.parquet")


def test_parquet_without_pyarrow_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "p.parquet").write_bytes(b"PAR1 not really")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(CorpusError, match=r"p\.parquet: reading Parquet needs pyarrow.*bpe-studio\[parquet\]"):
        core.train(tmp_path / "p.parquet", core.TrainOptions(300, [])).merge_events()


def test_not_a_parquet_file(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    (tmp_path / "p.parquet").write_text("hello")
    with pytest.raises(CorpusError, match=r"p\.parquet is not a valid Parquet file"):
        core.train(tmp_path / "p.parquet", core.TrainOptions(300, [])).merge_events()


@pytest.mark.parametrize("name", ["c.txt.gz", "c.jsonl.gz", "c.txt.zst", "c.txt.bz2", "c.txt.xz"])
def test_a_corrupt_compressed_file(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_bytes(b"this is not compressed data at all" * 10)
    with pytest.raises(CorpusError, match=rf"{name} is corrupt or truncated"):
        core.train(tmp_path / name, core.TrainOptions(300, [])).merge_events()


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("name", ["c.txt.gz", "c.jsonl.zst"])
def test_a_truncated_compressed_file(tmp_path: Path, name: str, workers: int) -> None:
    raw = _lines(40_000).encode()
    data = gzip.compress(raw) if name.endswith(".gz") else zstandard.ZstdCompressor().compress(raw)
    (tmp_path / name).write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(CorpusError, match=rf"{name} is corrupt or truncated"):
        _train(tmp_path / name, workers=workers, chunk_size=1 << 16)


def test_an_empty_folder_and_a_glob_matching_nothing(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / ".hidden").write_text("hidden files are skipped")
    with pytest.raises(FileNotFoundError, match="holds no files"):
        core.train(tmp_path / "empty", core.TrainOptions(300, [])).merge_events()
    with pytest.raises(FileNotFoundError, match=r"no file matches .*\*\.jsonl"):
        core.train(str(tmp_path / "*.jsonl"), core.TrainOptions(300, [])).merge_events()


def test_a_folder_of_binary_files(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    for name in ("a.bin", "b.dat"):
        (tmp_path / "bin" / name).write_bytes(bytes(range(256)) * 10 + bytes(100))
    with pytest.raises(CorpusError, match=r"a\.bin looks like a binary file"):
        core.train(tmp_path / "bin", core.TrainOptions(300, [])).merge_events()


def test_a_compressed_binary_file(tmp_path: Path) -> None:
    (tmp_path / "x.txt.gz").write_bytes(gzip.compress(bytes(4000)))
    with pytest.raises(CorpusError, match="looks like a binary file"):
        core.train(tmp_path / "x.txt.gz", core.TrainOptions(300, [])).merge_events()


def test_mixed_good_and_bad_shards_fail_before_any_result(tmp_path: Path) -> None:
    shards = tmp_path / "shards"
    shards.mkdir()
    for i in range(3):
        (shards / f"{i}.jsonl").write_text(_lines(2000))
    (shards / "3.jsonl").write_text(_lines(2000, bad_at=1500))
    events = core.train(shards, core.TrainOptions(300, [], workers=2), chunk_size=8192).merge_events()
    seen = []
    with pytest.raises(CorpusError, match=r"3\.jsonl, line 1501"):
        for event in events:
            seen.append(event)
    assert not any(isinstance(e, (core.CountingDone, core.Finished)) for e in seen)


def test_an_empty_file_among_shards_is_an_empty_document(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("text")
    (tmp_path / "b.txt").write_text("")
    counts = core.count_pretokens(tmp_path, workers=1)
    assert dict(counts) == {b"text": 1} and counts.documents == 2
    with pytest.raises(CorpusError, match=r"b\.txt is empty"):  # alone, it holds no text
        core.train(tmp_path / "b.txt", core.TrainOptions(300, [])).merge_events()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_at_once_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []

    def attempt() -> None:
        try:
            core.train(fifo, core.TrainOptions(300, [])).merge_events()
        except BaseException as e:  # noqa: BLE001
            outcome.append(e)

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():  # unblock the open() it is stuck in, then fail
        with open(fifo, "wb"):
            pass
        pytest.fail("opening a FIFO without a writer hung")
    assert isinstance(outcome[0], CorpusError)
    assert "pipe.txt is a FIFO (pipe), not a regular file" in str(outcome[0])


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_a_device_is_refused(device: str) -> None:
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    with pytest.raises(CorpusError, match="not a regular file"):
        core.train(device, core.TrainOptions(300, [])).merge_events()


def test_a_corpus_that_changes_during_the_run(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_text("some words and more words\n" * 20_000)
    events = core.train(path, core.TrainOptions(300, [], workers=1), chunk_size=1 << 16).merge_events()
    with pytest.raises(CorpusError, match=r"c\.txt changed while it was being read"):
        for event in events:
            if isinstance(event, core.PretokenizeProgress) and event.done > 0:
                with open(path, "r+b") as f:
                    f.truncate(100_000)
                os.utime(path, ns=(time.time_ns(), time.time_ns()))


def test_a_corpus_touched_during_the_run(tmp_path: Path) -> None:
    """Same size, new modification time: still noticed."""
    path = tmp_path / "c.jsonl"
    path.write_text(_lines(20_000))
    events = core.train(path, core.TrainOptions(300, [], workers=1), chunk_size=1 << 16).merge_events()
    with pytest.raises(CorpusError, match="changed while it was being read"):
        for event in events:
            if isinstance(event, core.PretokenizeProgress) and event.done > 0:
                os.utime(path, ns=(1, 1))


def test_a_file_that_shrank_before_its_chunks_were_planned() -> None:
    """Planning reads windows up to the size taken at the start: a shorter file ends the
    search (the run then fails as changed) instead of reading ever larger windows."""
    import io

    from core.corpus.chunks import find_cut
    from core.pretokenize.patterns import resolve_pattern

    shrunk = io.BytesIO(b"x" * 1000)  # one long word: no cut point in it
    assert find_cut(shrunk, 500, 50_000_000, resolve_pattern("gpt2"), []) == 50_000_000


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_a_broken_link_and_a_loop_of_links_are_named(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("some text to train on", encoding="utf-8")
    os.symlink("gone.txt", tmp_path / "b.txt")
    with pytest.raises(FileNotFoundError, match=r"b\.txt is a link to gone\.txt, which does not exist; fix or remove"):
        core.train(tmp_path, core.TrainOptions(300, [])).merge_events()
    (tmp_path / "b.txt").unlink()
    os.symlink("c.txt", tmp_path / "c.txt")  # was a bare "[Errno 40] Too many levels of symbolic links"
    with pytest.raises(CorpusError, match=r"c\.txt \(a link in a loop of links\) inside the corpus cannot be read"):
        core.train(tmp_path, core.TrainOptions(300, [])).merge_events()
    with pytest.raises(CorpusError, match=r"c\.txt is a link that leads back to itself"):  # given by name
        core.train(tmp_path / "c.txt", core.TrainOptions(300, [])).merge_events()


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_a_folder_of_links_to_folders_says_they_are_not_followed(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.txt").write_text("text", encoding="utf-8")
    (tmp_path / "only").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "only" / "r")
    with pytest.raises(FileNotFoundError, match="holds no files to read .*links to folders are not followed"):
        core.train(tmp_path / "only", core.TrainOptions(300, [])).merge_events()
