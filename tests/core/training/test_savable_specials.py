"""Issue 38.19: a special token the result could not be saved with is refused when the
`TrainOptions` are made, not after training.

vocab.json writes special tokens as their text and every other token in GPT-2's byte
map. ``"a"``, ``"Ġ"`` or ``"é"`` read as a single byte there, and ``"Ġthe"`` as the
token ``" the"`` training learns: these trained, then saving refused them. One-byte
specials outside the map's alphabet (``" "``, ``"\\n"``) are supported end to end: every
file save writes loads back with the same ids.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import core
from core.errors import InvalidSpecialTokensError
from core.formats import save_tokenizer
from core.variants import SuperBPE

TEXT = "the cat and the dog,  the end. café déjà vu\n" * 60


@pytest.mark.parametrize(("token", "words"), [
    ("a", "single byte 97"),
    ("Ġ", "single byte 32"),
    ("é", "single byte 233"),
    ("Ġthe", "the ordinary token ' the'"),
    ("ĠĠ", "the ordinary token '  '"),
    ("Ã©", "the ordinary token 'é'"),
    ("", "empty"),
])
def test_unsavable_special_tokens_are_refused_when_the_options_are_made(token: str, words: str) -> None:
    with pytest.raises(InvalidSpecialTokensError) as raised:
        core.TrainOptions(300, ["<|endoftext|>", token])
    assert words in str(raised.value)
    assert repr(token) in str(raised.value) or token == ""


def test_duplicates_are_refused_when_the_options_are_made() -> None:
    with pytest.raises(InvalidSpecialTokensError, match="given twice"):
        core.TrainOptions(300, [" ", " "])


def test_a_superword_spelling_is_refused_for_superbpe_only() -> None:
    core.TrainOptions(400, ["ĠtheĠcat"])  # plain BPE never learns " the cat" (two pre-tokens)
    with pytest.raises(InvalidSpecialTokensError, match="' the cat'"):
        core.TrainOptions(400, ["ĠtheĠcat"], variant=SuperBPE(transition=300))


@pytest.mark.parametrize("token", [" ", "\n", "\x00", "\x7f", "<|Ġ|>", "<|café|>", "<|endoftext|>"])
def test_accepted_special_tokens_save_and_load_back(token: str, tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text(TEXT + f"before{token}after\n" * 3, encoding="utf-8")
    vocab, merges = core.train_bpe(corpus, 300, [token])
    written = save_tokenizer(tmp_path / "tok", vocab, merges, [token], "gpt2")
    text = "the cat" + token + "déjà vu"
    expected = core.Tokenizer(vocab, merges, [token]).encode(text)
    assert expected.count(256) == text.count(token) >= 1  # the special token's id
    for path in [tmp_path / "tok", *(p for p in written if p.name != "tokenizer_config.json")]:
        loaded = core.Tokenizer.load(path)
        assert loaded.special_ids == {token: 256}, path.name
        assert loaded.encode(text) == expected, path.name
        assert {i: loaded.vocab[i] for i in vocab} == vocab, path.name
