"""The encoding tests' fixtures: a tokenizer trained per pattern, and each merge path."""

from __future__ import annotations

import pytest

import core
from core.encode import piece_encoder
from core.encode.tokenizer import Tokenizer
from tests.tokenizer_cases import CUSTOM, SPECIALS, generated_corpus


@pytest.fixture(scope="module", params=["gpt2", "gpt4", CUSTOM], ids=["gpt2", "gpt4", "custom"])
def trained(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Tokenizer:
    """A tokenizer trained by `core.train_bpe` on generated text (600 tokens)."""
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(generated_corpus(1, 40_000), encoding="utf-8")
    vocab, merges = core.train_bpe(path, 600, SPECIALS, pattern=request.param, workers=1)
    return Tokenizer(vocab, merges, SPECIALS, pattern=request.param)


@pytest.fixture(params=["compiled", "python"])
def merging(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Merge pre-tokens in the compiled kernel (``core.encode._bpe_kernel``) or in numpy and Python."""
    if request.param == "compiled":
        if piece_encoder._BpeTable is None:
            pytest.skip('core.encode._bpe_kernel is not built (no C compiler at install time?); pip install -e ".[test]"')
        monkeypatch.delenv("BPE_STUDIO_PURE_PYTHON", raising=False)
    else:
        monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
    return str(request.param)
