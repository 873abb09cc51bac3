"""The oracle itself, checked against hand-worked examples and the rules of docs/semantics.md.

The fast trainer is only as well tested as the reference it is compared with, so the
reference gets its own outside truths: the classic "aaabdaaabac" example worked by hand,
the documented tie-break order, overlapping pair counting, special-token splitting and
surrogateescape round trips. (Its CS336 conformance is in test_conformance_cs336.py.)
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.pretokenize.patterns import GPT2_PATTERN, GPT4_PATTERN
from core.training.reference import (
    best_pair,
    count_invalid_bytes,
    count_pairs,
    reference_counts,
    merge_word,
    read_corpus,
    reference_merges,
    split_on_specials,
    train_bpe_reference,
)

DOCUMENTED_GPT2 = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def test_aaabdaaabac_worked_by_hand() -> None:
    # One pre-token. (a,a) occurs 4 times (each "aaa" holds 2 overlapping pairs); after it,
    # (aa,a) and (a,b) tie at 2 and the greater pair (b"aa", b"a") wins; then (aaa,b).
    vocab, merges = train_bpe_reference("aaabdaaabac", 259, [])
    assert merges == [(b"a", b"a"), (b"aa", b"a"), (b"aaa", b"b")]
    assert vocab[256] == b"aa" and vocab[257] == b"aaa" and vocab[258] == b"aaab"
    assert all(vocab[i] == bytes([i]) for i in range(256))
    assert len(vocab) == 259


def test_counts_and_corpus_tokens_of_each_step() -> None:
    # Continuing the example by hand: after "aaab" the tokens are (aaab, d, aaab, a, c), every
    # pair occurs once, and the greatest pair wins each tie until one token is left.
    steps = reference_merges(Counter({b"aaabdaaabac": 1}), 10)
    assert [(s.pair, s.count, s.corpus_tokens) for s in steps] == [
        ((b"a", b"a"), 4, 9),
        ((b"aa", b"a"), 2, 7),
        ((b"aaa", b"b"), 2, 5),
        ((b"d", b"aaab"), 1, 4),
        ((b"daaab", b"a"), 1, 3),
        ((b"daaaba", b"c"), 1, 2),
        ((b"aaab", b"daaabac"), 1, 1),
    ]  # 7 < 10: it stopped because no pair was left


def test_counts_are_weighted_by_pretoken_frequency() -> None:
    steps = reference_merges(Counter({b"ab": 3, b"ba": 2, b"aba": 1}), 1)
    # (a,b): 3 + 1 = 4; (b,a): 2 + 1 = 3
    assert [(s.pair, s.count, s.corpus_tokens) for s in steps] == [((b"a", b"b"), 4, 3 + 4 + 2)]


def test_spec_tie_break_order() -> None:
    # docs/semantics.md: (b"BA", b"A") > (b"B", b"ZZ") > (b"A", b"C") > (b"A", b"B")
    pairs = Counter({(b"A", b"B"): 5, (b"A", b"C"): 5, (b"B", b"ZZ"): 5, (b"BA", b"A"): 5})
    order = []
    while pairs:
        best = best_pair(pairs)
        order.append(best)
        del pairs[best]
    assert order == [(b"BA", b"A"), (b"B", b"ZZ"), (b"A", b"C"), (b"A", b"B")]


def test_higher_count_beats_greater_pair() -> None:
    assert best_pair(Counter({(b"z", b"z"): 2, (b"a", b"a"): 3})) == (b"a", b"a")


def test_tie_break_in_training_prefers_greater_bytes() -> None:
    # "ab" and "zy" occur equally often: (b"z", b"y") is the greater pair and goes first.
    _, merges = train_bpe_reference("ab zy ab zy", 258, [])
    assert merges == [(b"z", b"y"), (b"a", b"b")]


def test_overlapping_pairs_are_all_counted() -> None:
    assert count_pairs({(b"a", b"a", b"a"): 3}) == Counter({(b"a", b"a"): 6})


def test_merge_is_left_to_right_and_non_overlapping() -> None:
    a, b = b"a", b"b"
    assert merge_word((a, a, a), (a, a)) == (b"aa", a)
    assert merge_word((a, a, a, a), (a, a)) == (b"aa", b"aa")
    assert merge_word((a, b, a, b, a), (a, b)) == (b"ab", b"ab", a)
    assert merge_word((a,), (a, a)) == (a,)


def test_pairs_never_cross_pretokens() -> None:
    # pre-tokens "a", " b", " a", " b": (b"a", b" ") occurs twice in the text but never
    # inside a pre-token, so it is never counted
    counts = reference_counts("a b a b", [])
    assert counts == Counter({b"a": 1, b" b": 2, b" a": 1})
    _, merges = train_bpe_reference("a b a b", 300, [])
    assert merges == [(b" ", b"b"), (b" ", b"a")]  # and then nothing is left to merge


def test_stops_when_no_pair_is_left() -> None:
    vocab, merges = train_bpe_reference("abc abc", 10_000, [])
    # pre-tokens "abc" and " abc": (b,c) ties (a,b) at 2 and is greater; then (a,bc); then (" ",abc)
    assert merges == [(b"b", b"c"), (b"a", b"bc"), (b" ", b"abc")]
    assert len(vocab) == 256 + len(merges)


def test_specials_get_ids_in_order_and_split_text() -> None:
    vocab, merges = train_bpe_reference("xy<|e|>xy<|s|>yz", 270, ["<|s|>", "<|e|>"])
    assert vocab[256] == b"<|s|>" and vocab[257] == b"<|e|>"
    # Without the split, "xy<|e|>" would be pre-tokens "xy", "<|", "e", "|>" and '|' pairs
    # would be counted; with it only the letters remain.
    for left, right in merges:
        assert b"<" not in left + right and b"|" not in left + right
    assert merges[0] == (b"x", b"y")


def test_longest_special_wins_on_overlap() -> None:
    text = "x<|a|><|b|>y<|a|>z"
    assert split_on_specials(text, ["<|a|>", "<|a|><|b|>"]) == ["x", "y", "z"]
    # "<|b|>" is not special: had "<|a|>" won, "<|b|>" would be pre-tokenized
    assert reference_counts(text, ["<|a|>", "<|a|><|b|>"]) == Counter({b"x": 1, b"y": 1, b"z": 1})
    assert reference_counts(text, ["<|a|>"]) == Counter(
        {b"x": 1, b"<|": 1, b"b": 1, b"|>": 1, b"y": 1, b"z": 1}
    )


def test_invalid_utf8_bytes_are_kept_exactly() -> None:
    data = b"ab\xffcd \xc3(\xe2\x82 ok"
    text = read_corpus(data)
    assert count_invalid_bytes(text) == 4  # \xff, \xc3, and the truncated \xe2\x82
    # invalid bytes are "other" characters: \xff stands alone between letters; the space,
    # \xc3, "(" and \xe2\x82 form one " ?[^\s\p{L}\p{N}]+" run
    assert reference_counts(data, []) == Counter(
        {b"ab": 1, b"\xff": 1, b"cd": 1, b" \xc3(\xe2\x82": 1, b" ok": 1}
    )


def test_corpus_from_path_bytes_and_str_agree(tmp_path) -> None:
    data = "héllo wörld\r\nhello\u3000world 🙂 12345".encode()
    path = tmp_path / "c.txt"
    path.write_bytes(data)
    from_path = train_bpe_reference(path, 300, [])
    assert from_path == train_bpe_reference(data, 300, [])
    assert from_path == train_bpe_reference(data.decode(), 300, [])


def test_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        train_bpe_reference("abc", 256, ["<|e|>"])
    with pytest.raises(ValueError):
        train_bpe_reference("abc", 300, ["<|e|>", "<|e|>"])
    with pytest.raises(ValueError):
        train_bpe_reference("abc", 300, [""])


def test_builtin_patterns_are_the_published_ones() -> None:
    assert GPT2_PATTERN == DOCUMENTED_GPT2
    tiktoken_public = pytest.importorskip("tiktoken_ext.openai_public")
    # cl100k_base's pattern is a constant in tiktoken's source (reading it needs no download)
    assert GPT4_PATTERN in tiktoken_public.cl100k_base.__code__.co_consts


def test_gpt4_pattern_cuts_digits_in_threes() -> None:
    counts = reference_counts("1234567 don'T", [], pattern="gpt4")
    assert counts == Counter({b"123": 1, b"456": 1, b"7": 1, b" don": 1, b"'T": 1})
    # GPT-2's contractions are lower case only
    assert reference_counts("don'T", [])[b"'"] == 1


def test_custom_pattern() -> None:
    assert reference_counts("ab12 cd", [], pattern=r"\d|[a-z]+") == Counter(
        {b"ab": 1, b"1": 1, b"2": 1, b"cd": 1}
    )


@settings(max_examples=80, deadline=None)
@given(st.text(st.sampled_from("aab c\n"), min_size=1, max_size=60))
def test_each_merge_removes_between_one_and_count_tokens(text: str) -> None:
    # count includes overlapping occurrences ("aaa" counts (a,a) twice), but only
    # non-overlapping ones are merged, so the corpus shrinks by at least 1 and at most count
    counts = reference_counts(text, [])
    tokens = sum(len(t) * n for t, n in counts.items())
    for step in reference_merges(counts, 50):
        assert 1 <= tokens - step.corpus_tokens <= step.count
        tokens = step.corpus_tokens
