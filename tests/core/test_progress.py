"""The texts the CLI and the window show about a run (`core.progress`), written once for both."""

from __future__ import annotations

import pytest

from core.progress import (
    RateMeter,
    bytes_progress,
    encode_progress,
    encode_summary,
    format_bytes,
    format_duration,
    merges_progress,
    training_summary,
)


@pytest.mark.parametrize(("seconds", "text"), [(0, "0.0 s"), (3.24, "3.2 s"), (42.4, "42 s"), (75, "1 min 15 s"),
                                               (3599.6, "1 h 00 min"), (7500, "2 h 05 min"), (-1, "0.0 s")])
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize(("n", "text"), [(0, "0 B"), (999, "999 B"), (3_500, "3.5 KB"), (3_500_000, "3.5 MB"),
                                         (12_345_000_000, "12.3 GB")])
def test_format_bytes(n: int, text: str) -> None:
    assert format_bytes(n) == text


def test_progress_texts() -> None:
    assert bytes_progress(3_500_000, 11_100_000, 0.0) == "3.5 MB of 11.1 MB"
    assert bytes_progress(3_500_000, 11_100_000, 2.0) == "3.5 MB of 11.1 MB · 1.8 MB/s"
    assert encode_progress(3_500_000, 11_100_000, 1234, 2.0) == "3.5 MB of 11.1 MB · 1.8 MB/s · 1,234 tokens"
    assert merges_progress(1_200, 9_743, 0.0) == "1,200 of 9,743 merges"
    assert merges_progress(1_200, 9_743, 850.0) == "1,200 of 9,743 merges · 850 merges/s · ETA 10 s"


def test_rate_meter_keeps_a_sliding_window() -> None:
    meter = RateMeter(window=3.0)
    assert meter.rate() == 0.0
    meter.add(0.0, 0)
    meter.add(1.0, 100)
    assert meter.rate() == 100.0
    meter.add(5.0, 1100)  # the first two samples fall out of the window
    assert meter.rate() == 0.0
    meter.add(6.0, 1400)
    assert meter.rate() == 300.0


def test_summaries() -> None:
    line = encode_summary(11_100_000, 3_000_000, "uint16", 2.0, "ids.npy")
    assert line == "Encoded 11.1 MB into 3,000,000 tokens (uint16, 3.70 bytes per token) in 2.0 s, 5.5 MB/s: ids.npy"
    rows = dict(training_summary(seconds=75, vocab_size=259, merges=[(b"a", b"b"), (b"ab", b" c\n")], distinct=7,
                                 total=70, corpus_bytes=400, corpus_tokens=100, invalid_bytes=3))
    assert rows == {
        "Result": "complete", "Time": "1 min 15 s", "Pre-tokens": "7 distinct · 70 in all",
        "Vocabulary": "259 tokens (2 merges)", "Longest token": "5 bytes: ab·c↵", "Bytes per token": "4.00",
        "Invalid UTF-8 bytes": "3 (kept byte-exact)",
    }
    partial = dict(training_summary(seconds=1, vocab_size=256, merges=[], partial=True))
    assert partial == {"Result": "partial (cancelled)", "Time": "1.0 s", "Vocabulary": "256 tokens (0 merges)"}
