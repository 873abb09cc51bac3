"""Picky BPE (Chizhov et al., EMNLP 2024): a merge may remove the tokens it was made of.

The rules (VARIANTS.md, section 1): after merging ``(l, r)`` into ``l + r``, which made
``m`` new occurrences, each of ``l`` and ``r`` (left first; once if ``l == r``) longer than
one byte is removed when ``m / (m + rem) > threshold``, ``rem`` being its occurrences left:
it leaves the vocabulary (a slot is free again) and each occurrence becomes the pieces it
was built of (`walk`: down its first parents to live tokens or single bytes). A later merge
that makes its bytes again restores it, with its first id. Training goes on until the
vocabulary holds ``vocab_size`` live tokens.

`PickyLoop` is the incremental merge loop with removals (pair counts, pair -> words and
token -> words indexes, a lazy heap; a removal rewrites only the words that hold the
token). The vocabulary is compact: bytes, special tokens, then live tokens numbered in
order of first creation. `PickyTokenizer` encodes a pre-token by replaying the event list
(merges and splits, in order), as the authors' code does; it saves that list as text
beside ``vocab.json`` (``picky_events.txt``).

Example: ``TrainOptions(10_000, ["<|endoftext|>"], variant=Picky(threshold=0.9))``.
"""

from __future__ import annotations

import heapq
import os
import time
from array import array
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from core.errors import FormatError
from core.events import Finished, MergeBatch, SplitEvent, initial_token_bytes
from core.variants.base import Variant

if TYPE_CHECKING:
    from core.corpus.pretoken_counts import PretokenCounts
    from core.encode.tokenizer import Tokenizer
    from core.events import BatchedTrainEvent
    from core.pretokenize.patterns import Pattern

__all__ = ["EVENTS_NAME", "Event", "Picky", "PickyLoop", "events_text", "picky_events", "read_events"]

EVENTS_NAME = "picky_events.txt"
_EVENTS_HEADER = "#picky-bpe events v1"
_SHIFT = 32
_MASK = (1 << _SHIFT) - 1
_BATCH = 64
_BATCH_SECONDS = 0.02


@dataclass(frozen=True)
class Picky(Variant):
    """Picky BPE: after each merge, remove a part that now lives mostly inside the new token.

    Args:
        threshold: remove a part when more than this share of its occurrences went into
            the merge (IoS, in (0, 1]; the paper uses 0.6-0.9; 1.0 never removes).
    """

    threshold: float = 0.9

    name: ClassVar[str] = "picky"
    title: ClassVar[str] = "Picky BPE"
    summary: ClassVar[str] = ("removes a token once a merge has taken nearly all its occurrences "
                              "(intermediate tokens such as \" th\" for \" the\"), freeing its slot")

    def __post_init__(self) -> None:
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, (int, float)):
            raise TypeError(f"threshold must be a number in (0, 1], got {self.threshold!r}")
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1] (1 removes nothing), got {self.threshold}")
        object.__setattr__(self, "threshold", float(self.threshold))

    def merge(
        self, counts: Sequence[PretokenCounts], vocab_size: int, specials: list[str]
    ) -> Generator[BatchedTrainEvent]:
        from core.training.trainer import packed_input
        from core.training.merge import PackedWords

        words, word_counts, corpus_bytes, counting_done = packed_input(counts[0])
        yield counting_done
        del counting_done
        if isinstance(words, PackedWords):
            words, word_counts = words.unpacked()
        assert word_counts is not None
        loop = PickyLoop(words, word_counts, specials, self.threshold)
        del words, word_counts
        yield from loop.batches(vocab_size, corpus_bytes)
        yield loop.finished()

    def tokenizer(self, finished: Finished, specials: list[str], pattern: Pattern) -> Tokenizer:
        from core.variants.picky_tokenizer import PickyTokenizer

        return PickyTokenizer(finished.vocab, picky_events(finished.merges, finished.splits), specials,
                              pattern=pattern, threshold=self.threshold)


class PickyLoop:
    """The incremental merge loop with Picky's removals, over distinct pre-tokens and counts.

    Ids are the loop's own: 0-255 the bytes, then the special tokens, then each distinct
    token in order of first creation (a token made again keeps its id).
    """

    def __init__(self, words: list[bytes], counts: list[int], specials: Sequence[str], threshold: float) -> None:
        from core.training.merge import count_pairs, tie_break_key

        self._key = tie_break_key
        self.threshold = threshold
        self.tokens: list[bytes] = initial_token_bytes(specials)
        self._first_merged = len(self.tokens)
        self._keys = [tie_break_key(t) for t in self.tokens]
        self._id_of: dict[bytes, int] = {}
        self.live: dict[int, None] = {}  # the live merged tokens (a dict: set semantics, insertion order)
        self.parents: dict[int, tuple[int, int]] = {}
        self.merges: list[tuple[int, int, int]] = []  # (left, right, new) per merge
        self.splits: list[SplitEvent] = []
        pair_counts, pair_words = count_pairs(words, counts)
        self._pairs: dict[int, int] = pair_counts
        self._pair_words: dict[int, list[int]] = {code: ws.tolist() if not isinstance(ws, list) else ws
                                                  for code, ws in pair_words.items()}
        self._token_words: dict[int, list[int]] = {}
        self._counts = counts
        self._words: list[list[int]] = [list(w) for w in words]
        freq = [0] * len(self.tokens)
        for word, c in zip(words, counts):
            for b in word:
                freq[b] += c
        self._freq = freq
        keys = self._keys
        self._heap = [(-c, keys[code >> _SHIFT] + keys[code & _MASK], code) for code, c in pair_counts.items()]
        heapq.heapify(self._heap)

    def batches(self, vocab_size: int, corpus_tokens: int) -> Iterator[MergeBatch]:
        """Merge until ``vocab_size`` live tokens (or no pair is left), in batches."""
        columns: tuple[array[int], ...] = tuple(array("q") for _ in range(5))
        splits_before = 0
        restores = False
        started = time.monotonic()
        while self._first_merged + len(self.live) < vocab_size:
            step = self.step()
            if step is None:
                break
            left, right, new, count, removed, restored = step
            corpus_tokens -= removed
            restores |= restored
            for column, value in zip(columns, (new, left, right, count, corpus_tokens)):
                column.append(value)
            if len(columns[0]) == _BATCH or time.monotonic() - started >= _BATCH_SECONDS:
                yield self._batch(columns, splits_before, restores)
                columns = tuple(array("q") for _ in range(5))
                splits_before, restores, started = len(self.splits), False, time.monotonic()
        if columns[0]:
            yield self._batch(columns, splits_before, restores)

    def _batch(self, columns: tuple[array[int], ...], splits_before: int, restores: bool) -> MergeBatch:
        new_ids, lefts, rights, counts, tokens = columns
        return MergeBatch(len(self.merges) - len(new_ids), new_ids, lefts, rights, counts, tokens,
                          splits=tuple(self.splits[splits_before:]), restores=restores)

    def step(self) -> tuple[int, int, int, int, int, bool] | None:
        """One merge and its removals: ``(left, right, new, pair count, tokens removed from
        the corpus net of the splits' pieces, whether the token existed)``; ``None`` when no
        pair is left."""
        heap, pairs = self._heap, self._pairs
        while heap:
            neg, key, code = heap[0]
            actual = pairs.get(code, 0)
            if actual == -neg:
                break
            heapq.heappop(heap)
            if actual > 0:
                heapq.heappush(heap, (-actual, key, code))
        else:
            return None
        heapq.heappop(heap)
        a, b = code >> _SHIFT, code & _MASK
        token = self.tokens[a] + self.tokens[b]
        z = self._id_of.get(token)
        restored = z is not None
        if z is None:
            z = len(self.tokens)
            self.tokens.append(token)
            self._keys.append(self._key(token))
            self._freq.append(0)
            self._id_of[token] = z
            self.parents[z] = (a, b)
        self.live[z] = None
        rank = len(self.merges)
        self.merges.append((a, b, z))

        raised: set[int] = set()
        made = 0
        holders = self._token_words.setdefault(z, [])
        for w in dict.fromkeys(self._pair_words.pop(code, ())):
            word = self._words[w]
            out, n = _merge_word(word, a, b, z)
            if n:
                c = self._counts[w]
                made += n * c
                self._rewrite(w, word, out, c, raised)
                holders.append(w)
        self._freq[z] += made
        self._freq[a] -= made
        self._freq[b] -= made
        removed = made
        for x in (a,) if a == b else (a, b):
            rest = self._freq[x]
            if x in self.live and made / (made + rest) > self.threshold:
                removed -= self._remove(x, rank, raised)
        keys = self._keys
        for c in raised:
            count = pairs.get(c, 0)
            if count > 0:
                heapq.heappush(heap, (-count, keys[c >> _SHIFT] + keys[c & _MASK], c))
        return a, b, z, -neg, removed, restored

    def _remove(self, x: int, rank: int, raised: set[int]) -> int:
        """Remove token ``x``: its occurrences become its pieces. Returns the tokens added."""
        del self.live[x]
        pieces = self.walk(x)
        occurrences = self._freq[x]
        for w in dict.fromkeys(self._token_words.pop(x, ())):
            word = self._words[w]
            if x not in word:
                continue
            out: list[int] = []
            for t in word:
                if t == x:
                    out += pieces
                else:
                    out.append(t)
            self._rewrite(w, word, out, self._counts[w], raised)
            for p in pieces:
                if p >= self._first_merged:
                    self._token_words.setdefault(p, []).append(w)
        self._freq[x] = 0
        for p in pieces:
            self._freq[p] += occurrences
        tokens = self.tokens
        self.splits.append(SplitEvent(rank, x, tokens[x], tuple(tokens[p] for p in pieces), occurrences))
        return occurrences * (len(pieces) - 1)

    def walk(self, x: int) -> list[int]:
        """The pieces of token ``x``: itself if live or one byte, else its first parents' pieces."""
        if x < self._first_merged or x in self.live:
            return [x]
        left, right = self.parents[x]
        return self.walk(left) + self.walk(right)

    def _rewrite(self, w: int, old: list[int], new: list[int], c: int, raised: set[int]) -> None:
        """Word ``w`` becomes ``new``: its pairs' counts moved by ``c`` each; pairs that rose
        are indexed and noted for the heap."""
        delta: dict[int, int] = {}
        get = delta.get
        for i in range(len(old) - 1):
            code = old[i] << _SHIFT | old[i + 1]
            delta[code] = get(code, 0) - c
        for i in range(len(new) - 1):
            code = new[i] << _SHIFT | new[i + 1]
            delta[code] = get(code, 0) + c
        pairs, pair_words = self._pairs, self._pair_words
        for code, d in delta.items():
            if d == 0:
                continue
            count = pairs.get(code, 0) + d
            if count:
                pairs[code] = count
            else:
                pairs.pop(code, None)
            if d > 0:
                raised.add(code)
                pair_words.setdefault(code, []).append(w)
        self._words[w] = new

    def finished(self) -> Finished:
        """The compact vocabulary, every merge and every split."""
        tokens = self.tokens
        vocab = dict(enumerate(tokens[: self._first_merged]))
        for token_id in sorted(self.live):
            vocab[len(vocab)] = tokens[token_id]
        merges = [(tokens[a], tokens[b]) for a, b, _ in self.merges]
        return Finished(vocab=vocab, merges=merges, splits=tuple(self.splits))


def _merge_word(word: list[int], a: int, b: int, z: int) -> tuple[list[int], int]:
    """``word`` with each ``(a, b)`` merged, left to right, and how many were."""
    out: list[int] = []
    i, n, made = 0, len(word), 0
    while i < n:
        if i + 1 < n and word[i] == a and word[i + 1] == b:
            out.append(z)
            i += 2
            made += 1
        else:
            out.append(word[i])
            i += 1
    return out, made


# ---------------------------------------------------------------------- the event list

Event = tuple[str, bytes, bytes] | tuple[str, bytes, tuple[bytes, ...]]
"""``("merge", left, right)`` or ``("split", token, pieces)``."""


def picky_events(merges: Sequence[tuple[bytes, bytes]], splits: Sequence[SplitEvent]) -> list[Event]:
    """Merges and splits in the order they happened (a split follows the merge of its rank)."""
    events: list[Event] = []
    position = 0
    for rank, (left, right) in enumerate(merges):
        events.append(("merge", left, right))
        while position < len(splits) and splits[position].rank == rank:
            events.append(("split", splits[position].token, splits[position].pieces))
            position += 1
    return events


def events_text(events: Sequence[Event]) -> str:
    """The event list as text: ``merge L R`` and ``split T P1 P2 ...`` lines, each token
    in GPT-2's printable byte form (as ``merges.txt``)."""
    from core.formats.bytes_unicode import bytes_to_string

    lines = [_EVENTS_HEADER]
    for kind, token, rest in events:
        if kind == "merge":
            lines.append(f"merge {bytes_to_string(token)} {bytes_to_string(rest)}")  # type: ignore[arg-type]
        else:
            lines.append("split " + " ".join(map(bytes_to_string, (token, *rest))))
    return "\n".join(lines) + "\n"


def read_events(path: str | os.PathLike[str]) -> list[Event]:
    """Read ``picky_events.txt``.

    Raises:
        FormatError: a line that is not an event, naming the file and the line.
    """
    from core.formats.bytes_unicode import string_to_bytes

    p = Path(path)
    events: list[Event] = []
    with open(p, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if number == 1 and line == _EVENTS_HEADER or not line:
                continue
            parts = line.split(" ")
            try:
                tokens = [string_to_bytes(part) for part in parts[1:]]
            except KeyError:
                raise FormatError(f"{p}: line {number}: a token is not in GPT-2's byte form: {line[:80]!r}") from None
            if parts[0] == "merge" and len(tokens) == 2:
                events.append(("merge", tokens[0], tokens[1]))
            elif parts[0] == "split" and len(tokens) >= 3:
                events.append(("split", tokens[0], tuple(tokens[1:])))
            else:
                raise FormatError(f"{p}: line {number}: expected 'merge LEFT RIGHT' or 'split TOKEN PIECE PIECE...', "
                                  f"got {line[:80]!r}")
    return events
