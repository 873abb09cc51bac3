"""Shared cases for the tokenizer's tests: texts that are hard to encode, a generated corpus,
the textbook BPE oracle the fast paths are compared with, and a tiny byte-level tokenizer.

The oracle is the textbook algorithm (minbpe style): special tokens split the text longest
first, the pattern cuts pre-tokens, and each pre-token is merged by scanning its pairs for
the lowest-ranked merge.
"""

from __future__ import annotations

import random

import regex
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from core.encode.tokenizer import Tokenizer

WHITESPACE = [
    " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e",
    "\x1f", "\x85", "\xa0", "\u1680", "\u2000", "\u2007", "\u200a", "\u2028", "\u2029", "\u202f",
    "\u205f", "\u3000", " \n", "\n ", " \t ", "\u3000 ", "\u200b", "\ufeff",
]
WORDS = [
    "hello", "Hello", "HELLO", "the", "don't", "DON'T", "IT'S", "We'LL", "they're", "I'M", "'s",
    "naïve", "e\u0301", "a\u0301\u0302", "straße", "привет", "مرحبا", "שלום", "漢字", "日本語",
    "한국어", "नमस्ते", "🙂", "👍🏽", "👨\u200d👩\u200d👧\u200d👦", "🏳️\u200d🌈", "🇫🇷", "0", "42",
    "1234567890123456", "3.14", "½", "٣", "!", "?!", "...", "def f(x):\n    return x**2", "{}",
    "\x00", "\x07", "\x1b[0m", "<|", "|>", "<|endoftext", "<|endoftext|>", "<|a|>", "<|a|><|b|>",
]
HARD_STRINGS = [
    "",
    "Hello, world! DON'T SHOUT. It'S fine; we'LL see.",
    "👨\u200d👩\u200d👧\u200d👦 family, 👍🏽 thumbs, 🏳️\u200d🌈 flag, 🇯🇵🇫🇷",
    "e\u0301 a\u0301\u0302\u0303 Z\u0351\u0352\u0353",
    "漢字かな交じり文、日本語のテキスト。中文字符",
    "مرحبا بالعالم — שלום עולם (RTL) \u200f\u200e",
    "".join(WHITESPACE) + "x" + "".join(reversed(WHITESPACE)),
    "\x00\x01\x02\x1b[31mred\x1b[0m\x7f\x80\x9f",
    "31415926535897932384626433832795028841971693993751 and 1,000,000.00",
    "def main(argv):\n\tif argv[1:]:\n\t\treturn {'a': [1, 2]}\n\n\n    # comment\r\n",
    "<|endoftext|>start<|a|><|b|>mid<|a|>end<|endoftext|><|endoftext",
    "   leading and trailing   ",
    "\n\n\n",
    "\U0010ffff\U0001f600\ue000",
]
SPECIALS = ["<|endoftext|>", "<|a|>", "<|a|><|b|>"]
LONE_SURROGATES = ["\ud800", "\udbff", "\udc00", "\udc7f", "\udc80", "\udcff", "\udd00", "\udfff"]
CUSTOM = r"\p{L}+|\p{N}{1,2}|[^\s\p{L}\p{N}]+"  # skips whitespace entirely


def generated_corpus(seed: int, size: int) -> str:
    rng = random.Random(seed)
    parts = []
    while sum(map(len, parts)) < size:
        parts.append(rng.choice(WORDS) if rng.random() < 0.7 else rng.choice(WHITESPACE))
        if rng.random() < 0.02:
            parts.append(rng.choice(SPECIALS))
    return "".join(parts)


def oracle_encode(tok: Tokenizer, text: str) -> list[int]:
    """Textbook BPE, independent of the tokenizer's caches, pieces and rank tables."""
    specials = sorted(tok.special_tokens, key=len, reverse=True)
    by_bytes = {b: i for i, b in sorted(tok.vocab.items(), reverse=True) if i not in tok.special_ids.values()}
    rank = {pair: r for r, pair in reversed(list(enumerate(tok.merges)))}
    ids: list[int] = []
    segment_start = pos = 0
    segments: list[tuple[str, bool]] = []
    while pos < len(text):
        hit = next((s for s in specials if text.startswith(s, pos)), None)
        if hit is None:
            pos += 1
            continue
        segments += [(text[segment_start:pos], False), (hit, True)]
        pos = segment_start = pos + len(hit)
    segments.append((text[segment_start:], False))
    for segment, special in segments:
        if special:
            ids.append(tok.special_ids[segment])
            continue
        for m in regex.finditer(tok.pattern.source, segment):
            parts = [bytes([b]) for b in m.group().encode("utf-8", "surrogateescape")]
            while len(parts) > 1:
                pairs = [(rank.get(p, 1 << 60), i) for i, p in enumerate(zip(parts, parts[1:]))]
                best, i = min(pairs)
                if best == 1 << 60:
                    break
                parts[i : i + 2] = [parts[i] + parts[i + 1]]
            ids += [by_bytes[p] for p in parts]
    return ids


texts = st.lists(
    st.one_of(
        st.sampled_from(WORDS),
        st.sampled_from(WHITESPACE),
        st.sampled_from(SPECIALS),
        st.text(st.characters(exclude_categories=("Cs",)), max_size=5),
    ),
    max_size=30,
).map("".join)
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def byte_tokenizer(specials: list[str] | None = None, pattern: str = "gpt2") -> Tokenizer:
    """Single bytes and five merges spelling " hello": every other byte is its own token."""
    vocab = {i: bytes([i]) for i in range(256)}
    merges = [(b"h", b"e"), (b"l", b"l"), (b"he", b"ll"), (b"hell", b"o"), (b" ", b"hello")]
    for i, (a, b) in enumerate(merges):
        vocab[256 + i] = a + b
    return Tokenizer(vocab, merges, specials, pattern=pattern)
