"""Issue 13.1: the ``.npy`` dtype follows the largest id, never the number of tokens.

A vocabulary of few tokens whose ids have gaps (or a special token added at id 70,000)
must be written as ``uint32``: a ``uint16`` would silently wrap ``100000`` to ``34464``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core.encode.corpus import dtype_for_largest_id, encode_corpus, ids_dtype
from core.encode.tokenizer import Tokenizer
from core.formats import save_tokenizer

REPO = Path(__file__).resolve().parents[2]


def test_dtype_is_chosen_from_the_largest_id() -> None:
    assert dtype_for_largest_id(255) == np.uint16
    assert dtype_for_largest_id(65_535) == np.uint16
    assert dtype_for_largest_id(65_536) == np.uint32
    assert dtype_for_largest_id(100_000) == np.uint32
    with pytest.raises(ValueError, match="32 bits"):
        dtype_for_largest_id(1 << 32)
    byte_vocab = {i: bytes([i]) for i in range(256)}
    assert ids_dtype(Tokenizer(byte_vocab, [], ["<|a|>"])) == np.uint16
    assert ids_dtype(Tokenizer(byte_vocab | {70_000: b"<|b|>"}, [], ["<|b|>"])) == np.uint32  # 257 tokens


@pytest.mark.parametrize("workers", [1, 2])
def test_ids_with_gaps_are_not_wrapped(tmp_path: Path, workers: int) -> None:
    # 259 tokens only, but ids up to 100,001: the count says uint16, the ids need uint32.
    vocab = {i: bytes([i]) for i in range(256)} | {100_000: b"ab", 100_001: b"abc"}
    tok = Tokenizer(vocab, [(b"a", b"b"), (b"ab", b"c")], ["<|endoftext|>"])
    assert len(tok) < 1 << 16 and tok.special_ids["<|endoftext|>"] == 100_002
    corpus = tmp_path / "c.txt"
    corpus.write_text("ab abc<|endoftext|>x\n" * 2000, encoding="utf-8")
    encode_corpus(corpus, tok, tmp_path / "ids.npy", workers=workers, chunk_bytes=4096, doc_separator=None)
    ids = np.load(tmp_path / "ids.npy")
    assert ids.dtype == np.uint32
    assert ids.tolist() == tok.encode(corpus.read_text(encoding="utf-8"))
    assert {100_000, 100_001, 100_002} <= set(ids.tolist())


def test_encode_command_with_an_added_token_at_70000(tmp_path: Path) -> None:
    vocab = {i: bytes([i]) for i in range(256)} | {70_000: b"<|eot|>"}
    folder = tmp_path / "tok"
    save_tokenizer(folder, vocab, [], ["<|eot|>"], "gpt2")
    corpus = tmp_path / "c.txt"
    corpus.write_text("hi<|eot|>there", encoding="utf-8")
    out = tmp_path / "ids.npy"
    result = subprocess.run(
        [sys.executable, "-m", "bpe_studio", "encode", str(corpus), "--tokenizer", str(folder), "--out", str(out),
         "--workers", "1"],
        cwd=REPO, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"}, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    ids = np.load(out)
    assert ids.dtype == np.uint32
    assert ids.tolist() == [*b"hi", 70_000, *b"there"]
