"""Picky BPE's merge loop in Python: the slow path `core.variants.picky.PickyLoop` falls back to.

It runs when the compiled kernel (``core/variants/_picky_kernel.c``) is not built, when
``BPE_STUDIO_PURE_PYTHON=1``, or when the counts are too large for the kernel's int64 and
doubles (weighted bytes of 2**53 or more). Both give the same merges, splits and ids (the
tests compare them with each other and with `core.variants.picky_reference`).

Incremental: pair counts, pair -> words and token -> words indexes (append-only, stale
entries skipped), per-token frequencies and a lazy heap; a merge rewrites only the words
holding its pair, a removal only the words holding the token. Rules: docs/variants.md.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from core.events import SplitEvent, initial_token_bytes

__all__ = ["PythonPickyLoop"]

_SHIFT = 32
_MASK = (1 << _SHIFT) - 1


class PythonPickyLoop:
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
