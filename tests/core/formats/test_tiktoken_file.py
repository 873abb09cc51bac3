"""``tokenizer.tiktoken``: checked with tiktoken's own loader and encoder; opening rank files;
what each other library loads of an export (tiktoken's GPT-2 loader, Hugging Face ``tokenizers``).

tiktoken cannot download here: its known encodings' constants are read by calling its
constructors with the rank loader stubbed out, and GPT-2's ranks come from
``tiktoken.load.data_gym_to_mergeable_bpe_ranks`` on the GPT-2 files in ``../shared``.
"""

from __future__ import annotations

import base64
import json
import os
import random
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import core
from core.encode.tokenizer import Tokenizer
from core.formats import FormatError, save_tokenizer
from core.formats.tiktoken_file import KNOWN_ENCODINGS, load_tiktoken_ranks, merges_from_ranks

tiktoken = pytest.importorskip("tiktoken")
from tiktoken.load import data_gym_to_mergeable_bpe_ranks, load_tiktoken_bpe  # noqa: E402

SPECIALS = ["<|endoftext|>", "<|pad|>"]
WORDS = ["the", " the", "The", "DON'T", "it's", "naïve", "漢字", "🙂", "42", "1234567", "\n", "  ", "\t",
         "\u3000", "!?", "...", "def", "(x)", "é", "e\u0301", "مرحبا", "=====", "<|pad|>"]
# code points unassigned in Python's Unicode database are left out: `regex` and tiktoken's
# Rust regex disagree about which newly assigned characters are letters
assigned = st.characters(exclude_categories=("Cs", "Cn"))
texts = st.lists(st.one_of(st.sampled_from(WORDS + SPECIALS), st.text(assigned, max_size=5)), max_size=25).map("".join)


def encoding_from_export(out: Path) -> tiktoken.Encoding:
    """The README's snippet: an Encoding from tokenizer.tiktoken and tokenizer_config.json."""
    config = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    return tiktoken.Encoding(
        name="bpe-studio",
        pat_str=config["pattern"],
        mergeable_ranks=load_tiktoken_bpe(str(out / "tokenizer.tiktoken")),
        special_tokens=config["special_token_ids"],
    )


@pytest.fixture(scope="module", params=["gpt2", "gpt4"])
def exported(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    rng = random.Random(3)
    text = "".join(rng.choice(WORDS) + rng.choice(["", " ", "\n"]) for _ in range(15_000))
    folder = tmp_path_factory.mktemp("export")
    corpus = folder / "corpus.txt"
    corpus.write_text(text, encoding="utf-8")
    vocab, merges = core.train_bpe(corpus, 700, SPECIALS, pattern=request.param, workers=1)
    save_tokenizer(folder / "out", vocab, merges, SPECIALS, request.param)
    tok = Tokenizer(vocab, merges, SPECIALS, pattern=request.param)
    return tok, folder / "out", encoding_from_export(folder / "out")


def test_every_export_writes_a_tiktoken_file_tiktoken_reads(exported) -> None:  # noqa: ANN001
    tok, out, enc = exported
    ranks = load_tiktoken_bpe(str(out / "tokenizer.tiktoken"))
    ordinary = {i: t for i, t in tok.vocab.items() if i not in tok.special_ids.values()}
    assert ranks == {t: i for i, t in ordinary.items()}
    assert json.loads((out / "tokenizer_config.json").read_text())["special_token_ids"] == {
        "<|endoftext|>": 256, "<|pad|>": 257,
    }
    assert enc.n_vocab == len(tok)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts)
def test_tiktoken_encoding_of_the_export_gives_our_ids(exported, text: str) -> None:  # noqa: ANN001
    tok, _, enc = exported
    assert enc.encode(text, allowed_special="all") == tok.encode(text)
    assert enc.encode_ordinary(text) == tok.encode_ordinary(text)


def test_tiktoken_file_loads_back_as_the_same_tokenizer(exported, tmp_path: Path) -> None:  # noqa: ANN001
    tok, out, _ = exported
    loaded = Tokenizer.load(out / "tokenizer.tiktoken")  # pattern and specials from the config beside it
    assert loaded.vocab == tok.vocab and loaded.merges == tok.merges
    assert loaded.special_ids == tok.special_ids and loaded.pattern.source == tok.pattern.source
    # a folder with only the rank file and its config opens too
    only = tmp_path / "only"
    only.mkdir()
    for name in ("tokenizer.tiktoken", "tokenizer_config.json"):
        (only / name).write_bytes((out / name).read_bytes())
    assert Tokenizer.load(only).merges == tok.merges
    # without a config: the caller gives pattern and specials (in order, they fill ids 256, 257)
    alone = tmp_path / "alone.tiktoken"
    alone.write_bytes((out / "tokenizer.tiktoken").read_bytes())
    given_specials = Tokenizer.load(alone, pattern=tok.pattern.source, special_tokens=SPECIALS)
    assert given_specials.vocab == tok.vocab and given_specials.special_ids == tok.special_ids
    # a rank file under another name (Llama 3 ships its ranks as tokenizer.model) is recognised
    model = tmp_path / "tokenizer.model"
    model.write_bytes((out / "tokenizer.tiktoken").read_bytes())
    ids = dict(zip(SPECIALS, [256, 257]))
    assert Tokenizer.load(model, pattern=tok.pattern.source, special_tokens=ids).encode("the<|pad|>") == tok.encode("the<|pad|>")


@settings(max_examples=50, deadline=None)
@given(ranks_order=st.permutations(list(range(256))))
def test_merges_from_ranks_of_single_bytes_only(ranks_order: list[int]) -> None:
    # any byte order is fine for single bytes: no merges
    assert merges_from_ranks({bytes([b]): r for r, b in enumerate(ranks_order)}, "x") == []


def _merges_or_error(ranks: dict[bytes, int], pure_python: bool) -> list[tuple[bytes, bytes]] | str:
    with mock.patch.dict(os.environ, {"BPE_STUDIO_PURE_PYTHON": "1" if pure_python else "0"}):
        try:
            return merges_from_ranks(ranks, "f")
        except FormatError as e:
            return str(e)


rank_files = st.tuples(
    st.permutations(list(range(256))),
    # tokens made of two earlier ones (which byte-pair encoding may still cut otherwise) and
    # tokens of any bytes (mostly not a merge of two tokens before them)
    st.lists(st.tuples(st.booleans(), st.integers(0, 10**6), st.integers(0, 10**6),
                       st.binary(min_size=2, max_size=9).map(lambda b: bytes(b"aab\xff"[x % 4] for x in b))),
             max_size=60),
    st.integers(0, 3),  # single bytes given ranks after some of the longer tokens
)


@settings(max_examples=300, deadline=None)
@given(rank_files)
@example((list(range(256)), [(False, 0, 0, b"aa"), (False, 0, 0, b"aaa"), (False, 0, 0, b"aaaaa")], 0))  # ties: leftmost
def test_merges_from_ranks_in_c_equal_the_python_loop(rank_file: tuple[list[int], list[tuple[bool, int, int, bytes]], int]) -> None:
    """The C loop (``_reading.c``) finds the merges the Python loop finds, or fails at the
    same token with the same message."""
    order, draws, late = rank_file
    tokens = [bytes([b]) for b in order]
    for joined, left, right, raw in draws:
        token = tokens[left % len(tokens)] + tokens[right % len(tokens)] if joined else raw
        if token not in tokens:
            tokens.append(token)
    for k in range(late):  # a single byte moved after the longer tokens
        tokens.append(tokens.pop(order[k] % 8))
    ranks = {token: rank for rank, token in enumerate(tokens)}
    assert _merges_or_error(ranks, pure_python=False) == _merges_or_error(ranks, pure_python=True)


def test_gpt2_ranks_give_gpt2_merges_on_either_path(gpt2_ranks: dict[bytes, int], shared_dir: Path) -> None:
    fixtures = shared_dir / "fixtures"
    merges = Tokenizer.from_files(fixtures / "gpt2_vocab.json", fixtures / "gpt2_merges.txt").merges
    assert _merges_or_error(gpt2_ranks, pure_python=False) == merges == _merges_or_error(gpt2_ranks, pure_python=True)


# ---------------------------------------------------------------- known encodings


@pytest.fixture(scope="module")
def tiktoken_constructors():  # noqa: ANN201
    public = pytest.importorskip("tiktoken_ext.openai_public")
    return public


@pytest.mark.parametrize("name", sorted(KNOWN_ENCODINGS))
def test_known_encodings_are_tiktokens(name: str, tiktoken_constructors, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    # the constructors download the ranks; stubbed, they give their pattern and special tokens
    monkeypatch.setattr(tiktoken_constructors, "load_tiktoken_bpe", lambda *a, **k: {})
    spec = tiktoken_constructors.ENCODING_CONSTRUCTORS[name]()
    ours = KNOWN_ENCODINGS[name]
    assert dict(ours.special_tokens) == spec["special_tokens"]
    if name in ("r50k_base", "p50k_base"):
        # tiktoken writes GPT-2's pattern differently; test_r50k_by_name_matches_tiktoken checks it encodes alike
        assert spec["pat_str"] == tiktoken_constructors.r50k_pat_str
    else:
        assert ours.pattern == spec["pat_str"]


@pytest.fixture(scope="module")
def gpt2_ranks(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[bytes, int]:
    fixtures = shared_dir / "fixtures"
    folder = tmp_path_factory.mktemp("gpt2")
    # this copy of merges.txt lacks the '#version' line data_gym skips
    merges = folder / "vocab.bpe"
    merges.write_text("#version: 0.2\n" + (fixtures / "gpt2_merges.txt").read_text("utf-8").rstrip("\n") + "\n", "utf-8")
    return data_gym_to_mergeable_bpe_ranks(str(merges), str(fixtures / "gpt2_vocab.json"))


def write_ranks(path: Path, ranks: dict[bytes, int]) -> Path:
    """A rank file written as tiktoken's dump_tiktoken_bpe writes one."""
    lines = (base64.b64encode(t) + b" " + str(r).encode() + b"\n" for t, r in sorted(ranks.items(), key=lambda x: x[1]))
    path.write_bytes(b"".join(lines))
    return path


@pytest.fixture(scope="module")
def r50k(gpt2_ranks: dict[bytes, int], tmp_path_factory: pytest.TempPathFactory, tiktoken_constructors):  # noqa: ANN001, ANN201
    path = write_ranks(tmp_path_factory.mktemp("r50k") / "r50k_base.tiktoken", gpt2_ranks)
    enc = tiktoken.Encoding(
        "r50k", pat_str=tiktoken_constructors.r50k_pat_str, mergeable_ranks=gpt2_ranks,
        special_tokens={"<|endoftext|>": 50256},
    )
    return Tokenizer.load(path), enc


def test_r50k_by_name_is_gpt2(r50k, shared_dir: Path) -> None:  # noqa: ANN001
    tok, _ = r50k
    fixtures = shared_dir / "fixtures"
    gpt2 = Tokenizer.from_files(fixtures / "gpt2_vocab.json", fixtures / "gpt2_merges.txt", ["<|endoftext|>"])
    assert tok.vocab == gpt2.vocab and tok.merges == gpt2.merges and tok.special_ids == gpt2.special_ids


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(assigned) | texts)
def test_r50k_by_name_matches_tiktoken(r50k, text: str) -> None:  # noqa: ANN001
    tok, enc = r50k
    assert tok.encode(text) == enc.encode(text, allowed_special="all")


def test_known_name_as_an_argument(gpt2_ranks: dict[bytes, int], tmp_path: Path) -> None:
    path = write_ranks(tmp_path / "ranks.tiktoken", gpt2_ranks)
    with pytest.raises(FormatError, match="holds no pre-tokenization pattern.*cl100k_base") as refused:
        Tokenizer.load(path)
    # every way to give it, the command line's two included (the file's name, a config beside it)
    for way in ("as the file's name (cl100k_base.tiktoken)", "encoding=", "in a tokenizer_config.json beside it",
                "pattern= and special_tokens="):
        assert way in str(refused.value), str(refused.value)
    tok = Tokenizer.load(path, encoding="r50k_base")
    assert tok.special_ids == {"<|endoftext|>": 50256} and tok.pattern.name == "gpt2"
    with pytest.raises(FormatError, match="unknown tiktoken encoding 'nope'"):
        Tokenizer.load(path, encoding="nope")


# ---------------------------------------------------------------- what other loaders take


def test_tiktoken_gpt2_loader_takes_gpt2_files_not_a_trained_export(exported, gpt2_ranks, shared_dir: Path, tmp_path: Path) -> None:  # noqa: ANN001
    """README: data_gym_to_mergeable_bpe_ranks rebuilds ids from merges.txt alone (single bytes
    in GPT-2's order, then 256 + merge rank) and asserts vocab.json agrees; a trained export
    puts byte b at id b and the special tokens at 256.., so it refuses it."""
    _, out, _ = exported
    with pytest.raises(AssertionError):
        data_gym_to_mergeable_bpe_ranks(str(out / "merges.txt"), str(out / "vocab.json"))
    fixtures = shared_dir / "fixtures"
    gpt2 = Tokenizer.from_files(fixtures / "gpt2_vocab.json", fixtures / "gpt2_merges.txt", ["<|endoftext|>"])
    save_tokenizer(tmp_path, gpt2.vocab, gpt2.merges, gpt2.special_tokens, gpt2.pattern)
    assert data_gym_to_mergeable_bpe_ranks(str(tmp_path / "merges.txt"), str(tmp_path / "vocab.json")) == gpt2_ranks
    assert load_tiktoken_bpe(str(tmp_path / "tokenizer.tiktoken")) == gpt2_ranks


def test_hf_tokenizers_loads_vocab_and_merges(exported) -> None:  # noqa: ANN001
    """vocab.json + merges.txt in tokenizers' own BPE model (BPE.from_file), with the pattern
    as a Split pre-tokenizer before the byte-level map, encode as we do."""
    tokenizers = pytest.importorskip("tokenizers")
    from core.formats import oniguruma_source

    tok, out, _ = exported
    hf = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(str(out / "vocab.json"), str(out / "merges.txt")))
    hf.pre_tokenizer = tokenizers.pre_tokenizers.Sequence([
        tokenizers.pre_tokenizers.Split(tokenizers.Regex(oniguruma_source(tok.pattern.source)), behavior="isolated"),
        tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    for text in ["Hello there, DON'T it's 42 1234567 naïve 漢字 🙂\n\n  x", "=====\t(x) e\u0301 مرحبا\r\n"]:
        assert hf.encode(text).ids == tok.encode_ordinary(text)
    if tok.pattern.name == "gpt2":  # ByteLevelBPETokenizer has GPT-2's pattern built in
        assert tokenizers.ByteLevelBPETokenizer(str(out / "vocab.json"), str(out / "merges.txt")).encode(text).ids == tok.encode_ordinary(text)


# ---------------------------------------------------------------- bad rank files


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["IQ== 0", "not*base64 1"], r"bad\.tiktoken:2: the token 'not\*base64' is not base64"),
        (["IQ== 0", "Ig== one"], r"bad\.tiktoken:2: the rank 'one' is not a non-negative integer"),
        (["IQ== 0", "Ig== -1"], r"bad\.tiktoken:2: the rank '-1' is not"),
        (["IQ== 0", "Ig== 0"], r"bad\.tiktoken:2: rank 0 is given twice \(first on line 1\)"),
        (["IQ== 0", "IQ== 1"], r"bad\.tiktoken:2: the token b'!' is given twice"),
        (["IQ== 0 7"], r"bad\.tiktoken:1: expected 'BASE64_TOKEN RANK'"),
        ([], r"bad\.tiktoken: no tokens"),
    ],
)
def test_malformed_lines_are_named(lines: list[str], message: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.tiktoken"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(FormatError, match=message):
        load_tiktoken_ranks(path)
    with pytest.raises(FormatError, match=message):
        Tokenizer.load(path, pattern="gpt2")


def byte_ranks() -> dict[bytes, int]:
    return {bytes([b]): b for b in range(256)}


def test_gaps_in_ranks_are_refused(tmp_path: Path) -> None:
    ranks = byte_ranks() | {b"ab": 258}
    path = write_ranks(tmp_path / "gap.tiktoken", ranks)
    with pytest.raises(FormatError, match=r"gap\.tiktoken: the ranks skip 256"):
        Tokenizer.load(path, pattern="gpt2")
    with pytest.raises(FormatError, match=r"the ranks and the 1 special token ids skip 257"):
        Tokenizer.load(path, pattern="gpt2", special_tokens=["<s>"])
    tok = Tokenizer.load(path, pattern="gpt2", special_tokens=["<s>", "</s>"])
    assert tok.special_ids == {"<s>": 256, "</s>": 257} and tok.encode("ab<s>") == [258, 256]
    with pytest.raises(FormatError, match="has id 258, which is also a rank"):
        Tokenizer.load(path, pattern="gpt2", special_tokens={"<s>": 258})


def test_known_special_ids_may_leave_ids_unused_above_the_ranks(tmp_path: Path) -> None:
    # cl100k_base: ranks 0..100255, then <|endoftext|> at 100257 (100256 unused), <|endofprompt|> at 100276
    path = write_ranks(tmp_path / "small.tiktoken", byte_ranks() | {b"ab": 256})
    tok = Tokenizer.load(path, encoding="cl100k_base")
    assert tok.special_ids["<|endoftext|>"] == 100257 and tok.special_ids["<|endofprompt|>"] == 100276
    assert tok.encode("ab<|endoftext|>") == [256, 100257] and tok.pattern.name == "gpt4"
    copy = write_ranks(tmp_path / "o200k_base.tiktoken", byte_ranks() | {b"ab": 256})  # found by its name
    assert Tokenizer.load(copy).special_ids == {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}


def test_missing_bytes_and_unmergeable_tokens_are_refused(tmp_path: Path) -> None:
    no_byte = {t: r for t, r in byte_ranks().items() if t != b"z"} | {b"\x00\x00": 122}
    with pytest.raises(FormatError, match=r"nobyte\.tiktoken: the single byte b'z' has no rank"):
        Tokenizer.load(write_ranks(tmp_path / "nobyte.tiktoken", no_byte), pattern="gpt2")
    # "abc" at 256 cannot be made from two lower-ranked tokens (no "ab" or "bc" below it)
    with pytest.raises(FormatError, match=r"the token b'abc' \(rank 256\) is not the merge of two tokens"):
        Tokenizer.load(write_ranks(tmp_path / "abc.tiktoken", byte_ranks() | {b"abc": 256}), pattern="gpt2")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(corpus=texts.filter(lambda t: t.strip() and "\x00" not in t), extra=st.integers(0, 80),
       pattern=st.sampled_from(["gpt2", "gpt4"]), text=texts)
def test_any_trained_export_encodes_in_tiktoken_as_here(tmp_path_factory: pytest.TempPathFactory, corpus: str, extra: int, pattern: str, text: str) -> None:
    folder = tmp_path_factory.mktemp("any")
    (folder / "c.txt").write_text(corpus, encoding="utf-8")
    vocab, merges = core.train_bpe(folder / "c.txt", 258 + extra, SPECIALS, pattern=pattern, workers=1)
    # two merges that made the same bytes could not be written in any format (vocab.json, tokenizer.json, .tiktoken)
    assume(len(set(vocab.values())) == len(vocab))
    save_tokenizer(folder / "out", vocab, merges, SPECIALS, pattern)
    enc = encoding_from_export(folder / "out")
    tok = Tokenizer(vocab, merges, SPECIALS, pattern=pattern)
    for sample in (corpus, text):
        assert enc.encode(sample, allowed_special="all") == tok.encode(sample)
    assert Tokenizer.load(folder / "out" / "tokenizer.tiktoken").merges == merges
