"""The native pre-tokenizer equals the `regex` module on the GPT-2 and GPT-4 patterns and SuperBPE's stage-2 cut.

The oracle is `regex` itself: the text's bytes are decoded as the trainer decodes a file
(``surrogateescape``), the pattern's ``findall`` cuts it, and the pre-tokens are encoded
back to bytes; the scanner gets the raw bytes. Checked for every code point (the tables,
and each code point, one in 61 in the unassigned planes 4 to 13, in contexts that reach
every alternative of both patterns), and on generated text drawing from every general
category, every White_Space character, combining marks, digits of every script, invalid
bytes, encoded lone surrogates and long runs.
"""

from __future__ import annotations

import functools
import itertools
import os
import random
import struct
import subprocess
import sys
import warnings
from collections import Counter

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from core.pretokenize import native
from core.pretokenize.patterns import SUPERBPE_PATTERN, resolve_pattern
from core.pretokenize.unicode_classes import CODE_POINTS, all_code_points, class_flags

_native = pytest.importorskip("core.pretokenize._native", reason="the native pre-tokenizer is not built")

NAMES = {"gpt2": 1, "gpt4": 2, "superbpe": 3}
SOURCES = {"gpt2": "gpt2", "gpt4": "gpt4", "superbpe": SUPERBPE_PATTERN}


def oracle(data: bytes, name: str) -> list[bytes]:
    text = data.decode("utf-8", "surrogateescape")
    return [t.encode("utf-8", "surrogateescape") for t in resolve_pattern(SOURCES[name]).findall(text)]


def scan(data: bytes, name: str) -> list[bytes]:
    return _native.pretokenize(data, NAMES[name])


def test_tables_equal_regex_for_every_code_point() -> None:
    table, expected = _native.class_flags(), class_flags()
    assert len(table) == len(expected) == CODE_POINTS
    wrong = [cp for cp in range(CODE_POINTS) if table[cp] != expected[cp]]
    assert wrong == [], f"{len(wrong)} code points differ, first U+{wrong[0]:04X}"


def test_tables_know_the_classes_the_patterns_need() -> None:
    flags = _native.class_flags()
    assert flags[ord("a")] & 1 and flags[ord("٣")] & 2 and flags[0x3000] & 4
    assert flags[0x17F] >> 4 == 1  # ſ matches (?i:s)
    assert flags[ord("E")] >> 4 == 8 and flags[ord("x")] >> 4 == 0


# Contexts that put each code point c next to letters, digits, spaces, newlines, an
# apostrophe and punctuation, at the start and the end of runs.
TEMPLATES = ["x{c}y", " {c}", "'{c}{c}", "{c}1 ", "!{c}\n", "  {c}", "\t{c}a", "'{c}e", "{c}\r\n ", "{c}  ;"]
AROUND = [template.split("{c}") for template in TEMPLATES]  # c.join(around) fills a template in, fast


# Every code point, in slices of 2**17 (one test each, so parallel test processes share
# them); each piece of text is built once and checked with both patterns.
SLICE = 1 << 17
# A slice whose code points all have the same classes (planes 4 to 13, where nothing is
# assigned) is checked one code point in STRIDE: 61 is prime to 64, so every value of
# every byte of their UTF-8 still occurs. The tables' test covers each code point's classes.
STRIDE = 61


@pytest.mark.parametrize("first", range(0, CODE_POINTS, SLICE), ids=lambda first: f"U+{first:06X}")
def test_every_code_point_in_every_context(first: int) -> None:
    end = min(first + SLICE, CODE_POINTS)
    uniform = 0x40000 <= first and end <= 0xE0000 and len(set(class_flags()[first:end])) == 1
    codes = [*range(first, end, STRIDE), end - 1] if uniform else range(first, end)
    points = [chr(cp) for cp in codes if not 0xD800 <= cp < 0xE000]
    step = 1 << 15
    for start in range(0, len(points), step):
        text = "".join([c.join(around) for c in points[start : start + step] for around in AROUND])
        data = text.encode("utf-8")
        for name in NAMES:
            got, want = scan(data, name), oracle(data, name)
            if got != want:
                i = next(i for i, (a, b) in enumerate(zip(got, want)) if a != b)
                pytest.fail(f"{name}: first difference at pre-token {i}: {got[i - 2 : i + 3]} != {want[i - 2 : i + 3]}")


@pytest.mark.parametrize("name", list(NAMES))
def test_every_byte_alone_and_invalid_sequences(name: str) -> None:
    """Every byte value in contexts, truncated and overlong sequences, encoded surrogates."""
    pieces = [bytes([b]) for b in range(256)]
    pieces += [b"\xe2\x82", b"\xf0\x9f\x98", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xed\xbf\xbf",
               b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xc3", b"\xbf\xbf"]
    contexts = [b"a%sb", b" %s", b"%s ", b"'%s", b"1%s2", b"%s\n", b"  %s  x", b"!%s!"]
    for piece in pieces:
        for ctx in contexts:
            data = ctx.replace(b"%s", piece)
            assert scan(data, name) == oracle(data, name), data
    data = b"".join(ctx.replace(b"%s", p) for p in pieces for ctx in contexts)
    assert scan(data, name) == oracle(data, name)


CATEGORIES = ["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi",
              "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Co", "Cn"]
WHITE_SPACE = "".join(regex.findall(r"\s", "".join(map(chr, range(0x3100)))))
DIGITS = regex.findall(r"\p{Nd}", all_code_points())  # decimal digits of every script
COMBINING = [chr(cp) for cp in range(0x300, 0x370)] + ["\u0e31", "\u094d", "\u20dd", "\ufe0f", "\U000e0100"]

chars = st.one_of(
    st.characters(categories=CATEGORIES, codec="utf-8"),  # type: ignore[arg-type]
    st.sampled_from(list(WHITE_SPACE)),
    st.sampled_from(COMBINING),
    st.sampled_from(DIGITS),
    st.sampled_from(list("aZ0 '\r\n!.sStTlLvVrReEſ")),
)
fragments = st.one_of(
    chars.map(lambda c: c.encode("utf-8")),
    st.sampled_from([b"'s", b"'S", b"'ll", b"'LL", b"'Ve", b"'re", b"'\xc5\xbf", b"\r\n", b"   ", b"\n\n"]),
    st.binary(min_size=1, max_size=3),  # mostly invalid UTF-8
    st.sampled_from([b"\xed\xa0\x80", b"\xed\xb3\xbf", b"\xed\xb2\x80"]),  # lone surrogates, encoded
    st.tuples(chars, st.integers(2, 40)).map(lambda t: (t[0] * t[1]).encode("utf-8")),  # long runs
)
texts = st.lists(fragments, max_size=60).map(b"".join)


@settings(max_examples=500, deadline=None)
@given(data=texts, name=st.sampled_from(list(NAMES)))
def test_scanner_equals_regex_on_generated_text(data: bytes, name: str) -> None:
    assert scan(data, name) == oracle(data, name)


@settings(max_examples=300, deadline=None)
@given(data=texts, cut=st.integers(0, 200), name=st.sampled_from(list(NAMES)))
def test_counts_equal_regex_across_chunk_boundaries(data: bytes, cut: int, name: str) -> None:
    """Counting two chunks cut at an exact boundary (as the trainer cuts) gives the
    whole text's counts; packed counts added up give the same."""
    from collections import Counter

    from core.corpus.chunks import find_cut
    import io

    pattern = resolve_pattern(SOURCES[name])
    cut = find_cut(io.BytesIO(data), min(cut, len(data)), len(data), pattern, [])
    total = _native.Counts()
    for part in (data[:cut], data[cut:]):
        counts = _native.Counts()
        counts.scan(part, NAMES[name])
        total.add_packed(counts.packed())
    words, numbers = total.items()
    assert dict(zip(words, numbers)) == Counter(oracle(data, name))
    text = data.decode("utf-8", "surrogateescape")
    assert total.invalid == len(regex.findall("[\udc80-\udcff]", text))


def test_scan_range_treats_its_end_as_the_end_of_the_text() -> None:
    counts = _native.Counts()
    counts.scan(b"ab  <|e|>cd", 1, 0, 4)  # "ab  " then a special token
    counts.scan(b"ab  <|e|>cd", 1, 9)
    assert dict(zip(*counts.items())) == {b"ab": 1, b"  ": 1, b"cd": 1}
    with pytest.raises(ValueError, match="pattern"):
        counts.scan(b"x", 4)
    with pytest.raises(ValueError, match="packed"):
        counts.add_packed(b"\x01" * 30)


def test_pure_python_and_custom_patterns_keep_the_regex_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BPE_STUDIO_PURE_PYTHON", raising=False)
    assert native.scanner_for(resolve_pattern("gpt2")) == 1
    assert native.scanner_for(resolve_pattern("gpt4")) == 2
    assert native.scanner_for(resolve_pattern(SUPERBPE_PATTERN)) == 3
    assert native.scanner_for(resolve_pattern(r"\w+|\W")) is None
    monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
    assert native.scanner_for(resolve_pattern("gpt2")) is None


def test_other_unicode_tables_make_the_fast_path_stand_down(monkeypatch: pytest.MonkeyPatch) -> None:
    """A regex of another version with the same classes keeps the fast path; different
    classes make it stand down, saying so once."""
    monkeypatch.delenv("BPE_STUDIO_PURE_PYTHON", raising=False)
    native._tables_current.cache_clear()
    monkeypatch.setattr(native.regex, "__version__", "0.0.0")
    try:
        assert native.scanner_for(resolve_pattern("gpt2")) == 1
        native._tables_current.cache_clear()
        monkeypatch.setattr(_native, "tables_info", lambda: ("0.0.0-other", "not-the-digest"))
        with pytest.warns(native.NativeScannerWarning, match="gen_unicode_tables"):
            assert native.scanner_for(resolve_pattern("gpt2")) is None
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert native.scanner_for(resolve_pattern("gpt4")) is None  # said once
    finally:
        monkeypatch.undo()
        native._tables_current.cache_clear()
    assert sys.modules["core.pretokenize.native"] is native


def counted(data: bytes, name: str) -> tuple[dict[bytes, int], int]:
    """Counts.scan's counts of data (the counting loop, not `pretokenize`'s) and its invalid bytes."""
    counts = _native.Counts()
    counts.scan(data, NAMES[name])
    return dict(zip(*counts.items())), counts.invalid


def oracle_invalid(data: bytes) -> int:
    return len(regex.findall("[\udc80-\udcff]", data.decode("utf-8", "surrogateescape")))


def test_ascii_letters_are_exactly_a_to_z() -> None:
    """The scanner tests 8 ASCII bytes at a time for [A-Za-z]: the tables must agree."""
    flags = _native.class_flags()
    assert bytes(b for b in range(128) if flags[b] & 1) == bytes(range(65, 91)) + bytes(range(97, 123))


# Characters that end or continue a run of ASCII letters, one to four bytes, valid or not.
BREAKERS = [bytes([b]) for b in range(128)] + [
    "é".encode(), "ſ".encode(), "中".encode(), "\U00010400".encode(), "\u00a0".encode(), "\u3000".encode(),
    "٣".encode(), "\u0301".encode(), "…".encode(), b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\x80",
]


@pytest.mark.parametrize("name", list(NAMES))
def test_runs_break_at_every_offset_of_an_8_byte_block(name: str) -> None:
    """A character after k ASCII letters, for k across two 8-byte blocks, then text or the
    end of the text within 8 bytes: each edge of the word-at-a-time loops, ASCII and not."""
    for piece in BREAKERS:
        for k in range(18):
            for tail in (b"", b"b", b"bcdefgh", b"bcdefghijk", b" x1", b"\xff\xfe"):
                data = b"a" * k + piece + tail
                assert scan(data, name) == oracle(data, name), data
                words, invalid = counted(data, name)
                assert words == Counter(oracle(data, name)), data
                assert invalid == oracle_invalid(data), data


def test_invalid_bytes_at_every_offset_next_to_ascii() -> None:
    """The invalid-byte count checks a text 32 bytes at a time, and decodes one that is not
    valid skipping ASCII 8 bytes at a time: invalid and valid non-ASCII bytes at each offset
    of a block, next to each other, before a whole block of ASCII and at the end of the text."""
    pieces = [b"\xff", b"\xc3", b"\xc3\xa9", b"\xe2\x82", b"\xe2\x82\xac", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\x80\x80"]
    for first in pieces:
        for second in pieces + [b""]:
            for k in range(40):
                for gap in (0, 1, 7, 8, 9, 33, 64):
                    data = b"x" * k + first + b" " * gap + second + b"yz"[: k % 3]
                    assert counted(data, "gpt2")[1] == oracle_invalid(data), data


# UTF-8 in pieces: valid characters of 1 to 4 bytes at the edges of each length's range,
# and every kind of ill-formed sequence: a lone continuation, a lead cut short, overlongs,
# surrogates, code points past U+10FFFF, bytes that start nothing
utf8_pieces = st.sampled_from([
    b"a", b" ", b"\x7f", b"\xc2\x80", b"\xc3\xa9", b"\xdf\xbf", b"\xe0\xa0\x80", b"\xe2\x82\xac", b"\xed\x9f\xbf",
    b"\xee\x80\x80", b"\xef\xbf\xbf", b"\xf0\x90\x80\x80", b"\xf0\x9f\x98\x80", b"\xf3\xbf\xbf\xbf", b"\xf4\x8f\xbf\xbf",
    b"\x80", b"\xbf", b"\xc2", b"\xe2\x82", b"\xf0\x9f\x98", b"\xf0\x9f", b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80",
    b"\xe0\x9f\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf0\x80\x80\x80", b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80",
    b"\xf5\x80\x80\x80", b"\xf8", b"\xfe", b"\xff", b"\xe2\x82\xac\x80", b"\xc3\xa9\xa9",
    b"the words of a whole block of ASCII, and more",  # (a block of ASCII after a cut lead is checked apart)
])


@settings(max_examples=600, deadline=None)
@given(lead=st.integers(0, 40), pieces=st.lists(st.one_of(utf8_pieces, st.binary(max_size=3)), max_size=60),
       valid_run=st.integers(0, 3))
def test_invalid_bytes_across_blocks_equal_python(lead: int, pieces: list[bytes], valid_run: int) -> None:
    """The invalid-byte count (a whole text checked 32 bytes at a time first, then, if it is
    not valid, character by character) equals Python's decoder on texts of every kind of
    well- and ill-formed sequence at every offset of a block, across blocks and at the end;
    runs of valid text and of ASCII long enough that a block holds only those."""
    data = b"x" * lead + "é中😀".encode() * valid_run * 4 + b"".join(pieces) + "中".encode() * valid_run
    assert counted(data, "gpt2")[1] == oracle_invalid(data)


@pytest.mark.skipif(os.environ.get("BPE_STUDIO_NO_AVX2") == "1", reason="this is the run without AVX2")
def test_the_baseline_paths_without_avx2_equal_regex() -> None:
    """On a processor with AVX2 the cutter's masks and the UTF-8 check use it; their baseline
    twins serve the others. The tests of both against regex and Python's decoder run again
    with AVX2 turned off (BPE_STUDIO_NO_AVX2=1), in a process of their own."""
    selected = "mostly_ascii or long_ascii or every_offset or chunk_boundaries or every_byte_alone or across_blocks"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider", __file__,
                           "-k", selected], env={**os.environ, "BPE_STUDIO_NO_AVX2": "1"}, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and " 0 passed" not in done.stdout


words = st.lists(
    st.one_of(
        st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=20),
        st.sampled_from([" ", "  ", "\n", ", ", ".", "'s", "'LL", "1", "2024", " (", "é", "中文", "ſ", "\u00a0", "\u0301"]),
        st.characters(codec="utf-8"),
    ),
    max_size=40,
).map(lambda parts: "".join(parts).encode("utf-8"))


@settings(max_examples=500, deadline=None)
@given(data=st.one_of(words, st.tuples(words, st.binary(max_size=3), words).map(b"".join)),
       name=st.sampled_from(list(NAMES)))
def test_mostly_ascii_words_equal_regex(data: bytes, name: str) -> None:
    """Words of ASCII letters (the word-at-a-time path) of every length, mixed with other
    characters and invalid bytes: the pre-tokens, their counts and the invalid bytes."""
    assert scan(data, name) == oracle(data, name)
    got, invalid = counted(data, name)
    assert got == Counter(oracle(data, name))
    assert invalid == oracle_invalid(data)


def test_packed_counts_add_up_for_keys_of_every_length() -> None:
    """Scanning hashes and compares pre-tokens a word at a time, reading the text after
    them; adding packed counts reads the keys alone. Both must find the same entries, for
    keys of every length around the 8 and 16 byte words and at the end of the text."""
    letters = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    pieces = [letters[k : k + n] for n in range(1, 41) for k in (0, 7)]
    pieces += [b"=" * n for n in range(1, 41)] + [b"9" * n for n in range(1, 41)]
    for end in (b"", b"!", b"xyz", b" last-one"):
        data = b" ".join(pieces + pieces[::-1]) + end
        want = Counter(oracle(data, "gpt2"))
        counts = _native.Counts()
        counts.scan(data, 1)
        words, numbers = counts.items()
        assert len(set(words)) == len(words)
        assert dict(zip(words, numbers)) == want
        counts.add_packed(counts.packed())  # the keys alone, into the map the text filled
        words, numbers = counts.items()
        assert len(set(words)) == len(words)
        assert dict(zip(words, numbers)) == {w: 2 * n for w, n in want.items()}


def test_add_packed_checks_every_key_length_before_adding_any() -> None:
    """Packed counts whose key lengths overrun their keys are refused whole."""
    good = _native.Counts()
    good.scan(b"ab cd ab", 1)
    total = _native.Counts()
    total.add_packed(good.packed())
    # two keys whose lengths (2, 4) overrun the 5 bytes of keys by one
    bad = struct.pack("<qqq", 2, 4, 5) + struct.pack("<qq", 7, 9) + struct.pack("<II", 2, 4) + b"ab cd"
    with pytest.raises(ValueError, match="packed"):
        total.add_packed(bad)
    assert dict(zip(*total.items())) == {b"ab": 1, b" cd": 1, b" ab": 1}  # not even b"ab" added
    assert total.invalid == 0


def test_short_keys_that_differ_anywhere_stay_apart() -> None:
    """The map tells keys of up to 8 bytes apart by their hash and length alone (the hash
    is a bijection there): keys differing in one byte at each position, and every
    three-letter word, each counted on its own."""
    base = b"abcdefgh"
    variants = {base[:n][:k] + bytes([c]) + base[:n][k + 1 :] for n in range(1, 9) for k in range(n) for c in b"aAzZ"}
    triples = {bytes(t) for t in itertools.product(b"abcdefghijklmnopqrstuvwxyz", repeat=3)}
    words = sorted(variants | triples)
    data = b" ".join(words)
    got, _ = counted(data, "gpt2")
    assert got == Counter(oracle(data, "gpt2"))
    assert len(got) == len(words)


def _random_words(rng: np.random.Generator, count: int, longest: int) -> list[str]:
    """``count`` random words of 1 to ``longest`` letters (two of them not ASCII)."""
    lengths = rng.integers(1, longest + 1, size=count)
    letters = np.array([ord(c) for c in "abcdefghijklmnopqrstuvwxyzé日"], dtype="<u4")
    text = letters[rng.integers(len(letters), size=int(lengths.sum()))].tobytes().decode("utf-32-le")
    ends = np.cumsum(lengths).tolist()
    return [text[end - n : end] for end, n in zip(ends, lengths.tolist())]


@functools.lru_cache(maxsize=1)
def _many_distinct_words() -> bytes:
    """400k distinct words of every length from 1 to 30 bytes, some repeated, with numbers,
    punctuation and non-Latin words between them (one text for the tests that share it)."""
    rng = np.random.default_rng(3)
    words = _random_words(rng, 400_000, 30)
    words += [words[k] for k in rng.integers(len(words), size=200_000).tolist()]
    words += [str(n) for n in rng.integers(10**6 + 1, size=50_000).tolist()]
    separators = [" ", " ", "  ", ", ", "\n", "'s "]
    parts = [""] * (2 * len(words))
    parts[0::2] = [words[k] for k in rng.permutation(len(words)).tolist()]
    parts[1::2] = [separators[k] for k in rng.integers(len(separators), size=len(words)).tolist()]
    return "".join(parts).encode()


@pytest.mark.parametrize("name", ["gpt2", "gpt4"])  # (the table, which is the same for each scanner)
def test_counts_of_a_table_past_the_caches_equal_regex(name: str) -> None:
    # past 2**18 distinct pre-tokens the counting loop cuts and hashes pre-tokens ahead of
    # the one it looks up (prefetching): 400k distinct words of every length from 1 to 30
    # bytes, some repeated, with numbers, punctuation and non-Latin words between them
    data = _many_distinct_words()
    got, invalid = counted(data, name)
    assert len(got) > 1 << 18
    assert got == Counter(oracle(data, name))
    assert invalid == 0


@pytest.mark.parametrize("name", ["gpt2", "gpt4"])  # (the table, which is the same for each scanner)
def test_a_table_past_the_caches_counts_across_special_tokens_like_regex(name: str) -> None:
    """A large table's look-ahead loop (_count_table.h) on many short stretches between
    special tokens: over 200k distinct words (the table past 2**18 slots from about 100k on) in
    documents of 0 to 60 words (some with invalid bytes, some empty, two special tokens in
    a row), counted per stretch by the regex oracle, in the same first-seen order, with the
    same invalid bytes."""
    rng = random.Random(5)
    vocabulary = _random_words(np.random.default_rng(5), 300_000, 24)
    documents = []
    for start in itertools.accumulate(rng.randint(0, 60) for _ in range(14_000)):
        words = vocabulary[start % len(vocabulary) : start % len(vocabulary) + rng.randint(0, 60)]
        text = " ".join(words).encode() + rng.choice([b"", b" ", b"\n", b"\xff", b" \xc3"])
        documents.append(text)
    specials = [b"<|endoftext|>", b"<|x|>"]
    data = b"".join(d + rng.choice(specials) for d in documents) + b"tail words"
    stretches = regex.split(rb"<\|endoftext\|>|<\|x\|>", data)
    expected: Counter[bytes] = Counter()
    for stretch in stretches:
        expected.update(oracle(stretch, name))
    counts = _native.Counts()
    counts.scan(data, NAMES[name], specials=specials)
    words, numbers = counts.items()
    assert len(words) > 200_000
    assert dict(zip(words, numbers)) == expected
    assert list(words) == list(expected)  # Counter keeps first-seen order
    assert counts.invalid == sum(oracle_invalid(stretch) for stretch in stretches)


ascii_texts = st.lists(
    st.one_of(
        st.sampled_from(list("aZsdmtlvreSLx09 '\t\n\r\x0b\x0c.!-_\x00\x7f")),
        st.sampled_from(["'s", "'ll", "'ve", "'re", "'d", "'m", "'t", "''", " '", "  ", "\n\n", " \n", "\r\n ",
                         "don't", "we'll", "12,345", " $9.99"]),
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=70),
        st.sampled_from(["é", "\u00a0", "\u2028", "٣", "\xff", "ſ"]),  # bytes >= 0x80, seldom
    ),
    min_size=20, max_size=300,
).map(lambda parts: "".join(parts).encode("utf-8", "surrogateescape"))


@settings(max_examples=300, deadline=None)
@given(data=ascii_texts, name=st.sampled_from(list(NAMES)))
def test_long_ascii_text_counts_equal_regex_in_first_seen_order(data: bytes, name: str) -> None:
    """Counting cuts GPT-2 pre-tokens 64 bytes of ASCII at a time (_ascii_cut.h) where 80
    bytes of text are left: long texts of the bytes its rules turn on (runs of each class,
    spaces before them, whitespace runs before text, contractions, apostrophes that start
    none), with a few bytes >= 0x80 that it leaves to the one-at-a-time scanner."""
    want = oracle(data, name)
    counts = _native.Counts()
    counts.scan(data, NAMES[name])
    words, numbers = counts.items()
    assert words == list(dict.fromkeys(want))
    assert numbers == [Counter(want)[w] for w in words]
