"""Special tokens are found as the regex ``"|".join(longest first)`` finds them, in linear time
whatever their length (a regex of a million-character literal took minutes to compile)."""

from __future__ import annotations

import numpy as np
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core.encode.corpus import encode_corpus
from core.encode.tokenizer import Tokenizer
from core.pretokenize.specials import LONG_SPECIAL, SpecialMatcher, special_bytes_regex, split_on_specials

tokens = st.lists(st.text("ab<|>", min_size=1, max_size=6), min_size=1, max_size=5, unique=True)


def regex_spans(text: str, specials: list[str]) -> list[tuple[int, int]]:
    ordered = sorted(specials, key=len, reverse=True)
    return [m.span() for m in regex.finditer("|".join(map(regex.escape, ordered)), text)]


@settings(max_examples=400, deadline=None)
@given(specials=tokens, text=st.text("ab<|>x", max_size=40), pad=st.booleans())
def test_matcher_finds_what_the_regex_finds(specials: list[str], text: str, pad: bool) -> None:
    """Short tokens go through the regex, long ones through substring search: both agree
    with the regex (padding every token past LONG_SPECIAL forces the search)."""
    if pad:
        filler = "y" * LONG_SPECIAL
        specials = [s + filler for s in specials]
        text = text.replace("x", filler)
    matcher = SpecialMatcher(specials)
    want = regex_spans(text, specials)
    assert [(m.start(), m.end()) for m in matcher.finditer(text)] == want
    assert [m.group() for m in matcher.finditer(text)] == [text[a:b] for a, b in want]
    data = text.encode()
    bytes_matcher = special_bytes_regex(tuple(specials))
    assert bytes_matcher is not None
    assert [(m.start(), m.end()) for m in bytes_matcher.finditer(data)] == want  # ASCII: same offsets
    first = matcher.search(text)
    assert (first.start() if first else None) == (want[0][0] if want else None)


def test_window_of_finditer() -> None:
    long = "<|" + "z" * 100 + "|>"
    for matcher in (SpecialMatcher(["<|a|>", long]), SpecialMatcher(["<|a|>"])):
        text = "<|a|>" + long + "<|a|>"
        spans = [(m.start(), m.end()) for m in matcher.finditer(text, 1, len(text) - 1)]
        assert spans == ([(5, 5 + len(long))] if len(matcher.tokens) == 2 else [])


def test_a_million_character_special_token(tmp_path) -> None:
    """Training, file encoding and encoding with a 1,000,000-character special token."""
    special = "<|" + "x" * 1_000_000 + "|>"
    text = ("hello world, " * 2000 + special + "xx" * 3000) * 3
    path = tmp_path / "c.txt"
    path.write_text(text, encoding="utf-8")
    vocab, merges = core.train_bpe(path, 300, [special], workers=2)
    assert vocab[256] == special.encode()
    tok = Tokenizer(vocab, merges, [special])
    ids = tok.encode(text)
    assert ids.count(256) == 3 and tok.decode(ids) == text
    assert [s for s, is_special in split_on_specials(text, [special]) if is_special] == [special] * 3
    out = tmp_path / "ids.npy"
    encode_corpus(path, tok, out, workers=2, chunk_bytes=1 << 16, doc_separator=None)
    assert np.load(out).tolist() == ids
