"""`bpe-studio train --max-token-length / --min-frequency / --init`, run as a user would.

The files written equal the oracle's result with the same options; every mistake is one
line on stderr, exit status 2, nothing written.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from core.encode.tokenizer import Tokenizer
from core.training.reference import train_bpe_reference
from tests.cli_run import run_cli

TEXT = "The cat sat on the mat. ========== ----------\nThe dog sat on the log, didn't it?\n" * 20 + "naïve café 123\n"
MORE = "Der Hund sass auf dem Teppich. ========== Die Katze auch!\n" * 20


def run_train(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run_cli("train", *args, timeout=timeout)


@pytest.fixture()
def corpora(tmp_path: Path) -> tuple[Path, Path]:
    first, second = tmp_path / "en.txt", tmp_path / "de.txt"
    first.write_text(TEXT, encoding="utf-8")
    second.write_text(MORE, encoding="utf-8")
    return first, second


def test_max_token_length_and_min_frequency(tmp_path: Path, corpora: tuple[Path, Path]) -> None:
    out = tmp_path / "out"
    result = run_train(corpora[0], "--vocab-size", "400", "--out", out, "--special-token", "<|endoftext|>",
                     "--max-token-length", "4", "--min-frequency", "3", "--workers", "1")
    assert result.returncode == 0, result.stderr
    tok = Tokenizer.load(out)
    vocab, merges = train_bpe_reference(corpora[0], 400, ["<|endoftext|>"], max_token_length=4, min_frequency=3)
    assert tok.merges == merges and tok.vocab == vocab
    assert len(merges) < 400 - 257  # stopped by --min-frequency


def test_init_continues_a_tokenizer(tmp_path: Path, corpora: tuple[Path, Path]) -> None:
    first, second = corpora
    base_dir, out = tmp_path / "base", tmp_path / "more"
    assert run_train(first, "--vocab-size", "300", "--out", base_dir, "--special-token", "<|endoftext|>",
                   "--pattern", "gpt4").returncode == 0
    result = run_train(second, "--vocab-size", "340", "--out", out, "--init", base_dir, "--special-token", "<|de|>")
    assert result.returncode == 0, result.stderr
    base, tok = Tokenizer.load(base_dir), Tokenizer.load(out)
    assert tok.pattern.name == "gpt4"  # --init's pattern when --pattern is not given
    assert all(tok.vocab[i] == t for i, t in base.vocab.items())
    assert tok.special_ids == {"<|endoftext|>": 256, "<|de|>": 300}
    vocab, merges = train_bpe_reference(
        second, 340, ["<|de|>"], pattern="gpt4", initial=(base.vocab, base.merges, base.special_ids)
    )
    assert tok.merges == merges and tok.vocab == vocab


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-token-length", "1"], "--max-token-length must be at least 2"),
        (["--min-frequency", "0"], "--min-frequency must be at least 1"),
        (["--max-token-length", "x"], "argument --max-token-length: invalid int value"),
        (["--init", "{missing}"], "does not exist; give a tokenizer folder or file"),
        (["--init", "{base}", "--pattern", "gpt2"], "the initial tokenizer splits text with the pattern 'gpt4', not 'gpt2'"),
        (["--init", "{base}", "--vocab-size", "299"], "vocab_size 299 is too small: the initial tokenizer"),
    ],
)
def test_mistakes_are_one_line_and_exit_2(tmp_path: Path, corpora: tuple[Path, Path], args: list[str], message: str) -> None:
    base = tmp_path / "base"
    assert run_train(corpora[0], "--vocab-size", "300", "--out", base, "--pattern", "gpt4").returncode == 0
    args = [a.format(missing=tmp_path / "missing", base=base) for a in args]
    if "--vocab-size" not in args:
        args += ["--vocab-size", "400"]
    out = tmp_path / "out"
    result = run_train(corpora[1], "--out", out, *args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bpe-studio: error: ") and message in lines[0], result.stderr
    assert not out.exists()


def test_overlapping_special_tokens_get_a_note_about_tiktoken(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat <|a|>b sat <|a|> on the mat " * 30, encoding="utf-8")
    result = run_train(corpus, "--vocab-size", "290", "--special-token", "<|a|>b", "--special-token", "<|a|>",
                     "--out", tmp_path / "tok")
    assert result.returncode == 0, result.stderr
    assert "note: the special token '<|a|>' begins '<|a|>b'" in result.stderr and "tiktoken" in result.stderr
    tok = Tokenizer.load(tmp_path / "tok")
    assert tok.encode("x<|a|>b")[1:] == [tok.special_ids["<|a|>b"]]  # the longer, here
    result = run_train(corpus, "--vocab-size", "290", "--special-token", "<|a|>", "--special-token", "<|b|>",
                     "--out", tmp_path / "tok2")
    assert result.returncode == 0 and "note" not in result.stderr, result.stderr
