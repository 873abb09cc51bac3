"""Encoding a stream of text in bounded memory: where a stream may be cut without changing its ids.

Adds `SafeCuts` (the largest prefix of buffered text whose ids no continuation can change)
and `encode_stream`, which `Tokenizer.encode_iterable` and the corpus pipeline's streamed
chunks use: text is held back until such a point, so a split anywhere changes nothing.
`TokenStream` is what `Tokenizer.encode_iterable` gives: its ids, or its arrays.
Patterns without safe cut points (custom ones) are cut at a pre-token boundary at least
4,096 characters back once 64K characters are held.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Generator, Iterable, Iterator

import numpy as np
import regex

from core.errors import OptionsError
from core.pretokenize.patterns import Pattern
from core.pretokenize.specials import special_token_regex

__all__ = ["ITER_BATCH_CHARS", "SafeCuts", "TokenStream", "encode_stream"]

ITER_BATCH_CHARS = 1 << 12  # encode_iterable collects this much text before cutting
_FALLBACK_CHARS = 1 << 16  # past this without an exact cut, cut at a pre-token boundary...
_FALLBACK_MARGIN = 1 << 12  # ...this far from the end of the buffered text


class SafeCuts:
    """Safe cut points of text for one pattern and set of special tokens."""

    def __init__(self, pattern: Pattern, special_tokens: list[str]) -> None:
        self.pattern = pattern
        self._special_re = special_token_regex(special_tokens)
        self._max_special = max((len(t) for t in special_tokens), default=0)
        self._last_cut = regex.compile("(?r)" + pattern.cut_before.pattern) if pattern.cut_before is not None else None

    def safe_end(self, text: str) -> int:
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


def encode_stream(
    iterable: Iterable[str], cuts: SafeCuts, encode_array: Callable[[str], np.ndarray], batch_chars: int | None = None
) -> Iterator[np.ndarray]:
    """The ids of ``"".join(iterable)``, one array per stretch encoded with ``encode_array``
    between two safe cut points (at least ``batch_chars`` characters each, but the last)."""
    batch = ITER_BATCH_CHARS if batch_chars is None else batch_chars
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
        cut = cuts.safe_end(buffer)
        if cut:
            yield encode_array(buffer[:cut])
            buffer = buffer[cut:]
            retry_at = 0
        elif len(buffer) > _FALLBACK_CHARS:
            retry_at = 2 * len(buffer)
    buffer += "".join(pending)
    if buffer:
        yield encode_array(buffer)


class TokenStream(Iterator[int]):
    """The ids of a stream, made lazily: iterate it for ints, or call `arrays` once, before
    taking any id, for the same ids as int64 arrays (no Python int per id).

    ``list(tok.encode_iterable(["Hello", " world"])) -> [15496, 995]``;
    ``np.concatenate(list(tok.encode_iterable(lines).arrays()))``
    """

    def __init__(self, arrays: Iterator[np.ndarray]) -> None:
        self._arrays = arrays
        self._ids = self._flat()

    def _flat(self) -> Generator[int, None, None]:
        for ids in self._arrays:
            yield from ids.tolist()

    def __iter__(self) -> Iterator[int]:
        return self._ids  # the generator itself: a for loop runs without a Python call per id

    def __next__(self) -> int:
        return next(self._ids)

    def arrays(self) -> Iterator[np.ndarray]:
        """The ids as int64 arrays, one per stretch of text encoded between safe cut points."""
        if inspect.getgeneratorstate(self._ids) != inspect.GEN_CREATED:
            raise OptionsError("arrays() gives the whole stream: call it before taking any id")
        return self._arrays
