"""`train` and `count` say what they read the one way `core.progress.read_summary` words
it: documents (singular for one) and bytes of text, plus the bytes on disk when a
compressed file makes them differ — not the compressed bytes alone."""

from __future__ import annotations

import gzip
from pathlib import Path

from core.progress import format_bytes, read_summary
from tests.cli_run import run_cli_here

TEXT = "The cat sat on the mat; the dog sat on the log, didn't it? " * 2000  # 118 KB, compresses well


def read_line(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith("read: "))[len("read: "):]


def test_read_summary() -> None:
    assert read_summary(1, 3_500) == "1 document · 3.5 KB of text"
    assert read_summary(1_686, 29_400_000, 6_400_000) == "1,686 documents · 29.4 MB of text (6.4 MB on disk)"
    assert read_summary(2, 1_000_000, 1_013_000) == "2 documents · 1.0 MB of text"  # a few special tokens
    assert read_summary(0, 0, 2_000) == "0 documents · 2.0 KB on disk"


def test_train_and_count_report_text_bytes_alike(tmp_path: Path) -> None:
    packed = tmp_path / "one.txt.gz"
    packed.write_bytes(gzip.compress(TEXT.encode()))
    text = format_bytes(len(TEXT.encode()))
    on_disk = format_bytes(packed.stat().st_size)
    expected = f"1 document · {text} of text ({on_disk} on disk)"

    counted = run_cli_here("count", packed, "--out", tmp_path / "one.bpc")
    assert counted.returncode == 0, counted.stderr
    assert read_line(counted.stdout) == expected
    trained = run_cli_here("train", packed, "--vocab-size", "300", "--out", tmp_path / "tok")
    assert trained.returncode == 0, trained.stderr
    assert read_line(trained.stdout) == expected
