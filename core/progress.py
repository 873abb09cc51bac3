"""What the command line and the window tell the user about a run, written once for both.

Durations, sizes, rates and ETAs (``"3.5 MB of 11.1 MB · 4.5 MB/s"``, ``"1,200 of 9,743
merges · 850 merges/s · ETA 10 s"``), a sliding-window rate, and the summaries of a
training run and of an encoded corpus. Plain strings and numbers, no Qt: the terminal
progress line (`bpe_studio.cli.terminal`), the progress panel, the encode strip and the
banner all show these same texts.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from core.readable import readable

__all__ = [
    "RateMeter", "bytes_progress", "encode_progress", "encode_summary", "format_bytes", "format_duration",
    "merges_progress", "training_summary",
]


def format_duration(seconds: float) -> str:
    """``format_duration(3.24) -> "3.2 s"``, ``(75) -> "1 min 15 s"``, ``(7500) -> "2 h 05 min"``."""
    seconds = max(0.0, seconds)
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def format_bytes(n: float) -> str:
    """``format_bytes(3_500_000) -> "3.5 MB"`` (decimal units, as MB/s are)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{int(n)} B"


def _per_second(amount: float, seconds: float) -> float:
    return amount / seconds if seconds > 0 else 0.0


def bytes_progress(done: int, total: int, seconds: float) -> str:
    """``"3.5 MB of 11.1 MB · 4.5 MB/s"`` (the rate left out until there is one)."""
    text = f"{format_bytes(done)} of {format_bytes(total)}"
    rate = _per_second(done, seconds)
    return f"{text} · {rate / 1e6:,.1f} MB/s" if rate > 0 else text


def merges_progress(done: int, total: int, rate: float) -> str:
    """``"1,200 of 9,743 merges · 850 merges/s · ETA 10 s"`` (``rate``: merges per second, 0 if unknown)."""
    text = f"{done:,} of {total:,} merges"
    if rate > 0:
        text += f" · {rate:,.0f} merges/s · ETA {format_duration(max(total - done, 0) / rate)}"
    return text


def encode_progress(done: int, total: int, tokens: int, seconds: float) -> str:
    """``"3.2 MB of 11.1 MB · 4.5 MB/s · 1,234,567 tokens"``."""
    return f"{bytes_progress(done, total, seconds)} · {tokens:,} tokens"


class RateMeter:
    """Items per second over the last ``window`` seconds: ``add(now, count)`` as the count
    grows, ``rate()`` at any time (0 until two samples a moment apart exist)."""

    def __init__(self, window: float = 3.0) -> None:
        self.window = window
        self._samples: deque[tuple[float, int]] = deque()

    def add(self, now: float, count: int) -> None:
        self._samples.append((now, count))
        while now - self._samples[0][0] > self.window:
            self._samples.popleft()

    def rate(self) -> float:
        if len(self._samples) < 2:
            return 0.0
        (t0, k0), (t1, k1) = self._samples[0], self._samples[-1]
        return _per_second(k1 - k0, t1 - t0)


def encode_summary(corpus_bytes: int, tokens: int, dtype: str, seconds: float, path: object) -> str:
    """``"Encoded 11.1 MB into 3,554,226 tokens (uint16, 3.12 bytes per token) in 0.6 s, 17.0 MB/s: ids.npy"``."""
    per_token = corpus_bytes / tokens if tokens else 0.0
    return (
        f"Encoded {format_bytes(corpus_bytes)} into {tokens:,} tokens ({dtype}, {per_token:.2f} bytes per token) "
        f"in {format_duration(seconds)}, {_per_second(corpus_bytes, seconds) / 1e6:,.1f} MB/s: {path}"
    )


SUMMARY_TOKEN_BYTES = 48
"""A summary shows at most this many bytes of a token, then ``…`` (a token can be 20 MB)."""


def training_summary(
    *,
    seconds: float,
    vocab_size: int,
    merges: Sequence[tuple[bytes, bytes]],
    partial: bool = False,
    distinct: int | None = None,
    total: int | None = None,
    corpus_bytes: int = 0,
    corpus_tokens: int | None = None,
    invalid_bytes: int = 0,
    documents: int = 0,
    input_bytes: int = 0,
) -> list[tuple[str, str]]:
    """``(label, value)`` rows describing a finished (or, ``partial``, cancelled) training run.

    Args:
        distinct, total: distinct and all pre-tokens (``None`` when not known).
        corpus_bytes, corpus_tokens: the pre-token part of the corpus in bytes, and in
            tokens after the last merge (bytes per token shown when both are known).
        documents, input_bytes: documents and bytes (on disk) read (shown when known).
    """
    rows = [("Result", "partial (cancelled)" if partial else "complete"), ("Time", format_duration(seconds))]
    if documents or input_bytes:
        rows.append(("Read", f"{documents:,} document{'s' * (documents != 1)} · {format_bytes(input_bytes)}"))
    if distinct is not None and total is not None:
        rows.append(("Pre-tokens", f"{distinct:,} distinct · {total:,} in all"))
    rows.append(("Vocabulary", f"{vocab_size:,} tokens ({len(merges):,} merges)"))
    if merges:
        # the lengths only: joining every pair would copy every (possibly huge) token
        left, right = max(merges, key=lambda pair: len(pair[0]) + len(pair[1]))
        size = len(left) + len(right)
        head = (left[:SUMMARY_TOKEN_BYTES] + right[: max(0, SUMMARY_TOKEN_BYTES - len(left))])
        shown = readable(head) + ("…" if size > SUMMARY_TOKEN_BYTES else "")
        rows.append(("Longest token", f"{size:,} bytes: {shown}"))
    if corpus_bytes and corpus_tokens:
        rows.append(("Bytes per token", f"{corpus_bytes / corpus_tokens:.2f}"))
    if invalid_bytes:
        rows.append(("Invalid UTF-8 bytes", f"{invalid_bytes:,} (kept byte-exact)"))
    return rows
