"""The Kneser–Ney trigram model: a distribution for every context, and bits per byte equal to
a direct computation from the formula with plain dictionaries on a toy corpus."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from core.encode.tokenizer import Tokenizer
from core.evaluate.ngram import bits_per_byte, encode_sources, train_ngram

TOY = [0, 1, 2, 0, 1, 3, 0, 1, 2, 2, 4, 0, 1, 2, 3, 3, 1, 0, 4, 1, 2]
V = 6  # id 5 never occurs


def direct_probability(train: list[int], V: int, context: tuple[int, ...], c: int) -> float:
    """P(c | context) straight from the module docstring's formulas, with dicts."""
    tri = Counter(zip(train, train[1:], train[2:]))
    cont2 = Counter((b, c_) for (_a, b, c_) in tri)  # N(.bc): distinct a per (b, c)
    cont1 = Counter(c_ for (_b, c_) in cont2)  # N(.c): distinct b per c

    def discount(counts: Counter) -> float:
        n1 = sum(1 for v in counts.values() if v == 1)
        n2 = sum(1 for v in counts.values() if v == 2)
        return 0.5 if n1 == 0 else min(1.0, n1 / (n1 + 2 * n2))

    d3, d2, d1 = discount(tri), discount(cont2), discount(cont1)
    s1 = sum(cont1.values())
    p1 = max(cont1[c] - d1, 0) / s1 + d1 * len(cont1) / s1 / V
    if not context:
        return p1
    b = context[-1]
    followers2 = {k: v for k, v in cont2.items() if k[0] == b}
    if followers2:
        s2 = sum(followers2.values())
        p2 = max(cont2[(b, c)] - d2, 0) / s2 + d2 * len(followers2) / s2 * p1
    else:
        p2 = p1
    if len(context) == 1:
        return p2
    a = context[-2]
    followers3 = {k: v for k, v in tri.items() if k[:2] == (a, b)}
    if not followers3:
        return p2
    s3 = sum(followers3.values())
    return max(tri[(a, b, c)] - d3, 0) / s3 + d3 * len(followers3) / s3 * p2


def test_every_context_is_a_distribution() -> None:
    model = train_ngram(np.array(TOY), V)
    contexts: list[tuple[int, ...]] = [(), *[(b,) for b in range(V)], *[(a, b) for a in range(V) for b in range(V)]]
    for context in contexts:
        p = model.distribution(context)
        assert p.shape == (V,)
        assert (p > 0).all()
        assert math.isclose(p.sum(), 1.0, rel_tol=1e-12), context


def test_pruned_model_is_still_a_distribution() -> None:
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 20, 3000)
    model = train_ngram(ids, 20, max_trigrams=500)
    assert len(model.tri_keys) <= 500
    for a in range(0, 20, 3):
        for b in range(20):
            assert math.isclose(model.distribution((a, b)).sum(), 1.0, rel_tol=1e-12)


def test_probabilities_match_the_direct_computation() -> None:
    model = train_ngram(np.array(TOY), V)
    held = [0, 1, 2, 4, 5, 3, 1, 0, 2]
    got = model.probabilities(np.array(held))
    for i, c in enumerate(held):
        context = tuple(held[max(0, i - 2) : i])
        assert math.isclose(got[i], direct_probability(TOY, V, context, c), rel_tol=1e-12), (i, context)
    nbytes = 17
    expected = -sum(math.log2(direct_probability(TOY, V, tuple(held[max(0, i - 2) : i]), c))
                    for i, c in enumerate(held)) / nbytes
    assert math.isclose(bits_per_byte(model, np.array(held), nbytes), expected, rel_tol=1e-12)


def test_bits_per_byte_on_text(tmp_path: Path) -> None:
    vocab = {i: bytes([i]) for i in range(256)}
    vocab[256] = b"ab"
    tok = Tokenizer(vocab, [(b"a", b"b")])
    (tmp_path / "train.txt").write_text("ab ab abc cab " * 30, encoding="utf-8")
    (tmp_path / "held.txt").write_text("ab cab é", encoding="utf-8")
    ids, nbytes = encode_sources(tok, tmp_path / "train.txt")
    assert nbytes == len("ab ab abc cab " * 30) and ids.tolist() == tok.encode("ab ab abc cab " * 30)
    model = train_ngram(ids, len(tok))
    held, held_bytes = encode_sources(tok, tmp_path / "held.txt")
    assert held_bytes == 9
    direct = -sum(math.log2(direct_probability(ids.tolist(), len(tok), tuple(held.tolist()[max(0, i - 2) : i]), c))
                  for i, c in enumerate(held.tolist())) / 9
    assert math.isclose(bits_per_byte(model, held, held_bytes), direct, rel_tol=1e-9)
    sample = model.sample(20, seed=3)
    assert len(sample) == 20 and all(0 <= i < len(tok) for i in sample)
    assert model.sample(20, seed=3) == sample


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="too short"):
        train_ngram(np.array([1, 2]), 5)
    with pytest.raises(ValueError, match="ids must lie in 0..4"):
        train_ngram(np.array([1, 2, 7]), 5)
    with pytest.raises(ValueError, match="no held-out text"):
        bits_per_byte(train_ngram(np.array(TOY), V), np.array([], np.int64), 0)


def test_sample_spans_are_those_of_encoding(shared_dir: Path) -> None:
    from core.evaluate.ngram import sample_spans

    gpt2 = Tokenizer.load(shared_dir / "fixtures" / "gpt2_vocab.json")
    for text in ["a€b 日本 x", "plain words", "über naïve 🙂 done", "日本語のテキスト"]:
        assert sample_spans(gpt2, gpt2.encode(text)) == (text, gpt2.encode_with_spans(text))
    text, spans = sample_spans(gpt2, [10545])  # " \xe6" alone: half a character
    assert text == " \ufffd" and spans[0].partial and (spans[0].char_start, spans[0].char_end) == (0, 2)
