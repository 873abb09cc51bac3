"""Parity-aware BPE's oracle: VARIANTS.md section 3, literally, everything recomputed each step.

Short and plainly correct, as `core.training.reference` is for plain BPE: the tests compare
`core.variants.parity` with it merge by merge. Words are tuples of byte strings; every
step counts every pair of the chosen language (or of all, for the global merges) again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

__all__ = ["parity_reference"]

Words = Counter[tuple[bytes, ...]]


def _words(counts: Mapping[bytes, int]) -> Words:
    return Counter({tuple(bytes([b]) for b in word): n for word, n in counts.items()})


def _pairs(words: Words) -> Counter[tuple[bytes, bytes]]:
    pairs: Counter[tuple[bytes, bytes]] = Counter()
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            pairs[pair] += n
    return pairs


def _merged(words: Words, pair: tuple[bytes, bytes]) -> Words:
    out: Words = Counter()
    for word, n in words.items():
        new, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
                new.append(word[i] + word[i + 1])
                i += 2
            else:
                new.append(word[i])
                i += 1
        out[tuple(new)] += n
    return out


def _tokens(words: Words) -> int:
    return sum(len(word) * n for word, n in words.items())


def parity_reference(
    train: Mapping[str, Mapping[bytes, int]],
    vocab_size: int,
    specials: int = 0,
    *,
    dev: Mapping[str, Mapping[bytes, int]] | None = None,
    ratio: Mapping[str, float] | None = None,
    global_merges: int = 0,
    window: int | None = None,
    alpha: float = 2.0,
    min_frequency: int = 1,
) -> tuple[list[tuple[bytes, bytes]], list[str | None]]:
    """The merges, and the language each was made for (``None``: a global merge).

    ``train`` and ``dev``: each language's pre-token counts, in the languages' order (ties
    go to the earlier language); ``dev`` or ``ratio`` says which language is worst off.
    """
    names = list(train)
    words = {name: _words(train[name]) for name in names}
    dev_words = {name: _words(dev[name]) for name in names} if dev is not None else {}
    initial = {name: _tokens(words[name]) for name in names}
    merges: list[tuple[bytes, bytes]] = []
    chosen: list[str | None] = []
    history: list[str] = []
    while 256 + specials + len(merges) < vocab_size:
        lang: str | None
        if len(merges) < global_merges:
            lang = None
            pairs: Counter[tuple[bytes, bytes]] = Counter()
            for name in names:
                pairs.update(_pairs(words[name]))
        else:
            if dev is not None:  # the most tokens on its dev set first
                order = sorted(range(len(names)), key=lambda i: -_tokens(dev_words[names[i]]))
            else:  # the lowest compression against its target first
                assert ratio is not None
                first = ratio[names[0]]
                order = sorted(range(len(names)), key=lambda i: (initial[names[i]] / _tokens(words[names[i]]))
                               / (ratio[names[i]] / first))
            candidates = [names[i] for i in order]
            if window is not None:
                recent = history[-window:]
                kept = [name for name in candidates if recent.count(name) / window <= alpha / len(names)]
                candidates = kept or candidates
            lang = candidates[0]
            history.append(lang)
            pairs = _pairs(words[lang])
        if not pairs:
            break
        best = max(pairs, key=lambda pair: (pairs[pair], pair))
        if pairs[best] < min_frequency:
            break
        for name in names:
            words[name] = _merged(words[name], best)
            if dev is not None:
                dev_words[name] = _merged(dev_words[name], best)
        merges.append(best)
        chosen.append(lang)
    return merges, chosen
