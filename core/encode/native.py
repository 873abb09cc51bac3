"""Encoding bytes on the native pre-tokenizer: special tokens and text in one C call.

`NativeEncoder` is the fast path of `Tokenizer.encode` / `encode_to_array` / `encode_batch` and
of corpus encoding for the built-in GPT-2 and GPT-4 patterns. The compiled ``Encoder``
(``_bpe_kernel.c``) finds the special tokens (up to `NATIVE_MAX_SPECIALS`; more are found here by
`core.pretokenize.specials.special_bytes_regex`), cuts the stretches between them with the
native pre-tokenizer (``core/pretokenize/_scanner.h``), looks each pre-token up in its own
cache and merges only the misses — no Python object per pre-token. `NativeEncoder.build`
gives ``None`` when the pattern is custom, ``BPE_STUDIO_PURE_PYTHON=1`` is set, or the
kernels are not built; the callers then take the Python path (`core.encode.piece_encoder`),
which gives the same ids.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np

from core.encode.piece_encoder import PieceEncoder
from core.pretokenize.native import scanner_for
from core.pretokenize.specials import NATIVE_MAX_SPECIALS, special_bytes_regex

try:
    from core.encode._bpe_kernel import Encoder as _Encoder
except ImportError:  # built without a C compiler (or an older build without Encoder)
    _Encoder = None  # type: ignore[assignment,misc]

__all__ = ["NATIVE_CACHE_ENTRIES", "NativeEncoder"]

T = TypeVar("T")

NATIVE_CACHE_ENTRIES = 1 << 17
"""The native cache's size for large texts (`core.encode.engine.Engines`' default least):
~80 bytes an entry (its pre-token, ids and hash slot), so ~10 MB holds the distinct
pre-tokens of most corpora (emptied when full). Pre-tokens of up to 16 bytes are kept in
front of it, eight 32-byte slots an entry (up to 64 MB, its pages mapped as they are first
used)."""

SERIAL_BATCH_BYTES = 1 << 17
"""A batch smaller than this is encoded in the calling thread: starting threads and their
encoders (fresh caches) costs about what encoding this much takes."""


class NativeEncoder:
    """Bytes -> ids for one vocabulary, pattern and set of special tokens, with its own cache.

    Up to `NATIVE_MAX_SPECIALS` special tokens are found by the C code, in the same call; with
    more, `SpecialMatcher` cuts the text here and each stretch between them goes to C.
    Not for use from two threads at once (each call waits for the previous one); give each
    thread its own (`copy`).
    """

    def __init__(self, pieces: PieceEncoder, scanner: int, special_ids: dict[str, int], cache_entries: int) -> None:
        table = pieces._compiled()
        assert table is not None and _Encoder is not None
        self._pieces = pieces
        self._scanner = scanner
        self._cache_entries = cache_entries
        self._special_ids = dict(special_ids)
        self._by_bytes = {t.encode("utf-8"): i for t, i in special_ids.items()}
        in_c = len(self._by_bytes) <= NATIVE_MAX_SPECIALS
        self._encoder = _Encoder(
            table, scanner, cache_entries, list(self._by_bytes.items()) if in_c else []
        )
        # None: the C code finds the special tokens (or there are none)
        self._splitter = None if in_c else special_bytes_regex(tuple(special_ids))

    @classmethod
    def build(cls, pieces: PieceEncoder, special_ids: dict[str, int], cache_entries: int) -> NativeEncoder | None:
        """The native encoder, or ``None`` when the Python path must encode (see the module)."""
        scanner = scanner_for(pieces.pattern)
        if scanner is None or _Encoder is None or pieces._compiled() is None:
            return None
        return cls(pieces, scanner, special_ids, cache_entries)

    def copy(self) -> NativeEncoder:
        """An encoder of the same vocabulary with an empty cache of its own (for another thread)."""
        return NativeEncoder(self._pieces, self._scanner, self._special_ids, self._cache_entries)

    def encode_list(self, data: bytes) -> list[int]:
        """The ids of ``data`` (special tokens are their one id each)."""
        if self._splitter is None:
            return self._encoder.encode_text(data, True)
        return self.encode_many([data])[0]

    def _split_encode(self, data: bytes) -> np.ndarray:
        """The int64 ids of ``data`` cut at its special tokens by `SpecialMatcher.split`: the
        stretches between them encoded in one C call, the tokens' ids put in between (no
        Python step per stretch: text may hold thousands of special tokens)."""
        assert self._splitter is not None
        parts = self._splitter.split(data)
        raw_ids, raw_counts = self._encoder.encode_many(parts[0::2], True)
        ids = np.frombuffer(raw_ids, np.uint32).astype(np.int64)
        if len(parts) == 1:
            return ids
        ends = np.cumsum(np.frombuffer(raw_counts, np.int64)[:-1])  # where each stretch's ids end
        return np.insert(ids, ends, [self._by_bytes[t] for t in parts[1::2]])

    def encode_text(self, text: str) -> list[int]:
        """`encode_list` of ``text``'s UTF-8, the str read by the C code
        (``UnicodeEncodeError`` for a lone surrogate: the caller replaces it first)."""
        if self._splitter is None:
            return self._encoder.encode_text(text, True)
        return self.encode_list(text.encode("utf-8"))

    def encode_ordinary(self, data: bytes | str) -> list[int]:
        """The ids of ``data`` (bytes, or a str as its UTF-8) with special tokens as plain text."""
        return self._encoder.encode_list(data)

    def encode_array(self, data: bytes) -> np.ndarray:
        """`encode_list` as an int64 numpy array (no Python int per id)."""
        if self._splitter is None:
            return np.frombuffer(self._encoder.encode_text(data), np.int64)
        return self._split_encode(data)

    def encode_narrow(self, data: bytes | bytearray | memoryview, dtype: np.dtype[np.unsignedinteger]) -> np.ndarray:
        """`encode_array` as ``dtype`` ids (``uint16`` or ``uint32``: every id must fit), of any
        buffer (a reused read buffer: no copy of the text); the C code narrows the ids, so no
        int64 array is made."""
        if self._splitter is None:
            return np.frombuffer(self._encoder.encode_text(data, False, dtype.itemsize), dtype)
        return self.encode_array(bytes(data)).astype(dtype)

    def encode_many(self, datas: Sequence[bytes]) -> list[list[int]]:
        """The ids of each of ``datas``, encoded in one C call without the GIL."""
        splitter = self._splitter
        if splitter is None:
            return self._encoder.encode_many(datas)
        # Cut each text at its special tokens; encode all ordinary stretches at once.
        stretches: list[bytes] = []
        plans: list[list[int]] = []  # each text's special tokens' ids: one more stretch than ids
        for data in datas:
            parts = splitter.split(data)
            stretches += parts[0::2]
            plans.append([self._by_bytes[t] for t in parts[1::2]])
        encoded = iter(self._encoder.encode_many(stretches))
        out: list[list[int]] = []
        for special_ids in plans:
            ids = next(encoded)
            for special_id in special_ids:
                ids.append(special_id)
                ids += next(encoded)
            out.append(ids)
        return out

    def encode_many_arrays(self, datas: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """`encode_many` as ``(uint32 ids of all texts, int64 number of ids of each)``,
        built in C: no Python int per id."""
        if self._splitter is None:
            raw_ids, raw_counts = self._encoder.encode_many(datas, True)
            return np.frombuffer(raw_ids, np.uint32), np.frombuffer(raw_counts, np.int64)
        arrays = [self.encode_array(data) for data in datas]  # int64 arrays, no Python ints
        counts = np.fromiter(map(len, arrays), np.int64, len(arrays))
        flat = np.concatenate(arrays).astype(np.uint32) if arrays else np.empty(0, np.uint32)
        return flat, counts

    def encode_batch_arrays(self, datas: Sequence[bytes], workers: int) -> tuple[np.ndarray, np.ndarray]:
        """`encode_batch` as ``(ids, offsets)``: uint32 ids of all texts one after another,
        and int64 ``offsets`` (``len(datas) + 1``) with text i's ids at
        ``ids[offsets[i]:offsets[i + 1]]``."""
        parts = self._in_threads(datas, workers, NativeEncoder.encode_many_arrays)
        flat = np.concatenate([p[0] for p in parts]) if parts else np.empty(0, np.uint32)
        offsets = np.zeros(len(datas) + 1, np.int64)
        if parts:
            np.cumsum(np.concatenate([p[1] for p in parts]), out=offsets[1:])
        return flat, offsets

    def encode_batch(self, datas: Sequence[bytes], workers: int) -> list[list[int]]:
        """`encode_many` in ``workers`` threads, each with its own encoder (the C code runs
        without the GIL, so the threads run at once)."""
        return list(itertools.chain.from_iterable(self._in_threads(datas, workers, NativeEncoder.encode_many)))

    def _in_threads(self, datas: Sequence[bytes], workers: int, encode: Callable[[NativeEncoder, Sequence[bytes]], T]) -> list[T]:
        """``encode`` of contiguous slices of ``datas`` in ``workers`` threads, in order; a
        batch of under `SERIAL_BATCH_BYTES` in this thread, with this encoder's warm cache."""
        if workers <= 1 or len(datas) < 2 or sum(map(len, datas)) < SERIAL_BATCH_BYTES:
            return [encode(self, datas)] if len(datas) else []
        workers = min(workers, len(datas))
        # contiguous slices of about equal bytes, more slices than threads to even out
        slices = _balanced_slices(datas, 4 * workers)
        encoders = [self] + [self.copy() for _ in range(workers - 1)]
        free = list(encoders)

        def run(bounds: tuple[int, int]) -> T:
            encoder = free.pop()  # list.pop is atomic; one encoder per running task
            try:
                return encode(encoder, datas[bounds[0] : bounds[1]])
            finally:
                free.append(encoder)

        with ThreadPoolExecutor(workers, thread_name_prefix="bpe-studio-encode") as pool:
            return list(pool.map(run, slices))


def _balanced_slices(datas: Sequence[bytes], parts: int) -> list[tuple[int, int]]:
    """Cut ``range(len(datas))`` into up to ``parts`` contiguous slices of about equal bytes."""
    sizes = list(itertools.accumulate(len(d) + 16 for d in datas))
    total = sizes[-1]
    bounds = [0]
    for k in range(1, parts):
        target = total * k // parts
        i = bounds[-1]
        while i < len(datas) and sizes[i] <= target:
            i += 1
        if i > bounds[-1]:
            bounds.append(i)
    if bounds[-1] < len(datas):
        bounds.append(len(datas))
    return list(zip(bounds, bounds[1:]))
