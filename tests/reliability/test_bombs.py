"""Compression bombs and text without boundaries: `--max-bytes` bounds time and memory of
reading whatever the stream holds, and without a cap a stretch of text with no pre-token
boundary is refused (docs/corpora.md) instead of being held whole.

The bombs are made in a moment and small on disk: gzip members and zstd frames of a
few MB of ``a`` repeated (a reader reads them as one stream)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zstandard

from tests.cli_run import REPO, cli_command, cli_env

MB = 1 << 20
GiB = 1 << 30


def _bomb(path: Path, piece: bytes, total: int) -> Path:
    """``total`` bytes of ``piece`` repeated, as repeated gzip members / zstd frames."""
    block = piece * (16 * MB // len(piece))
    if path.suffix == ".gz":
        member = gzip.compress(block, compresslevel=9, mtime=0)
    else:
        member = zstandard.ZstdCompressor(level=19).compress(block)
    with path.open("wb") as f:
        for _ in range(total // len(block)):
            f.write(member)
    return path


def _run(*args: str | Path, timeout: float = 120) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """The CLI in a child process: its result, seconds taken and peak memory in MB."""
    measure = ("import resource, subprocess, sys, time; t = time.monotonic(); "
               "r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
               "sys.stdout.write(r.stdout); sys.stderr.write(r.stderr); "
               "print(f'@@ {time.monotonic() - t} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}'); "
               "sys.exit(r.returncode)")
    result = subprocess.run([sys.executable, "-c", measure, *map(str, cli_command(*args))], cwd=REPO,
                            env=cli_env(), capture_output=True, text=True, timeout=timeout)
    last = result.stdout.strip().splitlines()[-1].split()
    assert last[0] == "@@", result.stdout
    return result, float(last[1]), int(last[2]) / 1024


@pytest.mark.parametrize("name, total", [("a.txt.gz", 2 * GiB), ("a.txt.zst", 16 * GiB)])
def test_a_capped_bomb_reads_about_the_cap(tmp_path: Path, name: str, total: int) -> None:
    bomb = _bomb(tmp_path / name, b"a", total)
    assert bomb.stat().st_size < 3 * MB
    result, seconds, peak = _run("count", bomb, "--max-bytes", "1MB", "--out", tmp_path / "c.bpc",
                                 "--workers", "2")
    assert result.returncode == 0, result.stderr[-2000:]
    assert seconds < 15, f"{seconds:.1f} s for a 1 MB cap"
    assert peak < 400, f"{peak:.0f} MB for a 1 MB cap"


def test_a_capped_word_bomb_in_zstd_stays_small(tmp_path: Path) -> None:
    bomb = _bomb(tmp_path / "words.txt.zst", b"the cat sat on the mat. ", 16 * GiB)
    result, seconds, peak = _run("count", bomb, "--max-bytes", "1MB", "--out", tmp_path / "c.bpc")
    assert result.returncode == 0, result.stderr[-2000:]
    assert seconds < 15 and peak < 400, (seconds, peak)


@pytest.mark.parametrize("name", ["a.txt.gz", "a.txt.zst", "a.txt"])
def test_no_boundary_for_64_mib_is_one_clear_error_in_bounded_memory(tmp_path: Path, name: str) -> None:
    if name == "a.txt":
        bomb = tmp_path / name
        with bomb.open("wb") as f:
            for _ in range(160):
                f.write(b"a" * MB)
    else:
        bomb = _bomb(tmp_path / name, b"a", 2 * GiB)
    result, seconds, peak = _run("count", bomb, "--out", tmp_path / "c.bpc", "--workers", "2")
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "64 MiB hold no pre-token boundary" in lines[0] and str(bomb) in lines[0], lines
    assert seconds < 60 and peak < 700, (seconds, peak)
    assert not (tmp_path / "c.bpc").exists()


def test_a_jsonl_line_beyond_the_limit_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl.zst"
    record = json.dumps({"text": "a" * (80 * MB)}).encode() + b"\n"
    path.write_bytes(zstandard.ZstdCompressor(level=3).compress(record))
    result, _seconds, peak = _run("count", path, "--out", tmp_path / "c.bpc")
    assert result.returncode == 2 and "longer than 64 MiB" in result.stderr and "line 1" in result.stderr, result.stderr[-2000:]
    assert peak < 700


def test_the_zstd_reader_never_hands_out_more_than_a_piece_allows() -> None:
    from core.corpus.streams import _ZstdReader

    frame = zstandard.ZstdCompressor(level=19).compress(b"a" * (256 * MB))
    import io

    reader = _ZstdReader(io.BytesIO(frame), Path("bomb.zst"))
    biggest = 0
    started = time.monotonic()
    buffer = bytearray(MB)
    total = 0
    while n := reader.readinto(buffer):
        total += n
        biggest = max(biggest, len(reader._pending))
    assert total == 256 * MB
    assert biggest <= 24 * MB, f"{biggest / MB:.0f} MB decompressed at once"
    assert time.monotonic() - started < 30

