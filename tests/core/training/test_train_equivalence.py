"""The fast trainer equals the reference trainer, merge by merge.

`core.train_bpe` (parallel, chunked, incremental) must give exactly what the obviously
correct `core.training.reference.train_bpe_reference` gives: on hypothesis-generated texts full of
the cases that break pre-tokenization shortcuts (every kind of Unicode whitespace, mixed
scripts, emoji, contractions, overlapping special tokens, CRLF), for the GPT-2, GPT-4 and
custom patterns; on a generated file of a few hundred KB at 1, 2 and 3 workers; and on
text with invalid UTF-8 bytes mixed in.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import core
from core.training.reference import count_invalid_bytes, read_corpus, train_bpe_reference

WHITESPACE = [
    " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\r", "\x0b", "\x0c",
    "\x1c", "\x1d", "\x1e", "\x1f",  # str.isspace() is True, regex's \s is False
    "\x85", "\xa0", "\u1680", "\u2000", "\u2007", "\u200a", "\u2028", "\u2029",
    "\u202f", "\u205f", "\u3000", " \n", "\n ", " \t ", "\u3000 ", " \xa0",
    "\u200b", "\ufeff",  # zero-width, not whitespace
]
WORDS = [
    "hello", "Hello", "HELLO", "the", "a", "I", "don't", "DON'T", "it's", "IT'S", "It'S",
    "we'll", "WE'LL", "you've", "they're", "THEY'RE", "I'd", "I'M", "'s", "'S", "'", "''",
    "'ll", "naïve", "Ünïcödé", "e\u0301", "straße", "привет", "Москва", "مرحبا", "שלום",
    "漢字", "日本語", "한국어", "नमस्ते", "ไทย", "Ελλάδα",
    "🙂", "👍🏽", "👨\u200d👩\u200d👧", "🇫🇷", "✓",
    "0", "7", "42", "123", "2024", "1234567", "3.14", "½", "²", "٣", "①",
    "!", "?!", "...", ",", "--", "()", "#", "$5", "@user", "http://x.y/z?q=1", "_",
    "<", "|", ">", "<|a|", "|>", "<|a", "<|endoftext|>", "<|a|>", "<|b|>", "<|a|><|b|>",
]
SPECIAL_SETS = [
    [],
    ["<|endoftext|>"],
    ["<|a|>", "<|a|><|b|>"],  # overlapping: the longer one must win
    ["<|a|><|b|>", "<|b|>", "<|a|>", "|>"],
]
# special tokens holding the very boundaries a chunker cuts at (whitespace after non-space)
WHITESPACE_SPECIAL_SETS = [["a b", "b c"], ["<| |>", " x"], ["\n\n"], ["\u3000"], ["<|endoftext|>", " <|endoftext|>"]]
WHITESPACE_SPECIAL_TEXT = ["a b c", "<| |>", " x", "x ", "\n\n\n", "\u3000\u3000", " <|endoftext|>"]
CUSTOM_PATTERNS = [
    # leaves whitespace out of every pre-token (unmatched text is skipped)
    r"\p{L}+|\p{N}{1,2}|[^\s\p{L}\p{N}]+",
    # a capturing group: pre-tokens are the whole matches, not the groups
    r"('(?:s|t))|\p{L}+|\p{N}|\s+|[^\s\p{L}\p{N}]",
]
PATTERNS = ["gpt2", "gpt4", *CUSTOM_PATTERNS]

random_text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=4)
fragment = st.one_of(st.sampled_from(WORDS), st.sampled_from(WHITESPACE), random_text)
texts = st.lists(fragment, min_size=1, max_size=40).map("".join).filter(bool)
extra_merges = st.one_of(st.integers(0, 40), st.just(5000))  # 5000: train until pairs run out


def train_fast(path: Path, vocab_size: int, specials: list[str], *, chunk_size: int | None = None, **kw):
    """`core.train_bpe`, or with ``chunk_size`` the run's final result with chunks forced
    that small, so small files exercise chunking."""
    if chunk_size is None:
        return core.train_bpe(path, vocab_size, specials, **kw)
    events = list(core.train(path, core.TrainOptions(vocab_size, specials, **kw), chunk_size=chunk_size))
    assert isinstance(events[-1], core.Finished)
    return events[-1].vocab, events[-1].merges


def assert_same_training(got, want) -> None:
    """Compare two (vocab, merges) results; on a mismatch name the first differing rank."""
    got_vocab, got_merges = got
    want_vocab, want_merges = want
    for rank, (g, w) in enumerate(zip(got_merges, want_merges)):
        assert g == w, f"first differing merge at rank {rank}: fast {g!r} != reference {w!r}"
    assert len(got_merges) == len(want_merges), (
        f"fast trainer learned {len(got_merges)} merges, reference {len(want_merges)}"
    )
    assert got_vocab == want_vocab


def _train_both(path: Path, data: bytes, vocab_size: int, specials: list[str], pattern: str, **kw):
    path.write_bytes(data)
    fast = train_fast(path, vocab_size, specials, pattern=pattern, **kw)
    return fast, train_bpe_reference(data, vocab_size, specials, pattern=pattern)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=texts,
    specials=st.sampled_from(SPECIAL_SETS),
    pattern=st.sampled_from(PATTERNS),
    extra=extra_merges,
)
def test_equals_reference_on_generated_texts(tmp_path, text, specials, pattern, extra) -> None:
    data = text.encode("utf-8")
    fast, ref = _train_both(tmp_path / "c.txt", data, 256 + len(specials) + extra, specials, pattern, workers=1)
    assert_same_training(fast, ref)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.lists(st.one_of(fragment, st.sampled_from(WHITESPACE_SPECIAL_TEXT)), min_size=1, max_size=60)
    .map("".join)
    .filter(bool),
    specials=st.sampled_from(SPECIAL_SETS + WHITESPACE_SPECIAL_SETS),
    pattern=st.sampled_from(PATTERNS),
    chunk_size=st.sampled_from([1, 5, 16, 64]),
)
def test_tiny_chunks_change_nothing(tmp_path, text, specials, pattern, chunk_size) -> None:
    # chunks must be cut only at exact pre-token boundaries, whatever their size
    data = text.encode("utf-8")
    fast, ref = _train_both(tmp_path / "c.txt", data, 10_000, specials, pattern, workers=1, chunk_size=chunk_size)
    assert_same_training(fast, ref)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pieces=st.lists(
        st.one_of(
            fragment.map(lambda s: s.encode("utf-8")),
            st.binary(min_size=1, max_size=3).map(lambda b: b.replace(b"\x00", b"\x01")),
        ),
        min_size=1,
        max_size=30,
    ),
    specials=st.sampled_from(SPECIAL_SETS[:3]),
    pattern=st.sampled_from(["gpt2", "gpt4"]),
)
def test_invalid_utf8_bytes_are_kept_exactly(tmp_path, pieces, specials, pattern) -> None:
    data = b"".join(pieces)
    assume(data)
    fast, ref = _train_both(tmp_path / "c.bin", data, 10_000, specials, pattern, workers=1)
    assert_same_training(fast, ref)


def test_invalid_bytes_survive_in_learned_tokens(tmp_path) -> None:
    # \xff and the truncated \xe2\x82 are invalid: each invalid byte is an "other" character,
    # so "caf\xff" is two pre-tokens, while " \xe2\x82" is one and is merged byte-exactly
    data = b"caf\xff caf\xff caf\xff \xe2\x82 \xe2\x82 ok\r\nok\r\n"
    fast, ref = _train_both(tmp_path / "c.bin", data, 10_000, [], "gpt2", workers=1)
    assert_same_training(fast, ref)
    learned = set(fast[0].values())
    assert {b" \xe2\x82", b"\xe2\x82", b" caf"} <= learned
    assert b"caf\xff" not in learned


def test_exhausting_all_pairs_stops_early(tmp_path) -> None:
    data = "low lower lowest newer wider new\r\n".encode()
    fast, ref = _train_both(tmp_path / "c.txt", data, 100_000, ["<|endoftext|>"], "gpt2", workers=1)
    assert_same_training(fast, ref)
    assert len(fast[1]) < 100_000 - 257
    assert len(fast[0]) == 257 + len(fast[1])


def test_vocab_of_exactly_bytes_and_specials_learns_nothing(tmp_path) -> None:
    fast, ref = _train_both(tmp_path / "c.txt", b"aaaa bbbb", 258, ["<|a|>", "<|b|>"], "gpt2", workers=1)
    assert fast == ref == ({**{i: bytes([i]) for i in range(256)}, 256: b"<|a|>", 257: b"<|b|>"}, [])


def test_file_of_only_special_tokens(tmp_path) -> None:
    fast, ref = _train_both(tmp_path / "c.txt", b"<|a|><|a|><|a|>", 300, ["<|a|>"], "gpt2", workers=1)
    assert_same_training(fast, ref)
    assert fast[1] == []


def _generated_corpus(seed: int, size: int, *, specials: list[str], invalid: bool) -> bytes:
    """Deterministic text of about ``size`` bytes built from the fragments above."""
    rng = random.Random(seed)
    words = [w for w in WORDS if not any(s in w for s in ("<|", "|>"))]
    vocabulary = [rng.choice(words) + rng.choice(words) for _ in range(400)] + words
    parts: list[bytes] = []
    total = 0
    while total < size:
        r = rng.random()
        if r < 0.55:
            piece = rng.choice(vocabulary)
        elif r < 0.9:
            piece = rng.choice(WHITESPACE[:5]) if rng.random() < 0.8 else rng.choice(WHITESPACE)
        elif specials and r < 0.93:
            piece = rng.choice(specials)
        else:
            piece = str(rng.randrange(10**rng.randrange(1, 7)))
        chunk = piece.encode("utf-8")
        if invalid and rng.random() < 0.01:
            chunk += bytes([rng.choice([0x80, 0xC3, 0xE2, 0xF0, 0xFF])])
        parts.append(chunk)
        total += len(chunk)
    return b"".join(parts)


@pytest.fixture(scope="module")
def big_file(tmp_path_factory) -> tuple[Path, tuple]:
    """~300 KB with no special token, and the reference result for 120 merges."""
    data = _generated_corpus(7, 300_000, specials=[], invalid=False)
    path = tmp_path_factory.mktemp("big") / "corpus.txt"
    path.write_bytes(data)
    return path, train_bpe_reference(data, 256 + 120, [])


@pytest.mark.parametrize(("workers", "chunk_size"), [(1, None), (2, 4096), (3, 1000), (None, None)])
def test_generated_file_equals_reference_at_any_worker_count(big_file, workers, chunk_size) -> None:
    path, ref = big_file
    fast = train_fast(path, 256 + 120, [], workers=workers, chunk_size=chunk_size)
    assert_same_training(fast, ref)


@pytest.mark.parametrize("pattern", ["gpt4", CUSTOM_PATTERNS[0]])
def test_file_with_specials_and_invalid_bytes_in_parallel(tmp_path, pattern: str) -> None:
    specials = ["<|a|>", "<|a|><|b|>", "<|endoftext|>"]
    data = _generated_corpus(11, 120_000, specials=specials, invalid=True)
    text = read_corpus(data)
    assert count_invalid_bytes(text) > 0 and "<|a|><|b|>" in text
    path = tmp_path / "c.txt"
    path.write_bytes(data)
    events = list(core.train(path, core.TrainOptions(256 + 3 + 80, specials, pattern=pattern, workers=2),
                             chunk_size=2048))
    counting = next(e for e in events if isinstance(e, core.CountingDone))
    assert counting.invalid_bytes == count_invalid_bytes(text)  # counted once, across chunks
    fast = (events[-1].vocab, events[-1].merges)
    assert_same_training(fast, train_bpe_reference(data, 256 + 3 + 80, specials, pattern=pattern))
