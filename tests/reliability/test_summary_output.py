"""Issue 13.5: results and exit status agree, whatever stdout is.

With stdout closed (``>&-``), or unable to show non-ASCII text (``PYTHONIOENCODING=ascii``),
the files are written and the command exits 0: the summary must never turn a success
into a failure. A very long token is shown elided, not as 20 million characters.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import core
from core.progress import SUMMARY_TOKEN_BYTES, training_summary

FILES = ["merges.txt", "tokenizer.json", "tokenizer.tiktoken", "tokenizer_config.json", "vocab.json"]


def test_train_with_stdout_closed_succeeds(tmp_path: Path, corpus: Path, sh_cli) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "tok"
    result = sh_cli(">&-", "train", corpus, "--vocab-size", "300", "--out", out)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "error" not in result.stderr
    assert sorted(p.name for p in out.iterdir()) == FILES


def test_encode_with_stdout_closed_succeeds(tmp_path: Path, corpus: Path, sh_cli) -> None:  # type: ignore[no-untyped-def]
    tok = tmp_path / "tok"
    core.save_tokenizer(tok, {i: bytes([i]) for i in range(256)}, [], [], "gpt2")
    out = tmp_path / "ids.npy"
    result = sh_cli(">&-", "encode", corpus, "--tokenizer", tok, "--out", out)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert len(np.load(out)) == corpus.stat().st_size


def test_train_on_an_ascii_terminal_succeeds(tmp_path: Path, run_cli, env_with) -> None:  # type: ignore[no-untyped-def]
    corpus = tmp_path / "c.txt"
    corpus.write_text("naïve café über naïve café\n" * 300, encoding="utf-8")  # the longest token is not ASCII
    out = tmp_path / "tok"
    result = run_cli("train", corpus, "--vocab-size", "300", "--special-token", "<|fin→|>", "--out", out,
                     env=env_with(PYTHONIOENCODING="ascii"))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "longest token:" in result.stdout and "\\x" in result.stdout  # escaped, not a crash
    assert sorted(p.name for p in out.iterdir()) == FILES


def test_a_huge_longest_token_is_elided(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    corpus = tmp_path / "a.txt"
    corpus.write_bytes(b"a" * 5000)  # one word: merged up to one 5,000-byte token
    out = tmp_path / "tok"
    result = run_cli("train", corpus, "--vocab-size", "290", "--out", out, "--workers", "1")
    assert result.returncode == 0, result.stderr
    longest = next(line for line in result.stdout.splitlines() if line.startswith("longest token:"))
    assert longest == f"longest token: 5,000 bytes: {'a' * SUMMARY_TOKEN_BYTES}…"
    assert max(len(line) for line in result.stdout.splitlines() if not line.startswith("wrote:")) < 200


def test_summary_rows_elide_long_tokens() -> None:
    rows = dict(training_summary(seconds=1, vocab_size=258, merges=[(b"x" * 40, b"y" * 40), (b"a", b"b")]))
    assert rows["Longest token"] == "80 bytes: " + "x" * 40 + "y" * (SUMMARY_TOKEN_BYTES - 40) + "…"
