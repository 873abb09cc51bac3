"""Conformance with tiktoken: the GPT-2 files give tiktoken's ``gpt2`` ids on any text.

tiktoken cannot download here, so the reference `Encoding` is built offline from the same
files (ranks = ids, GPT-2's pattern, ``<|endoftext|>`` = 50256). Vocabularies trained by
`core.train_bpe` (ids in merge order, so ranks = ids too) are checked the same way, with
the GPT-2 and GPT-4 patterns. The GPT-2 tests skip when ``../shared`` is absent. Every
test runs twice: on the native encoder and on the Python path (``BPE_STUDIO_PURE_PYTHON=1``).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import core
from core.encode import native
from core.formats import save_tokenizer
from core.pretokenize.patterns import GPT2_PATTERN, GPT4_PATTERN
from core.encode.tokenizer import Tokenizer

tiktoken = pytest.importorskip("tiktoken")


@pytest.fixture(autouse=True, params=["native", "pure"])
def encoder_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The native encoder (when built) or the Python path, for each test."""
    if request.param == "pure":
        monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
    else:
        monkeypatch.delenv("BPE_STUDIO_PURE_PYTHON", raising=False)
    return str(request.param)


# Any text, except code points unassigned in Python's Unicode database: `regex` and
# tiktoken's Rust regex ship newer, different Unicode versions, so they disagree about
# which newly assigned characters are letters (e.g. U+3D000) — not a tokenizer matter.
assigned = st.characters(exclude_categories=("Cs", "Cn"))
any_text = st.text(assigned)

HARD_STRINGS = [
    "Hello, world! DON'T SHOUT. IT'S fine; WE'LL see, THEY'RE here, I'M ok, YOU'VE won, HE'D go.",
    "don't it's we'll they're I'm you've he'd 's 't 're 've 'm 'll 'd ''",
    "👨\u200d👩\u200d👧\u200d👦 👩🏽\u200d💻 🏳️\u200d🌈 🇯🇵🇫🇷 ❤️\u200d🔥 🫠",
    "e\u0301 a\u0301\u0302\u0303 Z\u0351\u0352\u0353 \u0915\u094d\u0937 ñ vs n\u0303",
    "漢字かな交じり文、日本語のテキスト。中文字符，标点！ 한국어 문장",
    "مرحبا بالعالم — שלום עולם ‏(RTL)‎ ١٢٣ ۴۵۶",
    "\t\n\x0b\x0c\r \x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\u200b\ufeff x \u3000\u3000y\u2028",
    "a \x1c b\x1d\x1d c \x85\x85 d\u2028\u2029e",
    "\x00\x01\x02\x03\x07\x08\x1b[31mred\x1b[0m\x7f\x80\x81\x9f",
    "31415926535897932384626433832795028841971693993751 1,000,000.00 0x1F 1e-10 ½ ² ① ٣",
    "def main(argv: list[str]) -> int:\n\tif argv[1:]:\n\t\treturn {'a': [1, 2]}  # hi\n\n\n    pass\r\n",
    "<|endoftext|>start<|endoftext|><|endoftext|>end<|endoftext <|endoftext|>",
    "   leading and trailing   \n\n\n   ",
    "\U0010ffff\U0001f600\ue000\uffff\U00020000",
    "x" * 3000 + " " + "ab" * 2000,
]


def offline_encoding(tok: Tokenizer, pattern: str) -> tiktoken.Encoding:
    specials = tok.special_ids
    ranks = {token: i for i, token in tok.vocab.items() if i not in specials.values()}
    return tiktoken.Encoding(name="offline", pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)


@pytest.fixture(scope="module")
def gpt2(shared_dir: Path) -> tuple[Tokenizer, tiktoken.Encoding]:
    fixtures = shared_dir / "fixtures"
    tok = Tokenizer.from_files(fixtures / "gpt2_vocab.json", fixtures / "gpt2_merges.txt", ["<|endoftext|>"])
    assert tok.special_ids == {"<|endoftext|>": 50256} and len(tok) == 50257
    return tok, offline_encoding(tok, GPT2_PATTERN)


def test_from_files_without_special_tokens_has_none(shared_dir: Path, tmp_path: Path) -> None:
    """CS336's ``from_files(vocab, merges)``: no special tokens asked for, none used, so
    untrusted text never turns into control tokens (tiktoken's ``encode_ordinary``)."""
    fixtures = shared_dir / "fixtures"
    tok = Tokenizer.from_files(fixtures / "gpt2_vocab.json", fixtures / "gpt2_merges.txt")
    assert tok.special_tokens == [] and tok.special_ids == {}
    assert tok.encode("a<|endoftext|>b") == [64, 27, 91, 437, 1659, 5239, 91, 29, 65]
    assert tok.encode_batch(["a<|endoftext|>b"]) == [[64, 27, 91, 437, 1659, 5239, 91, 29, 65]]
    # Tokenizer.load infers them from the files, and its repr says which it found.
    (tmp_path / "vocab.json").write_bytes((fixtures / "gpt2_vocab.json").read_bytes())
    (tmp_path / "merges.txt").write_bytes((fixtures / "gpt2_merges.txt").read_bytes())
    loaded = Tokenizer.load(tmp_path)
    assert loaded.special_tokens == ["<|endoftext|>"] and loaded.encode("a<|endoftext|>b") == [64, 50256, 65]
    assert "special_tokens=['<|endoftext|>']" in repr(loaded)


def test_gpt2_hard_strings(gpt2: tuple[Tokenizer, tiktoken.Encoding]) -> None:
    tok, enc = gpt2
    for text in HARD_STRINGS:
        assert tok.encode(text) == enc.encode(text, allowed_special="all"), text
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text), text
        assert tok.decode(tok.encode(text)) == text


def test_gpt2_reference_texts(gpt2: tuple[Tokenizer, tiktoken.Encoding], shared_dir: Path) -> None:
    tok, enc = gpt2
    names = ["address.txt", "german.txt", "tinystories_sample.txt", "corpus.en"]
    texts = [(shared_dir / "fixtures" / n).read_text(encoding="utf-8") for n in names]
    pydocs = shared_dir / "corpora" / "pydocs.txt"
    if pydocs.is_file():
        with pydocs.open(encoding="utf-8") as f:
            texts.append(f.read(400_000))
    for name, text in zip(names + ["pydocs.txt"], texts):
        assert tok.encode(text) == enc.encode(text, allowed_special="all"), name


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=any_text)
def test_gpt2_any_text(gpt2: tuple[Tokenizer, tiktoken.Encoding], text: str) -> None:
    tok, enc = gpt2
    assert tok.encode(text) == enc.encode(text, allowed_special="all")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(st.characters(exclude_categories=("Cn",)), max_size=12))
def test_gpt2_lone_surrogates_follow_tiktoken(gpt2: tuple[Tokenizer, tiktoken.Encoding], text: str) -> None:
    """tiktoken encodes a lone surrogate as U+FFFD (and a surrogate pair as its character)."""
    tok, enc = gpt2
    assert tok.encode(text) == enc.encode(text, allowed_special="all")
    assert tok.encode("a\udcffb") == enc.encode("a\udcffb") == [64, 4210, 65]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(st.characters(exclude_categories=("Cn",))) | st.sampled_from(HARD_STRINGS))
def test_gpt2_encode_ordinary_follows_tiktoken(gpt2: tuple[Tokenizer, tiktoken.Encoding], text: str) -> None:
    """encode_ordinary hands a str to the C code (ASCII in place, else its UTF-8; a lone
    surrogate falls back to U+FFFD); special tokens are plain text."""
    tok, enc = gpt2
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text)


@pytest.mark.parametrize("serial_below", [native.SERIAL_BATCH_BYTES, 0], ids=["small-in-one-thread", "threads"])
def test_gpt2_encode_batch(gpt2: tuple[Tokenizer, tiktoken.Encoding], serial_below: int,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "SERIAL_BATCH_BYTES", serial_below)
    tok, enc = gpt2
    texts = HARD_STRINGS * 5 + ["", "<|endoftext|>", "a\udcffb"]
    want = [enc.encode(t, allowed_special="all") for t in texts]
    for workers in (1, 2, 3):
        assert tok.encode_batch(texts, workers=workers) == want
    assert tok.encode_batch([]) == []
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        tok.encode_batch(texts, workers=0)


def test_a_small_batch_is_encoded_in_the_calling_thread(gpt2: tuple[Tokenizer, tiktoken.Encoding],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads (and their encoders' fresh caches) cost more than a small batch takes: below
    `SERIAL_BATCH_BYTES` no thread starts; above it they do; the ids are tiktoken's either way."""
    tok, enc = gpt2
    if not tok._engines.native():
        pytest.skip("only the native encoder encodes a batch in threads (this is the Python path, or it is not built)")
    pools: list[int] = []
    real = native.ThreadPoolExecutor
    monkeypatch.setattr(native, "ThreadPoolExecutor", lambda workers, **k: pools.append(workers) or real(workers, **k))
    small = ["Hello world, a short message."] * 64
    assert tok.encode_batch(small, workers=4) == [enc.encode(t) for t in small]
    assert tok.encode_batch(small, workers=4, return_numpy=True)[0].tolist() == enc.encode(" ".join(small[:1])) * 64
    assert pools == []
    large = [f"Hello world {i}, a longer message. " * 300 for i in range(16)]
    assert sum(map(len, large)) > native.SERIAL_BATCH_BYTES
    assert tok.encode_batch(large, workers=2) == [enc.encode(t) for t in large]
    assert pools == [2]


def test_gpt2_export_loads_in_hf(gpt2: tuple[Tokenizer, tiktoken.Encoding], tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    tok, _ = gpt2
    save_tokenizer(tmp_path, tok.vocab, tok.merges, tok.special_tokens, tok.pattern)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for text in HARD_STRINGS:
        assert hf.encode(text, add_special_tokens=False).ids == tok.encode(text), text
    # The GPT-2 files written by us load back into the same tokenizer (sidecar included).
    reloaded = Tokenizer.load(tmp_path)
    assert reloaded.special_tokens == ["<|endoftext|>"] and reloaded.vocab == tok.vocab


WORDS = ["the", " the", "The", "DON'T", "it's", "naïve", "漢字", "🙂", "👍🏽", "42", "1234567", "\n", "  ", "\t",
         "\u3000", "\x85", "!?", "...", "def", "(x)", "é", "e\u0301", "مرحبا"]


@pytest.fixture(scope="module", params=[("gpt2", GPT2_PATTERN), ("gpt4", GPT4_PATTERN)], ids=["gpt2", "gpt4"])
def trained(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    name, source = request.param
    rng = random.Random(5)
    text = "".join(rng.choice(WORDS) + rng.choice(["", " ", " ", "\n"]) for _ in range(20_000))
    text = "<|endoftext|>".join(text[i : i + 5000] for i in range(0, len(text), 5000))
    path = tmp_path_factory.mktemp("trained") / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    vocab, merges = core.train_bpe(path, 1000, ["<|endoftext|>"], pattern=name, workers=1)
    tok = Tokenizer(vocab, merges, ["<|endoftext|>"], pattern=name)
    return tok, offline_encoding(tok, source), path


def test_trained_vocab_matches_tiktoken(trained) -> None:  # noqa: ANN001
    tok, enc, corpus = trained
    for text in HARD_STRINGS + [corpus.read_text(encoding="utf-8")[:50_000]]:
        assert tok.encode(text) == enc.encode(text, allowed_special="all"), text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.lists(
        st.one_of(st.sampled_from(WORDS + ["<|endoftext|>"]), st.text(assigned, max_size=4)), max_size=25
    ).map("".join)
)
def test_trained_vocab_matches_tiktoken_on_any_text(trained, text: str) -> None:  # noqa: ANN001
    tok, enc, _ = trained
    assert tok.encode(text) == enc.encode(text, allowed_special="all")


@pytest.mark.parametrize("serial_below", [native.SERIAL_BATCH_BYTES, 0], ids=["small-in-one-thread", "threads"])
def test_gpt2_encode_batch_to_arrays(gpt2: tuple[Tokenizer, tiktoken.Encoding], serial_below: int,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 25 target 5: ``(ids, offsets)`` — uint32 ids, int64 offsets — equal to the lists
    and to tiktoken, at any number of threads, special tokens included."""
    import numpy as np

    monkeypatch.setattr(native, "SERIAL_BATCH_BYTES", serial_below)
    tok, enc = gpt2
    rng = random.Random(5)
    texts = HARD_STRINGS + ["", "a<|endoftext|>b"] + [
        "".join(rng.choice(["Hello", " world", " 漢字", "\n", "<|endoftext|>", " 123", "🙂"]) for _ in range(rng.randint(0, 60)))
        for _ in range(200)
    ]
    want = [enc.encode(t, allowed_special="all") for t in texts]
    assert tok.encode_batch(texts) == want
    for workers in (1, 2, 3):
        ids, offsets = tok.encode_batch(texts, workers=workers, return_numpy=True)
        assert ids.dtype == np.uint32 and offsets.dtype == np.int64 and len(offsets) == len(texts) + 1
        assert offsets[0] == 0 and offsets[-1] == len(ids)
        assert [ids[offsets[i] : offsets[i + 1]].tolist() for i in range(len(texts))] == want
    ids, offsets = tok.encode_batch([], return_numpy=True)
    assert ids.tolist() == [] and offsets.tolist() == [0]


_ascii_parts = st.lists(
    st.one_of(
        st.sampled_from(list("aZsdmtlvreSLx09 '\t\n\r\x0b\x0c.!-_\x00\x7f")),
        st.sampled_from(["'s", "'ll", "'ve", "'re", "'d", "'m", "'t", "''", " '", "  ", "\n\n", " \n", "\r\n ",
                         "don't", "we'll", "12,345", " $9.99", " the", "   x"]),
        st.text(alphabet="abcdefghijklmnopqrstuvwxyzABC", min_size=1, max_size=70),
    ),
    min_size=10, max_size=150,
).map("".join)
ascii_heavy = st.tuples(  # long runs of ASCII, with at most one character beyond it
    _ascii_parts, st.sampled_from(["", "", "é", "\u00a0", "\u2028", "٣", "ſ", "🙂"]), _ascii_parts
).map("".join)


@settings(max_examples=200, deadline=None)
@given(text=ascii_heavy)
def test_gpt2_long_ascii_text_follows_tiktoken(gpt2: tuple[Tokenizer, tiktoken.Encoding], text: str) -> None:
    """Long ASCII text is cut 64 bytes at a time (core/pretokenize/_ascii_cut.h), in the
    encoder as in counting: the ids stay tiktoken's, at every offset of the blocks."""
    tok, enc = gpt2
    want = enc.encode_ordinary(text)
    assert tok.encode_ordinary(text) == want
    assert tok.encode(text) == enc.encode(text, allowed_special="all")
    assert tok.encode_batch([text, text[1:]]) == [want, enc.encode_ordinary(text[1:])]
