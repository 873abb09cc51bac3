"""The tokenizer against a naive oracle and Hugging Face ``tokenizers``; streaming, spans, errors.

The oracle is the textbook algorithm (minbpe style): special tokens split the text longest
first, the pattern cuts pre-tokens, and each pre-token is merged by scanning its pairs for
the lowest-ranked merge. Vocabularies come from `core.train_bpe` on generated text.
"""

from __future__ import annotations

import itertools
import random
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import core
import core.encode.streaming as streaming_module
from core.encode import piece_encoder
from core.formats import save_tokenizer
from core.pretokenize.specials import NATIVE_MAX_SPECIALS
from core.encode.tokenizer import TokenSpan, Tokenizer, TokenizerError, TokenSpans

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


@pytest.fixture(scope="module", params=["gpt2", "gpt4", CUSTOM], ids=["gpt2", "gpt4", "custom"])
def trained(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Tokenizer:
    """A tokenizer trained by `core.train_bpe` on generated text (600 tokens)."""
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(generated_corpus(1, 40_000), encoding="utf-8")
    vocab, merges = core.train_bpe(path, 600, SPECIALS, pattern=request.param, workers=1)
    return Tokenizer(vocab, merges, SPECIALS, pattern=request.param)


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


@pytest.fixture(params=["compiled", "python"])
def merging(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Merge pre-tokens in the compiled kernel (``core.encode._bpe_kernel``) or in numpy and Python."""
    if request.param == "compiled":
        if piece_encoder._BpeTable is None:
            pytest.skip('core.encode._bpe_kernel is not built (no C compiler at install time?); pip install -e ".[test]"')
        monkeypatch.delenv("BPE_STUDIO_PURE_PYTHON", raising=False)
    else:
        monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
    return str(request.param)


def test_matches_oracle_on_hard_strings(trained: Tokenizer, merging: str) -> None:
    tok = Tokenizer(trained.vocab, trained.merges, trained.special_tokens, pattern=trained.pattern)  # cold caches
    for text in HARD_STRINGS + [generated_corpus(7, 3000)]:
        assert tok.encode(text) == oracle_encode(tok, text), text
    assert (tok._pieces._bpe_table is None) == (merging == "python")


@FAST
@given(text=texts)
def test_matches_oracle_and_round_trips(trained: Tokenizer, text: str) -> None:
    ids = trained.encode(text)
    assert ids == oracle_encode(trained, text)
    if trained.pattern.name != "custom":  # the custom pattern drops whitespace
        assert trained.decode(ids) == text


@settings(max_examples=200, deadline=None)
@given(text=st.text())
def test_round_trip_on_arbitrary_unicode(text: str) -> None:
    tok = _byte_tokenizer()
    assert tok.decode(tok.encode(text)) == text
    assert tok.decode_bytes(tok.encode(text)) == text.encode("utf-8")


def _byte_tokenizer(specials: list[str] | None = None, pattern: str = "gpt2") -> Tokenizer:
    vocab = {i: bytes([i]) for i in range(256)}
    merges = [(b"h", b"e"), (b"l", b"l"), (b"he", b"ll"), (b"hell", b"o"), (b" ", b"hello")]
    for i, (a, b) in enumerate(merges):
        vocab[256 + i] = a + b
    return Tokenizer(vocab, merges, specials, pattern=pattern)


def test_special_tokens() -> None:
    plain = _byte_tokenizer()
    assert len(plain.encode("<|endoftext|>")) > 1  # without specials it is plain text
    tok = _byte_tokenizer(["<|endoftext|>", "<|a|>", "<|a|><|b|>"])
    assert len(tok) == 261 + 3 and tok.special_ids == {"<|endoftext|>": 261, "<|a|>": 262, "<|a|><|b|>": 263}
    assert tok.encode("<|endoftext|> hello<|a|><|b|><|a|>") == [261, 260, 263, 262]
    assert tok.encode_ordinary("<|a|>") == list(b"<|a|>")
    assert tok.merge_rank(261) is None and tok.merge_rank(ord("h")) is None and tok.merge_rank(260) == 4
    assert tok.token_bytes(263) == b"<|a|><|b|>"


def test_special_token_already_in_vocab_keeps_its_id() -> None:
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"<|eot|>"}
    tok = Tokenizer(vocab, [], ["<|eot|>", "<|new|>"])
    assert tok.special_ids == {"<|eot|>": 256, "<|new|>": 257} and len(tok) == 258


def test_decode_errors_and_replacement() -> None:
    tok = _byte_tokenizer()
    assert tok.decode([0xE2, 0x82]) == "\ufffd"  # a cut-off "€"
    assert tok.decode([0xFF, ord("a")]) == "\ufffda"
    with pytest.raises(TokenizerError, match="token id 999 is not in the vocabulary"):
        tok.decode([1, 999])
    with pytest.raises(ValueError, match="-1"):
        tok.decode(iter([-1]))
    with pytest.raises(TokenizerError, match="12345"):
        tok.token_bytes(12345)
    np = pytest.importorskip("numpy")
    assert tok.decode(np.array(tok.encode("hello"), dtype=np.uint16)) == "hello"


def test_bad_vocabularies_are_rejected() -> None:
    vocab = {i: bytes([i]) for i in range(255)}
    with pytest.raises(TokenizerError, match="lacks 1 single bytes"):
        Tokenizer(vocab, [])
    vocab = {i: bytes([i]) for i in range(256)}
    with pytest.raises(TokenizerError, match=r"merge 0 \(b'a', b'b'\) needs the token b'ab'"):
        Tokenizer(vocab, [(b"a", b"b")])
    vocab[256] = b"ab"
    vocab[257] = b"abc"
    with pytest.raises(TokenizerError, match=r"merge 1 \(b'abx', b'c'\) needs the token b'abx'"):
        Tokenizer(vocab, [(b"a", b"b"), (b"abx", b"c")])
    with pytest.raises(TokenizerError, match=r"merge 1 \(b'a', b'bc'\) needs the token b'bc'"):
        Tokenizer(vocab, [(b"a", b"b"), (b"a", b"bc")])


def test_raw_bytes_are_encoded_byte_exactly(merging: str) -> None:
    tok = _byte_tokenizer()
    raw = b"ok \xff\xfe hello \xed\xa0\x80"
    assert tok.decode_bytes(tok.encode(raw)) == raw
    assert tok.encode(bytearray(raw)) == tok.encode(memoryview(raw)) == tok.encode(raw)
    assert tok.encode_to_array(raw).tolist() == tok.encode(raw)


def test_lone_surrogates_in_text_become_replacement_characters(merging: str) -> None:
    """As tiktoken does: a lone surrogate is U+FFFD; a surrogate pair is its character."""
    tok = _byte_tokenizer()
    assert tok.decode_bytes(tok.encode("a\udcffb")) == "a\ufffdb".encode()
    assert tok.decode_bytes(tok.encode("x\ud83d\ude00\ud800")) == "x\U0001f600\ufffd".encode()
    assert tok.encode_to_array("a\udcffb").tolist() == tok.encode("a\udcffb") == tok.encode_ordinary("a\udcffb")


@pytest.mark.parametrize(
    ("call", "argument", "message"),
    [
        ("encode", None, r"encode\(\) takes text \(str\) or bytes, got NoneType"),
        ("encode", 5, r"encode\(\) takes text \(str\) or bytes, got int"),
        ("encode_ordinary", 5, r"encode\(\) takes text \(str\) or bytes, got int"),
        ("encode_to_array", None, r"encode_to_array\(\) takes text \(str\) or bytes, got NoneType"),
        ("encode_batch", "text", r"encode_batch\(\) takes a list of texts"),
        ("encode_batch", [None], r"encode_batch\(\) takes text \(str\) or bytes, got NoneType"),
        ("decode", [1.0, True], r"ids\[0\] is 1.0 \(float\)"),
        ("decode", [1, True], r"ids\[1\] is True \(bool\)"),
        ("decode_bytes", "abc", r"decode\(\) takes a sequence of token ids, got str"),
    ],
)
def test_arguments_that_are_not_text_or_ids_are_refused(merging: str, call: str, argument: object, message: str) -> None:
    tok = _byte_tokenizer()
    with pytest.raises(TypeError, match=message):
        getattr(tok, call)(argument)


def test_integer_like_ids_decode(merging: str) -> None:
    tok = _byte_tokenizer()
    assert tok.decode([np.int64(104), 105]) == "hi"
    assert tok.decode(np.array([104, 105])) == "hi"
    assert tok.decode(iter([104, 105])) == "hi"


def test_batch_kernels_equal_one_word_loop(trained: Tokenizer, merging: str) -> None:
    rng = random.Random(9)
    alphabet = [w.encode() for w in WORDS] + [b"a", b"aa", b" ", b"\xff", b"ll"]
    words = [b"".join(rng.choices(alphabet, k=rng.randint(1, 6))) for _ in range(3000)]
    words += [b"a" * n for n in range(1, 40)] + [bytes([b]) for b in range(256)] + [b""]
    # Long words: the compiled kernel's heap (over 256 bytes).
    words += [b"".join(rng.choices(alphabet, k=rng.randint(40, 400))) for _ in range(20)] + [b"a" * 3000]
    expected = [trained._pieces.bpe(word) for word in words]  # the Python reference
    assert trained._pieces.bpe_many(words) == expected  # compiled (or the reference again)
    assert trained._pieces.bpe_many(words[:5]) == expected[:5]
    singles = [trained._pieces.encode_pretoken(w.decode("utf-8", "surrogateescape")) for w in words[-25:]]
    assert singles == expected[-25:]  # one by one, through the pre-token cache


@settings(max_examples=200, deadline=None)
@given(
    parts=st.lists(st.one_of(st.text(min_size=1, max_size=4), st.sampled_from(LONE_SURROGATES)), max_size=8),
    escapes=st.binary(max_size=4),
)
def test_compiled_text_parts_merge_as_their_bytes(parts: list[str], escapes: bytes) -> None:
    # encode_text turns characters into bytes itself: lone surrogates become U+FFFD,
    # surrogateescape ones (U+DC80..U+DCFF) their byte, as TEXT_ERRORS does.
    if piece_encoder._BpeTable is None:
        pytest.skip("core.encode._bpe_kernel is not built")
    parts = [*parts, escapes.decode("utf-8", "surrogateescape")] if escapes else parts
    parts = [p for p in parts if p]
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"\xef\xbf", 257: b"\xef\xbf\xbd", 258: b"\x80a"}
    pieces = Tokenizer(vocab, [(b"\xef", b"\xbf"), (b"\xef\xbf", b"\xbd"), (b"\x80", b"a")])._pieces
    table = piece_encoder._BpeTable(pieces._byte_ids, pieces._merge_rows(), np.asarray(pieces._new_id, dtype=np.int64))
    ids, counts = table.encode_text("".join(parts), np.array([len(p) for p in parts], dtype=np.int64))
    expected = [pieces.bpe(p.encode("utf-8", piece_encoder.TEXT_ERRORS)) for p in parts]
    assert np.frombuffer(ids, np.int64).tolist() == [i for e in expected for i in e]
    assert np.frombuffer(counts, np.int64).tolist() == [len(e) for e in expected]


def _merge_by_definition(pieces: piece_encoder.PieceEncoder, word: bytes) -> tuple[int, ...]:
    """BPE as defined, quadratic: merge the lowest-ranked adjacent pair, leftmost on ties."""
    ids = [pieces._byte_ids[b] for b in word]
    while True:
        ranks = [pieces._pair_rank.get(pair, 1 << 62) for pair in zip(ids, ids[1:])]
        if not ranks or min(ranks) == 1 << 62:
            return tuple(ids)
        i = ranks.index(min(ranks))
        ids[i : i + 2] = [pieces._new_id[ranks[i]]]


def test_compiled_pair_lookups_at_the_tables_fullest() -> None:
    """Every two-byte word, and three-byte words merging through a merged id, against the
    definition, with 512 merges: the compiled pair table's fullest (1,024 slots, half full),
    where many of rank_of's four-slot windows hold no free slot. Eight of the pairs have
    the table's last slot for their place (its hash: left << 20 | right times 2^64 / phi,
    the top ten bits), so they run on past the end, into its first slots."""
    if piece_encoder._BpeTable is None:
        pytest.skip("core.encode._bpe_kernel is not built")
    rng = random.Random(25)
    every = [(a, b) for a in range(256) for b in range(256)]
    last = [(a, b) for a, b in every if ((a << 20 | b) * 0x9E3779B97F4A7C15 % (1 << 64)) >> 54 == 1023][:8]
    pairs = last + rng.sample([pair for pair in every if pair not in last], 376)
    merges = [(bytes([a]), bytes([b])) for a, b in pairs]
    merges += [(left + right, bytes([rng.randrange(256)])) for left, right in rng.sample(merges, 128)]
    merges = list(dict.fromkeys(merges))
    vocab = {i: bytes([i]) for i in range(256)}
    for left, right in merges:
        vocab.setdefault(len(vocab), left + right)
    pieces = Tokenizer(vocab, merges)._pieces
    table = pieces._compiled()
    assert table is not None and len(merges) > 500
    words = [bytes([a, b]) for a in range(256) for b in range(256)] + [left + right for left, right in merges[384:]]
    words += [bytes([c]) + left + right for left, right in merges[384:] for c in (0, 97, 255)]
    texts = [w.decode("utf-8", "surrogateescape") for w in words]
    ids, counts = table.encode_text("".join(texts), np.array([len(t) for t in texts], dtype=np.int64))
    expected = [_merge_by_definition(pieces, w) for w in words]
    assert np.frombuffer(counts, np.int64).tolist() == [len(e) for e in expected]
    assert np.frombuffer(ids, np.int64).tolist() == [i for e in expected for i in e]


def test_long_words_merge_by_the_definition(trained: Tokenizer) -> None:
    rng = random.Random(4)
    alphabet = [w.encode() for w in WORDS[:20]] + [b"a", b"aa", b" "]
    words = [b"".join(rng.choices(alphabet, k=rng.randint(1, 120))) for _ in range(40)] + [b"a" * 1000]
    want = [_merge_by_definition(trained._pieces, word) for word in words]
    assert [trained._pieces.bpe(word) for word in words] == want  # the Python reference (a heap)
    assert trained._pieces.bpe_many(words) == want  # the compiled kernel (short and long words)
    text = "a" * 3000 + " " + "ab" * 1500
    assert trained.encode(text) == oracle_encode(trained, text)


# ----------------------------------------------------------------------------- streaming


@pytest.fixture
def cut_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make encode_iterable look for a cut after every piece it is given."""
    monkeypatch.setattr(streaming_module, "ITER_BATCH_CHARS", 0)


def test_encode_iterable_every_split(trained: Tokenizer, cut_every_time: None) -> None:
    text = "Hi  there<|a|><|b|>x DON'T \n\n 123456 漢字<|endoftext|> e\u0301<|a|>  end\u3000 "
    expected = trained.encode(text)
    for i in range(len(text) + 1):
        assert list(trained.encode_iterable([text[:i], text[i:]])) == expected, i
    for i, j in itertools.combinations(range(0, len(text) + 1, 3), 2):
        assert list(trained.encode_iterable([text[:i], "", text[i:j], text[j:]])) == expected, (i, j)
    assert list(trained.encode_iterable(iter(text))) == expected  # one character at a time


@FAST
@given(pieces=st.lists(texts, max_size=6))
def test_encode_iterable_equals_encode(trained: Tokenizer, cut_every_time: None, pieces: list[str]) -> None:
    assert list(trained.encode_iterable(pieces)) == trained.encode("".join(pieces))


def test_encode_iterable_is_lazy_and_batches_by_default() -> None:
    tok = _byte_tokenizer(["<|endoftext|>"])
    endless = itertools.cycle(["hello world<|endoftext|>", " hello\n"])
    first = list(itertools.islice(tok.encode_iterable(endless), 1000))
    assert first == tok.encode("hello world<|endoftext|> hello\n" * 300)[:1000]


def test_encode_iterable_long_run_without_cut_point() -> None:
    # One 200k-character run with no whitespace: the fallback cuts at pre-token boundaries.
    tok = _byte_tokenizer()
    text = "hello,world;" * 20_000
    assert list(tok.encode_iterable(text[i : i + 1000] for i in range(0, len(text), 1000))) == tok.encode(text)


def test_encode_iterable_memory_is_bounded() -> None:
    tok = _byte_tokenizer(["<|endoftext|>"])
    rng = random.Random(3)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyzé€") for _ in range(rng.randint(1, 9))) for _ in range(3000)]
    lines = (" ".join(rng.choices(words, k=12)) + ("<|endoftext|>" if n % 50 == 0 else "\n") for n in range(60_000))
    tracemalloc.start()
    try:
        total = sum(1 for _ in tok.encode_iterable(lines))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert total > 1_000_000  # ~5 MB of text went through
    assert peak < 8_000_000, f"encode_iterable peaked at {peak / 1e6:.1f} MB"


# ----------------------------------------------------------------------------- spans


def check_spans(tok: Tokenizer, text: str, spans: list[TokenSpan]) -> None:
    data = text.encode("utf-8", "surrogateescape")
    assert [s.token_id for s in spans] == tok.encode(text)
    starts = [0]
    for ch in text:
        starts.append(starts[-1] + len(ch.encode("utf-8", "surrogateescape")))
    for s in spans:
        assert data[s.byte_start : s.byte_end] == tok.token_bytes(s.token_id)
        assert s.special == (s.token_id in tok.special_ids.values())
        # The characters touched: the smallest whole-character range holding the bytes.
        assert starts[s.char_start] <= s.byte_start < starts[s.char_start + 1]
        assert starts[s.char_end - 1] < s.byte_end <= starts[s.char_end]
        assert s.partial == (starts[s.char_start] != s.byte_start or starts[s.char_end] != s.byte_end)
    if tok.pattern.name != "custom":  # patterns that cover all text: spans tile it
        assert [s.byte_start for s in spans] == [0, *(s.byte_end for s in spans)][: len(spans)]
        assert (spans[-1].byte_end if spans else 0) == len(data)


@FAST
@given(text=texts)
def test_spans_cover_the_input(trained: Tokenizer, text: str) -> None:
    check_spans(trained, text, trained.encode_with_spans(text))


@FAST
@given(text=texts, start=st.integers(-8, 80), stop=st.integers(-8, 80))
def test_token_spans_are_the_sequence_of_their_spans(trained: Tokenizer, text: str, start: int, stop: int) -> None:
    spans = trained.encode_with_spans(text)
    objects = [spans[k] for k in range(len(spans))]
    assert list(spans) == objects and spans == objects and objects == spans
    assert [spans[k] for k in range(-len(spans), 0)] == objects
    part = spans[start:stop]
    assert isinstance(part, TokenSpans) and part == objects[start:stop] and list(part) == objects[start:stop]
    assert spans.token_ids.tolist() == trained.encode(text)
    assert TokenSpans.of(objects) == spans
    if objects:
        assert spans != objects[:-1] and (len(spans) == 1 or spans[1:] != spans[:-1])  # columns compared
        flipped = TokenSpan(objects[0].token_id, objects[0].byte_start, objects[0].byte_end, objects[0].char_start,
                            objects[0].char_end, not objects[0].partial, objects[0].special)
        assert TokenSpans.of([flipped, *objects[1:]]) != spans


def test_spans_of_split_characters() -> None:
    tok = _byte_tokenizer(["<|a|>"])
    text = "a€<|a|>😀"  # no merges for these bytes: every byte is its own token
    spans = tok.encode_with_spans(text)
    check_spans(tok, text, spans)
    euro = [s for s in spans if s.char_start == 1]
    assert len(euro) == 3 and all(s.partial and (s.char_start, s.char_end) == (1, 2) for s in euro)
    assert spans[4] == TokenSpan(261, 4, 9, 2, 7, False, True)
    assert [(s.char_start, s.char_end, s.byte_start, s.partial) for s in spans[5:]] == [
        (7, 8, b, True) for b in range(9, 13)
    ]


# ----------------------------------------------------------------------------- files


def test_load_restores_pattern_and_specials(trained: Tokenizer, tmp_path: Path) -> None:
    save_tokenizer(tmp_path, trained.vocab, trained.merges, trained.special_tokens, trained.pattern)
    text = generated_corpus(11, 2000)
    for loaded in (
        Tokenizer.load(tmp_path),
        Tokenizer.load(tmp_path / "vocab.json"),
        Tokenizer.load(tmp_path / "tokenizer.json"),
        Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt", trained.special_tokens),
        Tokenizer.from_tokenizer_json(tmp_path / "tokenizer.json"),
    ):
        assert loaded.pattern.source == trained.pattern.source
        assert loaded.special_tokens == trained.special_tokens
        assert loaded.vocab == trained.vocab and loaded.merges == trained.merges
        assert loaded.encode(text) == trained.encode(text)
    (tmp_path / "vocab.json").unlink()
    assert Tokenizer.load(tmp_path).encode(text) == trained.encode(text)  # falls back to tokenizer.json
    with pytest.raises(FileNotFoundError):
        Tokenizer.load(tmp_path / "missing")
    (tmp_path / "tokenizer.json").unlink()
    assert Tokenizer.load(tmp_path).encode(text) == trained.encode(text)  # then to tokenizer.tiktoken
    (tmp_path / "tokenizer.tiktoken").unlink()
    with pytest.raises(FileNotFoundError, match="holds no tokenizer"):
        Tokenizer.load(tmp_path)


def test_gpt2_files_without_sidecar_make_unreachable_tokens_special(tmp_path: Path) -> None:
    from core.formats import save_gpt2_files

    tok = _byte_tokenizer(["<|x|>"])
    save_gpt2_files(tmp_path, tok.vocab, tok.merges, ["<|x|>"])  # no tokenizer_config.json
    inferred = Tokenizer.load(tmp_path)
    assert inferred.special_tokens == ["<|x|>"] and inferred.encode("a<|x|>") == [97, 261]
    assert "special_tokens=['<|x|>']" in repr(inferred)
    plain = Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt")  # none asked for: none
    assert plain.special_tokens == [] and plain.encode("<|x|>") == list(b"<|x|>")


def test_exported_tokenizer_json_encodes_the_same_in_hf(trained: Tokenizer, tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    save_tokenizer(tmp_path, trained.vocab, trained.merges, trained.special_tokens, trained.pattern)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for text in HARD_STRINGS + [generated_corpus(5, 5000)]:
        ids = trained.encode(text)
        assert hf.encode(text, add_special_tokens=False).ids == ids, text
        if trained.pattern.name != "custom":
            assert hf.decode(ids, skip_special_tokens=False) == trained.decode(ids)


def test_native_cache_eviction_changes_no_id(trained: Tokenizer) -> None:
    """The compiled encoder's pre-token cache, tiny so that it is evicted again and again
    (keeping the pre-tokens used since the last eviction), gives the ids of a large one."""
    kernel = pytest.importorskip("core.encode._bpe_kernel")
    if trained.pattern.name not in ("gpt2", "gpt4") or piece_encoder._BpeTable is None:
        pytest.skip("the native encoder serves the built-in patterns, with the kernel built")
    table = trained._pieces._compiled()
    number = 1 if trained.pattern.name == "gpt2" else 2
    data = generated_corpus(3, 20_000).encode("utf-8") + b" \xff\xfe caf\xc3"
    want = kernel.Encoder(table, number, 1 << 16).encode(data, as_list=True)
    for capacity in (1, 2, 7, 64):
        small = kernel.Encoder(table, number, capacity)
        assert small.encode(data, as_list=True) == want
        assert small.encode(data, as_list=True) == want  # again, with what the cache kept
        assert small.cache_size() <= capacity
        assert small.encode_many([data, data[:100]]) == [want, small.encode(data[:100], as_list=True)]
    assert trained.decode_bytes(want) == data


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_compiled_merge_equals_the_python_loop(trained: Tokenizer, data: st.DataObject) -> None:
    """The compiled merge (symbols linked in place up to 256 bytes, a heap beyond) against
    the Python one-word loop, on words built from tokens so that they merge a lot."""
    if piece_encoder._BpeTable is None:
        pytest.skip("core.encode._bpe_kernel is not built")
    tokens = [trained.vocab[i] for i in range(0, len(trained.vocab), 7) if i not in trained._special_id_set]
    alphabet = tokens + [b"a", b"\xff", b" "]
    words = data.draw(st.lists(st.lists(st.sampled_from(alphabet), min_size=1, max_size=90).map(b"".join), max_size=6))
    words = [w for w in words if w]
    table = trained._pieces._compiled()
    assert table is not None
    text = "".join(w.decode("utf-8", "surrogateescape") for w in words)
    lengths = np.array([len(w.decode("utf-8", "surrogateescape")) for w in words], dtype=np.int64)
    ids, counts = table.encode_text(text, lengths)
    expected = [trained._pieces.bpe(w) for w in words]
    assert np.frombuffer(ids, np.int64).tolist() == [i for e in expected for i in e]
    assert np.frombuffer(counts, np.int64).tolist() == [len(e) for e in expected]


def test_native_encode_list_takes_text_and_bytes(trained: Tokenizer) -> None:
    """``Encoder.encode_list``: a str (ASCII read in place, else its UTF-8) or any bytes-like
    object gives the ids of ``encode(data, as_list=True)``; a lone surrogate is refused."""
    kernel = pytest.importorskip("core.encode._bpe_kernel")
    if trained.pattern.name not in ("gpt2", "gpt4") or piece_encoder._BpeTable is None:
        pytest.skip("the native encoder serves the built-in patterns, with the kernel built")
    encoder = kernel.Encoder(trained._pieces._compiled(), 1 if trained.pattern.name == "gpt2" else 2, 1 << 10)
    for text in ["", "plain ASCII text, twice: plain ASCII text", "café ünïcode 漢字 😀", generated_corpus(5, 9000).replace("<|", "")]:
        data = text.encode("utf-8")
        want = encoder.encode(data, as_list=True)
        assert encoder.encode_list(text) == want
        assert encoder.encode_list(data) == encoder.encode_list(bytearray(data)) == encoder.encode_list(memoryview(data)) == want
        assert trained.encode_ordinary(text) == oracle_encode(trained, text)  # no special token in these
    with pytest.raises(UnicodeEncodeError):
        encoder.encode_list("a\udcffb")
    assert trained.encode_ordinary("a\udcffb") == trained.encode_ordinary("a\ufffdb")


def test_compiled_table_refuses_ids_past_32_bits() -> None:
    if piece_encoder._BpeTable is None:
        pytest.skip("core.encode._bpe_kernel is not built")
    rows = np.zeros((0, 3), dtype=np.int64)
    with pytest.raises(ValueError, match="byte ids"):
        piece_encoder._BpeTable([1 << 32] + list(range(1, 256)), rows, np.zeros(0, dtype=np.int64))
    with pytest.raises(ValueError, match="merged ids"):
        piece_encoder._BpeTable(list(range(256)), np.array([[0, 1, 0]], dtype=np.int64), np.array([1 << 32], dtype=np.int64))


@FAST
@given(parts=st.lists(st.sampled_from(["<|a|>", "<|a|><|b|>", "<|b|>", "<|a|><|", "<|endoftext|>", "<|", "x", " y", "é"]), max_size=12))
def test_special_tokens_found_in_c_and_in_python_alike(trained: Tokenizer, parts: list[str]) -> None:
    """The C code finds up to NATIVE_MAX_SPECIALS special tokens (leftmost, then longest); with
    more, `SpecialMatcher` cuts the text in Python. Both equal the oracle."""
    text = "".join(parts)
    assert trained.encode(text) == oracle_encode(trained, text)
    assert trained.encode(text.encode()) == oracle_encode(trained, text)
    extra = [f"<|extra{k}|>" for k in range(NATIVE_MAX_SPECIALS)]
    many = Tokenizer(trained.vocab, trained.merges, trained.special_tokens + extra, pattern=trained.pattern)
    with_extra = text + "<|extra3|>" + text
    assert many.encode(with_extra) == oracle_encode(many, with_extra)
    assert many.encode_batch([text, with_extra], workers=1) == [oracle_encode(many, text), oracle_encode(many, with_extra)]
    assert many.encode_to_array(with_extra.encode()).tolist() == oracle_encode(many, with_extra)


def test_native_caches_change_no_id(trained: Tokenizer) -> None:
    """Tens of thousands of distinct short pre-tokens (the front cache's slots are taken over
    again and again, and words that differ only in length share their key words) encode as
    the kernel merges them without any cache."""
    kernel = pytest.importorskip("core.encode._bpe_kernel")
    if trained.pattern.name not in ("gpt2", "gpt4") or piece_encoder._BpeTable is None:
        pytest.skip("the native encoder serves the built-in patterns, with the kernel built")
    rng = random.Random(11)
    words = ["a" * k for k in range(1, 20)] + ["".join(rng.choices("ab", k=rng.randint(1, 17))) for _ in range(60_000)]
    words += ["".join(rng.choices("abcdé", k=rng.randint(1, 9))) for _ in range(20_000)]
    text = " ".join(words + words[::-1])
    pretokens = [words[0]] + [" " + w for w in (words + words[::-1])[1:]]
    table = trained._pieces._compiled()
    ids, _ = table.encode_text(text, np.array([len(p) for p in pretokens], dtype=np.int64))
    want = np.frombuffer(ids, np.int64).tolist()
    encoder = kernel.Encoder(table, 1 if trained.pattern.name == "gpt2" else 2, 1 << 12)
    assert encoder.encode_list(text) == want
    assert encoder.encode_list(text) == want  # warm


def test_native_special_ids_are_written_as_given(trained: Tokenizer) -> None:
    """Any id, even a negative marker (core.encode.documents drops boundaries marked -1)."""
    kernel = pytest.importorskip("core.encode._bpe_kernel")
    if trained.pattern.name not in ("gpt2", "gpt4") or piece_encoder._BpeTable is None:
        pytest.skip("the native encoder serves the built-in patterns, with the kernel built")
    encoder = kernel.Encoder(trained._pieces._compiled(), 1 if trained.pattern.name == "gpt2" else 2, 64, [(b"\x00", -1)])
    a, b = trained.encode_ordinary("ab"), trained.encode_ordinary(" cd")
    assert encoder.encode_text("ab\x00 cd\x00", True) == [*a, -1, *b, -1]
    assert np.frombuffer(encoder.encode_text(b"ab\x00 cd\x00"), np.int64).tolist() == [*a, -1, *b, -1]
    with pytest.raises(ValueError, match="must not be empty"):
        kernel.Encoder(trained._pieces._compiled(), 1, 64, [(b"", 5)])
