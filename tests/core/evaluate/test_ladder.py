"""The size ladder: shrink equals training at that size (the reference trainer), and the
ladder's figures equal a plain re-encoding with the tokenizer trained at each size."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core.encode.tokenizer import Tokenizer
from core.evaluate import evaluate
from core.evaluate.ladder import default_sizes, ladder_tokenizers, shrink
from core.training.reference import train_bpe_reference

SPECIALS = ["<|endoftext|>"]


def corpus(seed: int, words: int = 600) -> str:
    rng = random.Random(seed)
    syllables = ["the", "ca", "t", "sa", "on", "ma", "ü", "ber", "na", "ï", "ve", "fé", "==", "  ", "\n", "12", "日本",
                 "ko", "ri", "zu", "pe", "lo", "x"]
    return " ".join("".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) + rng.choice(["", "s", "!"])
                    for _ in range(words))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), small=st.integers(257, 330))
def test_shrink_equals_training_at_that_size(seed: int, small: int) -> None:
    text = corpus(seed)
    vocab, merges = train_bpe_reference(text, 340, SPECIALS)
    full = Tokenizer(vocab, merges, SPECIALS)
    expected = train_bpe_reference(text, small, SPECIALS)
    assert shrink(full, small) == expected


def test_ladder_equals_reencoding(tmp_path: Path) -> None:
    text = corpus(1, 2000)
    held = corpus(2, 800)
    (tmp_path / "held.txt").write_text(held, encoding="utf-8")
    vocab, merges = train_bpe_reference(text, 420, SPECIALS)
    full = Tokenizer(vocab, merges, SPECIALS)
    sizes = [300, 350, 420]
    ladder = dict(ladder_tokenizers(full, sizes))
    rows = evaluate({str(s): t for s, t in ladder.items()}, tmp_path / "held.txt").rows
    for size, row in zip(sizes, rows):
        v, m = train_bpe_reference(text, size, SPECIALS)
        ids = Tokenizer(v, m, SPECIALS).encode(held)
        assert (row.tokens, row.distinct, row.vocab_size) == (len(ids), len(set(ids)), size)
        assert row.fertility == len(ids) / len(held.split())
    assert rows[0].tokens > rows[1].tokens > rows[2].tokens


def test_shrink_gpt2_renumbers_densely(shared_dir: Path) -> None:
    gpt2 = Tokenizer.load(shared_dir / "fixtures" / "gpt2_vocab.json")
    vocab, merges = shrink(gpt2, 1000)
    assert sorted(vocab) == list(range(1000))
    assert len(merges) == 1000 - 257
    assert vocab[999] == b"<|endoftext|>"
    small = Tokenizer(vocab, merges, ["<|endoftext|>"])
    text = "Hello world, the tokenizer was cut<|endoftext|>"
    assert small.decode(small.encode(text)) == text
    assert small.encode("<|endoftext|>") == [999]


def test_default_sizes_and_bad_sizes(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_text(corpus(3, 3000), encoding="utf-8")  # (the trainer, not the oracle: sizes only)
    vocab, merges = core.train(tmp_path / "c.txt", core.TrainOptions(1500, SPECIALS, workers=1)).result()
    full = Tokenizer(vocab, merges, SPECIALS)
    assert default_sizes(full) == [512, 1024, len(full)]
    with pytest.raises(ValueError, match="above the tokenizer's vocabulary"):
        shrink(full, len(full) + 1)
    with pytest.raises(ValueError, match="below 257"):
        shrink(full, 256)
