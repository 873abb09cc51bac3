"""Patterns with syntax only the `regex` module reads are named before training
(`regex_only_syntax`, a note from ``bpe-studio train``): each flagged construct really
breaks the export somewhere — Hugging Face or tiktoken refuses it or gives other ids —
and the built-in and ordinary custom patterns are not flagged."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

import core
from core.formats import save_tokenizer
from core.formats.hf_json import regex_only_syntax
from core.pretokenize.patterns import BUILTIN_PATTERNS
from core.training.reference import train_bpe_reference

REPO = Path(__file__).resolve().parents[3]
TEXT = "café naïve Ünïcode straße 東京 ğüş —  tabs\tand  spaces 123 4567 don't " * 8

FLAGGED = {
    r"(?V1)[\p{L}--[aeiou]]+|[aeiou]+|\s+|[^\p{L}\s]+": "version flag",
    r"[[:alpha:]]+|\s+|[^[:alpha:]\s]+": "POSIX class",
    r"\X": "grapheme cluster",
}
PORTABLE = [*BUILTIN_PATTERNS.values(), r"\p{L}+|\p{N}{1,3}|\s+|[^\s\p{L}\p{N}]+", r"[a-z]+|\\X|[^a-z]"]


@pytest.mark.parametrize("pattern", PORTABLE)
def test_portable_patterns_are_not_flagged(pattern: str) -> None:
    assert regex_only_syntax(pattern) is None


@pytest.mark.parametrize("pattern", list(FLAGGED))
def test_each_flagged_construct_breaks_an_export(tmp_path: Path, pattern: str) -> None:
    assert FLAGGED[pattern] in (regex_only_syntax(pattern) or "")
    tokenizers = pytest.importorskip("tokenizers")
    tiktoken = pytest.importorskip("tiktoken")
    vocab, merges = train_bpe_reference(TEXT, 300, [], pattern=pattern)
    save_tokenizer(tmp_path, vocab, merges, [], pattern)
    want = core.Tokenizer.load(tmp_path).encode(TEXT)
    broken = []
    try:
        hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
        broken.append(hf.encode(TEXT, add_special_tokens=False).ids != want)
    except Exception:  # noqa: BLE001 - refused: broken
        broken.append(True)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text(encoding="utf-8"))
    ranks = {base64.b64decode(t): int(r) for t, r in (line.split() for line in
                                                          (tmp_path / "tokenizer.tiktoken").read_bytes().splitlines())}
    try:
        enc = tiktoken.Encoding(name="t", pat_str=config["pattern"], mergeable_ranks=ranks, special_tokens={})
        broken.append(enc.encode_ordinary(TEXT) != want)
    except Exception:  # noqa: BLE001
        broken.append(True)
    assert any(broken), "the export loads and agrees in both: the pattern need not be flagged"


def test_train_says_so_before_reading(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "bpe_studio", "train", str(corpus), "--vocab-size", "280",
                             "--pattern", r"[[:alpha:]]+|\s+|[^[:alpha:]\s]+", "--out", str(tmp_path / "tok")],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "note: the pattern uses a POSIX class" in result.stderr.splitlines()[0]
