"""`bpe-studio count` and `bpe-studio train --from-counts` (the CLI's entry, in the test's
process: `tests.cli_run.run_cli_here`): counting shards apart and training from the count files
writes the very files training on the whole corpus writes; locally or on a Dask cluster of
local processes, the counts file is the same, byte for byte; a user error is one line on
stderr, exit status 2, and nothing written."""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.cli_run import run_cli_here

EOT = "<|endoftext|>"
TEXT = "The cat sat on the mat.\nThe dog sat on the log, didn't it?\r\n" * 40 + "naïve café 123 4567\n"


@pytest.fixture()
def shards(tmp_path: Path) -> list[Path]:
    a = tmp_path / "a.txt"
    a.write_bytes((TEXT + EOT + TEXT[:300]).encode() + b"\xfe")
    b = tmp_path / "b.jsonl.gz"
    with gzip.open(b, "wt", encoding="utf-8") as f:
        for line in TEXT.splitlines():
            f.write(json.dumps({"body": line}) + "\n")
    return [a, b]


def test_count_apart_then_train_equals_training_on_the_corpus(tmp_path: Path, shards: list[Path]) -> None:
    for i, shard in enumerate(shards):
        done = run_cli_here("count", shard, "--out", tmp_path / f"{i}.bpc", "--special-token", EOT, "--field", "body",
                       "--workers", "2")
        assert done.returncode == 0, done.stderr
        assert "distinct pre-tokens" in done.stdout
    trained = run_cli_here("train", "--from-counts", tmp_path / "1.bpc", tmp_path / "0.bpc", "--vocab-size", "330",
                      "--out", tmp_path / "from_counts")
    assert trained.returncode == 0, trained.stderr
    whole = run_cli_here("train", *shards, "--field", "body", "--special-token", EOT, "--vocab-size", "330",
                    "--out", tmp_path / "whole")
    assert whole.returncode == 0, whole.stderr
    for name in ("vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json", "tokenizer.tiktoken"):
        assert (tmp_path / "from_counts" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name


@contextlib.contextmanager
def _port_in_use(port: int) -> Iterator[None]:
    """``port`` held on every interface meanwhile (if another program holds it already, so be it)."""
    with socket.socket() as held:
        with contextlib.suppress(OSError):
            held.bind(("", port))
            held.listen()
        yield


def test_count_on_a_local_dask_cluster_writes_the_same_file(tmp_path: Path, shards: list[Path]) -> None:
    pytest.importorskip("distributed")
    local = run_cli_here("count", *shards, "--field", "body", "--out", tmp_path / "local.bpc")
    with _port_in_use(8787):  # Dask's dashboard port, as when another cluster runs: no warning, no error
        dask = run_cli_here("count", *shards, "--field", "body", "--out", tmp_path / "dask.bpc", "--dask-local", "2")
    assert local.returncode == 0 and dask.returncode == 0, dask.stderr
    assert "8787" not in dask.stderr
    assert (tmp_path / "local.bpc").read_bytes() == (tmp_path / "dask.bpc").read_bytes()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["count", "{missing}", "--out", "{out}"], "corpus file not found"),
        (["count", "{a}", "--out", "{tmp}"], "is a folder"),
        (["count", "{a}", "--out", "{tmp}/no/such/c.bpc"], "does not exist"),
        (["count", "{a}", "--out", "{out}", "--pattern", "("], "invalid pre-tokenization pattern"),
        (["count", "{a}", "--out", "{out}", "--dask-local", "2", "--max-bytes", "1KB"], "--max-bytes needs"),
        (["count", "{a}", "--out", "{out}", "--dask", "x", "--dask-local", "2"], "not allowed with"),
        (["train", "--from-counts", "{a}", "--vocab-size", "300", "--out", "{tmp}/t"], "not a readable pre-token counts"),
        (["train", "{a}", "--from-counts", "{a}", "--vocab-size", "300", "--out", "{tmp}/t"], "not both"),
        (["train", "--vocab-size", "300", "--out", "{tmp}/t"], "SOURCE (or --from-counts"),
        (["train", "--from-counts", "{a}", "--sample", "0.5", "--vocab-size", "300", "--out", "{tmp}/t"],
         "--sample applies when reading a corpus"),
        (["train", "--from-counts", "{a}", "--field", "body", "--vocab-size", "300", "--out", "{tmp}/t"],
         "--field applies when reading a corpus"),
    ],
)
def test_user_errors_are_one_line_and_write_nothing(tmp_path: Path, shards: list[Path], args, message) -> None:
    values = {"missing": tmp_path / "missing.txt", "out": tmp_path / "c.bpc", "tmp": tmp_path, "a": shards[0]}
    before = sorted(tmp_path.rglob("*"))
    done = run_cli_here(*[arg.format(**values) for arg in args])
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("bpe-studio: error: "), done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(tmp_path.rglob("*")) == before


def test_counts_of_another_pattern_are_refused(tmp_path: Path, shards: list[Path]) -> None:
    assert run_cli_here("count", shards[0], "--out", tmp_path / "g2.bpc").returncode == 0
    assert run_cli_here("count", shards[0], "--out", tmp_path / "g4.bpc", "--pattern", "gpt4").returncode == 0
    done = run_cli_here("train", "--from-counts", tmp_path / "g2.bpc", tmp_path / "g4.bpc", "--vocab-size", "300",
                   "--out", tmp_path / "t")
    assert done.returncode == 2 and "different patterns (gpt2 and gpt4)" in done.stderr
    assert not (tmp_path / "t").exists()


def test_count_on_a_scheduler_without_workers_says_so_then_fails(tmp_path: Path, shards: list[Path]) -> None:
    distributed = pytest.importorskip("distributed")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1",
                                           dashboard_address=None, silence_logs=40)
    try:
        address = cluster.scheduler_address
        done = run_cli_here("count", shards[0], "--out", tmp_path / "c.bpc", "--dask", address, "--dask-timeout", "2")
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cluster.close()
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[0] == (f"waiting for Dask workers: the scheduler at {address} has none; start them with "
                        f"'dask worker {address}' (giving up after 2 s)")
    assert lines[1:] == [f"bpe-studio: error: no Dask worker joined the scheduler at {address} within 2 s; "
                         f"start workers (dask worker {address}) or raise --dask-timeout"], done.stderr
    assert not (tmp_path / "c.bpc").exists()
    bad = run_cli_here("count", shards[0], "--out", tmp_path / "c.bpc", "--dask", address, "--dask-timeout", "0")
    assert bad.returncode == 2 and "--dask-timeout must be a positive" in bad.stderr
