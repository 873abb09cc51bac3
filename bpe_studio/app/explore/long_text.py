"""Encoding a long text for the inspector in a stream: the first screen's tokens at once,
then the ids of the rest, with the figures and the round trip checked as they come.

`encode_long` is the work of a background job (no Qt): it yields the head's spans first
(the inspector draws them while the rest is encoded), then progress figures, and returns
the whole result. Memory stays a few bytes per token: the ids are kept as a compact
``array`` (4 bytes each), only the head gets spans, and the round trip compares decoded
bytes with the text's bytes one stretch at a time, never the whole decoded text.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Iterator
from typing import Any

import numpy as np

from bpe_studio.app.workers.heap import collections_paused
from core.encode.streaming import SafeCuts
from core.readable import readable_text

HEAD_CHARS = 16_000
"""Characters encoded with spans before anything else (more than the drawn tokens need)."""
CHUNK_CHARS = 1 << 18
DECODE_IDS = 1 << 15
"""Ids decoded at a time (each step holds the GIL, which the GUI thread waits for)."""
PROGRESS_SECONDS = 0.1


def head_of(tokenizer: Any, text: str, limit: int = HEAD_CHARS) -> str:
    """The longest start of ``text`` of at most ``limit`` characters whose tokens are those
    of the whole text (cut where no pre-token or special token straddles)."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    cut = SafeCuts(tokenizer.pattern, list(tokenizer.special_tokens)).safe_end(head)
    return head[:cut] if cut else head


def _chunks(text: str, counter: list[int]) -> Iterator[str]:
    for start in range(0, len(text), CHUNK_CHARS):
        piece = text[start : start + CHUNK_CHARS]
        counter[0] += len(piece)
        yield piece


def _lead_bytes(data: bytes | bytearray) -> int:
    """How many characters start in ``data`` (UTF-8: every byte that is not 0b10xxxxxx)."""
    if not data:
        return 0
    return int(np.count_nonzero((np.frombuffer(bytes(data), dtype=np.uint8) & 0xC0) != 0x80))


class _RoundTrip:
    """Compares decoded bytes with the text's own UTF-8, stretch by stretch."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._expected = (
            text[i : i + CHUNK_CHARS].encode("utf-8", errors="surrogatepass") for i in range(0, len(text), CHUNK_CHARS)
        )
        self._pending = bytearray()
        self._chars = 0  # characters of the text whose bytes were pulled into the comparison
        self.nbytes = 0  # the text's UTF-8 bytes pulled so far (all of them after `finish`)
        self.report: str | None = None

    def _pull(self) -> bool:
        more = next(self._expected, None)
        if more is None:
            return False
        self._pending += more
        self._chars += _lead_bytes(more)
        self.nbytes += len(more)
        return True

    def feed(self, decoded: bytes) -> None:
        if self.report is not None:
            return
        while len(self._pending) < len(decoded) and self._pull():
            pass
        n = min(len(decoded), len(self._pending))
        if decoded[:n] == self._pending[:n]:
            if n < len(decoded):  # decoding gives more than the text holds
                self._fail(n, decoded)
            else:
                del self._pending[:n]
            return
        k = next(j for j in range(n) if decoded[j] != self._pending[j])
        self._fail(k, decoded)

    def finish(self) -> None:
        left = bool(self._pending)
        while self._pull():
            left = True
            if self.report is None:
                self._fail(0, b"")  # the text goes on where the decoded bytes end
            self._pending.clear()  # only its length is still wanted
        if left and self.report is None:
            self._fail(0, b"")

    def _fail(self, k: int, decoded: bytes) -> None:
        back = 0
        while 0 < k - back and k - back < len(self._pending) and self._pending[k - back] & 0xC0 == 0x80:
            back += 1
        start = k - back
        index = self._chars - _lead_bytes(self._pending[start:])
        want = readable_text(self._text[index : index + 8]) or "end of text"
        got = readable_text(decoded[start : start + 32].decode("utf-8", errors="replace")[:8]) or "end of text"
        self.report = f"first difference at character {index:,}: text has “{want}”, decode gives “{got}”"


def encode_long(tokenizer: Any, text: str) -> Iterator[dict[str, Any]]:
    """Encode ``text`` in a stream (runs in a worker thread).

    Yields ``{"head": str, "spans": TokenSpans}`` first (the start of the text and its spans,
    as the whole text's encoding cuts it), then ``{"chars": done, "tokens": so_far}`` every
    `PROGRESS_SECONDS`; returns what the inspector shows: ``text``, ``head``, ``spans``,
    ``ids`` (an ``array('i')`` of every id), ``bytes`` (the text's UTF-8 length) and
    ``round_trip`` (None, or where decode(encode(text)) first differs from the text).
    """
    with collections_paused():
        head = head_of(tokenizer, text)
        spans = tokenizer.encode_with_spans(head)
    yield {"head": head, "spans": spans}
    ids = array("i")
    done = [0]
    check = _RoundTrip(text)
    last = time.monotonic()
    for part in tokenizer.encode_iterable(_chunks(text, done)).arrays():
        ids.frombytes(part.astype(np.int32).tobytes())
        for start in range(0, len(part), DECODE_IDS):
            check.feed(tokenizer.decode_bytes(part[start : start + DECODE_IDS].tolist()))
        now = time.monotonic()
        if now - last >= PROGRESS_SECONDS:
            last = now
            yield {"chars": done[0], "tokens": len(ids)}
    check.finish()
    return {"error": None, "text": text, "head": head, "spans": spans, "ids": ids, "bytes": check.nbytes,
            "round_trip": check.report}
