"""Encoding pieces of text to ids, fast: the tokenizer's caches, batching and BPE kernels.

Adds `PieceEncoder`, which `core.encode.tokenizer.Tokenizer` uses for everything between cutting
the text into *pieces* (at special tokens and safe cut points) and the final ids:

- two capped caches, piece -> ids and pre-token -> ids, so repeated text skips the regex
  and the merge loop (each distinct piece of one call is looked up once); the ids are
  stored packed (`pack_ids`: int64 bytes), which joins into one array without touching
  each id and takes a third of a tuple's memory;
- pieces not in the cache are pre-tokenized together in one regex call, and new pre-tokens
  are merged together by the compiled kernel (``core.encode._bpe_kernel``, an optional C
  extension), else one by one by the Python reference (`core.encode.merge.merge_word`);
- the ids of every occurrence are gathered with numpy (`_gather`), not joined in Python.

BPE of one pre-token (`core.encode.merge`): the adjacent pair whose merge has the lowest
rank is merged, the leftmost on ties, until no pair has a merge:
``merges=[(b"a", b"b"), (b"ab", b"c")]``, ``b"abcab" -> [b"abc", b"ab"]``.
"""

from __future__ import annotations

import array
import codecs
import collections
import functools
import itertools
import operator
from collections.abc import Container, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from core.encode.merge import merge_word
from core.pretokenize.native import python_forced
from core.pretokenize.patterns import Pattern, resolve_pattern
from core.pretokenize.pieces import WHITESPACE_SET, piece_start_chars

if TYPE_CHECKING:
    from core.encode._bpe_kernel import BpeTable


def _load_kernel() -> type[BpeTable] | None:
    try:
        from core.encode._bpe_kernel import BpeTable
    except ImportError:  # built without a C compiler: numpy and Python do the merging
        return None
    return BpeTable


_BpeTable = _load_kernel()

__all__ = [
    "CACHE_ENTRIES", "TEXT_ERRORS", "CacheSnapshot", "EncoderState", "PieceEncoder", "pack_ids", "unpack_ids",
]

CacheSnapshot = tuple[list[tuple[str, bytes]], list[tuple[str, bytes]]]
"""The contents of an encoder's two caches: (piece, packed ids) and (pre-token, packed ids) pairs."""

EncoderState = tuple[list[int], np.ndarray, np.ndarray, str, int]
"""A `PieceEncoder` in a compact form to send to another process (`PieceEncoder.state`):
byte ids, merges as ``(left, right, new id)`` rows in rank order (first rank of repeated
pairs), ``new_id``, the pattern (name or regex) and the cache size. Three numpy arrays
pickle much faster than the ``(left, right) -> rank`` dict."""


def _encode_surrogates(err: UnicodeError) -> tuple[bytes, int]:
    """Encode error handler: ``surrogateescape`` characters become their raw byte, other
    lone surrogates become U+FFFD (as tiktoken does)."""
    if not isinstance(err, UnicodeEncodeError):
        raise err
    out = bytearray()
    for ch in err.object[err.start : err.end]:
        cp = ord(ch)
        out += bytes([cp - 0xDC00]) if 0xDC80 <= cp <= 0xDCFF else "\ufffd".encode()
    return bytes(out), err.end


TEXT_ERRORS = "bpe_studio.surrogates"
"""The ``errors`` handler that turns text into the bytes the tokenizer encodes."""
codecs.register_error(TEXT_ERRORS, _encode_surrogates)

CACHE_ENTRIES = 1 << 14
"""Default size of each cache; ~200 bytes an entry keeps both within a few MB."""


_ID_BYTES = 8  # packed ids are native int64


def pack_ids(ids: Iterable[int]) -> bytes:
    """Ids as the caches hold them: native int64 bytes. ``unpack_ids(pack_ids([5, 7])) == (5, 7)``."""
    return array.array("q", ids).tobytes()


def unpack_ids(packed: bytes) -> tuple[int, ...]:
    """The ids `pack_ids` packed."""
    return tuple(memoryview(packed).cast("q"))


def _split_packed(flat: np.ndarray, ends: list[int]) -> list[bytes]:
    """``flat[0:ends[0]], flat[ends[0]:ends[1]], ...`` packed: one bytes copy, then slices."""
    data = flat[: ends[-1]].astype(np.int64, copy=False).tobytes() if ends else b""
    return [data[a * _ID_BYTES : b * _ID_BYTES] for a, b in zip([0, *ends], ends)]


def _gather(
    values: Sequence[bytes | None], new_flat: np.ndarray, new_lengths: np.ndarray, which: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Ids of a sequence of items, each the ids of one distinct item, gathered with numpy.

    Args:
        values: per distinct item, its packed ids (`pack_ids`), or ``None`` for the items
            described, in order, by ``new_flat`` (their ids one after another) and ``new_lengths``.
        which: the distinct item at each position of the sequence.

    Returns:
        ``(ids of the whole sequence, ids per position)``. Example: ``values=[pack_ids([5]), None]``,
        ``new_flat=[7, 8]``, ``new_lengths=[2]``, ``which=[1, 0, 1]`` -> ``[7, 8, 5, 7, 8], [2, 1, 2]``.
    """
    chosen = list(map(operator.is_not, values, itertools.repeat(None)))
    done: list[bytes] = list(itertools.compress(values, chosen))  # type: ignore[arg-type]  # the non-None ones
    done_lengths = np.fromiter(map(len, done), np.int64, len(done)) // _ID_BYTES
    done_flat = np.frombuffer(b"".join(done), np.int64)
    mask = np.array(chosen, dtype=bool)
    lengths = np.empty(len(values), np.int64)
    offsets = np.empty(len(values), np.int64)
    lengths[mask] = done_lengths
    offsets[mask] = np.cumsum(done_lengths) - done_lengths
    lengths[~mask] = new_lengths
    offsets[~mask] = len(done_flat) + np.cumsum(new_lengths) - new_lengths
    flat = np.concatenate([done_flat, new_flat])
    # Position k copies flat[offsets[i]:offsets[i] + lengths[i]] where i = which[k].
    counts = lengths[which]
    starts = np.cumsum(counts) - counts
    gather = np.repeat(offsets[which] - starts, counts) + np.arange(int(counts.sum()))
    return flat[gather], counts


def _distinct(items: list[str]) -> tuple[dict[str, int], np.ndarray]:
    """``({item: index of its first kind}, index of each item)``, in one pass in C: a
    ``defaultdict`` numbers each new item as ``map`` meets it (half the time of
    ``dict.fromkeys`` followed by a lookup of every item).
    ``["a", "b", "a"] -> ({"a": 0, "b": 1}, [0, 1, 0])``."""
    position: collections.defaultdict[str, int] = collections.defaultdict(itertools.count().__next__)
    which = np.fromiter(map(position.__getitem__, items), np.int64, len(items))
    return position, which


def _evict(cache: dict[str, bytes], count: int, in_use: Container[str]) -> None:
    """Drop ``count`` entries of a cache, oldest first, but give the entries the current call
    uses a second chance: they move to the newest end instead (dicts keep insertion order).
    So the frequent pieces, which every chunk of a corpus uses, stay; rare old ones go first.
    (Dropping the oldest regardless threw out the most frequent pieces, seen first, and cost a
    third more time on a corpus encoded chunk by chunk.)"""
    if count <= 0:
        return
    for key in list(cache):
        value = cache.pop(key, None)  # another thread may have dropped it already
        if value is not None and key in in_use:
            cache[key] = value
        else:
            count -= 1
            if count == 0:
                return
    for key in list(itertools.islice(cache, count)):  # all in use: the oldest go
        cache.pop(key, None)


class PieceEncoder:
    """Pieces and pre-tokens to ids for one vocabulary, with capped caches.

    Args:
        byte_ids: the id of each single byte (256 entries).
        merge_rows: ``(left id, right id, rank)`` int64 rows, one a pair (its first rank), by rank.
        new_id: ``rank -> id`` of the merged token.
        pattern: the pre-tokenization pattern.
        cache_entries: size of each of the two caches.
    """

    def __init__(
        self,
        byte_ids: list[int],
        merge_rows: np.ndarray,
        new_id: list[int],
        pattern: Pattern,
        cache_entries: int = CACHE_ENTRIES,
    ) -> None:
        self._byte_ids = byte_ids
        self._rows = merge_rows
        self._new_id = new_id
        self.pattern = pattern
        self.cache_entries = max(cache_entries, 1)
        # Characters a piece starts with when it starts at a safe cut point.
        self._cut_starts = piece_start_chars(pattern)
        self._bpe_table: BpeTable | None = None  # the compiled kernel's, built when first needed
        self._piece_cache: dict[str, bytes] = {}  # piece -> packed ids (`pack_ids`)
        self._token_cache: dict[str, bytes] = {}  # pre-token -> packed ids

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the compiled table and the pair dict (rebuilt on first use), and
        with empty caches."""
        state = {**self.__dict__, "_bpe_table": None, "_piece_cache": {}, "_token_cache": {}}
        state.pop("_pair_rank", None)
        return state

    def with_cache(self, cache_entries: int) -> PieceEncoder:
        """An encoder of the same vocabulary with empty caches of its own, sharing this one's
        merge tables (nothing is copied; the compiled one is built here if it was not yet)."""
        other = PieceEncoder(self._byte_ids, self._rows, self._new_id, self.pattern, cache_entries)
        other._bpe_table = self._compiled()
        return other

    @functools.cached_property
    def _pair_rank(self) -> dict[tuple[int, int], int]:
        """``(left id, right id) -> rank``, for the Python path (built when it first runs)."""
        left, right, rank = self._rows.T.tolist() if len(self._rows) else ([], [], [])
        return dict(zip(zip(left, right), rank))

    def state(self) -> EncoderState:
        """This encoder's vocabulary and pattern, compact, for `from_state` in another process."""
        source = self.pattern.name if self.pattern.name in ("gpt2", "gpt4") else self.pattern.source
        return self._byte_ids, self._rows, np.asarray(self._new_id, dtype=np.int64), source, self.cache_entries

    def prepare(self) -> None:
        """Build the merge tables now rather than at the first encoding (before forking
        workers, say, so that they share them)."""
        self._compiled()

    def _compiled(self) -> BpeTable | None:
        """The compiled kernel's merge table, or ``None`` when it is not built or
        ``BPE_STUDIO_PURE_PYTHON=1`` asks for the Python and numpy paths."""
        if _BpeTable is None or python_forced():
            return None
        if self._bpe_table is None:
            self._bpe_table = _BpeTable(self._byte_ids, self._rows, np.asarray(self._new_id, dtype=np.int64))
        return self._bpe_table

    @classmethod
    def from_state(cls, state: EncoderState) -> PieceEncoder:
        """The encoder `state` describes (empty caches)."""
        byte_ids, rows, new_id, source, cache_entries = state
        return cls(list(byte_ids), rows, new_id.tolist(), resolve_pattern(source), cache_entries)

    def bpe(self, data: bytes) -> tuple[int, ...]:
        """Merge one pre-token's bytes in Python (`core.encode.merge.merge_word`)."""
        return tuple(merge_word(list(map(self._byte_ids.__getitem__, data)), self._pair_rank, self._new_id))

    def encode_pretoken(self, token: str) -> tuple[int, ...]:
        """Ids of one pre-token, through the pre-token cache."""
        return unpack_ids(self._pretoken_packed(token))

    def _pretoken_packed(self, token: str) -> bytes:
        cache = self._token_cache
        ids = cache.get(token)
        if ids is None:
            table = self._compiled()
            if table is None:
                ids = pack_ids(self.bpe(token.encode("utf-8", TEXT_ERRORS)))
            else:
                ids = table.encode_text(token, array.array("q", (len(token),)))[0]
            if len(cache) >= self.cache_entries:
                _evict(cache, self.cache_entries // 4 + 1, ())
            cache[token] = ids
        return ids

    def _piece_packed(self, piece: str, in_use: Container[str]) -> bytes:
        """Packed ids of one piece (text between safe cut points), into the piece cache;
        ``in_use``: the pieces of the current call (kept if the cache must drop some)."""
        tokens = self.pattern.findall(piece)
        ids = b"".join(map(self._pretoken_packed, tokens))
        if len(piece) <= 256:  # custom patterns give whole segments as one piece
            cache = self._piece_cache
            if len(cache) >= self.cache_entries:
                _evict(cache, self.cache_entries // 4 + 1, in_use)
            cache[piece] = ids
        return ids

    def encode_pieces(self, pieces: list[str], special_ids: dict[str, int]) -> np.ndarray:
        """Ids of ``pieces`` in order, as an int64 array; ``special_ids`` maps the special
        tokens among them to their one id.

        Each distinct piece is looked up once; the pieces not in the cache are encoded
        together (`_encode_missing`); the ids of every occurrence are then gathered with
        numpy rather than joined piece by piece in Python.
        """
        position, which = _distinct(pieces)
        keys = list(position)
        values: list[bytes | None] = list(map(self._piece_cache.get, keys))
        for token, token_id in special_ids.items():
            if token in position:
                values[position[token]] = pack_ids((token_id,))
        missing = list(itertools.compress(keys, map(operator.is_, values, itertools.repeat(None))))
        singles: dict[str, bytes] = {}
        batch_flat, batch_lengths = self._encode_missing(missing, singles, position)
        for piece, ids in singles.items():
            values[position[piece]] = ids
        return _gather(values, batch_flat, batch_lengths, which)[0]

    def _encode_missing(
        self, pieces: list[str], table: dict[str, bytes], in_use: Container[str]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Encode pieces not in the cache: some one by one into ``table``, the rest together.

        Calling the regex once per short piece costs more than the matching itself, so
        pieces that start at a safe cut point and end just before one (for GPT-2: whitespace
        first, non-whitespace last) are joined and pre-tokenized in one call; the joints are
        safe cut points, so no pre-token spans two pieces. Other pieces are encoded one by
        one into ``table``. Returns ``(flat_ids, ids_per_piece)`` of the joined pieces, in
        the order of ``pieces``. ``in_use``: every piece of the current call (see `_evict`).
        """
        batch: list[str] = []
        if self._cut_starts is not None:
            starts, ws = self._cut_starts, WHITESPACE_SET
            for piece in pieces:
                if piece[0] in starts and piece[-1] not in ws:
                    batch.append(piece)
                else:
                    table[piece] = self._piece_packed(piece, in_use)
        else:
            for piece in pieces:
                table[piece] = self._piece_packed(piece, in_use)
        if not batch:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        joined = "".join(batch)
        tokens = self.pattern.findall(joined)
        token_lengths = np.fromiter(map(len, tokens), np.int64, len(tokens))
        kernel = self._compiled()
        if kernel is None:
            flat, id_counts = self._pretokens_arrays(tokens)
        else:  # every pre-token straight to the kernel: merging is cheaper than a cache lookup
            packed, packed_counts = kernel.encode_text(joined, token_lengths)
            flat, id_counts = np.frombuffer(packed, np.int64), np.frombuffer(packed_counts, np.int64)
        # Piece i holds pre-tokens ends[i - 1]:ends[i] (found from the character lengths).
        token_ends = np.cumsum(token_lengths)
        piece_ends = np.cumsum(np.fromiter(map(len, batch), np.int64, len(batch)))
        ends = np.searchsorted(token_ends, piece_ends) + 1
        if not np.array_equal(token_ends[ends - 1], piece_ends):
            raise AssertionError("a pre-token crossed a safe cut point")
        id_ends = np.concatenate([[0], np.cumsum(id_counts)])[ends]
        lengths = np.diff(id_ends, prepend=0)
        # Cache the first pieces (first seen: on average the most frequent ones).
        room = min(len(batch), self._room(self._piece_cache))
        piece_ids = _split_packed(flat, id_ends[:room].tolist())
        self._remember(self._piece_cache, ((p, ids) for p, ids in zip(batch, piece_ids) if len(p) <= 256), in_use)
        return flat, lengths

    def _pretokens_arrays(self, tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """BPE of each pre-token, each distinct one merged once (through the cache):
        ``(ids of all pre-tokens one after another, ids per pre-token)``."""
        position, which = _distinct(tokens)
        keys = list(position)
        values: list[bytes | None] = list(map(self._token_cache.get, keys))
        missing = list(itertools.compress(keys, map(operator.is_, values, itertools.repeat(None))))
        new_flat, new_lengths = self._bpe_arrays([t.encode("utf-8", TEXT_ERRORS) for t in missing])
        if missing:  # cache the first ones (first seen: on average the most frequent)
            room = min(len(missing), self._room(self._token_cache))
            packed = _split_packed(new_flat, np.cumsum(new_lengths[:room]).tolist())
            self._remember(self._token_cache, zip(missing, packed), position)
        return _gather(values, new_flat, new_lengths, which)

    def _bpe_arrays(self, words: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """BPE of many pre-tokens: ``(merged ids one word after another, ids per word)``;
        in the compiled kernel when it is built, else by `bpe`."""
        table = self._compiled()
        if table is not None:  # the kernel takes text: surrogateescape gives each byte back
            texts = [w.decode("utf-8", "surrogateescape") for w in words]
            lengths = np.fromiter(map(len, texts), np.int64, len(texts))
            raw_ids, raw_counts = table.encode_text("".join(texts), lengths)
            return np.frombuffer(raw_ids, np.int64), np.frombuffer(raw_counts, np.int64)
        merged = [self.bpe(w) for w in words]
        lengths = np.fromiter(map(len, merged), np.int64, len(merged))
        flat = np.fromiter(itertools.chain.from_iterable(merged), np.int64, int(lengths.sum()))
        return flat, lengths

    def bpe_many(self, words: list[bytes]) -> list[tuple[int, ...]]:
        """`_bpe` of many pre-tokens, through `_bpe_arrays`."""
        flat, lengths = self._bpe_arrays(words)
        out = flat.tolist()
        bounds = [0, *itertools.accumulate(lengths.tolist())]
        return [tuple(out[a:b]) for a, b in zip(bounds, bounds[1:])]

    def snapshot(self) -> CacheSnapshot:
        """The caches' contents, to warm up another encoder of the same vocabulary."""
        return list(self._piece_cache.items()), list(self._token_cache.items())

    def warm(self, snapshot: CacheSnapshot) -> None:
        """Add a `snapshot` of another encoder's caches (of the same vocabulary) to these."""
        pieces, tokens = snapshot
        self._remember(self._piece_cache, pieces, ())
        self._remember(self._token_cache, tokens, ())

    def _room(self, cache: dict[str, bytes]) -> int:
        """How many new entries a batch adds to a cache: its free space, but at least 1/32
        of it, so a full cache still takes in new text's pieces, slowly: each entry added
        to a full cache costs an eviction, and admitting an eighth per 700 KB chunk made
        evictions ~8% of encoding a corpus."""
        return max(self.cache_entries - len(cache), self.cache_entries // 32, 1)

    def _remember(self, cache: dict[str, bytes], items: Iterable[tuple[str, bytes]], in_use: Container[str]) -> None:
        """Add entries to a cache, dropping old ones (`_evict`, at least a quarter of the cache
        at a time) to stay within the cap."""
        cap = self.cache_entries
        new = list(collections.deque(items, maxlen=cap))  # earlier ones would be dropped
        excess = len(cache) + len(new) - cap
        if excess > 0:
            _evict(cache, max(excess, cap // 4), in_use)
        cache.update(new)
