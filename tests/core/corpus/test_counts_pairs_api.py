"""`PretokenCounts.from_pairs` and `add_all` at their edges (issue 38, item 21).

A str pre-token that is not UTF-8 text (a lone surrogate) raised a bare
``UnicodeEncodeError`` naming no pair; numpy integers, what most engines hand back, were
refused as counts; ``add_all([])`` raised ``IndexError``.
"""

from __future__ import annotations

import numpy as np
import pytest

from core import PretokenCounts


@pytest.mark.parametrize("token", ["\ud800", "ok\udfffx", "\ud83d"])
def test_a_lone_surrogate_names_the_pair(token: str) -> None:
    with pytest.raises(ValueError, match=r"pair 1: the pre-token .* is not UTF-8 text .*give it as bytes"):
        PretokenCounts.from_pairs([("fine", 1), (token, 2)])


def test_escaped_bytes_are_still_taken_byte_exact() -> None:
    # surrogateescape's own range stands for raw bytes: b"\xff" decoded that way
    assert PretokenCounts.from_pairs([("\udcff", 2)]).as_dict() == {b"\xff": 2}


@pytest.mark.parametrize("kind", [np.int8, np.int32, np.int64, np.uint16, np.uint64])
def test_numpy_integers_are_counts(kind) -> None:
    counts = PretokenCounts.from_pairs([(b"ab", kind(3)), ("ab", kind(4)), (b"c", kind(1))])
    assert counts.as_dict() == {b"ab": 7, b"c": 1}
    assert all(type(n) is int for n in counts.values())
    assert PretokenCounts.from_pairs(dict(zip([b"x", b"y"], np.array([5, 6])))).as_dict() == {b"x": 5, b"y": 6}


@pytest.mark.parametrize(("count", "error"), [(np.float64(2.0), TypeError), (np.bool_(True), TypeError),
                                               (np.int64(0), ValueError), (np.int64(-3), ValueError)])
def test_numpy_values_that_are_no_counts_are_refused(count, error) -> None:
    with pytest.raises(error, match="pair 0: the count of b'a' must be a positive integer"):
        PretokenCounts.from_pairs([(b"a", count)])


def test_add_all_of_nothing_says_what_to_do() -> None:
    with pytest.raises(ValueError, match=r"parts is empty: add_all needs at least one PretokenCounts"):
        PretokenCounts.add_all([])
    with pytest.raises(ValueError, match="parts is empty"):
        PretokenCounts.add_all(iter(()))
    with pytest.raises(TypeError, match=r"parts\[1\] is dict, not PretokenCounts"):
        PretokenCounts.add_all([PretokenCounts.from_pairs({b"a": 1}), {b"a": 1}])  # type: ignore[list-item]
    one = PretokenCounts.from_pairs({b"a": 1})
    assert PretokenCounts.add_all([one]) is one
    assert len(PretokenCounts(pattern="gpt4")) == 0  # empty counts, made on purpose


def test_adding_counts_of_another_pattern_names_the_argument() -> None:
    with pytest.raises(ValueError, match="count every part with the same pattern") as info:
        PretokenCounts.from_pairs({b"a": 1}) + PretokenCounts.from_pairs({b"a": 1}, pattern="gpt4")
    assert "--" not in str(info.value)
