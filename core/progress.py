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
    "merges_progress", "read_summary", "stopped_early", "training_summary",
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


def bytes_progress(done: int, total: int, seconds: float, *, rate: float | None = None) -> str:
    """``"3.5 MB of 11.1 MB · 4.5 MB/s"`` (the rate left out until there is one).

    With ``rate`` (bytes per second, measured by the caller, e.g. from the first bytes read
    rather than from the start) it is shown instead, with the time left:
    ``"3.5 MB of 11.1 MB · 4.5 MB/s · ETA 1.7 s"``.
    """
    text = f"{format_bytes(done)} of {format_bytes(total)}"
    if rate is not None:
        if rate <= 0:
            return text
        return f"{text} · {rate / 1e6:,.1f} MB/s · ETA {format_duration(max(total - done, 0) / rate)}"
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


def read_summary(documents: int, text_bytes: int, input_bytes: int = 0) -> str:
    """What was read, the one way `train`, `count` and the window say it: documents and
    bytes of text, and the bytes on disk when they differ by more than a tenth (a
    compressed file, JSONL's syntax): ``"1,686 documents · 29.4 MB of text (6.4 MB on
    disk)"``, ``"1 document · 3.5 KB of text"``.

    Args:
        text_bytes: the text's bytes (the pre-tokens: special tokens left out); 0 when
            not known, then only the bytes on disk are given.
        input_bytes: the bytes read from disk (compressed bytes for a compressed file).
    """
    head = f"{documents:,} document{'s' * (documents != 1)}"
    if not text_bytes:
        return f"{head} · {format_bytes(input_bytes)} on disk" if input_bytes else head
    text = f"{head} · {format_bytes(text_bytes)} of text"
    if input_bytes and abs(input_bytes - text_bytes) > text_bytes / 10:
        text += f" ({format_bytes(input_bytes)} on disk)"
    return text


SUMMARY_TOKEN_BYTES = 48
"""A summary shows at most this many bytes of a token, then ``…`` (a token can be 20 MB)."""


def stopped_early(merges: int, planned: int) -> str:
    """``stopped_early(253, 4743) -> "stopped early: no pair left (253 of 4,743 merges)"``."""
    return f"stopped early: no pair left ({merges:,} of {planned:,} merges)"


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
    planned: int | None = None,
    longest: tuple[bytes, bytes] | None = None,
) -> list[tuple[str, str]]:
    """``(label, value)`` rows describing a finished (or, ``partial``, cancelled) training run.

    Args:
        planned: the merges the vocabulary size asked for; a finished run with fewer ran
            out of pairs: "stopped early: no pair left (253 of 4,743 merges)".
        distinct, total: distinct and all pre-tokens (``None`` when not known).
        corpus_bytes, corpus_tokens: the pre-token part of the corpus in bytes, and in
            tokens after the last merge (bytes per token shown when both are known).
        documents, input_bytes: documents and bytes (on disk) read (shown when known, with
            ``corpus_bytes`` as the text's bytes: `read_summary`).
        longest: the merge making the longest token (the first of the longest), when the
            caller knows it; else found here (a pass over ``merges``).
    """
    if partial:
        result = "partial (cancelled)"
    elif planned is not None and len(merges) < planned:
        result = stopped_early(len(merges), planned)
    else:
        result = "complete"
    rows = [("Result", result), ("Time", format_duration(seconds))]
    if documents or input_bytes:
        rows.append(("Read", read_summary(documents, corpus_bytes, input_bytes)))
    if distinct is not None and total is not None:
        rows.append(("Pre-tokens", f"{distinct:,} distinct · {total:,} in all"))
    rows.append(("Vocabulary", f"{vocab_size:,} tokens ({len(merges):,} merges)"))
    if merges:
        # the lengths only: joining every pair would copy every (possibly huge) token
        left, right = longest or max(merges, key=lambda pair: len(pair[0]) + len(pair[1]))
        size = len(left) + len(right)
        head = (left[:SUMMARY_TOKEN_BYTES] + right[: max(0, SUMMARY_TOKEN_BYTES - len(left))])
        shown = readable(head) + ("…" if size > SUMMARY_TOKEN_BYTES else "")
        rows.append(("Longest token", f"{size:,} bytes: {shown}"))
    if corpus_bytes and corpus_tokens:
        rows.append(("Bytes per token", f"{corpus_bytes / corpus_tokens:.2f}"))
    if invalid_bytes:
        rows.append(("Invalid UTF-8 bytes", f"{invalid_bytes:,} (kept byte-exact)"))
    return rows
