"""Saving pre-token counts streams (issue 38, item 14).

``save`` made a Python object per pre-token and the whole file in memory (20 M distinct
pre-tokens: 43 s and 5.2 GB). Now a native table is sorted in place (4 bytes a pre-token)
and written a block at a time, two tables (counting's two threads) walked together
without adding them: the file is byte for byte the one the lists made, and saving (then
``len``, ``total``, ``total_bytes``, as ``bpe-studio count`` reports) stays within 10% of
the counts' own memory.
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import core
from core import PretokenCounts
from core.corpus import bpc_file
from core.pretokenize.counting import ChunkCounts, CountTable, pack_counts

REPO = Path(__file__).resolve().parents[3]


def _word(rng: random.Random) -> bytes:
    # every kind of key the table keeps: in the slot (<= 8, <= 16 bytes), in the arena
    # (17-254), with its length in the arena (255 or more); zero bytes, high bytes
    size = rng.choice([1, 2, 7, 8, 9, 15, 16, 17, 40, 254, 255, 300])
    return bytes(rng.choice(b"ab\x00\xff") for _ in range(size))


def _native_table(table: dict[bytes, int]):  # type: ignore[no-untyped-def]
    native = pytest.importorskip("core.pretokenize._native", reason="the native pre-tokenizer is not built")
    counts = native.Counts()
    counts.add_packed(pack_counts(list(table), list(table.values()), 0))
    return counts


@pytest.mark.parametrize("seed", range(8))
def test_two_native_tables_write_the_body_of_their_sum(seed: int) -> None:
    rng = random.Random(seed)
    first = {_word(rng): rng.randint(1, 2**40) for _ in range(rng.randint(0, 3000))}
    second = {_word(rng): rng.randint(1, 2**40) for _ in range(rng.randint(0, 3000))}
    second.update({word: 5 for word in list(first)[:100]})  # keys in both
    table = CountTable()
    table.add(ChunkCounts(None, None, 3, _native_table(first)))
    table.add(ChunkCounts(None, None, 4, _native_table(second)))
    total = {word: first.get(word, 0) + second.get(word, 0) for word in {*first, *second}}
    expected = bpc_file.sorted_body(list(total), list(total.values()), 7)
    body = table.sorted_body()
    assert body is not None and body.size == len(expected) and body.distinct == len(total)
    blocks: list[bytes] = []
    body.write(blocks.append)
    assert b"".join(blocks) == expected
    assert table.totals() == (sum(total.values()), sum(len(w) * c for w, c in total.items()))


def test_saved_counts_equal_the_file_the_lists_make(tmp_path: Path, path_kind) -> None:
    rng = random.Random(1)
    words = ["".join(rng.choices("abcdeé", k=rng.randint(1, 20))) for _ in range(3000)]
    path = tmp_path / "c.txt"
    path.write_text(" ".join(rng.choice(words) for _ in range(20_000)), encoding="utf-8")
    counts = core.count_pretokens(path, workers=2)
    counts.save(tmp_path / "c.bpc")
    table = dict(counts)
    expected = PretokenCounts.from_pairs(table, documents=counts.documents, input_bytes=counts.input_bytes)
    expected.read = counts.read
    assert (tmp_path / "c.bpc").read_bytes() == expected.to_bytes()
    loaded = PretokenCounts.load(tmp_path / "c.bpc")
    assert loaded == counts and len(loaded) == len(table) and loaded.total == sum(table.values())
    (loaded + counts).save(tmp_path / "twice.bpc")  # a sum keeps its native table: saved streamed too
    assert PretokenCounts.load(tmp_path / "twice.bpc").as_dict() == {w: 2 * c for w, c in table.items()}


MEASURE = """
import random, sys
import core

def rss(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024

rng = random.Random(7)
path = sys.argv[1]
with open(path, "w") as f:
    for _ in range(40):
        f.write(" ".join("".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(5, 14)))
                         for _ in range(25_000)) + "\\n")
base = rss("VmRSS")
counts = core.count_pretokens(path, workers=2)
held = rss("VmRSS")
open("/proc/self/clear_refs", "w").write("5")  # the peak from here on
counts.save(sys.argv[2])
print(len(counts), counts.total, counts.total_bytes)
print(base, held, rss("VmHWM"))
"""


def test_saving_a_million_pretokens_stays_within_10_percent_of_the_counts(tmp_path: Path) -> None:
    pytest.importorskip("core.pretokenize._native", reason="the native pre-tokenizer is not built")
    if not Path("/proc/self/clear_refs").exists():
        pytest.skip("measures the peak memory through Linux's /proc")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(MEASURE), str(tmp_path / "c.txt"),
                           str(tmp_path / "c.bpc")], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    distinct, total, total_bytes = map(int, done.stdout.split("\n")[0].split())
    base, held, peak = map(int, done.stdout.split("\n")[1].split())
    assert distinct > 900_000 and total >= 1_000_000  # (and the line breaks)
    own = held - base
    assert peak - held <= own / 10, f"saving took {(peak - held) >> 20} MB over the counts' {own >> 20} MB"
    info = PretokenCounts.read_info(tmp_path / "c.bpc")
    assert (info["distinct"], info["total"]) == (distinct, total)
