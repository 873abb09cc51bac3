"""Fast pre-tokenization (pieces + cache) equals running the pattern over the whole text."""

from __future__ import annotations

from collections import Counter

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import core.corpus.chunks as chunks_module
from core.corpus.chunks import plan_chunks
from core.pretokenize.patterns import resolve_pattern
from core.pretokenize.counting import count_with_regex
from core.pretokenize.pieces import WHITESPACE, WHITESPACE_SET, piece_start_chars, split_pieces
from core.pretokenize.specials import split_on_specials

ALPHABET = (
    "aAbZé日本語 \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2028\u2029\u3000"
    "0123456789٣'.,!?-_()[]{}<>|\"😀👍🏽\u200d\u0301ßİ\udc80\udcff"
)
texts = st.lists(
    st.sampled_from(list(ALPHABET) + ["'s", "'LL", "\r\n", "  ", "<|e|>"]), max_size=60
).map("".join)


def test_whitespace_list_is_regex_whitespace() -> None:
    everything = "".join(map(chr, range(0x110000)))
    assert WHITESPACE == "".join(regex.findall(r"\s", everything))
    assert WHITESPACE_SET == frozenset(WHITESPACE)


@given(text=texts, name=st.sampled_from(["gpt2", "gpt4"]))
def test_pieces_after_the_first_start_with_a_piece_start_char(text: str, name: str) -> None:
    """The encoder batches pieces by their first character: every piece that follows a
    safe cut point starts with one of `piece_start_chars` (the one whitespace set)."""
    pattern = resolve_pattern(name)
    starts = piece_start_chars(pattern)
    assert starts is not None
    for piece in split_pieces(text, pattern)[1:]:
        assert piece[0] in starts
    assert piece_start_chars(resolve_pattern(r"\w+|\W")) is None


@settings(max_examples=400, deadline=None)
@given(text=texts, name=st.sampled_from(["gpt2", "gpt4"]))
def test_pieces_preserve_pretokens(text: str, name: str) -> None:
    pattern = resolve_pattern(name)
    pieces = split_pieces(text, pattern)
    assert "".join(pieces) == text
    assert [t for p in pieces for t in pattern.findall(p)] == pattern.findall(text)


@settings(max_examples=200, deadline=None)
@given(text=texts, name=st.sampled_from(["gpt2", "gpt4", r"\p{L}+|\S"]))
def test_count_pretokens_matches_plain_regex(text: str, name: str) -> None:
    pattern = resolve_pattern(name)
    specials = ["<|e|>", "<|e|><|e|>"]
    expected: Counter[str] = Counter()
    for segment, is_special in split_on_specials(text, specials):
        if not is_special:
            expected.update(pattern.findall(segment))
    assert count_with_regex(text, pattern, specials) == expected


@settings(max_examples=150, deadline=None)
@given(
    text=texts,
    name=st.sampled_from(["gpt2", "gpt4"]),
    chunk=st.integers(min_value=1, max_value=40),
    window=st.sampled_from([1, 7, chunks_module.FIRST_WINDOW]),
)
def test_chunks_cut_at_exact_boundaries(tmp_path_factory, text: str, name: str, chunk: int, window: int) -> None:  # type: ignore[no-untyped-def]
    # a small first window: the window grows until a cut is found
    first_window = chunks_module.FIRST_WINDOW
    chunks_module.FIRST_WINDOW = window
    try:
        _check_chunks(tmp_path_factory, text, name, chunk)
    finally:
        chunks_module.FIRST_WINDOW = first_window


def _check_chunks(tmp_path_factory, text: str, name: str, chunk: int) -> None:  # type: ignore[no-untyped-def]
    pattern = resolve_pattern(name)
    specials = ["<|e|>", "<|e|><|e|>"]
    path = tmp_path_factory.mktemp("c") / "corpus.txt"
    data = text.encode("utf-8", errors="surrogateescape")
    if not data:
        return
    path.write_bytes(data)
    chunks = plan_chunks(path, len(data), pattern, specials, chunk)
    assert chunks[0][0] == 0 and chunks[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))
    whole = count_with_regex(text, pattern, specials)
    parts: Counter[str] = Counter()
    for start, end in chunks:
        parts.update(count_with_regex(data[start:end].decode("utf-8", errors="surrogateescape"), pattern, specials))
    assert parts == whole
