"""Types of the compiled BPE kernel (``_bpe_kernel.c``), optional: `core.encode.piece_encoder` works without it."""

from collections.abc import Sequence
from typing import Literal, overload

import numpy as np
from numpy.typing import NDArray

class BpeTable:
    """The merges, for `encode_text`."""

    def __init__(self, byte_ids: Sequence[int], rows: NDArray[np.int64], new_ids: NDArray[np.int64]) -> None: ...
    def encode_text(self, text: str, char_lengths: object) -> tuple[bytes, bytes]:
        """Encode the text's consecutive parts (``char_lengths`` characters each): the ids
        of all parts one after another and the number of ids of each, as int64 bytes."""

class Encoder:
    """Bytes -> ids: the native pre-tokenizer, a pre-token cache, the BPE of misses."""

    def __init__(
        self, table: BpeTable, pattern: int, cache_entries: int, specials: Sequence[tuple[bytes, int]] = ()
    ) -> None:
        """``specials``: up to 16 special tokens' UTF-8 and ids, for `encode_text` and `encode_many`."""
    @overload
    def encode(self, data: bytes | bytearray | memoryview, start: int = 0, end: int = -1, as_list: Literal[False] = False) -> bytes:
        """The ids of ``data[start:end]`` (its end is the end of a text) as int64 bytes."""
    @overload
    def encode(self, data: bytes | bytearray | memoryview, start: int = 0, end: int = -1, *, as_list: Literal[True]) -> list[int]:
        """The ids of ``data[start:end]`` as a list."""
    def encode_list(self, data: str | bytes | bytearray | memoryview) -> list[int]:
        """The ids of ``data`` (a str: of its UTF-8; ``UnicodeEncodeError`` for a lone surrogate)."""
    @overload
    def encode_text(
        self, data: str | bytes | bytearray | memoryview, as_list: Literal[False] = False, itemsize: int = 8, /
    ) -> bytearray:
        """The ids of ``data`` (a str: of its UTF-8; any buffer, read in place), special tokens
        as their ids, as int64 bytes, or uint32/uint16 with ``itemsize`` 4/2 (the caller
        makes sure every id fits) (a bytearray: `numpy.frombuffer` makes a writable array of
        it, no copy)."""
    @overload
    def encode_text(self, data: str | bytes | bytearray | memoryview, as_list: Literal[True], /) -> list[int]:
        """The ids of ``data``, special tokens as their ids, as a list."""
    @overload
    def encode_many(self, datas: Sequence[bytes], as_arrays: Literal[False] = False, /) -> list[list[int]]:
        """The ids of each of ``datas`` (each a whole text; special tokens as their ids), the
        GIL released once for all."""
    @overload
    def encode_many(self, datas: Sequence[bytes], as_arrays: Literal[True], /) -> tuple[bytearray, bytearray]:
        """The ids of all ``datas`` one after another (uint32) and each one's number of ids (int64)."""
    def cache_size(self) -> int:
        """Pre-tokens in the cache."""

class Decoder:
    """Ids -> bytes, from a table of each id's token."""

    def __init__(self, tokens: list[bytes | None]) -> None:
        """``tokens[id]``: the bytes of that id's token, or None for an id not in the vocabulary."""
    def decode(self, ids: list[int] | NDArray[np.int64]) -> bytes | None:
        """The tokens of ``ids`` joined, or None at an id that is not an int naming one."""
