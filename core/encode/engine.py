"""The one place where encoding chooses its engine: native (C) or Python.

Adds `Engines`, which a `core.encode.tokenizer.Tokenizer` (and each `TextEncoder`) holds and
asks for the engine to use (`Engines.current`), and the two engines, which take bytes and
give the same ids:

- `NativeEngine` (`core.encode.native.NativeEncoder`): the native pre-tokenizer, a cache and
  the C merge kernel in one call, without the GIL — for the built-in GPT-2 and GPT-4
  patterns when the C extensions are built;
- `PythonEngine`: special tokens and pieces cut with ``regex``, pieces to ids through
  `core.encode.piece_encoder.PieceEncoder` (which merges in the C kernel when it is built,
  else with `core.encode.merge.merge_word`) — custom patterns, or no C compiler.

``BPE_STUDIO_PURE_PYTHON=1`` makes `current` give the Python engine (read at each call, so a
test can run both engines on one tokenizer). Each engine is built on first use.

Also here: how text becomes the bytes that are encoded (`text_bytes`, as tiktoken does: a
lone surrogate is U+FFFD) and `TextEncoder`, the corpus encoders' compact form.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from core.encode.native import NATIVE_CACHE_ENTRIES, NativeEncoder
from core.encode.piece_encoder import EncoderState, PieceEncoder
from core.errors import OptionsTypeError
from core.pretokenize.native import python_forced
from core.pretokenize.pieces import split_pieces
from core.pretokenize.specials import SpecialMatcher, special_token_regex
from core.pretokenize.surrogates import replace_lone_surrogates

__all__ = [
    "GC_PAUSE_CHARS", "Engines", "NativeEngine", "PythonEngine", "TextEncoder", "check_bytes", "gc_paused",
    "text_bytes",
]

GC_PAUSE_CHARS = 1 << 16


@contextlib.contextmanager
def gc_paused(pause: bool) -> Iterator[None]:
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


def text_bytes(text: object, method: str = "encode") -> bytes:
    """The bytes ``text`` is encoded as: a str's UTF-8 (`core.pretokenize.surrogates`), bytes as they
    are; ``TypeError`` naming ``method`` for anything else."""
    if isinstance(text, str):
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            return replace_lone_surrogates(text).encode("utf-8")
    if isinstance(text, bytes):
        return text
    if isinstance(text, (bytearray, memoryview)):
        return bytes(text)
    raise OptionsTypeError(f"{method}() takes text (str) or bytes, got {type(text).__name__}")


def check_bytes(data: object, method: str = "encode_to_array", for_text: str = "encode_to_array") -> bytes:
    """``data`` as bytes; ``TypeError`` naming ``method`` for anything not bytes-like (and,
    for text, the `Tokenizer` method ``for_text`` that takes it)."""
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise OptionsTypeError(
        f"{method}() takes bytes, got {type(data).__name__}"
        + (f": use Tokenizer.{for_text}() for text" if isinstance(data, str) else "")
    )


def _offsets(lengths: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


class PythonEngine:
    """Bytes -> ids with ``regex`` and `PieceEncoder` (bytes that are not UTF-8 stand for
    themselves: they are decoded with ``surrogateescape``, which the piece encoder undoes)."""

    def __init__(self, pieces: PieceEncoder, special_ids: dict[str, int]) -> None:
        self.pieces = pieces
        self.special_ids = special_ids
        self._special_re: SpecialMatcher[str] | None = special_token_regex(list(special_ids))

    def encode_array(self, data: bytes, specials: bool = True) -> np.ndarray:
        """The ids of ``data`` as an int64 array; ``specials=False``: special tokens as text."""
        text = data.decode("utf-8", errors="surrogateescape")
        pattern = self.pieces.pattern
        with gc_paused(len(text) >= GC_PAUSE_CHARS):
            if self._special_re is None or not specials:
                return self.pieces.encode_pieces(split_pieces(text, pattern), {})
            # Special tokens join the pieces: no ordinary piece contains a special token's text.
            found: list[str] = []
            pos = 0
            for m in self._special_re.finditer(text):
                if m.start() > pos:
                    found.extend(split_pieces(text[pos : m.start()], pattern))
                found.append(m.group())
                pos = m.end()
            if pos < len(text):
                found.extend(split_pieces(text[pos:], pattern))
            return self.pieces.encode_pieces(found, self.special_ids)

    def encode_list(self, data: bytes, specials: bool = True) -> list[int]:
        return self.encode_array(data, specials).tolist()  # type: ignore[no-any-return]

    def encode_text(self, text: str, specials: bool = True) -> list[int]:
        return self.encode_list(text_bytes(text), specials)

    def encode_batch(self, datas: Sequence[bytes], workers: int) -> list[list[int]]:
        """One text after another (the Python path holds the GIL: threads would not help)."""
        return [self.encode_list(data) for data in datas]

    def encode_batch_arrays(self, datas: Sequence[bytes], workers: int) -> tuple[np.ndarray, np.ndarray]:
        arrays = [self.encode_array(data) for data in datas]
        flat = np.concatenate(arrays).astype(np.uint32) if arrays else np.empty(0, np.uint32)
        return flat, _offsets(np.fromiter(map(len, arrays), np.int64, len(arrays)))


class NativeEngine:
    """Bytes -> ids in one C call (`NativeEncoder`); a str's UTF-8 is read by the C code."""

    def __init__(self, native: NativeEncoder) -> None:
        self.native = native

    def encode_array(self, data: bytes, specials: bool = True) -> np.ndarray:
        if specials:
            return self.native.encode_array(data)
        return np.asarray(self.native.encode_ordinary(data), dtype=np.int64)

    def encode_list(self, data: bytes, specials: bool = True) -> list[int]:
        return self.native.encode_list(data) if specials else self.native.encode_ordinary(data)

    def encode_text(self, text: str, specials: bool = True) -> list[int]:
        if type(text) is str:
            try:
                return self.native.encode_text(text) if specials else self.native.encode_ordinary(text)
            except UnicodeEncodeError:  # a lone surrogate: text_bytes replaces it
                pass
        return self.encode_list(text_bytes(text), specials)

    def encode_batch(self, datas: Sequence[bytes], workers: int) -> list[list[int]]:
        with gc_paused(sum(map(len, datas)) >= GC_PAUSE_CHARS):  # thousands of lists of ints
            return self.native.encode_batch(datas, workers)

    def encode_batch_arrays(self, datas: Sequence[bytes], workers: int) -> tuple[np.ndarray, np.ndarray]:
        return self.native.encode_batch_arrays(datas, workers)


Engine = NativeEngine | PythonEngine


class Engines:
    """The engines of one vocabulary and set of special tokens, each built on first use;
    `current` is the native one when it can serve (see the module), else the Python one.
    The native one's cache holds ``native_cache_entries`` pre-tokens (by default at least
    `NATIVE_CACHE_ENTRIES`, what large texts need)."""

    def __init__(
        self, pieces: PieceEncoder, special_ids: dict[str, int], native_cache_entries: int | None = None
    ) -> None:
        self.pieces = pieces
        self.special_ids = special_ids
        self._native_cache_entries = native_cache_entries or max(pieces.cache_entries, NATIVE_CACHE_ENTRIES)
        self._python: PythonEngine | None = None
        self._native: NativeEngine | None = None
        self._native_checked = False

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the engines (the native one is C), which are built again on first use."""
        return {**self.__dict__, "_python": None, "_native": None, "_native_checked": False}

    def current(self) -> Engine:
        """The engine to encode with now."""
        if not python_forced():
            if not self._native_checked:
                built = NativeEncoder.build(self.pieces, self.special_ids, self._native_cache_entries)
                self._native = NativeEngine(built) if built is not None else None
                self._native_checked = True
            if self._native is not None:
                return self._native
        if self._python is None:
            self._python = PythonEngine(self.pieces, self.special_ids)
        return self._python

    def native(self) -> bool:
        """Whether the native engine serves (so encoding runs without the GIL)."""
        return isinstance(self.current(), NativeEngine)


class TextEncoder:
    """Bytes to ids for encoding corpora (`Tokenizer._text_encoder`), with caches of its own.
    Its `state` (numpy arrays; see `core.encode.piece_encoder.EncoderState`) is what a
    spawned process receives and turns back into an encoder much faster than it would
    unpickle and rebuild a whole `Tokenizer`."""

    def __init__(self, pieces: PieceEncoder, special_ids: dict[str, int]) -> None:
        self.pieces = pieces
        self.special_ids = dict(special_ids)
        self._engines = Engines(pieces, self.special_ids)

    def encode_to_array(self, data: bytes) -> np.ndarray:
        """The ids of ``data`` as ``Tokenizer.encode_to_array(data)`` gives them (int64)."""
        return self._engines.current().encode_array(check_bytes(data))

    def encode_into_dtype(self, data: bytes | bytearray | memoryview, dtype: np.dtype[np.unsignedinteger]) -> np.ndarray:
        """`encode_to_array` as ``dtype`` ids (``uint16`` or ``uint32``, which every id must fit),
        of any buffer: the native engine reads it in place and gives the ids narrowed in C
        (no int64 array, no copy of the text)."""
        engine = self._engines.current()
        if isinstance(engine, NativeEngine):
            return engine.native.encode_narrow(data, dtype)
        return engine.encode_array(bytes(data)).astype(dtype)

    def native_available(self) -> bool:
        """Whether the native encoder serves this encoder (so encoding runs without the GIL)."""
        return self._engines.native()

    def state(self) -> tuple[EncoderState, dict[str, int]]:
        """This encoder, compact, for `from_state` in another process."""
        return self.pieces.state(), dict(self.special_ids)

    @classmethod
    def from_state(cls, state: tuple[EncoderState, dict[str, int]]) -> TextEncoder:
        """The encoder of `state` (with empty caches)."""
        pieces, special_ids = state
        return cls(PieceEncoder.from_state(pieces), special_ids)
