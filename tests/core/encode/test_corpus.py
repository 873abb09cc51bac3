"""Encoding corpora to .npy (`core.encode.corpus`): a plain file gives `Tokenizer.encode`
of its bytes, whatever the chunking and workers; dtype by vocabulary size; atomic output; a
source changing during the run; the ``encode`` command."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import core
from bpe_studio.cli import main
from core.workers import processes
from core.encode import pipeline, plain_file
from core.corpus.chunks import plan_chunks
from core.corpus.sources import ReadOptions
from core.encode.corpus import EncodeFinished, EncodeProgress, encode_corpus, encode_corpus_events
from core.formats import save_tokenizer
from core.encode.tokenizer import Tokenizer

SPECIALS = ["<|endoftext|>", "<|a|>", "<|a|><|b|>"]
PIECES = [
    "hello", " world", "DON'T", " it's", "naïve", " 漢字", "🙂", "👨\u200d👩\u200d👧", "e\u0301", "123456",
    "  ", "\n", "\n\n", "\r\n", "\t", "\u3000", "\x85", "\x1c", " \xa0", "def f(x):\n    return x",
    "!?", "...", "<|", "|>", *SPECIALS,
]


def corpus_bytes(seed: int, size: int) -> bytes:
    rng = random.Random(seed)
    parts: list[bytes] = []
    total = 0
    while total < size:
        part = rng.choice(PIECES).encode() if rng.random() < 0.98 else bytes([rng.randint(0x80, 0xFF)])
        parts.append(part)
        total += len(part)
    return b"".join(parts)


def small_tokenizer(pattern: str = "gpt2", specials: list[str] | None = SPECIALS) -> Tokenizer:
    """A tokenizer with a few hand-made merges (enough to make ids differ from bytes)."""
    vocab = {i: bytes([i]) for i in range(256)}
    merges = [(b"l", b"l"), (b"h", b"e"), (b"he", b"ll"), (b"hell", b"o"), (b" ", b"w"), (b"\xe6", b"\xbc")]
    for i, (a, b) in enumerate(merges):
        vocab[256 + i] = a + b
    return Tokenizer(vocab, merges, specials, pattern=pattern)


def expected_ids(tok: Tokenizer, data: bytes) -> list[int]:
    return tok.encode(data)


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4", r"\p{L}+|\p{N}|\s+|[^\s\p{L}\p{N}]+"])
def test_chunked_encoding_equals_encode(tmp_path: Path, pattern: str) -> None:
    data = corpus_bytes(1, 60_000)
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(data)
    tok = small_tokenizer(pattern)
    for chunk_bytes in (1000, 7919, 1 << 20):
        out = tmp_path / f"ids{chunk_bytes}.npy"
        finished = encode_corpus(corpus, tok, out, workers=1, chunk_bytes=chunk_bytes, doc_separator=None)
        ids = np.load(out)
        assert ids.dtype == np.uint16
        assert ids.tolist() == expected_ids(tok, data)
        assert finished.tokens == len(ids) and finished.corpus_bytes == len(data)


def test_file_without_cut_points_is_streamed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A custom pattern and no special tokens: one chunk, encoded block by block.
    monkeypatch.setattr(plain_file, "STREAM_BYTES", 10_000)
    monkeypatch.setattr(plain_file, "STREAM_BLOCK_CHARS", 30_000)
    data = corpus_bytes(5, 400_000).replace(b"<|", b"(")
    (tmp_path / "c.txt").write_bytes(data)
    tok = small_tokenizer(r"\p{L}+|\p{N}|\s+|[^\s\p{L}\p{N}]+", specials=None)
    events = list(encode_corpus_events(tmp_path / "c.txt", tok, tmp_path / "ids.npy", workers=2, doc_separator=None))
    assert np.load(tmp_path / "ids.npy").tolist() == expected_ids(tok, data)
    assert len(events) > 3  # progress while streaming


@pytest.mark.parametrize(("path", "start_method"), [("native", None), ("python", "spawn"), ("python", "fork"),
                                                     ("python", None)])
def test_parallel_workers_give_the_same_ids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str,
                                            start_method: str | None) -> None:
    """Native encoding runs in threads of this process, the Python path in worker processes."""
    if path == "python":
        monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
    else:
        pytest.importorskip("core.encode._bpe_kernel", reason="the native encoder is not built")
    data = corpus_bytes(2, 300_000)
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(data)
    tok = small_tokenizer("gpt2")
    events = list(
        encode_corpus_events(
            corpus, tok, tmp_path / "ids.npy", workers=2, chunk_bytes=20_000, start_method=start_method,
            doc_separator=None,
        )
    )
    assert np.load(tmp_path / "ids.npy").tolist() == expected_ids(tok, data)
    progress = [e for e in events if isinstance(e, EncodeProgress)]
    assert [e.done for e in progress] == sorted(e.done for e in progress) and progress[-1].done == len(data)
    assert len(progress) > 10 and isinstance(events[-1], EncodeFinished)
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("fork", [False, True], ids=["spawn", "fork"])
def test_chunks_from_workers_come_back_in_order(tmp_path: Path, fork: bool) -> None:
    data = corpus_bytes(6, 100_000)
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(data)
    tok = small_tokenizer("gpt2")
    encoder = tok._text_encoder(1000)
    encoder.encode_to_array(b"warm the cache hello world")  # spawned: the second task carries a snapshot
    chunks = plan_chunks(corpus, len(data), tok.pattern, tok.special_tokens, 5_000)
    tasks = [(str(corpus), start, end, "<u2") for start, end in chunks]
    starter = pipeline.start_workers(encoder, 1, fork)
    try:
        while starter.pool is None:  # ready before the first chunk: tasks 0 and 1 go to the worker
            time.sleep(0.01)
        arrays = list(plain_file._encode_in_order(tasks, encoder, starter))
    finally:
        starter.close()
    assert np.concatenate(arrays).tolist() == expected_ids(tok, data)
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("fork", [False, True], ids=["spawn", "fork"])
def test_workers_leave_ctrl_c_to_the_parent(fork: bool) -> None:
    # Ctrl+C reaches the whole process group: the parent cancels and stops the workers,
    # which must not each print a traceback of their own.
    starter = pipeline.start_workers(small_tokenizer()._text_encoder(100), 1, fork)
    try:
        while starter.pool is None:
            time.sleep(0.01)
        assert starter.pool.apply(signal.getsignal, (signal.SIGINT,)) == signal.SIG_IGN
    finally:
        starter.close()
    assert signal.getsignal(signal.SIGINT) != signal.SIG_IGN  # this process is untouched


def test_large_vocabularies_write_uint32(tmp_path: Path) -> None:
    vocab = {i: bytes([i]) for i in range(256)} | {i: b"tok%d" % i for i in range(256, 70_000)}
    tok = Tokenizer(vocab, [], ["<|endoftext|>"])
    corpus = tmp_path / "c.txt"
    corpus.write_text("ab<|endoftext|>c", encoding="utf-8")
    encode_corpus(corpus, tok, tmp_path / "ids.npy", workers=1, doc_separator=None)
    ids = np.load(tmp_path / "ids.npy")
    assert ids.dtype == np.uint32 and ids.tolist() == [97, 98, 70_000, 99]


@pytest.mark.parametrize("dtype", [np.dtype(np.uint16), np.dtype(np.uint32)], ids=["uint16", "uint32"])
def test_ids_narrowed_in_c_equal_encode(dtype: np.dtype[np.unsignedinteger]) -> None:
    """The plain-file path's `TextEncoder.encode_into_dtype`: the C encoder reads a buffer in
    place and narrows the ids itself; the same ids as `encode`, special tokens and
    invalid bytes included, from bytes, a bytearray or a slice of a memoryview."""
    vocab = {i: bytes([i]) for i in range(256)} | {i: b"tok%d" % i for i in range(256, 70_000)}
    big = Tokenizer(vocab, [], SPECIALS)  # special tokens' ids above 65,535: they need uint32
    for tok in ([small_tokenizer()] if dtype == np.uint16 else [small_tokenizer(), big]):
        encoder = tok._text_encoder(1000)
        for seed, size in ((1, 0), (2, 100), (3, 300_000)):  # short (GIL kept) and long calls
            data = corpus_bytes(seed, size)
            want = tok.encode(data)
            buffer = bytearray(b"xx" + data + b"yy")
            for given in (data, bytearray(data), memoryview(buffer)[2 : 2 + len(data)]):
                got = encoder.encode_into_dtype(given, dtype)
                assert got.dtype == dtype and got.tolist() == want


def test_a_plain_file_in_two_threads_writes_uint32(tmp_path: Path) -> None:
    """Two worker threads, each reading into its own buffer, chunks of different sizes (so a
    buffer is reused for a smaller chunk and grown for a larger one), ids narrowed to uint32."""
    vocab = {i: bytes([i]) for i in range(256)} | {i: b"tok%d" % i for i in range(256, 70_000)}
    tok = Tokenizer(vocab | {70_000: b"ll"}, [(b"l", b"l")], SPECIALS)
    corpus = tmp_path / "c.txt"
    data = corpus_bytes(11, 400_000)
    corpus.write_bytes(data)
    finished = encode_corpus(corpus, tok, tmp_path / "ids.npy", workers=2, chunk_bytes=30_000, doc_separator=None)
    ids = np.load(tmp_path / "ids.npy")
    assert ids.dtype == np.uint32 and ids.tolist() == tok.encode(data) and finished.tokens == len(ids)


@pytest.mark.parametrize(("content", "message"), [(b"", "is empty; there is nothing to"),
                                                  (b"\0" * 5000 + b"text", "looks like a binary file")])
def test_empty_or_binary_corpus_is_refused_like_training(tmp_path: Path, content: bytes, message: str) -> None:
    """One corpus check for training and encoding: both refuse the same files, writing nothing."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(content)
    for run in (lambda: encode_corpus(corpus, small_tokenizer(), tmp_path / "ids.npy"),
                lambda: core.train_bpe(corpus, 300, [])):
        with pytest.raises(core.CorpusError, match=message):
            run()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.txt"]


@pytest.mark.parametrize("start_method", ["spawn", "fork"])
def test_cancel_leaves_nothing(tmp_path: Path, start_method: str) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(corpus_bytes(3, 200_000))
    events = encode_corpus_events(
        corpus, small_tokenizer(), tmp_path / "ids.npy", workers=2, chunk_bytes=10_000, start_method=start_method
    )
    next(events)
    next(events)
    events.close()
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt"]
    assert multiprocessing.active_children() == []


def _truncate(path: Path) -> None:
    with path.open("r+b") as f:
        f.truncate(path.stat().st_size // 3)


def _append(path: Path) -> None:
    with path.open("ab") as f:
        f.write(b" more text")


def _rewrite(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[::-1])  # same size, other bytes, in place


@pytest.mark.parametrize("change", [_truncate, _append, _rewrite], ids=["truncated", "appended", "rewritten"])
@pytest.mark.parametrize(("name", "separator"), [("c.txt", None), ("c.txt", True), ("c.jsonl", True)],
                         ids=["plain", "document", "jsonl"])
def test_a_source_changed_during_the_run_fails_and_writes_nothing(tmp_path: Path, change, name: str,
                                                                  separator: bool | None) -> None:  # noqa: ANN001
    """Issue 23 point 3: the sizes and times checked at the start are checked again at the end."""
    corpus = tmp_path / name
    if name.endswith(".jsonl"):
        corpus.write_text("".join(f'{{"text": "document {i} hello world"}}\n' for i in range(5000)), encoding="utf-8")
    else:
        corpus.write_bytes(corpus_bytes(7, 200_000))
    events = encode_corpus_events(corpus, small_tokenizer(), tmp_path / "ids.npy", workers=1, chunk_bytes=10_000,
                                  doc_separator=separator)
    next(events)
    next(events)
    before = corpus.stat().st_mtime_ns
    change(corpus)
    if corpus.stat().st_mtime_ns == before:  # a coarse clock: make the rewrite visible
        os.utime(corpus, ns=(before + 1_000_000_000, before + 1_000_000_000))
    with pytest.raises(core.CorpusError, match="changed while it was being read.*start again"):
        list(events)
    assert sorted(os.listdir(tmp_path)) == [name]


def test_read_options_sample_cap_and_cut_documents(tmp_path: Path) -> None:
    tok = small_tokenizer()
    docs = [f"hello world {i} " * (1 + i % 7) for i in range(300)]
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps({"body": d}) + "\n" for d in docs), encoding="utf-8")
    eot = tok.special_ids["<|endoftext|>"]

    def ids_of(texts: list[str]) -> list[int]:
        return [i for t in texts for i in [*tok.encode(t), eot]]

    out = tmp_path / "ids.npy"
    cap = 1000
    for workers in (1, 2):
        finished = encode_corpus(path, tok, out, read=ReadOptions("body", max_bytes=cap), workers=workers,
                                 chunk_bytes=500)
        kept, left = [], cap
        for d in docs:
            if left <= 0:
                break
            kept.append(d[:left])
            left -= len(d)
        assert np.load(out).tolist() == ids_of(kept) and finished.corpus_bytes == cap
        encode_corpus(path, tok, out, read=ReadOptions("body", doc_max_chars=20), workers=workers, chunk_bytes=500)
        assert np.load(out).tolist() == ids_of([d[:20] for d in docs])
    with pytest.raises(TypeError, match="ReadOptions"):
        encode_corpus(path, tok, out, read={"field": "body"})  # type: ignore[arg-type]


def test_max_bytes_cuts_plain_text_at_the_cap(tmp_path: Path) -> None:
    tok = small_tokenizer()
    data = ("hello world, naïve 漢字 text " * 4000).encode()
    corpus = tmp_path / "c.txt"
    corpus.write_bytes(data)
    for workers, cap in ((1, 1000), (2, 30_001), (2, 30_002)):
        finished = encode_corpus(corpus, tok, tmp_path / "ids.npy", read=ReadOptions(max_bytes=cap), workers=workers,
                                 chunk_bytes=4096, doc_separator=None)
        kept = data[:cap].decode("utf-8", errors="ignore").encode()  # never half a character
        assert np.load(tmp_path / "ids.npy").tolist() == tok.encode(kept)
        assert finished.corpus_bytes == len(kept)


def test_bad_paths_raise_before_any_work(tmp_path: Path) -> None:
    tok = small_tokenizer()
    with pytest.raises(FileNotFoundError, match="corpus file not found"):
        encode_corpus_events(tmp_path / "missing.txt", tok, tmp_path / "ids.npy")
    (tmp_path / "c.txt").write_text("hi", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        encode_corpus_events(tmp_path / "c.txt", tok, tmp_path / "no" / "ids.npy")
    with pytest.raises(IsADirectoryError):
        encode_corpus_events(tmp_path / "c.txt", tok, tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["c.txt"]


def test_encode_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tok = small_tokenizer("gpt4")
    save_tokenizer(tmp_path / "tok", tok.vocab, tok.merges, tok.special_tokens, tok.pattern)
    data = corpus_bytes(4, 100_000)
    (tmp_path / "corpus.txt").write_bytes(data)
    out = tmp_path / "ids.npy"
    status = main(["encode", str(tmp_path / "corpus.txt"), "--tokenizer", str(tmp_path / "tok"),
                   "--out", str(out), "--workers", "2"])
    captured = capsys.readouterr()
    assert status == 0
    # the file is one document: <|endoftext|> follows it (bpe-studio encode --doc-separator)
    assert np.load(out).tolist() == expected_ids(tok, data) + [tok.special_ids["<|endoftext|>"]]
    assert "bytes per token" in captured.out and "MB/s" in captured.out
    assert "MB/s" in captured.err  # the progress line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tokenizer", "{tmp}/nothing"], "does not exist"),
        (["--tokenizer", "{tmp}/tok", "--workers", "0"], "--workers must be at least 1"),
        (["--tokenizer", "{tmp}/tok", "--out", "{tmp}/ids.txt"], "must end in .npy"),
        (["--tokenizer", "{tmp}/broken"], "vocab.json:1: not valid JSON"),
    ],
)
def test_encode_command_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    tok = small_tokenizer()
    save_tokenizer(tmp_path / "tok", tok.vocab, tok.merges, tok.special_tokens, tok.pattern)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "vocab.json").write_text("{oops", encoding="utf-8")
    (tmp_path / "broken" / "merges.txt").write_text("", encoding="utf-8")
    (tmp_path / "corpus.txt").write_text("hello world", encoding="utf-8")
    argv = ["encode", str(tmp_path / "corpus.txt"), "--out", str(tmp_path / "ids.npy")]
    argv += [a.format(tmp=tmp_path) for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bpe-studio: error: ") and message in err
    assert not (tmp_path / "ids.npy").exists() and not (tmp_path / "ids.txt").exists()


FORK_CHECKS = """
import sys, threading
from core.workers import processes
sys.platform = "linux"
assert processes.can_fork()
sys.modules["PySide6.QtCore"] = object()  # Qt runs threads of its own
assert not processes.can_fork()
del sys.modules["PySide6.QtCore"]
stop = threading.Event()
thread = threading.Thread(target=stop.wait)
thread.start()
assert not processes.can_fork()  # another Python thread
stop.set()
thread.join()
sys.platform = "darwin"
assert not processes.can_fork()
"""


def test_workers_are_forked_only_when_that_is_safe() -> None:
    # In a fresh interpreter: this one has seen Qt's threads run Python (earlier GUI tests),
    # and threading keeps counting those for good, as can_fork should.
    run = subprocess.run([sys.executable, "-c", FORK_CHECKS], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("workers", [1, 2])
def test_a_lone_surrogate_escaped_in_jsonl_is_what_encode_gives_it(tmp_path: Path, workers: int) -> None:
    r"""``"\ud83d"`` in a JSONL record is no character: U+FFFD, as ``Tokenizer.encode`` gives it,
    in the ``.npy`` and in training (it was the bytes ED A0 BD, and ``"\udcff"`` the raw
    byte FF, as if the file held invalid bytes); an escaped pair stays its character."""
    tok = small_tokenizer()
    texts = ["hello \ud83d world", "x \udcff y", "ok \ud83d\ude00 done", "plain", "\\ud83d as text"]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")  # json escapes them
    out = tmp_path / "ids.npy"
    encode_corpus(path, tok, out, workers=workers)
    separator = tok.special_ids["<|endoftext|>"]
    assert np.load(out).tolist() == [i for t in texts for i in [*tok.encode(t), separator]]
    counts = core.count_pretokens(path, workers=workers)
    assert counts.invalid_bytes == 0
    assert b" \xef\xbf\xbd" in counts  # U+FFFD, after a space
