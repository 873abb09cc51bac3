"""`bpe-studio count --dask ADDRESS --dask-timeout S` on an address nothing listens on gives up
after about S seconds (not a fixed wait of its own), with one line naming the address."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from tests.cli_run import run_cli_here


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_dask_timeout_bounds_reaching_the_scheduler(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    corpus = tmp_path / "a.txt"
    corpus.write_text("the cat sat on the mat\n" * 20)
    address = f"tcp://127.0.0.1:{_free_port()}"
    started = time.monotonic()
    done = run_cli_here("count", corpus, "--out", tmp_path / "c.bpc", "--dask", address, "--dask-timeout", "3")
    elapsed = time.monotonic() - started
    assert done.returncode != 0
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and address in lines[0] and "cannot reach the Dask scheduler" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
    # 3 s of waiting plus starting Python and importing Dask; the old fixed wait was 20 s
    assert elapsed < 14, elapsed
    assert not (tmp_path / "c.bpc").exists()
