"""A short, obviously correct byte-level BPE trainer: the oracle the fast trainer is tested against.

It follows docs/semantics.md literally and recomputes everything from scratch at every step, so it is
slow (use it on inputs of a few hundred KB at most) but easy to check by reading. Nothing
in the application uses it; tests compare `core.train_bpe` against it merge by merge.

The data flow, in one place (`train_bpe_reference`):
corpus bytes -> text (surrogateescape) -> segments between special tokens -> pre-tokens
(the pattern's matches) -> pre-token counts -> repeat {count adjacent pairs, take the best,
merge it everywhere} -> vocab and merges.

A tiny worked example (pattern "gpt2", no special tokens, vocab_size=259)::

    text "aaabdaaabac" is a single pre-token, seen once: (a, a, a, b, d, a, a, a, b, a, c)
    step 0: pairs (a,a)=4 (overlaps count: "aaa" gives 2), (a,b)=2, ... -> merge (a, a) = id 256
            -> (aa, a, b, d, aa, a, b, a, c)        # left to right, non-overlapping
    step 1: (aa,a)=2, (a,b)=2, tie at 2 -> the greater pair (b"aa", b"a") > (b"a", b"b") wins
            -> (aaa, b, d, aaa, b, a, c)            # id 257
    step 2: (aaa,b)=2 -> merge -> (aaab, d, aaab, a, c)  # id 258; vocab is full
    merges == [(b"a", b"a"), (b"aa", b"a"), (b"aaa", b"b")]

Options (docs/semantics.md, "Trainer options"), each a line or two below:
``max_token_length`` leaves out of the choice the pairs whose token would be longer;
``min_frequency`` stops when the best pair is rarer; ``initial`` (vocab, merges and
special token ids of an existing tokenizer) makes its merges first, in rank order, then
learns new ones, which take the ids after its largest.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import regex

from core.errors import InvalidSpecialTokensError, OptionsError
from core.pretokenize.patterns import resolve_pattern

Word = tuple[bytes, ...]
Pair = tuple[bytes, bytes]


@dataclass(frozen=True)
class ReferenceMerge:
    """One step of the reference trainer.

    Attributes:
        pair: the merged pair ``(left, right)``.
        count: how often the pair occurred (weighted by pre-token counts) when it was chosen.
        corpus_tokens: tokens in the whole (pre-token part of the) corpus after the merge.
    """

    pair: Pair
    count: int
    corpus_tokens: int


def read_corpus(text_or_path: str | bytes | os.PathLike[str]) -> str:
    """The corpus as text: a path is read as bytes; bytes are decoded; a str is the text itself.

    Bytes are decoded with ``errors="surrogateescape"``: every invalid byte ``0xXY`` becomes
    the lone surrogate ``U+DCXY`` and is turned back into the same byte on encoding.
    """
    if isinstance(text_or_path, os.PathLike):
        text_or_path = Path(text_or_path).read_bytes()
    if isinstance(text_or_path, bytes):
        return text_or_path.decode("utf-8", errors="surrogateescape")
    return text_or_path


def count_invalid_bytes(text: str) -> int:
    """Invalid UTF-8 bytes in a text decoded with surrogateescape (``U+DC80``-``U+DCFF``)."""
    return sum(1 for ch in text if "\udc80" <= ch <= "\udcff")


def split_on_specials(text: str, special_tokens: list[str]) -> list[str]:
    """The ordinary segments of ``text`` between special tokens (specials dropped).

    At each position the longest special token that matches wins: ``regex`` tries the
    alternatives in order, and they are ordered longest first.
    ``split_on_specials("x<|a|><|b|>y", ["<|a|>", "<|a|><|b|>"]) -> ["x", "y"]``
    """
    if not special_tokens:
        return [text]
    ordered = sorted(special_tokens, key=len, reverse=True)
    return regex.split("|".join(regex.escape(s) for s in ordered), text)


def reference_counts(
    text_or_path: str | bytes | os.PathLike[str],
    special_tokens: list[str],
    *,
    pattern: str = "gpt2",
) -> Counter[bytes]:
    """How many times each pre-token (as bytes) occurs in the corpus."""
    compiled = regex.compile(resolve_pattern(pattern).source)
    counts: Counter[bytes] = Counter()
    for segment in split_on_specials(read_corpus(text_or_path), special_tokens):
        for match in compiled.finditer(segment):
            if match.group():  # a custom pattern may match the empty string somewhere
                counts[match.group().encode("utf-8", errors="surrogateescape")] += 1
    return counts


def count_pairs(words: dict[Word, int]) -> Counter[Pair]:
    """Adjacent pairs, weighted by word count; overlaps count: ``(a, a, a)`` gives (a, a) twice."""
    pairs: Counter[Pair] = Counter()
    for word, n in words.items():
        for left, right in zip(word, word[1:]):
            pairs[(left, right)] += n
    return pairs


def pair_count(words: dict[Word, int], pair: Pair) -> int:
    """``count_pairs(words)[pair]``, counting that pair alone (for a forced merge)."""
    return sum(
        n * sum(1 for left, right in zip(word, word[1:]) if (left, right) == pair)
        for word, n in words.items()
        if pair[0] in word
    )


def merge_word(word: Word, pair: Pair) -> Word:
    """Replace each occurrence of ``pair``, left to right, non-overlapping.

    ``merge_word((b"a", b"a", b"a"), (b"a", b"a")) -> (b"aa", b"a")``
    """
    if pair[0] not in word:
        return word
    out: list[bytes] = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(word[i] + word[i + 1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def best_pair(pairs: Counter[Pair]) -> Pair:
    """The most frequent pair; ties go to the lexicographically greater ``(bytes, bytes)`` pair."""
    return max(pairs, key=lambda pair: (pairs[pair], pair))


def reference_merges(
    pretoken_counts: Counter[bytes],
    num_merges: int,
    *,
    max_token_length: int | None = None,
    min_frequency: int = 1,
    forced: list[Pair] | None = None,
) -> list[ReferenceMerge]:
    """Up to ``num_merges`` merges learned from pre-token counts (fewer if pairs run out).

    ``forced`` pairs are merged first, in order, whatever their counts; they are among the
    ``num_merges`` and are not subject to the two limits.
    """
    words: dict[Word, int] = {
        tuple(bytes([b]) for b in token): n for token, n in pretoken_counts.items()
    }
    steps: list[ReferenceMerge] = []
    forced = forced or []
    while len(steps) < num_merges:
        if len(steps) < len(forced):
            pair = forced[len(steps)]
            count = pair_count(words, pair)
        else:
            pairs = count_pairs(words)
            if max_token_length is not None:
                pairs = Counter({p: n for p, n in pairs.items() if len(p[0]) + len(p[1]) <= max_token_length})
            if not pairs:
                break
            pair = best_pair(pairs)
            count = pairs[pair]
            if count < min_frequency:
                break
        merged: Counter[Word] = Counter()
        for word, n in words.items():
            merged[merge_word(word, pair)] += n
        words = dict(merged)
        corpus_tokens = sum(len(word) * n for word, n in words.items())
        steps.append(ReferenceMerge(pair, count, corpus_tokens))
    return steps


def train_bpe_reference(
    text_or_path: str | bytes | os.PathLike[str],
    vocab_size: int,
    special_tokens: list[str],
    *,
    pattern: str = "gpt2",
    max_token_length: int | None = None,
    min_frequency: int = 1,
    initial: tuple[dict[int, bytes], list[Pair], dict[str, int]] | None = None,
) -> tuple[dict[int, bytes], list[Pair]]:
    """Train byte-level BPE exactly per docs/semantics.md; see the module docstring for an example.

    Args:
        text_or_path: a path (read as bytes), raw corpus bytes, or the text itself.
        vocab_size: final vocabulary size (256 bytes + specials + merges).
        special_tokens: split the text and get ids 256, 257, ... in the order given.
        pattern: ``"gpt2"``, ``"gpt4"`` or a regex.
        max_token_length: pairs whose merged token would be longer (bytes) are never chosen.
        min_frequency: stop when the best pair occurs fewer times.
        initial: ``(vocab, merges, special_ids)`` of a tokenizer to continue: its vocab
            stays as it is, its special tokens come first, new special tokens and then
            new merges take the ids after its largest; ``vocab_size`` counts them all.
    """
    if len(set(special_tokens)) != len(special_tokens) or "" in special_tokens:
        raise InvalidSpecialTokensError("special tokens must be distinct and non-empty")
    if vocab_size < 256 + len(special_tokens):
        raise OptionsError("vocab_size must be at least 256 + the number of special tokens")
    vocab = {i: bytes([i]) for i in range(256)}
    inherited: list[Pair] = []
    if initial is not None:
        vocab, inherited, initial_specials = dict(initial[0]), list(initial[1]), initial[2]
        special_tokens = list(initial_specials) + [t for t in special_tokens if t not in initial_specials]
        new_specials = special_tokens[len(initial_specials):]
    else:
        new_specials = special_tokens
    next_id = max(vocab) + 1
    for token in new_specials:
        vocab[next_id] = token.encode("utf-8")
        next_id += 1
    steps = reference_merges(
        reference_counts(text_or_path, special_tokens, pattern=pattern),
        vocab_size - len(vocab) + len(inherited),
        max_token_length=max_token_length,
        min_frequency=min_frequency,
        forced=inherited,
    )
    merges = [step.pair for step in steps]
    for left, right in merges[len(inherited):]:
        vocab[next_id] = left + right
        next_id += 1
    return vocab, merges
