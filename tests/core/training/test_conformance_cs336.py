"""CS336 conformance: training corpus.en (vocab 500, "<|endoftext|>") gives the published result.

Stanford CS336's assignment 1 ships the merges and vocabulary a correct trainer must produce
on its `corpus.en` fixture (GPT-2 byte-to-unicode form). Both the oracle and the fast
trainer must reproduce them exactly. The data is read from ../shared, never copied here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import core
from core.training.reference import train_bpe_reference

SPECIAL = "<|endoftext|>"


@pytest.fixture(scope="module")
def cs336(shared_dir: Path, gpt2_files):
    load_vocab, load_merges = gpt2_files
    fixtures = shared_dir / "fixtures"
    merges = load_merges(fixtures / "train-bpe-reference-merges.txt")
    vocab = load_vocab(fixtures / "train-bpe-reference-vocab.json", [SPECIAL])
    return fixtures / "corpus.en", vocab, merges


def _check(vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]], ref_vocab, ref_merges) -> None:
    for rank, (got, want) in enumerate(zip(merges, ref_merges)):
        assert got == want, f"first differing merge at rank {rank}: {got!r} != {want!r}"
    assert len(merges) == len(ref_merges) == 500 - 257
    # CS336 numbers its vocabulary differently (special token first); docs/semantics.md puts bytes at
    # 0-255 and the special at 256. Same tokens, and the merged tokens in the same order.
    assert len(vocab) == len(ref_vocab) == 500
    assert set(vocab.values()) == set(ref_vocab.values())
    ref_learned = [tok for _, tok in sorted(ref_vocab.items())][257:]
    assert [vocab[i] for i in range(257, 500)] == ref_learned
    assert vocab[256] == SPECIAL.encode()
    assert all(vocab[i] == bytes([i]) for i in range(256))


def test_reference_trainer_matches_cs336(cs336) -> None:
    corpus, ref_vocab, ref_merges = cs336
    vocab, merges = train_bpe_reference(corpus, 500, [SPECIAL])
    _check(vocab, merges, ref_vocab, ref_merges)


@pytest.mark.parametrize("workers", [1, 2])
def test_fast_trainer_matches_cs336(cs336, workers: int) -> None:
    corpus, ref_vocab, ref_merges = cs336
    vocab, merges = core.train_bpe(corpus, 500, [SPECIAL], workers=workers)
    _check(vocab, merges, ref_vocab, ref_merges)
