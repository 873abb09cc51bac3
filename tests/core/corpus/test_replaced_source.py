"""A corpus file replaced during the run by another (``os.replace``: a new inode), even one of
the same size and modification time, is noticed: counting, training and encoding fail with
the "changed while it was being read" error and leave no output."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

import core
from core.encode.corpus import encode_corpus

EOT = "<|endoftext|>"
LINE = "some words and more words, {}\n"


def _write(path: Path, text: str) -> None:
    data = text.encode()
    path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)


@pytest.fixture(params=["c.txt", "c.txt.gz"])
def corpus(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    path = tmp_path / "in" / request.param
    path.parent.mkdir()
    _write(path, "".join(LINE.format(i % 10) for i in range(20_000)))
    return path


def _replace_alike(path: Path) -> None:
    """Put another file in ``path``'s place: same size, same modification time, other words."""
    info = path.stat()
    twin = path.with_name("twin" + "".join(path.suffixes))
    data = path.read_bytes()
    if path.suffix == ".gz":
        twin.write_bytes(data)  # the same bytes: only the file's identity differs
    else:
        twin.write_bytes(data.replace(b"more", b"MORE"))
    os.utime(twin, ns=(info.st_atime_ns, info.st_mtime_ns))
    os.replace(twin, path)
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (info.st_size, info.st_mtime_ns)
    assert after.st_ino != info.st_ino


@pytest.mark.parametrize("workers", [1, 2])
def test_training_and_counting_notice_a_file_replaced_mid_run(corpus: Path, workers: int) -> None:
    events = core.train(corpus, core.TrainOptions(300, [EOT], workers=workers), chunk_size=1 << 15).merge_events()
    replaced = False
    with pytest.raises(core.CorpusError, match=f"{corpus.name} changed while it was being read.*replaced"):
        for event in events:
            if isinstance(event, core.PretokenizeProgress) and event.done > 0 and not replaced:
                _replace_alike(corpus)
                replaced = True
    assert replaced


def test_counting_notices_a_file_replaced_after_it_was_opened(corpus: Path, monkeypatch) -> None:
    from core.corpus import count_run

    real = count_run.check_counting

    def then_replace(*args, **kwargs):  # type: ignore[no-untyped-def]
        run = real(*args, **kwargs)
        _replace_alike(corpus)  # after the corpus was checked, before any task is read
        return run

    monkeypatch.setattr(count_run, "check_counting", then_replace)
    with pytest.raises(core.CorpusError, match="changed while it was being read"):
        core.count_pretokens(corpus, [EOT], workers=1)


@pytest.mark.parametrize("workers", [1, 2])
def test_encoding_notices_a_file_replaced_mid_run_and_leaves_nothing(corpus: Path, tmp_path: Path,
                                                                     workers: int) -> None:
    vocab, merges = core.train_bpe(corpus, 300, [EOT], workers=1)
    tok = core.Tokenizer(vocab, merges, [EOT])
    out = tmp_path / "out"
    out.mkdir()
    replaced = []

    def progress(event: object) -> None:
        if not replaced:
            _replace_alike(corpus)
            replaced.append(True)

    with pytest.raises(core.CorpusError, match=f"{corpus.name} changed while it was being read"):
        encode_corpus(corpus, tok, out / "ids.npy", workers=workers, progress=progress, chunk_bytes=1 << 15)
    assert replaced and not list(out.iterdir())
