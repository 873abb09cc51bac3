"""A ``tokenizer.json`` whose ``Split`` pre-tokenizer leaves gaps is read as Hugging Face
``tokenizers`` runs it (every behaviour, with and without ``invert``), or refused."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import regex

import core
from core.errors import FormatError
from core.formats import load_tokenizer_json, save_tokenizer_json
from core.formats.hf_json import tokenizer_from_json
from core.formats.hf_split import BEHAVIORS, split_node, split_source

tokenizers = pytest.importorskip("tokenizers")

_PYTHON_NAMES = {"Isolated": "isolated", "Removed": "removed", "Contiguous": "contiguous",
                 "MergedWithPrevious": "merged_with_previous", "MergedWithNext": "merged_with_next"}
# regexes that leave text between their matches (none covers every character)
SPLIT_REGEXES = [r"\p{N}{1,3}", r"[aeiou]+", r" ?\p{L}+", r"\s+", r"ab|b", r"(?i:the)", r"x(?=y)", r"\p{P}",
                 r"^\w", r"\w$"]
ALPHABET = list("aeiouxyzbtTHE 0123456789,.!\n\t") + ["é", "日", "😀"]
CASES = [(b, inv) for b in BEHAVIORS for inv in (False, True)]


def texts(seed: int, count: int, longest: int = 30) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, longest))) for _ in range(count)]


def hf_split(source: str, behavior: str, invert: bool):  # noqa: ANN201
    return tokenizers.pre_tokenizers.Split(tokenizers.Regex(source), _PYTHON_NAMES[behavior], invert=invert)


@pytest.mark.parametrize(("behavior", "invert"), CASES)
def test_split_regex_gives_hugging_faces_pre_tokens(behavior: str, invert: bool) -> None:
    for n, source in enumerate(SPLIT_REGEXES):
        node = {"type": "Split", "pattern": {"Regex": source}, "behavior": behavior, "invert": invert}
        ours = regex.compile(split_source(node))
        theirs = hf_split(source, behavior, invert)
        for text in texts(n, 200):
            assert ours.findall(text) == [piece for piece, _ in theirs.pre_tokenize_str(text)], (source, text)


def train_hf(split, corpus: list[str], special: str):  # noqa: ANN001, ANN201
    """A byte-level BPE trained by ``tokenizers`` with ``split`` before ``ByteLevel``, as
    Llama 3 or Qwen 2 ship theirs."""
    pre = tokenizers.pre_tokenizers
    tok = tokenizers.Tokenizer(tokenizers.models.BPE())
    tok.pre_tokenizer = pre.Sequence([split, pre.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=400, special_tokens=[special], show_progress=False,
                                             initial_alphabet=pre.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer)
    return tok


@pytest.mark.parametrize(("behavior", "invert"), CASES)
def test_tokenizer_json_with_a_split_encodes_as_hugging_face(tmp_path: Path, behavior: str, invert: bool) -> None:
    corpus = texts(7, 400, 80)
    for source in (r"\p{N}{1,3}", r" ?[aeiou]+", r"^\w"):
        hf = train_hf(hf_split(source, behavior, invert), corpus, "<|end|>")
        path = tmp_path / "tokenizer.json"
        hf.save(str(path))
        ours = core.Tokenizer.load(path)
        for text in texts(99, 40, 120) + ["Hi 12345 there<|end|>a 7\n\nb"]:
            assert list(ours.encode(text)) == hf.encode(text).ids, (source, text)
            if behavior != "Removed":  # only Removed drops text
                assert ours.decode(ours.encode(text)) == text
        # written again, it is the same Split, and Hugging Face reads it the same
        vocab, merges, specials, pattern = load_tokenizer_json(path)
        again = save_tokenizer_json(tmp_path / "again.json", vocab, merges, specials, pattern)
        written = json.loads(again.read_text("utf-8"))["pre_tokenizer"]["pretokenizers"][0]
        expected = json.loads(path.read_text("utf-8"))["pre_tokenizer"]["pretokenizers"][0]
        if source == r"^\w":
            expected["pattern"]["Regex"] = r"(?m:^)\w"  # the same anchor, spelled for both engines
        assert written == expected
        reread = tokenizers.Tokenizer.from_file(str(again))
        text = "Hi 12345 there<|end|>a 7\n\nb éé 😀"
        assert reread.encode(text).ids == hf.encode(text).ids


def test_gaps_are_not_lost() -> None:
    # the case: the gaps between the matches were dropped (35 ids instead of 39)
    hf = train_hf(hf_split(r"\p{L}+", "Isolated", False), texts(3, 300, 60), "<|end|>")
    data = json.loads(hf.to_str())
    vocab, merges, specials, pattern = tokenizer_from_json(data, "tokenizer.json")
    ours = core.Tokenizer(vocab, merges, specials, pattern=pattern)
    text = "one, two; 3 4 5 — six!? 7.8.9 ten"
    assert list(ours.encode(text)) == hf.encode(text).ids
    assert ours.decode(ours.encode(text)) == text


def test_a_split_string_pattern() -> None:
    node = {"type": "Split", "pattern": {"String": "a.b"}, "behavior": "MergedWithNext", "invert": False}
    theirs = tokenizers.pre_tokenizers.Split("a.b", "merged_with_next")
    for text in ["xa.bya.ba.b", "axb a.b", ""]:
        assert regex.findall(split_source(node), text) == [p for p, _ in theirs.pre_tokenize_str(text)]


def test_split_node_reads_only_what_split_source_made() -> None:
    node = {"type": "Split", "pattern": {"Regex": r"(?:\d)+"}, "behavior": "Contiguous", "invert": True}
    assert split_node(split_source(node)) == node
    assert split_node(r"\w+") is None
    assert split_node(split_source(node) + "x") is None


def split_file(tmp_path: Path, pretokenizers: list[dict[str, object]]) -> Path:
    vocab = {i: bytes([i]) for i in range(256)}
    save_tokenizer_json(tmp_path / "tokenizer.json", vocab, [], [], "gpt4")
    data = json.loads((tmp_path / "tokenizer.json").read_text("utf-8"))
    data["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": pretokenizers}
    (tmp_path / "tokenizer.json").write_text(json.dumps(data), "utf-8")
    return tmp_path / "tokenizer.json"


BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}


@pytest.mark.parametrize(
    ("split", "message"),
    [
        ({"pattern": {"Regex": r"\d*"}, "behavior": "Isolated"}, r"matches the empty string.*Hugging Face cuts"),
        ({"pattern": {"Regex": r"(?=a)"}, "behavior": "Removed", "invert": True}, "matches the empty string"),
        ({"pattern": {"Regex": r"(a)\1"}, "behavior": "Isolated"}, r"uses \\1 \(a back-reference"),
        ({"pattern": {"Regex": r"a"}, "behavior": "Splitted"}, "behavior 'Splitted' is not one of Isolated"),
        ({"pattern": {"Regex": r"(a"}, "behavior": "Isolated"}, "does not compile"),
        ({"pattern": {"Glob": "a"}, "behavior": "Isolated"}, "neither"),
    ],
)
def test_a_split_that_cannot_be_followed_is_refused(tmp_path: Path, split: dict[str, object], message: str) -> None:
    path = split_file(tmp_path, [{"type": "Split", "invert": False, **split}, BYTE_LEVEL])
    with pytest.raises(FormatError, match=r"tokenizer\.json: key pre_tokenizer\.pretokenizers\[0\]: .*" + message):
        core.Tokenizer.load(path)


def test_several_splits_are_refused(tmp_path: Path) -> None:
    split = {"type": "Split", "pattern": {"Regex": r"\d"}, "behavior": "Isolated", "invert": False}
    path = split_file(tmp_path, [split, split, BYTE_LEVEL])
    with pytest.raises(FormatError, match="a Sequence of several Split pre-tokenizers is not supported"):
        core.Tokenizer.load(path)


def test_prefix_space_after_a_split_is_refused(tmp_path: Path) -> None:
    split = {"type": "Split", "pattern": {"Regex": r"\d"}, "behavior": "Isolated", "invert": False}
    path = split_file(tmp_path, [split, {**BYTE_LEVEL, "add_prefix_space": True}])
    with pytest.raises(FormatError, match=r"pretokenizers\[1\]\.add_prefix_space=true is not supported"):
        core.Tokenizer.load(path)
