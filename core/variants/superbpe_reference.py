"""A short, obviously correct SuperBPE trainer: the oracle `core.variants.superbpe` is tested against.

VARIANTS.md section 2, literally: stage 1 is the plain reference trainer; stage 2 cuts each
segment line by line and each line in Hugging Face's "isolated" mode, replays stage 1's
merges, then merges the best allowed pair, recounting everything at every step.
"""

from __future__ import annotations

from collections import Counter

import regex

from core.training.reference import (
    Pair,
    Word,
    best_pair,
    count_pairs,
    merge_word,
    read_corpus,
    reference_counts,
    reference_merges,
    split_on_specials,
)

STAGE2_SPLIT = regex.compile(r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)")


def isolated_split(line: str) -> list[str]:
    """Hugging Face's Split in "isolated" mode: every match, and every stretch between matches."""
    out: list[str] = []
    pos = 0
    for m in STAGE2_SPLIT.finditer(line):
        if m.start() > pos:
            out.append(line[pos : m.start()])
        out.append(m.group())
        pos = m.end()
    if pos < len(line):
        out.append(line[pos:])
    return out


def stage2_pretokens(segment: str) -> list[str]:
    """A segment's stage-2 pre-tokens: cut after every "\\n", then each line isolated-split."""
    return [p for line in stage2_lines(segment) for p in isolated_split(line)]


def stage2_lines(segment: str) -> list[str]:
    """The segment cut after every "\\n" only (``str.splitlines`` would cut at more)."""
    lines = segment.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def stage2_counts(text: str, special_tokens: list[str]) -> Counter[bytes]:
    counts: Counter[bytes] = Counter()
    for segment in split_on_specials(text, special_tokens):
        for piece in stage2_pretokens(segment):
            counts[piece.encode("utf-8", errors="surrogateescape")] += 1
    return counts


def allowed(token: bytes, max_words: int | None) -> bool:
    return b": " not in token and (max_words is None or len([w for w in token.split(b" ") if w]) <= max_words)


def superbpe_reference(
    text: str | bytes, vocab_size: int, special_tokens: list[str], transition: int, max_words: int | None = 4,
    *, pattern: str = "gpt2",
) -> tuple[list[Pair], int]:
    """``(merges, stage-1 merges)``."""
    text = read_corpus(text)
    budget = vocab_size - 256 - len(special_tokens)
    stage1 = [step.pair for step in reference_merges(
        reference_counts(text, special_tokens, pattern=pattern), min(transition, budget))]
    merges = list(stage1)
    words: dict[Word, int] = {tuple(bytes([b]) for b in t): n for t, n in stage2_counts(text, special_tokens).items()}
    for pair in stage1:
        merged: Counter[Word] = Counter()
        for word, n in words.items():
            merged[merge_word(word, pair)] += n
        words = dict(merged)
    while len(merges) < budget:
        pairs = Counter({p: n for p, n in count_pairs(words).items() if allowed(p[0] + p[1], max_words)})
        if not pairs:
            break
        pair = best_pair(pairs)
        merges.append(pair)
        merged = Counter()
        for word, n in words.items():
            merged[merge_word(word, pair)] += n
        words = dict(merged)
    return merges, len(stage1)
