"""The merge loops at their limits (issue 23, point 14): token ids past 2**21 in the Python
loop (it packed pairs as ``left << 21`` and broke there), and a compiled kernel that
refuses further steps once a step failed (its state may be half-updated)."""

from __future__ import annotations

from array import array

import pytest

from core.training.merge import merge_pairs, merge_pairs_python

BYTES = [bytes([i]) for i in range(256)]
WORDS = [b"abab", b"ab", b"bab", b"aab"]
COUNTS = [1, 2, 3, 1]
OFFSET = (1 << 21) - 256 + 1  # filler tokens: the first new id is 2**21 + 1


def _up(i: int) -> int:
    return i + OFFSET if i >= 256 else i


def test_the_python_loop_handles_ids_past_2_to_the_21() -> None:
    small = list(merge_pairs_python(list(WORDS), COUNTS, list(BYTES), 6))
    assert len(small) == 4  # then no pair is left
    big_tokens = BYTES + [b"\xff\xfe<filler>"] * OFFSET  # as many special tokens, never in the words
    big = list(merge_pairs_python(list(WORDS), COUNTS, big_tokens, 6))
    assert big == [(_up(a), _up(b), _up(z), c, r) for a, b, z, c, r in small]
    assert len(big_tokens) == 256 + OFFSET + 4  # one token per merge, at the ids yielded


def test_the_kernel_agrees_past_2_to_the_21() -> None:
    pytest.importorskip("core.training._merge_kernel", reason="the merge kernel is not built")
    big_tokens = BYTES + [b"\xff\xfe<filler>"] * OFFSET
    rows = [row for batch in merge_pairs(list(WORDS), COUNTS, list(big_tokens), 6) for row in zip(*batch)]
    assert rows == list(merge_pairs_python(list(WORDS), COUNTS, list(big_tokens), 6))


def test_a_failed_kernel_step_refuses_the_next() -> None:
    kernel = pytest.importorskip("core.training._merge_kernel", reason="the merge kernel is not built")
    forced = array("i", [97, 5000]).tobytes()  # id 5000 does not exist: the step fails
    state = kernel.MergeState([b"ab"], [2], list(BYTES), forced=forced)
    with pytest.raises(ValueError, match="does not exist yet"):
        state.step(4)
    with pytest.raises(RuntimeError, match="stopped on an error in an earlier step"):
        state.step(4)
