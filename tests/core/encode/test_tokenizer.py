"""The tokenizer against the textbook oracle (`tests.tokenizer_cases.oracle_encode`) and
Hugging Face ``tokenizers``: every pattern, both merge paths, special tokens, raw bytes,
errors, files. Vocabularies come from `core.train_bpe` on generated text.
"""

from __future__ import annotations

import pickle
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.encode import piece_encoder
from core.encode.tokenizer import Tokenizer, TokenizerError
from core.formats import save_tokenizer
from core.pretokenize.specials import NATIVE_MAX_SPECIALS
from tests.tokenizer_cases import (
    FAST, HARD_STRINGS, LONE_SURROGATES, WORDS, byte_tokenizer, generated_corpus, oracle_encode, texts,
)


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
    tok = byte_tokenizer()
    assert tok.decode(tok.encode(text)) == text
    assert tok.decode_bytes(tok.encode(text)) == text.encode("utf-8")


def test_special_tokens() -> None:
    plain = byte_tokenizer()
    assert len(plain.encode("<|endoftext|>")) > 1  # without specials it is plain text
    tok = byte_tokenizer(["<|endoftext|>", "<|a|>", "<|a|><|b|>"])
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
    tok = byte_tokenizer()
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


def _outcome(decode: object, ids: object) -> object:
    try:
        return decode(ids)  # type: ignore[operator]
    except (TokenizerError, TypeError) as e:
        return type(e), str(e)


# A vocabulary with a gap (ids 258 and 259 name nothing) and special tokens past it, one
# longer than the 16 bytes the C decoder copies as a block.
GAPPED = Tokenizer({**{i: bytes([i]) for i in range(256)}, 256: b"ab", 257: b"abc", 260: b"<|x|>"},
                   [(b"a", b"b"), (b"ab", b"c")], ["<|x|>", "<|y|>", "<|a special token past sixteen bytes|>"])
odd_ids = st.sampled_from([-1, -(2**63), 2**63 - 1, 2**63, 2**70, True, False, 1.0, np.int64(97), None, "a"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ids=st.lists(st.one_of(st.integers(0, 265), odd_ids), max_size=12), as_array=st.sampled_from(
    [None, np.int64, np.uint16, np.int32, np.uint64]))
def test_decode_joins_the_tokens_or_says_which_id_is_wrong_on_either_path(ids: list[object], as_array: object) -> None:
    """The C decoder's table (a list, or an array of ids) against the checked Python path:
    the same bytes, which are the tokens joined, or the same error."""
    if as_array is not None:
        if not all(type(i) is int and 0 <= i < 2**16 for i in ids):
            return
        ids = np.array(ids, dtype=as_array)  # type: ignore[assignment]
    native = _outcome(GAPPED.decode_bytes, ids)
    python = _outcome(GAPPED._decoder._checked, ids)
    assert native == python
    if isinstance(native, bytes):
        assert native == b"".join(GAPPED.vocab[int(i)] for i in ids)  # type: ignore[call-overload]
    else:
        assert any(type(i) is not int or i not in GAPPED.vocab for i in list(ids))


def test_decode_of_a_sparse_vocabulary_or_in_python_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    sparse = Tokenizer({**{i: bytes([i]) for i in range(256)}, 10**6: b"ab"}, [(b"a", b"b")])
    assert sparse.decode([10**6, 99]) == "abc" and sparse._decoder._native() is None  # (no table of a million ids)
    assert GAPPED.decode([256, 257]) == "ababc" and GAPPED._decoder._native() is not None
    monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
    fresh = Tokenizer(GAPPED.vocab, GAPPED.merges, GAPPED.special_tokens)
    assert fresh.decode([256, 261]) == "ab<|y|>" and fresh._decoder._table is None


def test_a_tokenizer_that_encoded_pickles_and_its_copy_encodes_alike(trained: Tokenizer, merging: str) -> None:
    """As tiktoken's do, so that ``Pool.map(tok.encode, texts)`` works after the tokenizer
    was used: the compiled tables and the engines are left out and built again."""
    tok = Tokenizer(trained.vocab, trained.merges, trained.special_tokens, pattern=trained.pattern)
    text = generated_corpus(3, 5000)
    ids, stream = tok.encode(text), list(tok.encode_iterable([text[:2500], text[2500:]]))
    copy = pickle.loads(pickle.dumps(tok))
    assert copy.encode(text) == ids and list(copy.encode_iterable([text])) == stream == ids
    assert copy.decode(ids) == tok.decode(ids)
    assert copy.encode_batch([text, text[:100]], workers=2) == [ids, tok.encode(text[:100])]


def test_a_tokenizer_that_decoded_pickles_without_its_table_and_decodes_alike() -> None:
    tok = Tokenizer(GAPPED.vocab, GAPPED.merges, GAPPED.special_tokens)
    assert tok.decode([256, 261, 97]) == "ab<|y|>a"
    copy = pickle.loads(pickle.dumps(tok))
    assert copy._decoder._table is None and copy.decode([256, 261, 97]) == "ab<|y|>a"
    assert copy._decoder._vocab is copy.vocab  # (one dict, as in the original)
    with pytest.raises(TokenizerError, match="token id 258 is not in the vocabulary"):
        copy.decode([258])


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
    tok = byte_tokenizer()
    raw = b"ok \xff\xfe hello \xed\xa0\x80"
    assert tok.decode_bytes(tok.encode(raw)) == raw
    assert tok.encode(bytearray(raw)) == tok.encode(memoryview(raw)) == tok.encode(raw)
    assert tok.encode_to_array(raw).tolist() == tok.encode(raw)


def test_lone_surrogates_in_text_become_replacement_characters(merging: str) -> None:
    """As tiktoken does: a lone surrogate is U+FFFD; a surrogate pair is its character."""
    tok = byte_tokenizer()
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
        ("encode_bytes", None, r"encode_bytes\(\) takes bytes, got NoneType"),
        ("encode_batch", "text", r"encode_batch\(\) takes a list of texts"),
        ("encode_batch", [None], r"encode_batch\(\) takes text \(str\) or bytes, got NoneType"),
        ("decode", [1.0, True], r"ids\[0\] is 1.0 \(float\)"),
        ("decode", [1, True], r"ids\[1\] is True \(bool\)"),
        ("decode_bytes", "abc", r"decode\(\) takes a sequence of token ids, got str"),
    ],
)
def test_arguments_that_are_not_text_or_ids_are_refused(merging: str, call: str, argument: object, message: str) -> None:
    tok = byte_tokenizer()
    with pytest.raises(TypeError, match=message):
        getattr(tok, call)(argument)


def test_integer_like_ids_decode(merging: str) -> None:
    tok = byte_tokenizer()
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
    table = piece_encoder._BpeTable(pieces._byte_ids, pieces._rows, np.asarray(pieces._new_id, dtype=np.int64))
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


def _filter_bit(left: int, right: int) -> int:
    """The bit of the pair (left, right) in the compiled table's filter: the top 20 bits of
    its hash, as ``_bpe_table.h`` takes them."""
    return ((left << 20 | right) * 0x9E3779B97F4A7C15 % (1 << 64)) >> 44


def test_pairs_that_share_a_filter_bit_with_a_merge_are_looked_up_in_the_table() -> None:
    """The compiled table answers most lookups of pairs without a merge from a filter of a bit
    per pair hash, and looks the others up. A pair without a merge whose bit a merge set
    (a false positive) must still find no merge there, and every merge must be found: words
    that look such pairs up, against the definition."""
    if piece_encoder._BpeTable is None:
        pytest.skip("core.encode._bpe_kernel is not built")
    rng = random.Random(8)
    every = [(a, b) for a in range(256) for b in range(256)]
    merges = [(bytes([a]), bytes([b])) for a, b in rng.sample(every, 3000)]
    vocab = {i: bytes([i]) for i in range(256)}
    for left, right in merges:
        vocab[len(vocab)] = left + right
    pieces = Tokenizer(vocab, merges)._pieces
    table = pieces._compiled()
    assert table is not None
    set_bits = {_filter_bit(*pair) for pair in pieces._pair_rank}
    words = []
    for (left, right), merged in zip(merges, range(256, len(vocab))):
        for c in range(256):
            pair = (merged, pieces._byte_ids[c])
            if pair not in pieces._pair_rank and _filter_bit(*pair) in set_bits:
                words.append(left + right + bytes([c]))
    assert len(words) > 100  # (so the case is there to test)
    words += [left + right for left, right in merges]
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

    tok = byte_tokenizer(["<|x|>"])
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
