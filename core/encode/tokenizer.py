"""The tokenizer: encode text to ids and decode ids back, with each token's span in the input.

Adds `Tokenizer`, built from a vocabulary and merges (or loaded from files). Encoding follows
the training semantics (docs/semantics.md) step by step:

1. Special tokens split the text (longest match first); each becomes its one id.
2. The rest is cut at the pattern's safe cut points into *pieces* (`core.pretokenize.pieces`).
3. Pieces become ids (`core.encode.piece_encoder`, through capped caches): each piece is cut
   into pre-tokens by the pattern, each pre-token into bytes (``surrogateescape``
   characters back to the raw bytes they stand for), and the bytes are merged by rank.

Which engine does this — one C call, or ``regex`` and Python around the C merge kernel — is
chosen in one place, `core.encode.engine.Engines`; the methods here only say what to encode.
Streams: `core.encode.streaming`; spans: `core.encode.spans`.

With GPT-2's ``vocab.json``/``merges.txt`` the ids equal tiktoken's ``gpt2`` encoding.
"""

from __future__ import annotations

import functools
import operator

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal, cast, overload

import numpy as np

from core import formats
from core.encode.decoding import VocabDecoder, unknown_id_error
from core.encode.engine import Engines, TextEncoder, check_bytes, gc_paused, text_bytes
from core.encode.piece_encoder import CACHE_ENTRIES, TEXT_ERRORS, PieceEncoder
from core.encode.replay import ReplayTokenizer
from core.encode.spans import TokenSpan, TokenSpans, token_spans
from core.encode.streaming import SafeCuts, TokenStream, encode_stream
from core.errors import OptionsError, OptionsTypeError, TokenizerError
from core.formats.load import TokenizerFiles, load_gpt2_tokenizer, load_tokenizer_files
from core.formats.picky_events import EVENTS_NAME
from core.pretokenize.patterns import Pattern, resolve_pattern
from core.pretokenize.specials import special_token_regex, validate_special_tokens

__all__ = [
    "TEXT_ERRORS", "PickyTokenizer", "TextEncoder", "TokenSpan", "TokenSpans", "TokenStream", "Tokenizer",
    "TokenizerError",
]

STREAM_CACHE_ENTRIES = 1 << 13
"""The size of `Tokenizer.encode_iterable`'s own caches: a few MB in all (the native one and
its front cache, or the Python ones), whatever the stream's length."""


@functools.cache
def _all_cores() -> int:
    """``os.cpu_count()``, read once (each call reads a file, which takes longer than encoding a small batch)."""
    return os.cpu_count() or 1


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

        # Ordinary tokens by bytes; where two ids hold the same bytes the lowest wins (the
        # dict is filled from the highest id down, so the lowest is written last).
        ordinary = [i for i in sorted(self.vocab, reverse=True) if i not in self._special_id_set]
        self._encoder: dict[bytes, int] = dict(zip(map(self.vocab.__getitem__, ordinary), ordinary))
        missing = [b for b in range(256) if bytes([b]) not in self._encoder]
        if missing:
            raise TokenizerError(
                f"the vocabulary lacks {len(missing)} single bytes (first: {bytes([missing[0]])!r}); "
                "a byte-level vocabulary needs all 256"
            )
        self._byte_ids: list[int] = [self._encoder[bytes([b])] for b in range(256)]

        merge_rows, new_id, self._rank_of_id = _merge_tables(self._encoder, self.merges)

        self._special_re = special_token_regex(self.special_tokens)
        self._cuts = SafeCuts(self.pattern, self.special_tokens)
        self._pieces = PieceEncoder(self._byte_ids, merge_rows, new_id, self.pattern, cache_entries)
        self._engines = Engines(self._pieces, self.special_ids)  # the native/Python choice
        self._stream_engines: Engines | None = None  # encode_iterable's, made on first use
        self._decoder = VocabDecoder(self.vocab)

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
        with gc_paused(True):  # (as in `load`)
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

        A folder holding ``picky_events.txt`` is a Picky BPE tokenizer
        (`PickyTokenizer`), which replays its events.

        Raises:
            FileNotFoundError: nothing loadable is there.
            FormatError: a file is malformed.
        """
        if os.path.isfile(os.path.join(path, EVENTS_NAME)):
            return PickyTokenizer.load(path)
        with gc_paused(True):  # (hundreds of thousands of tokens and tuples, no cycles among them)
            files = load_tokenizer_files(path, encoding=encoding, pattern=pattern, special_tokens=special_tokens)
            return cls._from(files)

    def save(self, out_dir: str | os.PathLike[str]) -> list[Path]:
        """Write the tokenizer into ``out_dir`` in every format (`core.formats.save_tokenizer`:
        vocab.json, merges.txt, tokenizer_config.json, tokenizer.json, tokenizer.tiktoken),
        atomically; `load` reads it back."""
        return formats.save_tokenizer(out_dir, self.vocab, self.merges, self.special_tokens, self.pattern)

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
        return unknown_id_error(self.vocab, token_id)

    # ------------------------------------------------------------------ encoding

    def encode(self, text: str | bytes, *, ordinary: bool = False) -> list[int]:
        """Encode ``text``; each special token becomes its one id.

        ``Tokenizer.load("gpt2_dir").encode("Hello world") -> [15496, 995]``. As tiktoken
        does, a lone surrogate (``"\\udcff"``) is encoded as U+FFFD. Bytes are encoded
        byte-exactly: invalid UTF-8 as itself, as training counts it (``encode(b"caf\\xff")``).
        ``ordinary=True``: special tokens are plain text.
        """
        if isinstance(text, str):
            return self._engines.current().encode_text(text, not ordinary)
        return self._engines.current().encode_list(text_bytes(text), not ordinary)

    def encode_ordinary(self, text: str | bytes) -> list[int]:
        """``encode(text, ordinary=True)``, under tiktoken's name, which its users expect:
        ``encode_ordinary("<|endoftext|>")`` gives the ids of the text ``<|endoftext|>``."""
        return self.encode(text, ordinary=True)

    def encode_to_array(self, text: str | bytes, *, ordinary: bool = False) -> np.ndarray:
        """`encode` as an ``int64`` array, built without a Python int per id.

        ``encode_to_array("Hello world") -> array([15496, 995])``; for a stream,
        ``encode_iterable(...).arrays()``; for a corpus, `core.encode_corpus` (a ``.npy``).
        """
        return self._engines.current().encode_array(text_bytes(text, "encode_to_array"), not ordinary)

    def encode_bytes(self, data: bytes, *, ordinary: bool = False) -> list[int]:
        """`encode` of raw bytes, under the name the specification gives it: invalid UTF-8 is
        kept byte-exactly, as training counts it (``encode_bytes(b"caf\\xff")``); ``TypeError``
        for text, which `encode` takes."""
        return self._engines.current().encode_list(check_bytes(data, "encode_bytes", for_text="encode"), not ordinary)

    @overload
    def encode_batch(self, texts: Sequence[str | bytes], *, workers: int | None = None,
                     return_numpy: Literal[False] = False) -> list[list[int]]: ...

    @overload
    def encode_batch(self, texts: Sequence[str | bytes], *, workers: int | None = None,
                     return_numpy: Literal[True]) -> tuple[np.ndarray, np.ndarray]: ...

    def encode_batch(self, texts: Sequence[str | bytes], *, workers: int | None = None,
                     return_numpy: bool = False) -> list[list[int]] | tuple[np.ndarray, np.ndarray]:
        """`encode` of each text, in ``workers`` threads (default: all cores).

        ``tok.encode_batch(["Hello world", "Hi"]) -> [[15496, 995], [17250]]``. With the
        native encoder the threads run at once (it releases the GIL); on the Python path
        the texts are encoded one after another. ``return_numpy=True`` (the specification's
        spelling, typed apart) gives ``(ids, offsets)`` without a Python int per id: every
        text's ``uint32`` ids one after another, text i's at ``ids[offsets[i]:offsets[i + 1]]``.
        """
        datas, workers = self._batch(texts, workers)
        if return_numpy:
            return self._engines.current().encode_batch_arrays(datas, workers)
        return self._engines.current().encode_batch(datas, workers)

    def _batch(self, texts: Sequence[str | bytes], workers: int | None) -> tuple[list[bytes], int]:
        if isinstance(texts, (str, bytes)):
            raise OptionsTypeError("encode_batch() takes a list of texts; use encode() for one text")
        datas = [text_bytes(t, "encode_batch") for t in texts]
        workers = _all_cores() if workers is None else workers
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise OptionsError(f"workers must be a positive integer, got {workers!r}")
        return datas, workers

    def encode_iterable(self, iterable: Iterable[str], *, escaped: bool = False) -> TokenStream:
        """Encode a stream of text (e.g. a file's lines) lazily, in a few MB whatever its length.

        Gives exactly ``encode("".join(iterable))``: text is held back until a point where
        no special token or pre-token can straddle, so a split anywhere changes nothing
        (`core.encode.streaming`). ``for i in tok.encode_iterable(open("a.txt"))``; its
        ``.arrays()`` gives the same ids as ``int64`` arrays.

        Args:
            escaped: the text was decoded from bytes with ``surrogateescape`` (a file with
                invalid UTF-8, say); the bytes it stands for are encoded, as `encode` does bytes.
        """
        if self._stream_engines is None:
            self._stream_engines = Engines(self._pieces.with_cache(STREAM_CACHE_ENTRIES), self.special_ids,
                                           STREAM_CACHE_ENTRIES)
        engines = self._stream_engines

        def text_array(text: str) -> np.ndarray:
            return engines.current().encode_array(text_bytes(text))

        def escaped_array(text: str) -> np.ndarray:
            # TEXT_ERRORS: U+DC80..U+DCFF are their byte, any other lone surrogate U+FFFD
            return engines.current().encode_array(text.encode("utf-8", errors=TEXT_ERRORS))

        return TokenStream(encode_stream(iterable, self._cuts, escaped_array if escaped else text_array))

    def encode_with_spans(self, text: str) -> TokenSpans:
        """Encode ``text`` and say where each token lies in it (bytes and characters): a
        sequence of `TokenSpan`, kept as columns (``.token_ids`` are the ids of `encode`).

        ``encode_with_spans("a€")`` with ``"€"`` split into 2 tokens ->
        ``[(id_a, 0, 1, 0, 1, partial=False), (.., 1, 3, 1, 2, True), (.., 3, 4, 1, 2, True)]``
        """
        return token_spans(text, self._pieces, self._special_re, self.special_ids, self.vocab)

    def _text_encoder(self, cache_entries: int) -> TextEncoder:
        """Bytes to ids with caches of its own (``cache_entries`` each), sharing this
        tokenizer's merge tables, for the corpus encoders (`core.encode.corpus`): made at
        once, and through `TextEncoder.state` sent to another process."""
        return TextEncoder(self._pieces.with_cache(cache_entries), self.special_ids)

    # ------------------------------------------------------------------ decoding

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes of ``ids`` joined; ``TokenizerError`` names an id not in the vocabulary,
        ``TypeError`` an id that is not an integer (``1.0``, ``True``)."""
        return self._decoder.decode_bytes(ids)

    def decode(self, ids: Iterable[int]) -> str:
        """Decode ``ids`` to text; malformed UTF-8 becomes U+FFFD."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def __repr__(self) -> str:
        specials = self.special_tokens[:5] + (["..."] if len(self.special_tokens) > 5 else [])
        return (
            f"Tokenizer({len(self)} tokens, {len(self.merges)} merges, "
            f"special_tokens={specials!r}, pattern={self.pattern.name!r})"
        )


class PickyTokenizer(ReplayTokenizer, Tokenizer):
    """A Picky BPE tokenizer (`core.variants.picky`): encodes each pre-token by replaying its
    event list (`core.encode.replay.ReplayTokenizer`, which holds what it adds)."""


def _merge_tables(
    encoder: dict[bytes, int], merges: list[tuple[bytes, bytes]]
) -> tuple[np.ndarray, list[int], dict[int, int]]:
    """``((left id, right id, rank) rows, rank -> new id, new id -> rank)`` of ``merges``,
    the lowest rank winning where a pair or a token comes twice; built by ``map``, ``dict``
    and numpy (GPT-2's 50,000 merges in milliseconds, not a Python step each).

    Raises:
        TokenizerError: a merge's part or result is not in the vocabulary.
    """
    lefts = [left for left, _ in merges]
    rights = [right for _, right in merges]
    left_ids = list(map(encoder.get, lefts))
    right_ids = list(map(encoder.get, rights))
    new_id = list(map(encoder.get, map(operator.add, lefts, rights)))
    if None in left_ids or None in right_ids or None in new_id:
        rank = next(r for r in range(len(merges)) if None in (left_ids[r], right_ids[r], new_id[r]))
        left, right = merges[rank]
        part = left if left_ids[rank] is None else right if right_ids[rank] is None else left + right
        raise TokenizerError(
            f"merge {rank} ({left!r}, {right!r}) needs the token {part!r}, which is not in the vocabulary"
        )
    news = cast(list[int], new_id)  # (no None: checked above)
    rows = np.empty((len(merges), 3), np.int64)
    rows[:, 0], rows[:, 1], rows[:, 2] = cast(list[int], left_ids), cast(list[int], right_ids), range(len(merges))
    _, first = np.unique(rows[:, 0] << 32 | rows[:, 1], return_index=True)  # (ids are below 2**31)
    if len(first) < len(merges):  # a pair again: its first rank wins
        rows = rows[np.sort(first)]
    rank_of_id = dict(zip(reversed(news), range(len(merges) - 1, -1, -1)))  # (the first rank written last)
    return rows, news, rank_of_id
