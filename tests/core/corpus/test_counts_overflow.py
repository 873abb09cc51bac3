"""Sums of pre-token counts past what training and the file count in (issue 38, item 7).

Nine counts of 2**60 added (``+``, ``add_all``, ``sum``, loaded files added) used to be
accepted, then ``save`` failed with a bare ``OverflowError`` — or, on the native path, the
count wrapped round to a negative number and ``save`` wrote a file ``load`` called damaged.
A sum is refused at the addition, naming the pre-token; ``save`` never writes a file that
``load`` cannot read back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import core
from core import PretokenCounts
from core.corpus.named_counts import NamedCounts
from core.pretokenize.counting import ChunkCounts


def _nine() -> list[PretokenCounts]:
    return [PretokenCounts.from_pairs([(b"a", 2**60), (b"xy", 3)]) for _ in range(9)]


@pytest.mark.parametrize("how", ["plus", "add_all", "sum"])
def test_a_sum_past_2_63_is_refused_naming_the_pretoken(path_kind, how) -> None:
    parts = _nine()
    # refused at the addition that goes past: the eighth part added one by one, all nine at once
    count = "10,376,293,541,461,622,784" if how == "add_all" else "9,223,372,036,854,775,808"
    with pytest.raises(ValueError, match=rf"more than 2\*\*63 - 1 bytes.*b'a' alone is counted {count} times"):
        if how == "plus":
            total = parts[0]
            for part in parts[1:]:
                total = total + part
        elif how == "add_all":
            PretokenCounts.add_all(parts)
        else:
            sum(parts)


def test_loaded_files_that_add_up_past_2_63_are_refused(tmp_path: Path, path_kind) -> None:
    PretokenCounts.from_pairs([(b"a", 2**62 + 5), (b"b", 7)]).save(tmp_path / "a.bpc")
    a, b = PretokenCounts.load(tmp_path / "a.bpc"), PretokenCounts.load(tmp_path / "a.bpc")
    with pytest.raises(ValueError, match=r"cannot add these pre-token counts.*b'a' alone is counted 9,223,372,036,854,775,818"):
        a + b
    assert not list(tmp_path.glob("*.tmp"))


def test_counts_within_2_63_bytes_still_add_and_round_trip(tmp_path: Path, path_kind) -> None:
    half = PretokenCounts.from_pairs([(b"ab", (2**63 - 1) // 4)])
    total = half + half
    assert total[b"ab"] == 2 * ((2**63 - 1) // 4) and total.total_bytes <= 2**63 - 1
    total.save(tmp_path / "t.bpc")
    assert PretokenCounts.load(tmp_path / "t.bpc") == total


def test_named_counts_that_add_up_past_2_63_are_refused(path_kind) -> None:
    one = NamedCounts({"en": PretokenCounts.from_pairs([(b"a", 2**62)])})
    with pytest.raises(ValueError, match=r"b'a' alone is counted"):
        one + one + one


def test_save_refuses_counts_load_could_not_read_before_writing(tmp_path: Path, path_kind) -> None:
    # counts made past every check (a chunk handed in whole): save must not write them
    bad = PretokenCounts(ChunkCounts(None, {b"abcd": 2**62, b"x": 1}, 0))
    target = tmp_path / "bad.bpc"
    target.write_bytes(b"the old file")
    with pytest.raises(ValueError, match=r"2\*\*63 - 1 bytes.*b'abcd' alone is counted"):
        bad.save(target)
    assert target.read_bytes() == b"the old file"  # untouched, and no temporary left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.bpc"]
    with pytest.raises(ValueError, match="b'abcd'"):
        bad.to_bytes()


def test_training_from_the_largest_sum_still_works(path_kind) -> None:
    parts = [PretokenCounts.from_pairs([(b"ab", (2**63 - 1) // 8)]) for _ in range(4)]
    vocab, merges = core.train(PretokenCounts.add_all(parts), core.TrainOptions(257)).result()
    assert merges == [(b"a", b"b")]
