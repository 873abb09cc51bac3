"""A short, obviously correct Picky BPE trainer: the oracle `core.variants.picky` is tested against.

VARIANTS.md section 1, line by line, recomputing every count at every step (slow: for
inputs of a few KB). Nothing in the application uses it.
"""

from __future__ import annotations

from collections import Counter

from core.training.reference import Word, best_pair, count_pairs, merge_word


def _occurrences(words: dict[Word, int], token: bytes) -> int:
    return sum(n * word.count(token) for word, n in words.items())


def _tokens(words: dict[Word, int]) -> int:
    return sum(n * len(word) for word, n in words.items())


def picky_reference(
    pretoken_counts: Counter[bytes], vocab_size: int, special_tokens: list[str], threshold: float
) -> tuple[dict[int, bytes], list[tuple[str, bytes, object]]]:
    """``(vocab, events)``: the compact live vocabulary and the events in order,
    ``("merge", left, right)`` or ``("split", token, pieces)``."""
    words: dict[Word, int] = {tuple(bytes([b]) for b in token): n for token, n in pretoken_counts.items()}
    live: list[bytes] = []  # live merged tokens (a list, to keep the rule's order visible)
    created: list[bytes] = []  # every merged token, in order of first creation
    parents: dict[bytes, tuple[bytes, bytes]] = {}
    events: list[tuple[str, bytes, object]] = []

    def walk(s: bytes) -> list[bytes]:
        if len(s) == 1 or s in live:
            return [s]
        left, right = parents[s]
        return walk(left) + walk(right)

    while 256 + len(special_tokens) + len(live) < vocab_size:
        pairs = count_pairs(words)
        if not pairs:
            break
        left, right = best_pair(pairs)
        new = left + right
        events.append(("merge", left, right))
        if new not in parents:
            parents[new] = (left, right)
            created.append(new)
        if new not in live:
            live.append(new)
        before = _tokens(words)
        merged: Counter[Word] = Counter()
        for word, n in words.items():
            merged[merge_word(word, (left, right))] += n
        words = dict(merged)
        m = before - _tokens(words)
        for x in (left,) if left == right else (left, right):
            rem = _occurrences(words, x)
            if len(x) > 1 and m / (m + rem) > threshold:
                live.remove(x)
                pieces = walk(x)
                events.append(("split", x, tuple(pieces)))
                split: Counter[Word] = Counter()
                for word, n in words.items():
                    split[tuple(p for t in word for p in (pieces if t == x else [t]))] += n
                words = dict(split)
    vocab = {i: bytes([i]) for i in range(256)}
    for special in special_tokens:
        vocab[len(vocab)] = special.encode("utf-8")
    for made in created:
        if made in live:
            vocab[len(vocab)] = made
    return vocab, events


def picky_encode_reference(events: list[tuple[str, bytes, object]], live: set[bytes], pretoken: bytes) -> list[bytes]:
    """One pre-token's tokens by the replay rule (VARIANTS.md section 1, "Encoding"), every event looked at."""
    if len(pretoken) <= 1 or pretoken in live:
        return [pretoken] if pretoken else []
    word: Word = tuple(bytes([b]) for b in pretoken)
    for kind, token, rest in events:
        if kind == "merge":
            word = merge_word(word, (token, rest))  # type: ignore[arg-type]
        else:
            pieces: tuple[bytes, ...] = rest  # type: ignore[assignment]
            word = tuple(p for t in word for p in (pieces if t == token else (t,)))
    return list(word)
