"""``--pattern`` is checked as it is read: names in any case, an unknown name or a pattern
that matches the empty string is one line on stderr naming the flag, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.encode.tokenizer import Tokenizer
from tests.cli_run import run_cli_here


@pytest.mark.parametrize("command", ["train", "count"])
@pytest.mark.parametrize(("pattern", "message"), [
    ("gpt3", "argument --pattern: 'gpt3' is not a known pattern name; the names are 'gpt2', 'gpt4' (any case)"),
    ("CL100K", "argument --pattern: 'CL100K' is not a known pattern name"),
    ("(?=a)", "argument --pattern: the pre-tokenization pattern '(?=a)' matches the empty string"),
])
def test_a_bad_pattern_is_one_line_naming_the_flag(tmp_path: Path, command: str, pattern: str, message: str) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world 123\n" * 5, encoding="utf-8")
    out = tmp_path / "out"
    extra = ["--vocab-size", "260"] if command == "train" else []
    result = run_cli_here(command, corpus, *extra, "--pattern", pattern, "--out", out)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()


def test_a_name_in_capitals_trains_with_that_pattern(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world 123 4567, it's fine\n" * 5, encoding="utf-8")
    result = run_cli_here("train", corpus, "--vocab-size", "260", "--pattern", " GPT4 ", "--out", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert Tokenizer.load(tmp_path / "out").pattern.name == "gpt4"
