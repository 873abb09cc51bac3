"""Texts given as str follow one rule for surrogates, `Tokenizer.encode`'s: a lone surrogate
(``"\\ud800"``, ``"\\udcff"``) is U+FFFD and a surrogate pair the character it stands for.
Counting, training (1 and 2 workers, named sources, a variant that counts twice) and
encoding agree: training on such texts gives the merges of training on the texts as the
encoder sees them."""

from __future__ import annotations

import pytest

import core
from core.pretokenize.surrogates import replace_lone_surrogates

TEXTS = ["a\ud800b lone high", "x\udcffy lone low \udc80", "pair \ud83d\ude00 here", "split \ud83d", "\ude00 end",
         "plain text here"] * 30
SEEN = [replace_lone_surrogates(t) for t in TEXTS]


def test_the_rule_is_the_encoders() -> None:
    assert SEEN[0] == "a\ufffdb lone high" and SEEN[2] == "pair \U0001f600 here" and SEEN[1] == "x\ufffdy lone low \ufffd"


@pytest.mark.parametrize("workers", [1, 2])
def test_counting_texts_counts_what_the_encoder_sees(workers: int) -> None:
    counts = core.count_pretokens(iter(TEXTS), workers=workers, chunk_size=64)
    expected = core.count_pretokens(iter(SEEN), workers=1)
    assert dict(counts) == dict(expected)
    assert b"\xed\xa0\x80" not in dict(counts) and counts.invalid_bytes == 0
    assert counts.documents == len(TEXTS)


def test_named_sources_follow_the_rule() -> None:
    counts = core.count_pretokens({"one": iter(TEXTS), "two": iter(TEXTS[:6])}, workers=1)
    assert dict(counts) == dict(core.count_pretokens(iter(SEEN + SEEN[:6]), workers=1))


@pytest.mark.parametrize("workers", [1, 2])
def test_training_on_texts_gives_the_merges_of_the_texts_the_encoder_sees(workers: int) -> None:
    options = core.TrainOptions(300, workers=workers)
    trained = core.train(iter(TEXTS), options).result()
    expected = core.train(iter(SEEN), core.TrainOptions(300, workers=1)).result()
    assert trained == expected


def test_a_variant_counting_twice_reads_its_spool_by_the_same_rule() -> None:
    from core.variants import SuperBPE

    options = core.TrainOptions(300, workers=1, variant=SuperBPE(280))
    assert core.train(iter(TEXTS), options).result() == core.train(iter(SEEN), options).result()
