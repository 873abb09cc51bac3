"""Vocabulary filtering and sorting in the model (VocabData + VocabTableModel).

Correctness is checked against a plain-Python oracle (sorted(), `in`, re.search) over the
same rows; speed on a synthetic 200,000-token vocabulary against the generous bound the
issue sets (the target is < 50 ms; the measured figures are printed).
"""

from __future__ import annotations

import os
import random
import re
import time

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from core.readable import gpt2_form, hex_form, readable  # noqa: E402
from bpe_studio.app.models.vocab_data import (  # noqa: E402
    COL_COUNT,
    COL_GPT2,
    COL_HEX,
    COL_ID,
    COL_LENGTH,
    COL_PARTS,
    COL_RANK,
    COL_READABLE,
    VocabData,
)


def synthetic_vocab(n_merges: int, seed: int = 0) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]], dict[int, int]]:
    """A BPE-shaped vocabulary: bytes, one special token, then merges of earlier tokens."""
    rng = random.Random(seed)
    vocab = {i: bytes([i]) for i in range(256)}
    vocab[256] = b"<|endoftext|>"
    seen = set(vocab.values())
    merges: list[tuple[bytes, bytes]] = []
    counts: dict[int, int] = {}
    pool = [bytes([b]) for b in b" abcdefghijklmnopqrstuvwxyz\n"] + ["é".encode(), "日".encode()]
    next_id = 257
    while len(merges) < n_merges:
        a = rng.choice(pool)
        b = rng.choice(pool) if rng.random() < 0.5 else rng.choice(pool[:30])
        tok = a + b
        if tok in seen or len(tok) > 16:
            continue
        seen.add(tok)
        vocab[next_id] = tok
        merges.append((a, b))
        counts[next_id] = 10_000_000 // (len(merges) + 1)
        pool.append(tok)
        next_id += 1
    return vocab, merges, counts


@pytest.fixture(scope="module")
def small() -> VocabData:
    vocab, merges, counts = synthetic_vocab(3_000, seed=1)
    return VocabData(vocab, merges, ["<|endoftext|>"], counts)


@pytest.fixture(scope="module")
def big() -> VocabData:
    vocab, merges, counts = synthetic_vocab(200_000 - 257, seed=2)
    t0 = time.perf_counter()
    data = VocabData(vocab, merges, ["<|endoftext|>"], counts)
    print(f"\nbuilding VocabData for {len(data):,} tokens: {time.perf_counter() - t0:.2f} s")
    return data


def visible_ids(data: VocabData) -> list[int]:
    return [int(data.ids[r]) for r in data.view]


def test_columns_of_a_merged_token(small: VocabData) -> None:
    vocab, merges, _ = synthetic_vocab(3_000, seed=1)
    rank = 10
    a, b = merges[rank]
    tid = next(i for i, t in vocab.items() if t == a + b)
    row = small.row_of_id[tid]
    assert small.cell_text(row, COL_ID) == str(tid)
    assert small.cell_text(row, COL_READABLE) == readable(a + b)
    assert small.cell_text(row, COL_GPT2) == gpt2_form(a + b)
    assert small.cell_text(row, COL_HEX) == hex_form(a + b)
    assert small.cell_text(row, COL_LENGTH) == str(len(a + b))
    assert small.cell_text(row, COL_RANK) == "10"
    assert small.cell_text(row, COL_PARTS) == f"{readable(a)} + {readable(b)}"
    assert small.cell_text(row, COL_COUNT) == f"{10_000_000 // (rank + 2):,}"
    left, right = small.children(tid)  # type: ignore[misc]
    assert (vocab[left], vocab[right]) == (a, b)


def test_bytes_and_specials_have_no_rank(small: VocabData) -> None:
    assert small.cell_text(small.row_of_id[65], COL_RANK) == ""
    assert small.cell_text(small.row_of_id[65], COL_PARTS) == "byte"
    assert small.cell_text(small.row_of_id[256], COL_PARTS) == "special"
    assert small.is_special[small.row_of_id[256]]
    assert small.children(65) is None


@pytest.mark.parametrize("scope", ["readable", "gpt2", "hex"])
@pytest.mark.parametrize("query", ["a", "·t", "Ġt", "E2", "c3 a9", "↵", "zz", ""])
def test_substring_filter_matches_oracle(small: VocabData, scope: str, query: str) -> None:
    assert small.set_filter(query, scope=scope) is None  # type: ignore[arg-type]
    small.sort(COL_ID)
    column = {"readable": small.readable, "gpt2": small.gpt2, "hex": small.hex}[scope]
    expected = [int(small.ids[r]) for r, s in enumerate(column) if query.lower() in s.lower()]
    assert visible_ids(small) == expected


def test_hex_filter_accepts_unspaced_digits(small: VocabData) -> None:
    small.set_filter("c3a9", scope="hex")
    ids = visible_ids(small)
    assert ids and all("é".encode() in small.token_bytes[small.row_of_id[i]] for i in ids)


def test_case_sensitivity(small: VocabData) -> None:
    small.set_filter("Z", case_sensitive=True)
    assert visible_ids(small) == [90]
    small.set_filter("Z")
    assert len(visible_ids(small)) > 100


def test_regex_filter_matches_oracle(small: VocabData) -> None:
    assert small.set_filter(r"^·[a-z]{2}$", use_regex=True) is None
    small.sort(COL_ID)
    pattern = re.compile(r"^·[a-z]{2}$", re.IGNORECASE)
    expected = [int(small.ids[r]) for r, s in enumerate(small.readable) if pattern.search(s)]
    assert expected and visible_ids(small) == expected


def test_invalid_regex_reports_and_keeps_previous_rows(small: VocabData) -> None:
    small.set_filter("ab")
    before = visible_ids(small)
    error = small.set_filter("(ab", use_regex=True)
    assert error is not None and "regular expression" in error
    assert visible_ids(small) == before


@pytest.mark.parametrize("column", [COL_ID, COL_READABLE, COL_GPT2, COL_HEX, COL_LENGTH, COL_RANK, COL_PARTS, COL_COUNT])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_oracle(small: VocabData, column: int, descending: bool) -> None:
    small.set_filter("e")
    small.sort(column, descending=descending)
    rows = list(small.view)

    def key(r: int) -> object:
        return {
            COL_ID: int(small.ids[r]),
            COL_READABLE: small.readable[r],
            COL_GPT2: small.gpt2[r],
            COL_HEX: small.hex[r],
            COL_LENGTH: int(small.lengths[r]),
            COL_RANK: int(small.ranks[r]),
            COL_PARTS: small.parts[r],
            COL_COUNT: int(small.counts[r]),
        }[column]

    # Oracle: Python's sort on the displayed values, ties in ascending id order.
    expected = sorted(rows, key=lambda r: int(small.ids[r]))
    # Python's reverse=True keeps ties in their original (ascending id) order too.
    expected.sort(key=key, reverse=descending)
    assert [key(r) for r in rows] == [key(r) for r in expected]
    assert rows == expected


def test_filter_and_sort_speed_on_200k_tokens(big: VocabData) -> None:
    assert len(big) == 200_000
    timings: dict[str, float] = {}

    def timed(name: str, fn: object) -> None:
        # this thread's CPU time, not wall time: what the GUI thread would spend, whatever
        # else the machine runs (parallel test processes included)
        t0 = time.thread_time()
        fn()  # type: ignore[operator]
        timings[name] = (time.thread_time() - t0) * 1000

    timed("filter substring 'ab'", lambda: big.set_filter("ab"))
    assert 0 < len(big.view) < len(big)
    timed("filter substring 'a' (many hits)", lambda: big.set_filter("a"))
    timed("filter regex '^·t.*e$'", lambda: big.set_filter("^·t.*e$", use_regex=True))
    timed("filter hex 'C3 A9'", lambda: big.set_filter("C3 A9", scope="hex"))
    timed("clear filter", lambda: big.set_filter(""))
    assert len(big.view) == len(big)
    timed("sort readable (200k rows)", lambda: big.sort(COL_READABLE))
    timed("sort count desc (200k rows)", lambda: big.sort(COL_COUNT, descending=True))
    timed("sort length (200k rows)", lambda: big.sort(COL_LENGTH))
    print()
    for name, ms in timings.items():
        print(f"  {name}: {ms:.1f} ms")
    # The target is 50 ms; the assertion is generous so CI noise cannot flake it.
    assert max(timings.values()) < 500, timings


def test_qt_model_reads_view(qtbot: object, small: VocabData) -> None:
    from PySide6.QtCore import Qt

    from bpe_studio.app.explore.vocab_model import TOKEN_ID_ROLE, VocabTableModel

    model = VocabTableModel(small)
    model.set_filter("")
    model.sort(COL_LENGTH, Qt.SortOrder.DescendingOrder)
    assert model.rowCount() == len(small)
    assert model.columnCount() == 8
    top = model.index(0, COL_LENGTH)
    assert int(model.data(top)) == int(small.lengths.max())
    assert model.set_filter("[", use_regex=True) is not None
    model.set_filter("<|end")
    assert model.rowCount() == 1
    assert model.data(model.index(0, COL_ID), TOKEN_ID_ROLE) == 256
    assert model.row_of_token(256) == 0
    assert model.row_of_token(65) is None
