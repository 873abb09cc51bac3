"""Pre-token counts from outside are checked where they enter (issue 23, points 4 and 11).

A ``.bpc`` path that is not a regular file (a folder, a FIFO, ``/dev/zero``) is refused at
once, before anything is read; a file whose magic or header is wrong is refused before its
body is read; a file with a valid checksum but an empty pre-token is refused on load;
`PretokenCounts.from_pairs` refuses counts that are not positive ints or add up past what
training counts in (2**63), empty pre-tokens and keys that are not bytes or str.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Mapping
from pathlib import Path

import pytest

import core
from core import PretokenCounts
from core.errors import FormatError

REPO = Path(__file__).resolve().parents[3]


def _bpc(words: list[bytes], counts: list[int]) -> bytes:
    """A counts file written by hand from docs/formats.md, checksum and all."""
    body = struct.pack("<qqq", len(words), 0, sum(map(len, words)))
    body += struct.pack(f"<{len(counts)}q", *counts) + struct.pack(f"<{len(words)}I", *map(len, words))
    body += b"".join(words)
    meta = json.dumps({"pattern": core.GPT2_PATTERN, "special_tokens": [], "documents": 1,
                       "input_bytes": 10, "invalid_bytes": 0, "distinct": len(words),
                       "total": sum(counts)}).encode()
    return struct.pack("<8sII", b"BPECOUNT", 1, len(meta)) + meta + body + struct.pack(
        "<I", zlib.crc32(body, zlib.crc32(meta)))


def test_a_hand_written_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "ok.bpc"
    path.write_bytes(_bpc([b" a", b"b"], [3, 2]))
    assert PretokenCounts.load(path).as_dict() == {b" a": 3, b"b": 2}


def test_an_empty_pretoken_with_a_valid_checksum_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "empty.bpc"
    path.write_bytes(_bpc([b"", b"a"], [5, 2]))
    with pytest.raises(FormatError, match="empty.bpc .*empty pre-token"):
        PretokenCounts.load(path)


def test_counts_too_large_to_train_with_are_refused_on_load(tmp_path: Path) -> None:
    path = tmp_path / "huge.bpc"
    path.write_bytes(_bpc([b"abcd", b"ef"], [2**62, 2**62]))  # 6 * 2**62 bytes of pre-tokens
    with pytest.raises(FormatError, match="huge.bpc .*2\\*\\*63"):
        PretokenCounts.load(path)


def test_dev_zero_is_refused_at_once() -> None:
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    started = time.monotonic()
    with pytest.raises(FormatError, match="/dev/zero is not a regular file"):
        PretokenCounts.load("/dev/zero")
    with pytest.raises(FormatError, match="/dev/zero is not a regular file"):
        PretokenCounts.read_info("/dev/zero")
    assert time.monotonic() - started < 1.0


def test_a_fifo_and_a_folder_are_refused_without_reading(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    fifo = tmp_path / "pipe.bpc"
    os.mkfifo(fifo)  # opening it for reading would block: the check must come first
    code = f"import core; core.PretokenCounts.load({str(fifo)!r})"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=20)
    assert done.returncode != 0 and "pipe.bpc is not a regular file" in done.stderr
    with pytest.raises(FormatError, match="is a folder"):
        PretokenCounts.load(tmp_path)


def test_a_foreign_header_is_refused_before_the_body_is_read(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "big.bpc"
    with open(path, "wb") as f:
        f.write(b"NOTCOUNT" + b"\0" * 8)
        f.truncate(1 << 30)  # a sparse GiB: reading it whole would take seconds and a GiB
    started = time.monotonic()
    with pytest.raises(FormatError, match="big.bpc is not a readable pre-token counts file"):
        PretokenCounts.load(path)
    assert time.monotonic() - started < 1.0
    header = struct.pack("<8sII", b"BPECOUNT", 1, 1 << 31)  # metadata longer than the file
    path.write_bytes(header + b"{}")
    with pytest.raises(FormatError, match="truncated"):
        PretokenCounts.load(path)


def test_train_from_counts_on_dev_zero_fails_at_once(tmp_path: Path) -> None:
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run(
        [sys.executable, "-m", "bpe_studio", "train", "--from-counts", "/dev/zero", "--vocab-size", "300",
         "--out", str(tmp_path / "tok")], cwd=REPO, env=env, capture_output=True, text=True, timeout=30,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "/dev/zero is not a regular file" in done.stderr
    assert not (tmp_path / "tok").exists()


@pytest.mark.parametrize(
    ("pairs", "error", "message"),
    [
        ([(b"a", 2**70)], ValueError, "more than 2\\*\\*63"),
        ([(b"a", 2**63)], ValueError, "more than 2\\*\\*63"),
        ([(b"ab", 2**61), (b"cd", 2**61)], ValueError, "pair 1: the counts add up"),
        ([(b"a", 0)], ValueError, "positive integer"),
        ([(b"a", -1)], ValueError, "positive integer"),
        ([(b"a", 1.5)], TypeError, "positive integer"),
        ([(b"a", True)], TypeError, "positive integer"),
        ([(b"", 1)], ValueError, "non-empty"),
        ([("", 1)], ValueError, "non-empty"),
        ([(1, 1)], TypeError, "bytes or str"),
        ([(bytearray(b"a"), 1)], TypeError, "bytes or str"),
    ],
)
def test_from_pairs_refuses_at_entry(pairs, error, message) -> None:
    with pytest.raises(error, match=message):
        PretokenCounts.from_pairs(pairs)


def test_the_largest_count_training_handles_trains() -> None:
    counts = PretokenCounts.from_pairs([(b"ab", (2**63 - 1) // 2)])
    vocab, merges = core.train(counts, core.TrainOptions(257)).result()
    assert merges == [(b"a", b"b")]


def test_counts_are_a_mapping() -> None:
    counts = PretokenCounts.from_pairs([(b"low", 5), (b" low", 2), (b"er", 1), (b"low", 1)])
    assert isinstance(counts, Mapping)
    assert len(counts) == 3 and counts[b"low"] == 6 and b" low" in counts and b"x" not in counts
    assert sorted(counts) == [b" low", b"er", b"low"]
    assert sorted(counts.items()) == [(b" low", 2), (b"er", 1), (b"low", 6)]
    assert dict(counts) == dict(counts.items()) == {b"low": 6, b" low": 2, b"er": 1}
    assert counts == {b"low": 6, b" low": 2, b"er": 1} and {b"low": 6, b" low": 2, b"er": 1} == counts
    assert counts != {b"low": 6} and counts.get(b"x", 0) == 0
    with pytest.raises(KeyError):
        counts[b"x"]
    other = PretokenCounts.from_pairs(dict(counts), documents=1)
    assert other != counts  # equal tables, counted from another number of documents
    words, numbers = counts.columns()
    assert dict(zip(words, numbers)) == dict(counts)


def test_fresh_counts_keep_the_packed_table_after_len(tmp_path: Path) -> None:
    pytest.importorskip("core.pretokenize._native", reason="the native pre-tokenizer is not built")
    path = tmp_path / "c.txt"
    path.write_text("low low lower newest " * 100)
    counts = core.count_pretokens(path, workers=1)
    assert len(counts) == 5  # low, " low", " lower", " newest", and the last " "
    assert counts.packed_words() is not None  # len did not make the lists: training reads the table


def test_counts_remember_how_the_corpus_was_read(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"body": f"doc {i} low lower"}) + "\n" for i in range(50)))
    read = core.ReadOptions(field="body", sample=0.5, seed=3, doc_max_chars=12)
    counts = core.count_pretokens(path, read=read, workers=1)
    assert counts.read == read
    counts.save(tmp_path / "c.bpc")
    loaded = PretokenCounts.load(tmp_path / "c.bpc")
    assert loaded.read == read and loaded == counts
    assert PretokenCounts.read_info(tmp_path / "c.bpc")["read"]["field"] == "body"
    other = core.count_pretokens(path, read=core.ReadOptions(field="body"), workers=1)
    assert (counts + counts).read == read and (counts + other).read is None
    assert PretokenCounts.from_pairs({b"a": 1}).read is None
