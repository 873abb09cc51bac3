"""Special tokens are found by one trie-shaped regex: exactly where a plain loop over every token
at every position finds them, and in time that does not grow with their number."""

from __future__ import annotations

import random
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from core.pretokenize.specials import LONG_SPECIAL, SpecialMatcher, special_bytes_regex, trie_pattern

ALPHABET = "ab<|>é€😀"
tokens_st = st.lists(st.text(ALPHABET, min_size=1, max_size=6), min_size=1, max_size=12, unique=True)


def reference(text: str, tokens: list[str], pos: int = 0, end: int | None = None) -> list[tuple[int, str]]:
    """Leftmost first; where several start at one place, the longest; no overlap."""
    end = len(text) if end is None else end
    found = []
    while pos < end:
        hits = [t for t in tokens if text.startswith(t, pos, end)]
        if hits:
            best = max(hits, key=len)
            found.append((pos, best))
            pos += len(best)
        else:
            pos += 1
    return found


@st.composite
def case(draw: st.DrawFn) -> tuple[list[str], str]:
    """Tokens (overlapping, one a prefix of another, multi-byte, some long) and a text made of
    tokens, their prefixes and stray characters."""
    tokens = draw(tokens_st)
    if draw(st.booleans()):  # some past LONG_SPECIAL: found by substring search, with the regex
        tokens = [t + "|" * LONG_SPECIAL if draw(st.booleans()) else t for t in tokens]
        tokens = list(dict.fromkeys(tokens))
    parts = st.one_of(st.sampled_from(tokens), st.sampled_from(tokens).map(lambda t: t[: len(t) // 2 + 1]),
                      st.text(ALPHABET + "x", max_size=3))
    text = "".join(draw(st.lists(parts, max_size=12)))
    return tokens, text


@settings(max_examples=300, deadline=None)
@given(case(), st.data())
def test_the_matcher_finds_what_a_plain_loop_finds(case: tuple[list[str], str], data: st.DataObject) -> None:
    tokens, text = case
    want = reference(text, tokens)
    matcher = SpecialMatcher(tokens)
    assert [(m.start(), m.group()) for m in matcher.finditer(text)] == want
    assert all(m.end() == m.start() + len(m.group()) for m in matcher.finditer(text))
    first = matcher.search(text)
    assert (first.start(), first.group()) == want[0] if want else first is None
    # bytes: the same tokens at the UTF-8 offsets
    data_bytes = text.encode("utf-8")
    offset = {i: len(text[:i].encode("utf-8")) for i in range(len(text) + 1)}
    bytes_matcher = special_bytes_regex(tuple(tokens))
    assert bytes_matcher is not None
    assert [(m.start(), m.group()) for m in bytes_matcher.finditer(data_bytes)] == [
        (offset[at], t.encode("utf-8")) for at, t in want
    ]
    # a window: what lies inside text[pos:end]
    pos = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(pos, len(text)))
    assert [(m.start(), m.group()) for m in matcher.finditer(text, pos, end)] == reference(text, tokens, pos, end)


def test_trie_pattern_shape() -> None:
    """One branch per first character; a token another extends ends in an empty branch; chains
    are one literal; branches that differ in their first character only share it."""
    assert trie_pattern(["ab", "abc", "ad", "xd"]) == "a(?:b(?:c|)|d)|xd"
    assert trie_pattern(["<|a1|>", "<|a2|>", "<|b|>"]) == r"<\|(?:a[12]\|>|b\|>)"
    assert trie_pattern(["a.b", "-", "]", "^"]) == r"[\-\]\^]|a\.b"


def _seconds(matcher: SpecialMatcher[str] | SpecialMatcher[bytes], text: str | bytes) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for _ in matcher.finditer(text):  # type: ignore[arg-type]
            pass
        best = min(best, time.perf_counter() - started)
    return best


def test_time_does_not_grow_with_the_number_of_tokens() -> None:
    """5,000 special tokens that share a prefix, in a text with the last of them every ~100
    characters: as fast as one token (an alternation tried each of the 5,000 at each
    occurrence, ~40x slower)."""
    rng = random.Random(5)
    many = [f"<|tok{k:05d}|>" for k in rng.sample(range(2, 100_000), 4_999)] + ["<|tok00001|>"]
    text = "".join(f"word {k} and more words, <not a token|> {'x' * 60}<|tok00001|>" for k in range(2_000))
    for kind in (str, bytes):
        conv = (lambda s: s) if kind is str else (lambda s: s.encode())
        one, lots = SpecialMatcher([conv("<|tok00001|>")]), SpecialMatcher([conv(t) for t in many])
        assert sum(1 for _ in lots.finditer(conv(text))) == 2_000
        assert _seconds(lots, conv(text)) <= 3 * _seconds(one, conv(text)) + 0.005
