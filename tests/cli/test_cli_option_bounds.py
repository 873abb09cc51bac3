"""Issue 38.17: numeric options of the evaluation commands have bounds.

``lm --sample-tokens 1000000000000`` used to be accepted and run for ever (each sampled
token is one pass over the vocabulary); now it, ``--samples`` and a negative ``--seed``
are one line on stderr and exit 2, before any work. ``eval --workers`` is lowered to what
the machine can use, as ``train`` and ``encode`` do.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bpe_studio.cli import main
from bpe_studio.cli.evaluate import MAX_SAMPLE_TOKENS, MAX_SAMPLES
from core.workers.processes import max_workers
from core.formats import save_tokenizer

TEXT = "The cat sat on the mat. The dog sat on the log.\n" * 40


@pytest.fixture()
def tok_and_text(tmp_path: Path) -> tuple[Path, Path]:
    vocab = {i: bytes([i]) for i in range(256)}
    vocab[256] = b"at"
    save_tokenizer(tmp_path / "tok", vocab, [(b"a", b"t")], [], "gpt2")
    text = tmp_path / "text.txt"
    text.write_text(TEXT, encoding="utf-8")
    return tmp_path / "tok", text


@pytest.mark.parametrize(("option", "value", "words"), [
    ("--sample-tokens", 10**12, f"from 1 to {MAX_SAMPLE_TOKENS:,}"),
    ("--sample-tokens", MAX_SAMPLE_TOKENS + 1, f"from 1 to {MAX_SAMPLE_TOKENS:,}"),
    ("--sample-tokens", 0, f"from 1 to {MAX_SAMPLE_TOKENS:,}"),
    ("--samples", 10**9, f"from 0 to {MAX_SAMPLES}"),
    ("--samples", -1, f"from 0 to {MAX_SAMPLES}"),
    ("--seed", -1, "at least 0"),
])
def test_lm_refuses_out_of_range_numbers_at_once(
    tok_and_text: tuple[Path, Path], capsys: pytest.CaptureFixture[str], option: str, value: int, words: str
) -> None:
    tok, text = tok_and_text
    started = time.monotonic()
    status = main(["lm", str(tok), "--train", str(text), "--on", str(text), option, str(value)])
    err = capsys.readouterr().err
    assert status == 2
    assert time.monotonic() - started < 10
    assert err.count("\n") == 1 and err.startswith("bpe-studio: error: ")
    assert option in err and words in err and "Traceback" not in err


def test_lm_takes_the_largest_sample_allowed(tok_and_text: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
                                             ) -> None:
    tok, text = tok_and_text
    status = main(["lm", str(tok), "--train", str(text), "--on", str(text), "--samples", "1",
                   "--sample-tokens", str(MAX_SAMPLE_TOKENS)])
    assert status == 0, capsys.readouterr().err
    assert capsys.readouterr().out.splitlines()[-1].startswith("tok: ")


def test_eval_lowers_too_many_workers(tok_and_text: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    tok, text = tok_and_text
    status = main(["eval", str(tok), "--on", str(text), "--workers", str(10**9)])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert f"using {max_workers()}" in captured.err
    assert captured.out.splitlines()[1].split()[:2] == ["tok", str(text)]


def test_eval_refuses_no_workers(tok_and_text: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    tok, text = tok_and_text
    assert main(["eval", str(tok), "--on", str(text), "--workers", "0"]) == 2
    assert "--workers must be at least 1" in capsys.readouterr().err
