"""`bpe-studio train` from a terminal: the files it writes and how it reports user errors.

Run as a real subprocess (``python -m bpe_studio train ...``), as a user would. Success
writes vocab.json and merges.txt in GPT-2 format that decode to exactly the reference
trainer's result; a user error prints one line ``bpe-studio: error: ...`` on stderr, exits
with status 2, shows no traceback and writes nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.training.reference import train_bpe_reference
from tests.cli_run import run_cli

REPO = Path(__file__).resolve().parents[2]
TEXT = "The cat sat on the mat.\nThe dog sat on the log, didn't it?\r\n" * 30 + "naïve café 123 4567\n"


def run_train(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run_cli("train", *args, timeout=timeout)


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_bytes(TEXT.encode("utf-8"))
    return path


@pytest.mark.parametrize(("pattern", "workers"), [(None, "1"), ("gpt4", "2")])
def test_train_writes_gpt2_files_equal_to_reference(
    tmp_path: Path, corpus: Path, gpt2_files, pattern: str | None, workers: str
) -> None:
    out = tmp_path / "out"
    specials = ["<|endoftext|>", "<|pad|>"]
    args = [corpus, "--vocab-size", "300", "--out", out, "--workers", workers]
    for token in specials:
        args += ["--special-token", token]
    if pattern:
        args += ["--pattern", pattern]
    result = run_train(*args)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout.strip(), "no summary printed"

    load_vocab, load_merges = gpt2_files
    vocab = load_vocab(out / "vocab.json", specials)
    merges = load_merges(out / "merges.txt")
    ref_vocab, ref_merges = train_bpe_reference(corpus, 300, specials, pattern=pattern or "gpt2")
    assert merges == ref_merges
    assert vocab == ref_vocab


def test_custom_regex_pattern(tmp_path: Path, corpus: Path, gpt2_files) -> None:
    out = tmp_path / "out"
    pattern = r"\p{L}+|\p{N}|[^\s\p{L}\p{N}]+|\s+"
    result = run_train(corpus, "--vocab-size", "280", "--out", out, "--pattern", pattern, "--workers", "1")
    assert result.returncode == 0, result.stderr
    _, load_merges = gpt2_files
    assert load_merges(out / "merges.txt") == train_bpe_reference(corpus, 280, [], pattern=pattern)[1]


def _assert_user_error(result: subprocess.CompletedProcess[str], out: Path, *phrases: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got: {result.stderr!r}"
    assert lines[0].startswith("bpe-studio: error:"), lines[0]
    for phrase in phrases:
        assert phrase in lines[0]
    assert not out.exists(), "an output directory was created despite the error"


def test_missing_corpus(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_train(tmp_path / "missing-corpus.txt", "--vocab-size", "300", "--out", out)
    _assert_user_error(result, out, "missing-corpus.txt")


def test_binary_corpus(tmp_path: Path) -> None:
    binary = tmp_path / "data.bin"
    binary.write_bytes(b"\x00\x01\x02\x00" * 1000)
    out = tmp_path / "out"
    _assert_user_error(run_train(binary, "--vocab-size", "300", "--out", out), out, "data.bin")


def test_vocab_too_small(tmp_path: Path, corpus: Path) -> None:
    out = tmp_path / "out"
    result = run_train(corpus, "--vocab-size", "256", "--special-token", "<|endoftext|>", "--out", out)
    _assert_user_error(result, out, "257")


def test_bad_pattern(tmp_path: Path, corpus: Path) -> None:
    out = tmp_path / "out"
    _assert_user_error(run_train(corpus, "--vocab-size", "300", "--pattern", "(oops", "--out", out), out)


def test_duplicate_special_token(tmp_path: Path, corpus: Path) -> None:
    out = tmp_path / "out"
    result = run_train(
        corpus, "--vocab-size", "300", "--special-token", "<|x|>", "--special-token", "<|x|>", "--out", out
    )
    _assert_user_error(result, out, "<|x|>")


def test_existing_out_dir_is_untouched_on_error(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "merges.txt").write_text("keep me\n", encoding="utf-8")
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    result = run_train(empty, "--vocab-size", "300", "--out", out)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("bpe-studio: error:")
    assert sorted(p.name for p in out.iterdir()) == ["merges.txt"]
    assert (out / "merges.txt").read_text(encoding="utf-8") == "keep me\n"


def test_a_run_that_runs_out_of_pairs_says_it_stopped_early(tmp_path: Path) -> None:
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("abab cd", encoding="utf-8")
    result = run_train(corpus, "--vocab-size", "400", "--out", tmp_path / "out", "--workers", "1")
    assert result.returncode == 0, result.stderr
    merges = (tmp_path / "out" / "merges.txt").read_text(encoding="utf-8").splitlines()[1:]
    assert f"result: stopped early: no pair left ({len(merges)} of 144 merges)" in result.stdout
    assert "result: complete" not in result.stdout


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_the_application_keeps_numpy_from_starting_a_spinning_blas_thread() -> None:
    # OpenBLAS's thread spins for ~0.1 s of CPU once numpy is imported: on a worker's core
    code = ("import bpe_studio.cli, numpy, os; "
            "print(len(os.listdir('/proc/self/task')), os.environ['OPENBLAS_NUM_THREADS'])")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    alone = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    assert alone.stdout.split() == ["1", "1"]
    chosen = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**env, "OPENBLAS_NUM_THREADS": "2"},
                            capture_output=True, text=True, check=True)
    assert chosen.stdout.split()[1] == "2"  # the user's choice is kept
