"""The native encoder's front cache (``core/encode/_bpe_kernel.c``) gives the ids merging gives,
whether its slots hold ``uint16`` ids (every id below 2^16) or wider ones (as pairs of halves),
and so does merging with either map of the merges (the compact one for ids below 2^20)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import core
from core.encode import piece_encoder
from core.encode.tokenizer import Tokenizer


@pytest.fixture(scope="module")
def narrow(tmp_path_factory: pytest.TempPathFactory) -> Tokenizer:
    if piece_encoder._BpeTable is None:
        pytest.skip("core.encode._bpe_kernel is not built")
    rng = random.Random(5)
    words = ["".join(rng.choices("abcdeéz", k=rng.randint(1, 12))) for _ in range(3_000)]
    path: Path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(" ".join(rng.choices(words, k=20_000)), encoding="utf-8")
    vocab, merges = core.train_bpe(path, 700, [], pattern="gpt2", workers=1)
    return Tokenizer(vocab, merges, pattern="gpt2")


def _text(seed: int) -> str:
    """Many distinct short words, each seen twice or more (misses, then hits), some of
    them merging into more ids than a wide slot holds."""
    rng = random.Random(seed)
    words = ["".join(rng.choices("abcdeézq", k=rng.randint(1, 16))) for _ in range(20_000)]
    return " ".join(words + rng.choices(words, k=20_000) + words[::-1])


@pytest.mark.parametrize("shift", [70_000, 1 << 20], ids=["past 2^16", "past 2^20"])
def test_wide_ids_encode_as_narrow_ones_shifted(narrow: Tokenizer, shift: int) -> None:
    """Every id past 2^16: the front slots hold wide ids; past 2^20: the merges are looked
    up in the wide map, not the compact one."""
    wide = Tokenizer({i + shift: token for i, token in narrow.vocab.items()}, narrow.merges, pattern="gpt2")
    text = _text(1)
    want = narrow.encode(text)
    assert max(want) < 1 << 16
    assert any(len(narrow.encode(" " + w)) > 3 for w in text.split()[:2_000])  # more than a wide slot holds
    assert wide.encode(text) == [i + shift for i in want]
    assert wide.encode(text) == [i + shift for i in want]  # warm


def test_narrow_ids_equal_the_merge_without_cache(narrow: Tokenizer) -> None:
    """Against the Python merge loop (no cache at all), cold and warm."""
    text = _text(2)
    python = Tokenizer(narrow.vocab, narrow.merges, pattern="gpt2")
    words = text.split(" ")
    want = [i for k, w in enumerate(words) for i in python._pieces.bpe((" " + w if k else w).encode())]
    assert narrow.encode(text) == want
    assert narrow.encode(text) == want
