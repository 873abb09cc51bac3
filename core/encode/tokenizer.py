"""The tokenizer: encode text to ids and decode ids back, with each token's span in the input.

Adds `Tokenizer`, built from a vocabulary and merges (or loaded from files), and
`TokenSpan`. Encoding follows the training semantics (docs/semantics.md) step by step:

1. Special tokens split the text (longest match first); each becomes its one id.
2. The rest is cut at the pattern's safe cut points into *pieces* (`core.pretokenize.pieces`).
3. Pieces become ids in `core.encode.piece_encoder` (capped caches, so repeated text skips the
   regex and the merge loop): each piece is cut into pre-tokens by the pattern, each
   pre-token into bytes (``surrogateescape`` characters back to the raw bytes they stand
   for), and the bytes are merged by rank.

With GPT-2's ``vocab.json``/``merges.txt`` the ids equal tiktoken's ``gpt2`` encoding.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, overload

import numpy as np
import regex

from core import formats
from core.errors import TokenizerError
from core.formats.load import TokenizerFiles, load_gpt2_tokenizer, load_tokenizer_files
from core.pretokenize.native import python_forced, scanner_for
from core.pretokenize.patterns import Pattern, resolve_pattern
from core.encode.native import NativeEncoder
from core.encode.piece_encoder import CACHE_ENTRIES, TEXT_ERRORS, EncoderState, PieceEncoder
from core.pretokenize.pieces import split_pieces
from core.pretokenize.specials import SpecialMatcher, special_token_regex, split_with, validate_special_tokens

__all__ = ["TEXT_ERRORS", "TextEncoder", "TokenSpan", "Tokenizer", "TokenizerError"]


_GC_PAUSE_CHARS = 1 << 16
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


def _encode_array(
    pieces: PieceEncoder, special_re: SpecialMatcher[str] | None, special_ids: dict[str, int], text: str
) -> np.ndarray:
    with _gc_paused(len(text) >= _GC_PAUSE_CHARS):
        if special_re is None:
            return pieces.encode_pieces(split_pieces(text, pieces.pattern), {})
        # Special tokens join the pieces: no ordinary piece contains a special token's text.
        found: list[str] = []
        pos = 0
        for m in special_re.finditer(text):
            if m.start() > pos:
                found.extend(split_pieces(text[pos : m.start()], pieces.pattern))
            found.append(m.group())
            pos = m.end()
        if pos < len(text):
            found.extend(split_pieces(text[pos:], pieces.pattern))
        return pieces.encode_pieces(found, special_ids)


class TextEncoder:
    """Text to ids, without the vocabulary's bytes: `Tokenizer.encode_array` for encoding
    corpora (`Tokenizer.text_encoder`). Its `state` (numpy arrays; see
    `core.encode.piece_encoder.EncoderState`) is what a spawned process receives and turns back into
    an encoder in tens of milliseconds, where pickling and rebuilding a `Tokenizer` takes ~0.2 s."""

    def __init__(self, pieces: PieceEncoder, special_ids: dict[str, int]) -> None:
        self.pieces = pieces
        self.special_ids = dict(special_ids)
        self._special_re = special_token_regex(list(special_ids))
        self._native: NativeEncoder | None = None

    def encode_array(self, text: str) -> np.ndarray:
        """Ids of ``text`` as ``Tokenizer.encode_array`` gives them."""
        return _encode_array(self.pieces, self._special_re, self.special_ids, _tiktoken_text(text))

    def encode_bytes_array(self, data: bytes) -> np.ndarray:
        """Ids of ``data`` as ``Tokenizer.encode_bytes`` gives them, as an int64 array."""
        native = self._native = _native_encoder(self.pieces, self.special_ids, self._native)
        if native is not None:
            return native.encode_array(_check_bytes(data))
        text = data.decode("utf-8", errors="surrogateescape")
        return _encode_array(self.pieces, self._special_re, self.special_ids, text)

    def native_available(self) -> bool:
        """Whether the native encoder serves this encoder (so encoding runs without the GIL)."""
        self._native = _native_encoder(self.pieces, self.special_ids, self._native)
        return self._native is not None

    def state(self) -> tuple[EncoderState, dict[str, int]]:
        """This encoder, compact, for `from_state` in another process."""
        return self.pieces.state(), dict(self.special_ids)

    @classmethod
    def from_state(cls, state: tuple[EncoderState, dict[str, int]]) -> TextEncoder:
        """The encoder of `state` (with empty caches)."""
        pieces, special_ids = state
        return cls(PieceEncoder.from_state(pieces), special_ids)


@contextlib.contextmanager
def _gc_paused(pause: bool) -> Iterator[None]:
    """Hold the cyclic garbage collector while encoding a large text (or batch).

    Encoding allocates many small tuples next to lists of a million pieces (a batch: a list
    of ids per text), so the collector's passes would re-scan those lists again and again
    (~15% of the time); nothing made here forms reference cycles, so nothing is left for it
    to find.
    """
    enabled = pause and gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _tiktoken_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, as tiktoken does (a pair of
    surrogates becomes the one character it stands for)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _text_bytes(text: object) -> bytes:
    """The UTF-8 bytes `Tokenizer.encode` encodes ``text`` as (see `_tiktoken_text`)."""
    if not isinstance(text, str):
        raise TypeError(
            f"encode() takes text (str), got {type(text).__name__}"
            + (": use encode_bytes() for bytes" if isinstance(text, (bytes, bytearray, memoryview)) else "")
        )
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _tiktoken_text(text).encode("utf-8")


def _check_bytes(data: object) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(
        f"encode_bytes() takes bytes, got {type(data).__name__}"
        + (": use encode() for text" if isinstance(data, str) else "")
    )


def _native_encoder(pieces: PieceEncoder, special_ids: dict[str, int], built: NativeEncoder | None) -> NativeEncoder | None:
    """The native encoder to use now: ``built`` if there is one, else a new one (``None``:
    the Python path, e.g. a custom pattern or ``BPE_STUDIO_PURE_PYTHON=1``)."""
    if scanner_for(pieces.pattern) is None:
        return None
    return built if built is not None else NativeEncoder.build(pieces, special_ids, pieces.cache_entries)


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
        cache_entries: int = CACHE_ENTRIES,
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

        pair_rank: dict[tuple[int, int], int] = {}  # (left id, right id) -> rank
        new_id: list[int] = []  # rank -> id of the merged token
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
            pair_rank.setdefault((a, b), rank)
            new_id.append(new)
            self._rank_of_id.setdefault(new, rank)

        self._special_re = special_token_regex(self.special_tokens)
        self._max_special = max((len(t) for t in self.special_tokens), default=0)
        if self.pattern.cut_before is not None:
            self._last_cut: regex.Pattern[str] | None = regex.compile("(?r)" + self.pattern.cut_before.pattern)
        else:
            self._last_cut = None
        self._pieces = PieceEncoder(self._byte_ids, pair_rank, new_id, self.pattern, cache_entries)
        self._native: NativeEncoder | None = None  # built on first use

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
        """Load GPT-2 format ``vocab.json`` + ``merges.txt``, as CS336's ``from_files`` does.

        The special tokens are exactly ``special_tokens``: none by default, so
        ``"a<|endoftext|>b"`` is plain text (with GPT-2's files,
        ``[64, 27, 91, 437, 1659, 5239, 91, 29, 65]``, tiktoken's ``encode_ordinary``);
        nothing is inferred (`load` infers them, and says so). The pattern is ``pattern``,
        else the one a ``tokenizer_config.json`` beside ``vocab.json`` names, else GPT-2's.
        """
        files = load_gpt2_tokenizer(vocab_path, merges_path, list(special_tokens or []), pattern)
        return cls._from(files)

    @classmethod
    def from_tokenizer_json(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """Load a Hugging Face byte-level BPE ``tokenizer.json``."""
        vocab, merges, specials, pattern = formats.load_tokenizer_json(path)
        return cls(vocab, merges, specials, pattern=pattern)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        encoding: str | None = None,
        pattern: str | Pattern | None = None,
        special_tokens: list[str] | dict[str, int] | None = None,
    ) -> Tokenizer:
        """Load from a folder or file, as `core.formats.load.load_tokenizer_files` finds it:
        GPT-2 ``vocab.json`` + ``merges.txt`` (also prefixed, such as ``gpt2_vocab.json``),
        a ``tokenizer.json``, or a tiktoken ``.tiktoken`` rank file.

        A ``.tiktoken`` file holds only token ranks: its pattern and special tokens come
        from ``encoding`` (``"cl100k_base"``, ``"o200k_base"``, ``"r50k_base"``,
        ``"p50k_base"``), ``pattern`` and ``special_tokens`` (a list fills the ids the ranks
        leave free, a dict gives them), else a ``tokenizer_config.json`` beside it, else
        the file's name (``cl100k_base.tiktoken``).
        ``Tokenizer.load("o200k_base.tiktoken")``, ``Tokenizer.load("llama3.tiktoken", pattern=PAT, special_tokens={...})``

        GPT-2 files with no ``tokenizer_config.json`` beside them name no special tokens:
        they are *inferred* — the tokens no merge makes (GPT-2's own files give
        ``["<|endoftext|>"]``). The result's ``special_tokens`` (and its repr) say which
        were found; use `from_files` to choose them yourself.

        Raises:
            FileNotFoundError: nothing loadable is there.
            FormatError: a file is malformed.
        """
        return cls._from(load_tokenizer_files(path, encoding=encoding, pattern=pattern, special_tokens=special_tokens))

    @classmethod
    def _from(cls, files: TokenizerFiles) -> Tokenizer:
        return cls(files.vocab, files.merges, files.special_tokens, pattern=files.pattern)

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

    # ------------------------------------------------------------------ encoding

    def _segments(self, text: str) -> Iterator[tuple[str, bool]]:
        """``(segment, is_special)``: special tokens and the ordinary text between them."""
        return split_with(text, self._special_re)

    def _native_encoder(self) -> NativeEncoder | None:
        native = self._native
        if native is not None and not python_forced():
            return native
        native = self._native = _native_encoder(self._pieces, self.special_ids, native)
        return native

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ``text`` with special tokens treated as plain text."""
        native = self._native_encoder()
        if native is not None and type(text) is str:
            try:
                return native.encode_ordinary(text)  # its UTF-8, read by the C code
            except UnicodeEncodeError:  # a lone surrogate: _text_bytes replaces it
                pass
        data = _text_bytes(text)
        if native is not None:
            return native.encode_ordinary(data)
        text = _tiktoken_text(text)
        with _gc_paused(len(text) >= _GC_PAUSE_CHARS):
            ids = self._pieces.encode_pieces(split_pieces(text, self.pattern), {})
        return ids.tolist()  # type: ignore[no-any-return]

    def encode(self, text: str) -> list[int]:
        """Encode ``text``; each special token becomes its one id.

        ``Tokenizer.load("gpt2_dir").encode("Hello world") -> [15496, 995]``. As tiktoken
        does, a lone surrogate (``"\\udcff"``) is encoded as U+FFFD; raw bytes, invalid
        UTF-8 included, go through `encode_bytes`.
        """
        native = self._native_encoder()
        if native is not None and type(text) is str:
            try:
                return native.encode_text(text)
            except UnicodeEncodeError:  # a lone surrogate: _text_bytes replaces it
                pass
        data = _text_bytes(text)
        if native is not None:
            return native.encode_list(data)
        return self.encode_array(text).tolist()  # type: ignore[no-any-return]

    def encode_bytes(self, data: bytes) -> list[int]:
        """Encode raw bytes, byte-exactly: bytes that are not valid UTF-8 are encoded as
        themselves (as training counts them), e.g. ``encode_bytes(b"caf\\xff")``."""
        data = _check_bytes(data)
        native = self._native_encoder()
        if native is not None:
            return native.encode_list(data)
        text = data.decode("utf-8", errors="surrogateescape")
        return _encode_array(self._pieces, self._special_re, self.special_ids, text).tolist()  # type: ignore[no-any-return]

    def encode_array(self, text: str) -> np.ndarray:
        """`encode`, as a numpy ``int64`` array (no Python list of ints on the way)."""
        data = _text_bytes(text)
        native = self._native_encoder()
        if native is not None:
            return native.encode_array(data)
        return _encode_array(self._pieces, self._special_re, self.special_ids, _tiktoken_text(text))

    @overload
    def encode_batch(self, texts: Sequence[str], *, workers: int | None = ...,
                     return_numpy: Literal[False] = ...) -> list[list[int]]: ...
    @overload
    def encode_batch(self, texts: Sequence[str], *, workers: int | None = ...,
                     return_numpy: Literal[True]) -> tuple[np.ndarray, np.ndarray]: ...

    def encode_batch(
        self, texts: Sequence[str], *, workers: int | None = None, return_numpy: bool = False
    ) -> list[list[int]] | tuple[np.ndarray, np.ndarray]:
        """`encode` of each text, in ``workers`` threads (default: all cores).

        ``tok.encode_batch(["Hello world", "Hi"]) -> [[15496, 995], [17250]]``. With the
        native encoder the threads run at once (it releases the GIL); on the Python path
        the texts are encoded one after another.

        ``return_numpy=True`` gives ``(ids, offsets)`` instead, built without a Python int
        per id: ``ids`` all texts' ids one after another (``uint32``, whatever the
        vocabulary's size), ``offsets`` ``int64``, ``len(texts) + 1`` of them, with text
        i's ids at ``ids[offsets[i]:offsets[i + 1]]``:
        ``(array([15496, 995, 17250], dtype=uint32), array([0, 2, 3]))``.
        """
        if isinstance(texts, (str, bytes)):
            raise TypeError("encode_batch() takes a list of texts; use encode() for one text")
        datas = [_text_bytes(t) for t in texts]
        workers = (os.cpu_count() or 1) if workers is None else workers
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be a positive integer, got {workers!r}")
        native = self._native_encoder()
        if native is not None and return_numpy:
            return native.encode_batch_arrays(datas, workers)
        if native is not None:
            with _gc_paused(sum(map(len, datas)) >= _GC_PAUSE_CHARS):  # thousands of lists of ints
                return native.encode_batch(datas, workers)
        if return_numpy:
            arrays = [self.encode_bytes_array(d) for d in datas]
            offsets = np.zeros(len(arrays) + 1, np.int64)
            np.cumsum(np.fromiter(map(len, arrays), np.int64, len(arrays)), out=offsets[1:])
            flat = np.concatenate(arrays).astype(np.uint32) if arrays else np.empty(0, np.uint32)
            return flat, offsets
        return [self.encode(t) for t in texts]

    def encode_escaped_array(self, text: str) -> np.ndarray:
        """The ids of the bytes ``text`` was decoded from with ``surrogateescape``
        (`encode_bytes`' ids, as an array), e.g. a corpus streamed block by block."""
        # TEXT_ERRORS: U+DC80..U+DCFF are their byte, any other lone surrogate U+FFFD
        return self.encode_bytes_array(text.encode("utf-8", errors=TEXT_ERRORS))

    def encode_ordinary_bytes(self, data: bytes) -> list[int]:
        """`encode_bytes` with special tokens treated as plain text."""
        data = _check_bytes(data)
        native = self._native_encoder()
        if native is not None:
            return native.encode_ordinary(data)
        text = data.decode("utf-8", errors="surrogateescape")
        with _gc_paused(len(text) >= _GC_PAUSE_CHARS):
            ids = self._pieces.encode_pieces(split_pieces(text, self.pattern), {})
        return ids.tolist()  # type: ignore[no-any-return]

    def encode_bytes_array(self, data: bytes) -> np.ndarray:
        """`encode_bytes`, as a numpy ``int64`` array."""
        data = _check_bytes(data)
        native = self._native_encoder()
        if native is not None:
            return native.encode_array(data)
        text = data.decode("utf-8", errors="surrogateescape")
        return _encode_array(self._pieces, self._special_re, self.special_ids, text)

    def text_encoder(self, cache_entries: int) -> TextEncoder:
        """`encode_array` with caches of its own (``cache_entries`` each), sharing this
        tokenizer's merge tables: made at once, for encoding a corpus here or, through
        `TextEncoder.state`, in another process."""
        return TextEncoder(self._pieces.with_cache(cache_entries), self.special_ids)

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        """Encode a stream of text (e.g. a file's lines) lazily, in bounded memory.

        Gives exactly ``encode("".join(iterable))``: text is held back until a point where
        no special token or pre-token can straddle, so a split anywhere changes nothing.
        (Patterns without safe cut points, i.e. custom ones, are cut at a pre-token
        boundary at least 4,096 characters back once 64K characters are held.)
        """
        for ids in self.encode_blocks(iterable):
            yield from ids.tolist()

    def encode_blocks(
        self, iterable: Iterable[str], *, batch_chars: int | None = None, escaped: bool = False
    ) -> Iterator[np.ndarray]:
        """`encode_iterable`, giving the ids in numpy arrays (one per stretch of text encoded).

        ``escaped=True``: the text was decoded from bytes with ``surrogateescape`` (a file
        with invalid UTF-8, say); the bytes it stands for are encoded, as `encode_bytes` does.
        """
        return self._encode_blocks(iterable, batch_chars, self.encode_escaped_array if escaped else self.encode_array)

    def _encode_blocks(
        self, iterable: Iterable[str], batch_chars: int | None, encode_array: Callable[[str], np.ndarray]
    ) -> Iterator[np.ndarray]:
        """`encode_blocks` with ``encode_array`` encoding each stretch (`encode_escaped_array`
        for text decoded from bytes with ``surrogateescape``)."""
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
                yield encode_array(buffer[:cut])
                buffer = buffer[cut:]
                retry_at = 0
            elif len(buffer) > _FALLBACK_CHARS:
                retry_at = 2 * len(buffer)
        buffer += "".join(pending)
        if buffer:
            yield encode_array(buffer)

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
            cut = self._last_cut.search(text, start, limit)
            if cut is not None and cut.start() > start:
                return cut.start()
        if limit - start > _FALLBACK_CHARS:
            # No exact cut (a custom pattern, or one enormous piece): end at a pre-token
            # boundary far enough from the end that more text cannot change it.
            end, bound = start, limit - _FALLBACK_MARGIN
            for found in self.pattern.finditer(text, start, limit):
                if found.end() > bound:
                    break
                end = found.end()
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
        for m in self.pattern.finditer(piece):
            offset = starts[m.start()]
            for token_id in self._pieces.encode_pretoken(m.group()):
                size = len(self.vocab[token_id])
                first = bisect.bisect_right(starts, offset) - 1
                last = bisect.bisect_left(starts, offset + size)
                partial = starts[first] != offset or starts[last] != offset + size
                yield TokenSpan(token_id, byte_pos + offset, byte_pos + offset + size,
                                char_pos + first, char_pos + last, partial, False)
                offset += size

    # ------------------------------------------------------------------ decoding

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes of ``ids`` joined; ``TokenizerError`` names an id not in the vocabulary,
        ``TypeError`` an id that is not an integer (``1.0``, ``True``)."""
        vocab = self.vocab
        if hasattr(ids, "tolist"):  # numpy arrays: plain ints look up faster
            ids = ids.tolist()
        elif not isinstance(ids, Sequence) or isinstance(ids, (str, bytes)):
            if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
                raise TypeError(f"decode() takes a sequence of token ids, got {type(ids).__name__}")
            ids = list(ids)
        if not set(map(type, ids)) <= {int}:
            for position, i in enumerate(ids):
                if type(i) is not int and (isinstance(i, bool) or not hasattr(i, "__index__")):
                    raise TypeError(
                        f"decode() takes token ids (integers); ids[{position}] is {i!r} ({type(i).__name__})"
                    )
            ids = [int(i) for i in ids]  # numpy integers and other int-like ids
        try:
            return b"".join([vocab[i] for i in ids])
        except KeyError:
            bad = next(i for i in ids if i not in vocab)
            raise self._unknown_id(bad) from None

    def decode(self, ids: Iterable[int]) -> str:
        """Decode ``ids`` to text; malformed UTF-8 becomes U+FFFD."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def __repr__(self) -> str:
        specials = self.special_tokens[:5] + (["..."] if len(self.special_tokens) > 5 else [])
        return (
            f"Tokenizer({len(self)} tokens, {len(self.merges)} merges, "
            f"special_tokens={specials!r}, pattern={self.pattern.name!r})"
        )
