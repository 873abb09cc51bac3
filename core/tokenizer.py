"""The tokenizer: encode text to ids and decode ids back, with each token's span in the input.

Adds `Tokenizer`, built from a vocabulary and merges (or loaded from files), and
`TokenSpan`. Encoding follows the training semantics (SPEC §1) step by step:

1. Special tokens split the text (longest match first); each becomes its one id.
2. The rest is cut at the pattern's safe cut points into *pieces* (`core.pretokenize`);
   a capped cache maps each piece to its ids, so repeated text skips steps 3-4.
3. A piece is cut into pre-tokens by the pattern, and each pre-token into bytes
   (``surrogateescape`` characters back to the raw bytes they stand for).
4. BPE: the adjacent pair whose merge has the lowest rank is merged, until no pair of the
   piece has a merge (ranks come from a dict, not a scan of the merge list):
   ``merges=[(b"a", b"b"), (b"ab", b"c")]``, ``b"abcab" -> [b"abc", b"ab"]``.

With GPT-2's ``vocab.json``/``merges.txt`` the ids equal tiktoken's ``gpt2`` encoding.
"""

from __future__ import annotations

import bisect
import codecs
import collections
import contextlib
import functools
import gc
import itertools
import operator
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import regex

from core import formats
from core.bpe_batch import MergeTable, bpe_batch, bpe_long
from core.patterns import Pattern, resolve_pattern
from core.pretokenize import split_pieces
from core.specials import special_token_regex, validate_special_tokens

__all__ = ["TEXT_ERRORS", "TokenSpan", "Tokenizer", "TokenizerError"]


class TokenizerError(ValueError):
    """The vocabulary and merges do not fit together, or an id is not in the vocabulary."""


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

_NO_RANK = 1 << 62
_BATCH_WORDS = 64  # from this many new pre-tokens on, BPE runs in the numpy kernel...
_BATCH_WORD_BYTES = 64  # ...for those up to this long
_LONG_WORD = 128  # longer pre-tokens are merged with a heap (`bpe_long`)
_GC_PAUSE_CHARS = 1 << 16
_CACHE_ENTRIES = 1 << 14  # per cache; ~250 bytes an entry keeps both caches within a few MB
_ITER_BATCH_CHARS = 1 << 12  # encode_iterable collects this much text before cutting
_FALLBACK_CHARS = 1 << 16  # past this without an exact cut, cut at a pre-token boundary...
_FALLBACK_MARGIN = 1 << 12  # ...this far from the end of the buffered text


@dataclass(frozen=True, slots=True)
class TokenSpan:
    """Where one token of an encoded text lies in that text.

    Attributes:
        token_id: the token.
        byte_start, byte_end: the token's bytes in the UTF-8 encoding of the text.
        char_start, char_end: the characters the token touches. A token holding only part
            of a multi-byte character covers that whole character, so the tokens covering
            one character all include it (their character ranges overlap).
        partial: the token starts or ends inside a character.
        special: the token is a special token.
    """

    token_id: int
    byte_start: int
    byte_end: int
    char_start: int
    char_end: int
    partial: bool
    special: bool


@functools.lru_cache(maxsize=1)
def _whitespace() -> frozenset[str]:
    """The characters ``\\s`` matches in the ``regex`` module (Unicode White_Space, all in the BMP)."""
    return frozenset(regex.findall(r"\s", "".join(map(chr, range(0x10000)))))


_EMPTY = np.empty(0, np.int64)


def _gather(
    values: Sequence[tuple[int, ...] | None], new_flat: np.ndarray, new_lengths: np.ndarray, which: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Ids of a sequence of items, each the ids of one distinct item, gathered with numpy.

    Args:
        values: per distinct item, its ids, or ``None`` for the items described, in order,
            by ``new_flat`` (their ids one after another) and ``new_lengths``.
        which: the distinct item at each position of the sequence.

    Returns:
        ``(ids of the whole sequence, ids per position)``. Example: ``values=[(5,), None]``,
        ``new_flat=[7, 8]``, ``new_lengths=[2]``, ``which=[1, 0, 1]`` -> ``[7, 8, 5, 7, 8], [2, 1, 2]``.
    """
    chosen = list(map(operator.is_not, values, itertools.repeat(None)))
    done = list(itertools.compress(values, chosen))
    done_lengths = np.fromiter(map(len, done), np.int64, len(done))
    done_flat = np.fromiter(itertools.chain.from_iterable(done), np.int64, int(done_lengths.sum()))
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


@contextlib.contextmanager
def _gc_paused(pause: bool) -> Iterator[None]:
    """Hold the cyclic garbage collector while encoding a large text.

    Encoding allocates many small tuples next to lists of a million pieces, so the
    collector's full passes would re-scan those lists again and again (~15% of the time);
    nothing made here forms reference cycles, so nothing is left for it to find.
    """
    enabled = pause and gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _evict_oldest(cache: dict[str, tuple[int, ...]]) -> None:
    """Drop the oldest quarter of a cache (dicts keep insertion order)."""
    for key in list(itertools.islice(cache, len(cache) // 4 + 1)):
        cache.pop(key, None)  # another thread may have dropped it already


def _char_byte_len(ch: str) -> int:
    cp = ord(ch)
    if cp < 0x80:
        return 1
    if cp < 0x800:
        return 2
    if 0xD800 <= cp < 0xE000:
        return 1 if 0xDC80 <= cp <= 0xDCFF else 3
    return 3 if cp < 0x10000 else 4


class Tokenizer:
    """A byte-level BPE tokenizer.

    Args:
        vocab: id -> token bytes; must hold all 256 single bytes.
        merges: ``(left, right)`` pairs in rank order; both and their concatenation must be
            in ``vocab``.
        special_tokens: always encoded as one id each; appended to the vocabulary (next
            free ids) when absent. Without them ``<|endoftext|>`` is plain text.
        pattern: ``"gpt2"``, ``"gpt4"``, a regex string, or a resolved `Pattern`.
        cache_entries: size of each of the two encoding caches (pieces, pre-tokens);
            about 200 bytes an entry.

    Raises:
        TokenizerError: a single byte is missing, or a merge uses a token not in ``vocab``.
    """

    def __init__(
        self,
        vocab: dict[int, bytes],
        merges: list[tuple[bytes, bytes]],
        special_tokens: list[str] | None = None,
        *,
        pattern: str | Pattern = "gpt2",
        cache_entries: int = _CACHE_ENTRIES,
    ) -> None:
        self.vocab: dict[int, bytes] = dict(vocab)
        self.merges: list[tuple[bytes, bytes]] = list(merges)
        self.special_tokens: list[str] = validate_special_tokens(special_tokens)
        self.pattern: Pattern = pattern if isinstance(pattern, Pattern) else resolve_pattern(pattern)

        self.special_ids: dict[str, int] = formats.find_special_ids(self.vocab, self.merges, self.special_tokens)
        next_id = max(self.vocab, default=-1) + 1
        for token in self.special_tokens:
            if token not in self.special_ids:
                self.vocab[next_id] = token.encode("utf-8")
                self.special_ids[token] = next_id
                next_id += 1
        self._special_id_set = frozenset(self.special_ids.values())

        # Ordinary tokens by bytes; where two ids hold the same bytes the lowest wins.
        self._encoder: dict[bytes, int] = {}
        for token_id in sorted(self.vocab):
            if token_id not in self._special_id_set:
                self._encoder.setdefault(self.vocab[token_id], token_id)
        missing = [b for b in range(256) if bytes([b]) not in self._encoder]
        if missing:
            raise TokenizerError(
                f"the vocabulary lacks {len(missing)} single bytes (first: {bytes([missing[0]])!r}); "
                "a byte-level vocabulary needs all 256"
            )
        self._byte_ids: list[int] = [self._encoder[bytes([b])] for b in range(256)]

        self._pair_rank: dict[tuple[int, int], int] = {}  # (left id, right id) -> rank
        self._new_id: list[int] = []  # rank -> id of the merged token
        self._rank_of_id: dict[int, int] = {}
        for rank, (left, right) in enumerate(self.merges):
            ids = [self._encoder.get(part) for part in (left, right, left + right)]
            if None in ids:
                part = (left, right, left + right)[ids.index(None)]
                raise TokenizerError(
                    f"merge {rank} ({left!r}, {right!r}) needs the token {part!r}, which is not in the vocabulary"
                )
            a, b, new = ids
            assert a is not None and b is not None and new is not None
            self._pair_rank.setdefault((a, b), rank)
            self._new_id.append(new)
            self._rank_of_id.setdefault(new, rank)

        self._special_re = special_token_regex(self.special_tokens)
        self._max_special = max((len(t) for t in self.special_tokens), default=0)
        if self.pattern.cut_before is not None:
            self._last_cut: regex.Pattern[str] | None = regex.compile("(?r)" + self.pattern.cut_before.pattern)
        else:
            self._last_cut = None
        # Characters a piece starts with when it starts at a safe cut point.
        self._cut_starts: frozenset[str] | None = {
            "gpt2": _whitespace(),
            "gpt4": _whitespace() - {"\r", "\n"},
        }.get(self.pattern.name)
        self._cache_entries = max(cache_entries, 1)
        self._merge_table: MergeTable | None = None  # built when first needed
        self._piece_cache: dict[str, tuple[int, ...]] = {}
        self._token_cache: dict[str, tuple[int, ...]] = {}

    # ------------------------------------------------------------------ loading

    @classmethod
    def from_files(
        cls,
        vocab_path: str | os.PathLike[str],
        merges_path: str | os.PathLike[str],
        special_tokens: list[str] | None = None,
        *,
        pattern: str | Pattern | None = None,
    ) -> Tokenizer:
        """Load GPT-2 format ``vocab.json`` + ``merges.txt``.

        Special tokens and pattern not given come from a ``tokenizer_config.json`` beside
        ``vocab.json`` when there is one; otherwise none and GPT-2's pattern.
        """
        config = Path(vocab_path).with_name(formats.CONFIG_NAME)
        if (special_tokens is None or pattern is None) and config.is_file():
            config_specials, config_pattern = formats.load_tokenizer_config(config)
            special_tokens = config_specials if special_tokens is None else special_tokens
            pattern = config_pattern if pattern is None else pattern
        specials = list(special_tokens or [])
        vocab, merges = formats.load_gpt2_files(vocab_path, merges_path, specials)
        return cls(vocab, merges, specials, pattern=pattern or "gpt2")

    @classmethod
    def from_tokenizer_json(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """Load a Hugging Face byte-level BPE ``tokenizer.json``."""
        vocab, merges, specials, pattern = formats.load_tokenizer_json(path)
        return cls(vocab, merges, specials, pattern=pattern)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """Load from a directory (``vocab.json`` + ``merges.txt``, else ``tokenizer.json``),
        a ``tokenizer.json`` file, or a ``vocab.json`` file with ``merges.txt`` beside it.

        Raises:
            FileNotFoundError: nothing loadable is there.
            formats.FormatError: a file is malformed.
        """
        p = Path(path)
        if p.is_dir():
            vocab, merges = p / formats.VOCAB_NAME, p / formats.MERGES_NAME
            if vocab.is_file() and merges.is_file():
                return cls.from_files(vocab, merges)
            if (p / formats.TOKENIZER_JSON_NAME).is_file():
                return cls.from_tokenizer_json(p / formats.TOKENIZER_JSON_NAME)
            raise FileNotFoundError(
                f"{p} holds no tokenizer: expected vocab.json and merges.txt, or tokenizer.json"
            )
        if not p.is_file():
            raise FileNotFoundError(f"{p} does not exist; give a tokenizer directory or file")
        if p.name != formats.TOKENIZER_JSON_NAME and p.with_name(formats.MERGES_NAME).is_file():
            return cls.from_files(p, p.with_name(formats.MERGES_NAME))
        if p.name == formats.VOCAB_NAME:
            raise FileNotFoundError(f"{p.with_name(formats.MERGES_NAME)} is missing; it must be beside {p.name}")
        return cls.from_tokenizer_json(p)

    # ------------------------------------------------------------------ lookups

    def __len__(self) -> int:
        """The vocabulary size, special tokens included."""
        return len(self.vocab)

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes of one token; ``TokenizerError`` if the id is not in the vocabulary."""
        try:
            return self.vocab[token_id]
        except KeyError:
            raise self._unknown_id(token_id) from None

    def merge_rank(self, token_id: int) -> int | None:
        """Rank of the merge that created ``token_id``; ``None`` for single bytes and specials."""
        if token_id not in self.vocab:
            raise self._unknown_id(token_id)
        if token_id in self._special_id_set:
            return None
        return self._rank_of_id.get(token_id)

    def _unknown_id(self, token_id: object) -> TokenizerError:
        return TokenizerError(f"token id {token_id!r} is not in the vocabulary (ids 0..{max(self.vocab)})")

    # ------------------------------------------------------------------ BPE

    def _bpe(self, data: bytes) -> tuple[int, ...]:
        """Merge one pre-token's bytes: lowest-rank adjacent pair first, leftmost on ties.

        ``pair_ranks[i]`` is the rank of merging ``ids[i], ids[i + 1]``; after a merge only
        the two neighbouring entries change, and ``min``/``index`` find the next one in C.
        """
        ids = list(map(self._byte_ids.__getitem__, data))
        if len(ids) < 2:
            return tuple(ids)
        if len(ids) > _LONG_WORD:  # the loop below is quadratic in the word's length
            return tuple(bpe_long(ids, self._pair_rank, self._new_id))
        get = self._pair_rank.get
        new_id = self._new_id
        pair_ranks = list(map(get, zip(ids, ids[1:]), itertools.repeat(_NO_RANK)))
        while pair_ranks:
            best = min(pair_ranks)
            if best == _NO_RANK:
                break
            i = pair_ranks.index(best)
            ids[i] = new_id[best]
            del ids[i + 1]
            del pair_ranks[i]
            if i < len(pair_ranks):
                pair_ranks[i] = get((ids[i], ids[i + 1]), _NO_RANK)
            if i > 0:
                pair_ranks[i - 1] = get((ids[i - 1], ids[i]), _NO_RANK)
        return tuple(ids)

    def _encode_pretoken(self, token: str) -> tuple[int, ...]:
        cache = self._token_cache
        ids = cache.get(token)
        if ids is None:
            ids = self._bpe(token.encode("utf-8", TEXT_ERRORS))
            if len(cache) >= self._cache_entries:
                _evict_oldest(cache)
            cache[token] = ids
        return ids

    def _encode_piece(self, piece: str) -> tuple[int, ...]:
        """Ids of one piece (text between safe cut points), through the piece cache."""
        tokens = self.pattern.findall(piece)
        if len(tokens) == 1:
            ids = self._encode_pretoken(tokens[0])
        else:
            out: list[int] = []
            for token in tokens:
                out.extend(self._encode_pretoken(token))
            ids = tuple(out)
        if len(piece) <= 256:  # custom patterns give whole segments as one piece
            cache = self._piece_cache
            if len(cache) >= self._cache_entries:
                _evict_oldest(cache)
            cache[piece] = ids
        return ids

    # ------------------------------------------------------------------ encoding

    def _segments(self, text: str) -> Iterator[tuple[str, bool]]:
        """``(segment, is_special)``: special tokens and the ordinary text between them."""
        if self._special_re is None:
            if text:
                yield text, False
            return
        pos = 0
        for m in self._special_re.finditer(text):
            if m.start() > pos:
                yield text[pos : m.start()], False
            yield m.group(), True
            pos = m.end()
        if pos < len(text):
            yield text[pos:], False

    def _pieces_array(self, pieces: list[str], known: dict[str, tuple[int, ...]]) -> np.ndarray:
        """Ids of ``pieces`` in order, as an int64 array; ``known`` holds special tokens' ids.

        Each distinct piece is looked up once; the pieces not in the cache are encoded
        together (`_encode_missing`); the ids of every occurrence are then gathered with
        numpy rather than joined piece by piece in Python.
        """
        keys = list(dict.fromkeys(pieces))  # the distinct pieces (loops below run in C)
        position = dict(zip(keys, range(len(keys))))
        values: list[tuple[int, ...] | None] = list(map(self._piece_cache.get, keys))
        for token, ids in known.items():
            if token in position:
                values[position[token]] = ids
        missing = list(itertools.compress(keys, map(operator.is_, values, itertools.repeat(None))))
        singles: dict[str, tuple[int, ...] | None] = {}
        batch_flat, batch_lengths = self._encode_missing(missing, singles)
        for piece, ids in singles.items():
            values[position[piece]] = ids
        which = np.fromiter(map(position.__getitem__, pieces), np.int64, len(pieces))
        return _gather(values, batch_flat, batch_lengths, which)[0]

    def _encode_missing(
        self, pieces: list[str], table: dict[str, tuple[int, ...] | None]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Encode pieces not in the cache: some one by one into ``table``, the rest together.

        Calling the regex once per short piece costs more than the matching itself, so
        pieces that start at a safe cut point and end just before one (for GPT-2: whitespace
        first, non-whitespace last) are joined and pre-tokenized in one call; the joints are
        safe cut points, so no pre-token spans two pieces. Other pieces are encoded one by
        one into ``table``. Returns ``(flat_ids, ids_per_piece)`` of the joined pieces, in
        the order of ``pieces``.
        """
        batch: list[str] = []
        if self._cut_starts is not None:
            starts, ws = self._cut_starts, _whitespace()
            for piece in pieces:
                if piece[0] in starts and piece[-1] not in ws:
                    batch.append(piece)
                else:
                    table[piece] = self._encode_piece(piece)
        else:
            for piece in pieces:
                table[piece] = self._encode_piece(piece)
        if not batch:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        tokens = self.pattern.findall("".join(batch))
        flat, id_counts = self._pretokens_arrays(tokens)
        # Piece i holds pre-tokens ends[i - 1]:ends[i] (found from the character lengths).
        token_ends = np.cumsum(np.fromiter(map(len, tokens), np.int64, len(tokens)))
        piece_ends = np.cumsum(np.fromiter(map(len, batch), np.int64, len(batch)))
        ends = np.searchsorted(token_ends, piece_ends) + 1
        if not np.array_equal(token_ends[ends - 1], piece_ends):
            raise AssertionError("a pre-token crossed a safe cut point")
        id_ends = np.concatenate([[0], np.cumsum(id_counts)])[ends]
        lengths = np.diff(id_ends, prepend=0)
        # Cache the first pieces (first seen: on average the most frequent ones).
        room = min(len(batch), self._cache_entries)
        firsts = flat[: id_ends[room - 1]].tolist()
        new = []
        start = 0
        for piece, end in zip(batch[:room], id_ends[:room].tolist()):
            if len(piece) <= 256:
                new.append((piece, tuple(firsts[start:end])))
            start = end
        self._remember(self._piece_cache, new)
        return flat, lengths

    def _pretokens_arrays(self, tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """BPE of each pre-token, each distinct one merged once (through the cache):
        ``(ids of all pre-tokens one after another, ids per pre-token)``."""
        keys = list(dict.fromkeys(tokens))
        position = dict(zip(keys, range(len(keys))))
        values: list[tuple[int, ...] | None] = list(map(self._token_cache.get, keys))
        missing = list(itertools.compress(keys, map(operator.is_, values, itertools.repeat(None))))
        new_flat, new_lengths = self._bpe_arrays([t.encode("utf-8", TEXT_ERRORS) for t in missing])
        if missing:  # cache the first ones (first seen: on average the most frequent)
            room = min(len(missing), self._cache_entries)
            ends = np.cumsum(new_lengths[:room]).tolist()
            firsts = new_flat[: ends[-1]].tolist()
            self._remember(
                self._token_cache,
                ((t, tuple(firsts[a:b])) for t, a, b in zip(missing[:room], [0, *ends], ends)),
            )
        which = np.fromiter(map(position.__getitem__, tokens), np.int64, len(tokens))
        return _gather(values, new_flat, new_lengths, which)

    def _bpe_arrays(self, words: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """BPE of many pre-tokens: ``(merged ids one word after another, ids per word)``.

        Big batches of short words go through the numpy kernel (`core.bpe_batch`), whose
        rounds are as many as the merges of its longest word; the others through `_bpe`.
        """
        eligible = [0 < len(w) <= _BATCH_WORD_BYTES for w in words]
        kernel = sum(eligible)
        if kernel < _BATCH_WORDS:
            return _gather(list(map(self._bpe, words)), _EMPTY, _EMPTY, np.arange(len(words)))
        if self._merge_table is None:
            self._merge_table = MergeTable.build(self._pair_rank, self._new_id, max(self.vocab) + 1)
        short = words if kernel == len(words) else list(itertools.compress(words, eligible))
        lengths = np.fromiter(map(len, short), np.int64, len(short))
        flat = np.asarray(self._byte_ids, dtype=np.int64)[np.frombuffer(b"".join(short), np.uint8)]
        merged, merged_lengths = bpe_batch(flat, lengths, self._merge_table)
        if kernel == len(words):
            return merged, merged_lengths
        others = [None if e else self._bpe(w) for w, e in zip(words, eligible)]
        return _gather(others, merged, merged_lengths, np.arange(len(words)))

    def _bpe_many(self, words: list[bytes]) -> list[tuple[int, ...]]:
        """`_bpe` of many pre-tokens, through `_bpe_arrays`."""
        flat, lengths = self._bpe_arrays(words)
        out = flat.tolist()
        bounds = [0, *itertools.accumulate(lengths.tolist())]
        return [tuple(out[a:b]) for a, b in zip(bounds, bounds[1:])]

    def _remember(self, cache: dict[str, tuple[int, ...]], items: Iterable[tuple[str, tuple[int, ...]]]) -> None:
        """Add entries to a cache, dropping its oldest entries to stay within the cap."""
        cap = self._cache_entries
        for key, ids in collections.deque(items, maxlen=cap):  # earlier ones would be dropped
            if len(cache) >= cap:
                _evict_oldest(cache)
            cache[key] = ids

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ``text`` with special tokens treated as plain text."""
        with _gc_paused(len(text) >= _GC_PAUSE_CHARS):
            ids = self._pieces_array(split_pieces(text, self.pattern), {})
        return ids.tolist()  # type: ignore[no-any-return]

    def encode(self, text: str) -> list[int]:
        """Encode ``text``; each special token becomes its one id.

        ``Tokenizer.load("gpt2_dir").encode("Hello world") -> [15496, 995]``
        """
        return self.encode_array(text).tolist()  # type: ignore[no-any-return]

    def encode_array(self, text: str) -> np.ndarray:
        """`encode`, as a numpy ``int64`` array (no Python list of ints on the way)."""
        with _gc_paused(len(text) >= _GC_PAUSE_CHARS):
            if self._special_re is None:
                return self._pieces_array(split_pieces(text, self.pattern), {})
            # Special tokens join the pieces: no ordinary piece contains a special token's text.
            pieces: list[str] = []
            for segment, is_special in self._segments(text):
                if is_special:
                    pieces.append(segment)
                else:
                    pieces.extend(split_pieces(segment, self.pattern))
            return self._pieces_array(pieces, {t: (i,) for t, i in self.special_ids.items()})

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        """Encode a stream of text (e.g. a file's lines) lazily, in bounded memory.

        Gives exactly ``encode("".join(iterable))``: text is held back until a point where
        no special token or pre-token can straddle, so a split anywhere changes nothing.
        (Patterns without safe cut points, i.e. custom ones, are cut at a pre-token
        boundary at least 4,096 characters back once 64K characters are held.)
        """
        for ids in self.encode_blocks(iterable):
            yield from ids.tolist()

    def encode_blocks(self, iterable: Iterable[str], *, batch_chars: int | None = None) -> Iterator[np.ndarray]:
        """`encode_iterable`, giving the ids in numpy arrays (one per stretch of text encoded)."""
        batch = _ITER_BATCH_CHARS if batch_chars is None else batch_chars
        buffer = ""
        pending: list[str] = []
        pending_chars = 0
        retry_at = 0  # after a search that found no cut, wait until the buffer doubles
        for text in iterable:
            pending.append(text)
            pending_chars += len(text)
            if pending_chars < batch or len(buffer) + pending_chars < retry_at:
                continue
            buffer += "".join(pending)
            pending.clear()
            pending_chars = 0
            cut = self._safe_end(buffer)
            if cut:
                yield self.encode_array(buffer[:cut])
                buffer = buffer[cut:]
                retry_at = 0
            elif len(buffer) > _FALLBACK_CHARS:
                retry_at = 2 * len(buffer)
        buffer += "".join(pending)
        if buffer:
            yield self.encode_array(buffer)

    def _safe_end(self, text: str) -> int:
        """The largest ``i`` such that ``encode(text[:i] + rest) == encode(text[:i]) + encode(rest)``
        for any continuation ``rest`` (0 if there is none yet).

        A special token starting before ``limit`` is decided whatever follows; after the last
        one, the last safe cut point of the pattern before ``limit`` is a boundary.
        """
        limit = len(text) - max(self._max_special - 1, 0)
        if limit <= 0:
            return 0
        start = 0
        if self._special_re is not None:
            for m in self._special_re.finditer(text):
                if m.start() >= limit:
                    break
                start = m.end()
        if self._last_cut is not None:
            m = self._last_cut.search(text, start, limit)
            if m is not None and m.start() > start:
                return m.start()
        if limit - start > _FALLBACK_CHARS:
            # No exact cut (a custom pattern, or one enormous piece): end at a pre-token
            # boundary far enough from the end that more text cannot change it.
            end, bound = start, limit - _FALLBACK_MARGIN
            for m in self.pattern.compiled.finditer(text, start, limit):
                if m.end() > bound:
                    break
                end = m.end()
            return end
        return start

    def encode_with_spans(self, text: str) -> list[TokenSpan]:
        """Encode ``text`` and say where each token lies in it (bytes and characters).

        ``encode_with_spans("a€")`` with ``"€"`` split into 2 tokens ->
        ``[(id_a, 0, 1, 0, 1, partial=False), (.., 1, 3, 1, 2, True), (.., 3, 4, 1, 2, True)]``
        """
        spans: list[TokenSpan] = []
        byte_pos = char_pos = 0
        for segment, is_special in self._segments(text):
            if is_special:
                size = len(segment.encode("utf-8", TEXT_ERRORS))
                spans.append(
                    TokenSpan(self.special_ids[segment], byte_pos, byte_pos + size,
                              char_pos, char_pos + len(segment), False, True)
                )
                byte_pos += size
                char_pos += len(segment)
                continue
            for piece in split_pieces(segment, self.pattern):
                spans.extend(self._piece_spans(piece, byte_pos, char_pos))
                byte_pos += len(piece.encode("utf-8", TEXT_ERRORS))
                char_pos += len(piece)
        return spans

    def _piece_spans(self, piece: str, byte_pos: int, char_pos: int) -> Iterator[TokenSpan]:
        """Spans of one piece's tokens, pre-token by pre-token (a custom pattern may skip text)."""
        if piece.isascii():
            starts: Sequence[int] = range(len(piece) + 1)
        else:
            starts = [0]  # byte offset of each character of the piece, then the end
            for ch in piece:
                starts.append(starts[-1] + _char_byte_len(ch))
        for m in self.pattern.compiled.finditer(piece):
            offset = starts[m.start()]
            for token_id in self._encode_pretoken(m.group()):
                size = len(self.vocab[token_id])
                first = bisect.bisect_right(starts, offset) - 1
                last = bisect.bisect_left(starts, offset + size)
                partial = starts[first] != offset or starts[last] != offset + size
                yield TokenSpan(token_id, byte_pos + offset, byte_pos + offset + size,
                                char_pos + first, char_pos + last, partial, False)
                offset += size

    # ------------------------------------------------------------------ decoding

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes of ``ids`` joined; ``TokenizerError`` names an id not in the vocabulary."""
        vocab = self.vocab
        if hasattr(ids, "tolist"):  # numpy arrays: plain ints look up faster
            ids = ids.tolist()
        elif not isinstance(ids, Sequence):
            ids = list(ids)
        try:
            return b"".join([vocab[i] for i in ids])
        except (KeyError, TypeError):
            bad = next(i for i in ids if not isinstance(i, int) or i not in vocab)
            raise self._unknown_id(bad) from None

    def decode(self, ids: Iterable[int]) -> str:
        """Decode ``ids`` to text; malformed UTF-8 becomes U+FFFD."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def __repr__(self) -> str:
        return (
            f"Tokenizer({len(self)} tokens, {len(self.merges)} merges, "
            f"{len(self.special_tokens)} special tokens, pattern={self.pattern.name!r})"
        )
