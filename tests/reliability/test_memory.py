"""Issue 13.6: long tokens cost memory bounded by the largest token; running out is one clear error.

A one-word corpus makes tokens of millions of bytes. Writing the files streams them a
token at a time (no file, and no joined list of tokens, is ever whole in memory), so a
20 MB one-word corpus trains and exports under a 1.5 GB address-space limit (it took
2.1 GB); under a limit too small for the corpus itself, the command says "out of memory"
in one line and exits 2, with no traceback and no temporary file.
"""

from __future__ import annotations

import resource
import tracemalloc
from pathlib import Path

import pytest

import core

MB = 1 << 20


def _limit_address_space(megabytes: int):  # type: ignore[no-untyped-def]
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (megabytes * MB, megabytes * MB))

    return apply


@pytest.fixture(scope="module")
def one_word_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("word") / "word.txt"
    path.write_bytes(b"a" * 20_000_000)  # 20 MB: many set bits, so many long tokens
    return path


@pytest.mark.parametrize("token", [b"a", b" \n"], ids=["ascii", "mapped"])
def test_export_memory_is_bounded_by_the_largest_token(tmp_path: Path, token: bytes) -> None:
    # 16 tokens of 2 MB: 32 MB in all, 2 MB the largest.
    size = 2 * MB
    vocab = {i: bytes([i]) for i in range(256)} | {256 + n: token * (size // len(token)) + bytes([n]) for n in range(16)}
    tracemalloc.start()
    try:
        core.save_tokenizer(tmp_path / "tok", vocab, [], [], "gpt2")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * size, f"writing took {peak / MB:.0f} MB for tokens of {size / MB:.0f} MB (32 MB in all)"
    assert core.Tokenizer.load(tmp_path / "tok").vocab == vocab


def test_one_word_corpus_trains_and_exports_in_bounded_memory(
    tmp_path: Path, one_word_corpus: Path, run_cli, merge_kernel: None  # type: ignore[no-untyped-def]
) -> None:
    out = tmp_path / "tok"
    result = run_cli("train", one_word_corpus, "--vocab-size", "300", "--out", out, "--workers", "2",
                     preexec_fn=_limit_address_space(1500), timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert "longest token: 20,000,000 bytes: aaaa" in result.stdout
    assert max(len(line) for line in result.stdout.splitlines() if not line.startswith("wrote:")) < 200  # elided
    tok = core.Tokenizer.load(out)
    assert max(len(t) for t in tok.vocab.values()) == 20_000_000
    assert not list(out.glob(".*"))


def test_running_out_of_memory_is_one_clear_error(tmp_path: Path, one_word_corpus: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "tok"
    result = run_cli("train", one_word_corpus, "--vocab-size", "300", "--out", out, "--workers", "2",
                     preexec_fn=_limit_address_space(300), timeout=300)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr, result.stderr[-2000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("bpe-studio: error:")]
    assert errors == [errors[0]] and "out of memory" in errors[0], result.stderr[-2000:]
    assert not out.exists() or not list(out.iterdir())
