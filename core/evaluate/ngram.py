"""A tiny language model on the tokens: interpolated Kneser–Ney, orders 1 to 3, numpy only.

Measured in *bits per byte* (the held-out text's total ``-log2 P`` over its UTF-8 bytes),
which compares tokenizers fairly whatever their vocabulary: a tokenizer making fewer,
harder-to-predict tokens is neither helped nor hurt by the count of tokens.

With ``V`` the id range, counts ``c(abc)`` of trigrams in the training ids, continuation
counts ``N(·bc)`` (distinct ``a`` before ``bc``) and ``N(·c)`` (distinct ``b`` before ``c``
among those bigrams), and one absolute discount per order ``D = n1 / (n1 + 2 n2)``
(``n1``, ``n2``: how many counts of that order are 1 and 2):

    P1(c)     = max(N(·c) - D1, 0) / S1  +  D1 T1 / S1 · 1/V
    P2(c|b)   = max(N(·bc) - D2, 0) / S2(b)  +  D2 T2(b) / S2(b) · P1(c)       (P1(c) if b was never a context)
    P3(c|a b) = max(c(abc) - D3, 0) / C(ab)  +  D3 T3(ab) / C(ab) · P2(c|b)    (P2(c|b) if ab never was)

where ``S``/``C`` sum the counts of the context and ``T`` counts its distinct followers.
Each is a distribution over all ``V`` ids (tests check it sums to 1 for every context).
The first held-out token is scored with ``P1``, the second with ``P2``.

Memory: the counts are sorted int64 key arrays (``(a·V + b)·V + c``); when there are more
than ``max_trigrams`` distinct trigrams, the rarest (count 1, then 2, ...) are dropped —
the model then backs off for them, and still sums to 1.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.encode.tokenizer import TEXT_ERRORS, Tokenizer, TokenSpans
from core.errors import OptionsError
from core.evaluate.texts import is_stream, read_groups

__all__ = ["NgramModel", "bits_per_byte", "encode_sources", "sample_spans", "train_ngram"]

MAX_TRIGRAMS = 4_000_000


def _discount(counts: np.ndarray) -> float:
    n1 = int(np.count_nonzero(counts == 1))
    n2 = int(np.count_nonzero(counts == 2))
    if n1 == 0:
        return 0.5
    return min(1.0, n1 / (n1 + 2 * n2))


def _lookup(keys: np.ndarray, values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """``values`` at ``queries`` in the sorted ``keys``; 0 where absent."""
    if len(keys) == 0:
        return np.zeros(len(queries), values.dtype)
    at = np.minimum(np.searchsorted(keys, queries), len(keys) - 1)
    return np.where(keys[at] == queries, values[at], 0)


def _contexts(keys: np.ndarray, counts: np.ndarray, base: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted keys of n-grams -> (their contexts ``key // base``, summed counts, distinct followers)."""
    context = keys // base
    if len(context) == 0:
        return context, counts, counts
    starts = np.flatnonzero(np.r_[True, context[1:] != context[:-1]])
    sums = np.add.reduceat(counts, starts)
    types = np.diff(np.r_[starts, len(context)])
    return context[starts], sums, types


@dataclass
class NgramModel:
    """An interpolated Kneser–Ney trigram model over ids ``0..V-1`` (module docstring)."""

    V: int
    tri_keys: np.ndarray
    tri_counts: np.ndarray
    ctx3_keys: np.ndarray
    ctx3_sums: np.ndarray
    ctx3_types: np.ndarray
    bi_keys: np.ndarray
    bi_counts: np.ndarray
    ctx2_keys: np.ndarray
    ctx2_sums: np.ndarray
    ctx2_types: np.ndarray
    p1: np.ndarray
    d3: float
    d2: float
    d1: float
    trained_tokens: int

    # ------------------------------------------------------------------ probabilities

    def _p2(self, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        V = self.V
        s = _lookup(self.ctx2_keys, self.ctx2_sums, b).astype(np.float64)
        t = _lookup(self.ctx2_keys, self.ctx2_types, b).astype(np.float64)
        n = _lookup(self.bi_keys, self.bi_counts, b * V + c).astype(np.float64)
        p1: np.ndarray = self.p1[c]
        seen = s > 0
        safe = np.where(seen, s, 1.0)
        return np.where(seen, np.maximum(n - self.d2, 0) / safe + self.d2 * t / safe * p1, p1)

    def _p3(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        V = self.V
        ab = a * V + b
        s = _lookup(self.ctx3_keys, self.ctx3_sums, ab).astype(np.float64)
        t = _lookup(self.ctx3_keys, self.ctx3_types, ab).astype(np.float64)
        n = _lookup(self.tri_keys, self.tri_counts, ab * V + c).astype(np.float64)
        p2 = self._p2(b, c)
        seen = s > 0
        safe = np.where(seen, s, 1.0)
        return np.where(seen, np.maximum(n - self.d3, 0) / safe + self.d3 * t / safe * p2, p2)

    def probabilities(self, ids: np.ndarray) -> np.ndarray:
        """``P(ids[i] | the two ids before)`` for each position (fewer context at the start)."""
        ids = np.asarray(ids, np.int64)
        if len(ids) and (ids.min() < 0 or ids.max() >= self.V):
            raise OptionsError(f"ids must lie in 0..{self.V - 1}")
        out = np.empty(len(ids), np.float64)
        if len(ids) >= 1:
            out[0] = self.p1[ids[0]]
        if len(ids) >= 2:
            out[1] = self._p2(ids[:1], ids[1:2])[0]
        if len(ids) >= 3:
            out[2:] = self._p3(ids[:-2], ids[1:-1], ids[2:])
        return out

    def distribution(self, context: Sequence[int]) -> np.ndarray:
        """The next-id distribution (length ``V``) after ``context`` (its last two ids count)."""
        V = self.V
        c = np.arange(V, dtype=np.int64)
        if len(context) == 0:
            return self.p1.copy()
        if len(context) == 1:
            return self._p2(np.full(V, context[-1], np.int64), c)
        return self._p3(np.full(V, context[-2], np.int64), np.full(V, context[-1], np.int64), c)

    def bits(self, ids: np.ndarray) -> float:
        """Total ``-log2 P`` of ``ids``."""
        return float(-np.log2(self.probabilities(ids)).sum())

    def sample(self, tokens: int, *, seed: int = 0, context: Sequence[int] = ()) -> list[int]:
        """``tokens`` ids drawn from the model after ``context``."""
        rng = np.random.default_rng(seed)
        out = list(context)
        for _ in range(tokens):
            p = self.distribution(out[-2:])
            out.append(int(rng.choice(self.V, p=p / p.sum())))
        return out[len(context):]


def train_ngram(ids: np.ndarray, vocab_size: int, *, max_trigrams: int = MAX_TRIGRAMS) -> NgramModel:
    """Count the trigrams of ``ids`` (ids ``0..vocab_size-1``) and build the model."""
    V = int(vocab_size)
    if V ** 3 >= 1 << 62:
        raise OptionsError(f"a vocabulary of {V:,} ids is too large for the trigram model")
    ids = np.asarray(ids, np.int64)
    if len(ids) < 3:
        raise OptionsError("the training text is too short for a trigram model (fewer than 3 tokens)")
    if ids.min() < 0 or ids.max() >= V:
        raise OptionsError(f"ids must lie in 0..{V - 1}")
    keys = (ids[:-2] * V + ids[1:-1]) * V + ids[2:]
    tri_keys, tri_counts = np.unique(keys, return_counts=True)
    del keys
    # continuation counts come from every trigram type, before any pruning
    bi_keys, bi_counts = np.unique(tri_keys % (V * V), return_counts=True)
    uni = np.bincount(bi_keys % V, minlength=V).astype(np.int64)
    limit = 1
    while len(tri_keys) > max_trigrams:
        keep = tri_counts > limit
        tri_keys, tri_counts = tri_keys[keep], tri_counts[keep]
        limit += 1
    ctx3 = _contexts(tri_keys, tri_counts, V)
    ctx2 = _contexts(bi_keys, bi_counts, V)
    d3, d2, d1 = _discount(tri_counts), _discount(bi_counts), _discount(uni[uni > 0])
    s1 = float(uni.sum())
    t1 = float(np.count_nonzero(uni))
    p1 = np.maximum(uni - d1, 0) / s1 + d1 * t1 / s1 / V
    return NgramModel(V, tri_keys, tri_counts, *ctx3, bi_keys, bi_counts, *ctx2, p1, d3, d2, d1, len(ids))


def encode_sources(tokenizer: Tokenizer, sources: Sequence[str | os.PathLike[str]] | str | os.PathLike[str], *,
                   field: str = "text") -> tuple[np.ndarray, int]:
    """``(ids, UTF-8 bytes)`` of every document of ``sources``, encoded one by one and joined."""
    source_list = [sources] if isinstance(sources, (str, os.PathLike)) else list(sources)
    parts: list[np.ndarray] = []
    nbytes = 0
    for source in source_list:
        for _label, texts, _file in read_groups(source, field=field):
            arrays = tokenizer.encode_iterable(texts, escaped=True).arrays() if is_stream(texts) else (
                tokenizer.encode_to_array(t.encode("utf-8", TEXT_ERRORS)) for t in texts)
            for ids in arrays:
                parts.append(ids)
                nbytes += len(tokenizer.decode_bytes(ids))
    ids = np.concatenate(parts) if parts else np.empty(0, np.int64)
    return ids, nbytes


def bits_per_byte(model: NgramModel, ids: np.ndarray, nbytes: int) -> float:
    """The model's bits per byte on ``ids`` standing for ``nbytes`` bytes of text."""
    if nbytes == 0:
        raise OptionsError("no held-out text to measure")
    return model.bits(ids) / nbytes


def perplexity(model: NgramModel, ids: np.ndarray) -> float:
    return math.pow(2.0, model.bits(ids) / max(len(ids), 1))


def sample_spans(tokenizer: Tokenizer, ids: Sequence[int]) -> tuple[str, TokenSpans]:
    """``(text, spans)`` of sampled ``ids``, as `Tokenizer.encode_with_spans` gives them for
    encoded text: the ids as sampled (not re-encoded), malformed UTF-8 shown as U+FFFD."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    text = ""
    spans = TokenSpans()
    byte_pos = 0
    specials = set(tokenizer.special_ids.values())
    for token_id in ids:
        data = tokenizer.token_bytes(token_id)
        pending_before = bool(decoder.getstate()[0])
        start = len(text)  # a character left pending is the next one emitted
        text += decoder.decode(data)
        pending_after = bool(decoder.getstate()[0])
        end = len(text) + (1 if pending_after else 0)
        spans.append(token_id, byte_pos, byte_pos + len(data), start, end, pending_before or pending_after,
                     token_id in specials)
        byte_pos += len(data)
    text += decoder.decode(b"", final=True)  # bytes pending at the end: one U+FFFD, as counted in `end`
    return text, spans
