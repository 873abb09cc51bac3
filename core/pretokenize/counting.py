"""Counting pre-tokens: one chunk at a time (`count_chunk`), added up (`CountTable`).

``count_chunk(b"ab ab<|e|>ab", gpt2, ["<|e|>"])`` counts ``{b"ab": 2, b" ab": 1}``:
special tokens split the text and are not counted. Two ways, the same counts:

- the native pre-tokenizer (`core.pretokenize.native`, GPT-2 and GPT-4 patterns): one
  pass over the bytes in C, counting into the chunk's own hash table, handed back
  *packed* — one bytes object, however many distinct pre-tokens — which
  `CountTable.add` adds into another C table in the parent;
- the `regex` path (custom patterns, ``BPE_STUDIO_PURE_PYTHON=1``): `count_with_regex`
  cuts the text into pieces (`core.pretokenize.pieces`), counts them with
  `collections.Counter` and runs the regex once per distinct piece.

Counts travel in one form, whichever path made them: the packed bytes (`pack_counts`
makes them from the regex path's dict, in C-made arrays), added by the receiver into its
native table. Only where the extension is absent or forced off (``BPE_STUDIO_PURE_PYTHON=1``)
do they travel as a dict, added into a `collections.Counter`.
"""

from __future__ import annotations

import re
import struct
import threading
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

from core.pretokenize.native import native_module, python_forced, scanner_for
from core.pretokenize.patterns import Pattern
from core.pretokenize.pieces import split_pieces
from core.pretokenize.specials import NATIVE_MAX_SPECIALS, special_bytes_regex, split_on_specials

if TYPE_CHECKING:
    from core.pretokenize._native import Counts

__all__ = ["ChunkCounts", "CountTable", "NativeTally", "SortedBody", "chunk_totals", "count_chunk", "count_chunk_bytes",
           "count_invalid_bytes", "count_with_regex", "pack_counts"]

PIECE_CACHE_ENTRIES = 1 << 18
"""At most this many distinct pieces are kept in a `count_with_regex` cache (tens of MB)."""


@dataclass(frozen=True)
class ChunkCounts:
    """The pre-token counts of one chunk, compact enough to send between processes.

    Attributes:
        packed: the counts packed (``_native.Counts.packed()``'s layout, `pack_counts`), or ``None``.
        counts: ``{pre-token bytes: occurrences}``, only where the native module is absent or
            forced off (else ``None``).
        invalid: bytes of the chunk that were not valid UTF-8.
        table: the native path's counts as the table itself (`NativeTally`, in worker
            threads: never sent between processes), or ``None``; `CountTable.add` takes it
            over whole when it is the first counts it gets, else adds it.
    """

    packed: bytes | None
    counts: dict[bytes, int] | None
    invalid: int
    table: Counts | None = field(default=None, compare=False, repr=False)


def chunk_totals(chunk: ChunkCounts) -> tuple[int, int]:
    """``(pre-tokens, bytes of pre-tokens)`` of a packed or dict chunk: the sum of its counts
    and of each pre-token's length times its count (exact), with no object per pre-token
    for packed counts."""
    if chunk.table is not None:
        total, corpus_bytes = chunk.table.totals()
        return int(total), int(corpus_bytes)
    total = corpus_bytes = 0
    if chunk.packed is not None:
        import numpy as np  # only here: counting alone does not load numpy

        n, _, key_bytes = struct.unpack_from("=qqq", chunk.packed)
        counts = np.frombuffer(chunk.packed, np.int64, n, 24)
        lengths = np.frombuffer(chunk.packed, np.uint32, n, 24 + 8 * n)
        most = int(counts.max()) if n else 0
        if most * max(n, key_bytes) < 1 << 63:  # no int64 sum can overflow
            total, corpus_bytes = int(counts.sum()), int(np.dot(counts, lengths.astype(np.int64)))
        else:
            total, corpus_bytes = sum(counts.tolist()), sum(map(int.__mul__, counts.tolist(), lengths.tolist()))
    for key, count in (chunk.counts or {}).items():
        total += count
        corpus_bytes += len(key) * count
    return total, corpus_bytes


@dataclass
class SortedBody:
    """A native table's counts sorted by pre-token bytes in the packed layout, little-endian
    (the counts file's body, `core.corpus.bpc_file`), written a block at a time: the table's
    slots sorted (4 bytes a pre-token), its keys never copied. Of a `CountTable` kept as
    two tables, their sum, which is never made. The tables must not change meanwhile."""

    distinct: int
    key_bytes: int
    invalid: int
    tables: tuple[Counts, bytes, Counts | None, bytes | None]

    @property
    def size(self) -> int:
        return 24 + 12 * self.distinct + self.key_bytes

    def write(self, write: Callable[[bytes], object]) -> None:
        """Hand the body to ``write``, a block at a time."""
        first, slots, other, other_slots = self.tables
        write(struct.pack("<qqq", self.distinct, self.invalid, self.key_bytes))
        for section in (0, 1, 2):  # the counts, the lengths, the keys
            if other is None:
                first.write_sorted(write, section, slots)
            else:
                first.write_sorted(write, section, slots, other, other_slots)


def count_chunk(
    data: bytes | str,
    pattern: Pattern,
    special_tokens: Sequence[str],
    cache: dict[str, list[str]] | None = None,
) -> ChunkCounts:
    """Count the pre-tokens of one chunk of a corpus (special tokens split it, uncounted).

    ``data`` is the chunk's bytes (invalid UTF-8 is kept byte-exact) or its text (decoded
    with ``surrogateescape``). Its start and end are the start and end of a text: cut a
    corpus only where `core.corpus.chunks` cuts it, so the chunks' counts add up to the
    whole corpus's. ``cache`` (piece -> pre-tokens) serves the regex path only (see
    `count_with_regex`); keep one per process and pass it to each call.

    ``count_chunk(b"ab ab<|e|>ab", resolve_pattern("gpt2"), ["<|e|>"])`` counts
    ``{b"ab": 2, b" ab": 1}``; add chunks up with `CountTable`.
    """
    scanner = scanner_for(pattern)
    if scanner is None:
        text = data if isinstance(data, str) else data.decode("utf-8", errors="surrogateescape")
        counts = count_with_regex(text, pattern, special_tokens, cache)
        invalid = count_invalid_bytes(text)
        words = [t.encode("utf-8", errors="surrogateescape") for t in counts]
        if _can_pack():  # a custom pattern: packed like the native path's
            return ChunkCounts(pack_counts(words, counts.values(), invalid), None, invalid)
        return ChunkCounts(None, dict(zip(words, counts.values())), invalid)
    if isinstance(data, str):
        data = data.encode("utf-8", errors="surrogateescape")
    native = native_module()
    assert native is not None
    counter = native.Counts()
    _scan(counter, data, scanner, special_tokens)
    return ChunkCounts(counter.packed(), None, counter.invalid)


def pack_counts(words: Sequence[bytes], counts: Iterable[int], invalid: int) -> bytes:
    """Distinct pre-tokens and their counts (in that order) in the native counter's packed
    layout (``_native.c``: int64 n, int64 invalid bytes, int64 keys' length, int64 × n
    counts, uint32 × n key lengths, the keys; this machine's byte order), for
    ``Counts.add_packed``. The arrays are made in C: no Python loop per pre-token."""
    numbers = array("q", counts)
    lengths = array("I", map(len, words))
    head = struct.pack("=qqq", len(words), invalid, sum(lengths))
    return b"".join((head, numbers.tobytes(), lengths.tobytes(), *words))


def _scan(counter: Counts, data: bytes, scanner: int, special_tokens: Sequence[str]) -> None:
    """Count the pre-tokens of ``data`` into ``counter`` (native), special tokens splitting it:
    in C, in one call without the GIL (so worker threads count at once), for up to
    `NATIVE_MAX_SPECIALS` special tokens; for more, cut here and each stretch scanned."""
    if len(special_tokens) <= NATIVE_MAX_SPECIALS:
        counter.scan(data, scanner, specials=[t.encode("utf-8") for t in special_tokens])
        return
    splitter = special_bytes_regex(tuple(special_tokens))
    assert splitter is not None
    pos = 0
    for m in splitter.finditer(data):
        if m.start() > pos:
            counter.scan(data, scanner, pos, m.start())
        pos = m.end()
    if pos < len(data):
        counter.scan(data, scanner, pos)


class NativeTally:
    """One native table that a share of consecutive chunks is counted into, in order (by one
    worker thread; `core.corpus.shares`): one table to add up per share instead of one per
    chunk, the packed form made once. Adding tables is most of the counting's work not done
    in parallel (one consumer does it) and grows with each table's distinct pre-tokens;
    chunks in order, so the first-seen order of the whole corpus is kept.
    """

    def __init__(self, scanner: int) -> None:
        module = _counts_module()
        self._counts = module.Counts()
        self._scanner = scanner

    def count(self, data: bytes, pattern: Pattern, special_tokens: Sequence[str],
              cache: dict[str, list[str]] | None = None) -> ChunkCounts:
        """Count one chunk into the table, as `count_chunk_bytes` would (the same arguments;
        ``pattern`` must be the scanner's). What it returns is empty: the counts are in the table."""
        _scan(self._counts, data, self._scanner, special_tokens)
        return ChunkCounts(None, None, 0)

    def chunk(self) -> ChunkCounts:
        """The counts of every chunk counted, as one `ChunkCounts` holding the table itself
        (to be added once, in this process; the tally is not to be used after)."""
        return ChunkCounts(None, None, self._counts.invalid, self._counts)


class CountTable:
    """The pre-token counts of a whole corpus, added up one `ChunkCounts` at a time.

    Packed (native) counts are added in C, with no Python object per pre-token until
    `items` hands the totals over. Native tables handed over are kept as two, the first and
    the sum of those after it: a new table is added to that sum when the sum is at least as
    large, else the sum is added to the first and the new table takes its place. Then
    `packed_words` (what training reads) reads the two as their sum without making it
    (anything else makes it first), so the second thread's large table is never added to
    the first's while one core idles; only the small shares stolen at the end are added.
    """

    def __init__(self) -> None:
        self._native: Counts | None = None  # once a packed chunk comes
        self._last: Counts | None = None  # the tables after the first, added up, not added to it yet
        self._dict: Counter[bytes] = Counter()
        self.invalid = 0

    def add(self, chunk: ChunkCounts) -> None:
        """Add one chunk's counts."""
        self.invalid += chunk.invalid
        if chunk.table is not None:
            if self._native is None:
                self._native = chunk.table  # taken over: adding it to an empty table would copy it
            elif self._last is None:
                self._last = chunk.table
            elif len(self._last) >= len(chunk.table):
                self._last.add(chunk.table)
            else:
                self._settle()
                self._last = chunk.table
        if chunk.packed is not None:
            if self._native is None:
                module = _counts_module()
                self._native = module.Counts()
            self._settled().add_packed(chunk.packed)
        if chunk.counts:
            if not self._dict:
                self._dict.update(chunk.counts)
            else:
                get = self._dict.get
                for key, n in chunk.counts.items():
                    self._dict[key] = get(key, 0) + n

    def _settle(self) -> None:
        """Add the tables after the first in."""
        if self._last is not None:
            assert self._native is not None
            self._native.add(self._last)
            self._last = None

    def _settled(self) -> Counts:
        self._settle()
        assert self._native is not None
        return self._native

    def chunk(self) -> ChunkCounts:
        """These counts as one `ChunkCounts` (packed where they came packed), to send on."""
        packed = self._settled().packed() if self._native is not None else None
        return ChunkCounts(packed, dict(self._dict) if self._dict else None, self.invalid)

    def packed_words(self) -> tuple[bytes, bytes, bytes] | None:
        """``(every pre-token's bytes one after another, lengths, counts)`` in the order of
        `items`, the last two as int64 bytes, made in C (no object per pre-token) — or None
        unless every count is in the native table."""
        if self._native is None or self._dict:
            return None
        return self._native.columns(self._last)

    def arrays(self) -> tuple[bytes, bytes] | None:
        """The length and count of each pre-token of `items`, in its order, as int64 bytes
        made in C — or None unless every count is in the native table."""
        return self._settled().arrays() if self._native is not None and not self._dict else None

    def totals(self) -> tuple[int, int] | None:
        """``(pre-tokens, bytes of pre-tokens)`` (`chunk_totals`), read in C — or None unless
        every count is in the native table."""
        if self._native is None or self._dict:
            return None
        sums = [table.totals() for table in (self._native, self._last) if table is not None]
        return sum(int(t) for t, _ in sums), sum(int(b) for _, b in sums)

    def sorted_body(self) -> SortedBody | None:
        """The counts sorted for the counts file, to write (`SortedBody`) — or None unless
        every count is in the native table."""
        if self._native is None or self._dict:
            return None
        if self._last is None:
            slots = self._native.sort_slots()
            distinct, key_bytes = self._native.sorted_size(slots)
            return SortedBody(distinct, key_bytes, self.invalid, (self._native, slots, None, None))
        last, sorted_last = self._last, []  # the two sorted at once (each without the GIL)
        helper = threading.Thread(target=lambda: sorted_last.append(last.sort_slots()), daemon=True)
        helper.start()
        slots = self._native.sort_slots()
        helper.join()
        if not sorted_last:
            raise MemoryError("sorting the pre-token counts failed")
        last_slots = sorted_last[0]
        distinct, key_bytes = self._native.sorted_size(slots, self._last, last_slots)
        return SortedBody(distinct, key_bytes, self.invalid, (self._native, slots, self._last, last_slots))

    def items(self) -> tuple[list[bytes], list[int]]:
        """``(pre-tokens, counts)``: every distinct pre-token and its total, in first-seen order."""
        words: list[bytes] = []
        counts: list[int] = []
        if self._native is not None:
            words, counts = self._settled().items()
        if self._dict:
            if words:  # chunks counted both ways (not in practice): add the dict's in
                merged = Counter(dict(zip(words, counts)))
                merged.update(self._dict)
                return list(merged), list(merged.values())
            return list(self._dict), list(self._dict.values())
        return words, counts


def _can_pack() -> bool:
    """Whether counts travel packed: the extension is built and not forced off. (Not
    `native_module`: whether its scanner's Unicode tables match `regex` does not matter to
    its hash table, and checking that slows the start of every new worker process.)"""
    from core.pretokenize import native

    return native._native is not None and not python_forced()


def _counts_module() -> ModuleType:
    """The compiled module, to add packed counts (made by a process that had it)."""
    from core.pretokenize import native

    module = native._native
    if module is None:
        raise RuntimeError("packed pre-token counts need the native pre-tokenizer, which is not built here")
    return module


def count_with_regex(
    text: str,
    pattern: Pattern,
    special_tokens: Sequence[str],
    cache: dict[str, list[str]] | None = None,
) -> dict[str, int]:
    """Count the pre-tokens of ``text`` with the `regex` module (special tokens split the
    text and are not counted).

    ``count_with_regex("ab ab<|e|>ab", gpt2, ["<|e|>"]) -> {"ab": 2, " ab": 1}``

    Args:
        cache: piece -> pre-tokens, shared by the calls for the chunks of one file so
            they do not run the regex again over the pieces they have in common;
            emptied when it would grow past `PIECE_CACHE_ENTRIES`.
    """
    pieces: Counter[str] = Counter()
    for segment, is_special in split_on_specials(text, special_tokens):
        if not is_special:
            pieces.update(split_pieces(segment, pattern))
    if cache is None:
        cache = {}
    elif len(cache) + len(pieces) > PIECE_CACHE_ENTRIES:
        cache.clear()
    counts: dict[str, int] = {}
    get = counts.get
    findall = pattern.findall
    for piece, n in pieces.items():
        tokens = cache.get(piece)
        if tokens is None:
            tokens = cache[piece] = findall(piece)
        for token in tokens:
            counts[token] = get(token, 0) + n
    return counts


_INVALID_BYTE = re.compile("[\udc80-\udcff]")


def count_invalid_bytes(text: str) -> int:
    """Bytes that were not valid UTF-8, as surrogate escapes in ``text``."""
    return len(_INVALID_BYTE.findall(text))


def count_chunk_bytes(
    data: bytes,
    pattern: Pattern,
    special_tokens: Sequence[str],
    cache: dict[str, list[str]] | None = None,
) -> ChunkCounts:
    """Pre-token counts of one chunk of a corpus, compact (`count_chunk`): the one per-chunk
    counter that training uses for every kind of input (`core.corpus.documents`)."""
    return count_chunk(data, pattern, special_tokens, cache)
