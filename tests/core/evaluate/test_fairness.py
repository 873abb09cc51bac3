"""The field's measures per language (`core.evaluate`): Rényi efficiency against the
`tokenization_scorer` package on the same token sequence, the Gini coefficient against its
formula summed pair by pair, the premium against a reference row (a file's stem, a group
value), and a clear error for a reference that is no row."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core.evaluate.measures import evaluate, gini, renyi_efficiency

tokenization_scorer = pytest.importorskip("tokenization_scorer")

LANGS = {"en": "the newest lower widest ", "el": "καλημέρα κόσμε ", "hi": "नमस्ते दुनिया "}


@pytest.fixture(scope="module")
def tokenizer() -> core.Tokenizer:
    return core.train(iter([text * 50 for text in LANGS.values()]), core.TrainOptions(300)).tokenizer()


@pytest.fixture()
def dev(tmp_path: Path) -> Path:
    folder = tmp_path / "dev"
    folder.mkdir()
    for name, text in LANGS.items():
        (folder / f"{name}.txt").write_text(text * 3, encoding="utf-8")
    return folder


def test_renyi_efficiency_equals_tokenization_scorer(tokenizer: core.Tokenizer, dev: Path) -> None:
    rows = evaluate({"t": tokenizer}, dev).rows
    for row in rows:
        ids = tokenizer.encode(Path(row.source).read_text(encoding="utf-8"))
        want = tokenization_scorer.score(" ".join(f"t{i}" for i in ids), metric="renyi", power=2.5,
                                         vocab=len(tokenizer))
        assert row.renyi_efficiency == pytest.approx(want, rel=1e-12)


@settings(max_examples=100, deadline=None)
@given(ids=st.lists(st.integers(0, 40), min_size=1, max_size=300), vocab=st.integers(41, 5000))
def test_renyi_efficiency_of_any_distribution(ids: list[int], vocab: int) -> None:
    want = tokenization_scorer.score(" ".join(f"t{i}" for i in ids), metric="renyi", power=2.5, vocab=vocab)
    assert renyi_efficiency(np.bincount(ids), vocab) == pytest.approx(want, rel=1e-12, abs=1e-15)


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.integers(0, 10_000), min_size=1, max_size=20))
def test_gini_is_its_formula(values: list[int]) -> None:
    n, mean = len(values), sum(values) / len(values)
    want = sum(abs(a - b) for a in values for b in values) / (2 * n * n * mean) if mean else 0.0
    assert gini(values) == pytest.approx(want, rel=1e-12)
    assert gini([7] * n) == 0.0


def test_premium_and_gini_over_parallel_files(tokenizer: core.Tokenizer, dev: Path) -> None:
    result = evaluate({"t": tokenizer}, dev, reference="en")
    by = {Path(r.source).stem: r for r in result.rows}
    assert by["en"].premium == 1.0
    assert by["hi"].premium == by["hi"].tokens / by["en"].tokens
    tokens = [r.tokens for r in result.rows]
    assert result.gini["t"] == gini(tokens) and all(r.gini == result.gini["t"] for r in result.rows)
    with pytest.raises(ValueError, match="'fr' is not a row; the rows are el, en, hi"):
        evaluate({"t": tokenizer}, dev, reference="fr")


def test_premium_against_a_group_value(tokenizer: core.Tokenizer, tmp_path: Path) -> None:
    records = [{"text": text * 2, "lang": name} for name, text in LANGS.items()]
    path = tmp_path / "dev.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8")
    rows = evaluate({"t": tokenizer}, path, group_by="lang", reference="el").rows
    el = next(r for r in rows if r.source.endswith("[lang=el]"))
    assert el.premium == 1.0 and all(r.premium == r.tokens / el.tokens for r in rows)
