"""Parity-aware BPE (`core.variants.ParityAware`) against its oracle, merge by merge.

`core.variants.parity_reference` recomputes every pair count each step (VARIANTS.md section
3, literally); the fast variant keeps one merge loop per language and per dev set. Generated
texts per language (shared words so that languages tie, repeats, several scripts) in dev mode,
ratio mode, with the moving window and global merges, min_frequency, with the compiled
loop and the Python one; then files at 1, 2 and 3 workers, the provenance (each language's
count of each merge, and the language it was made for) and the errors a user can make.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core.pretokenize.patterns import resolve_pattern
from core.variants import ParityAware
from core.variants.parity_reference import parity_reference
from tests.provenance import per_source_counts

WORDS = ["the", " lower", " newest", " low", " wid", "est", " καλη", "μέρα", " κόσμε", "日本", "語", " 42", "aaaa",
         "\n", "!!"]
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=30).map("".join)
languages = st.lists(st.sampled_from(["en", "el", "ja", "hi"]), min_size=1, max_size=4, unique=True)


def _counts(docs: list[str]) -> Counter[bytes]:
    pattern = resolve_pattern("gpt2")
    return Counter(token.encode() for doc in docs for token in pattern.findall(doc))


def _with_pure(pure: bool):  # noqa: ANN202
    before = os.environ.get("BPE_STUDIO_PURE_PYTHON")

    def restore() -> None:
        if before is None:
            os.environ.pop("BPE_STUDIO_PURE_PYTHON", None)
        else:
            os.environ["BPE_STUDIO_PURE_PYTHON"] = before

    os.environ["BPE_STUDIO_PURE_PYTHON"] = "1" if pure else "0"
    return restore


@settings(max_examples=120, deadline=None)
@given(data=st.data(), names=languages, vocab=st.integers(257, 330), mode=st.sampled_from(["dev", "ratio"]),
       window=st.one_of(st.none(), st.integers(1, 6)), alpha=st.sampled_from([0.5, 1.0, 2.0]),
       global_merges=st.integers(0, 5), min_frequency=st.integers(1, 3), pure=st.booleans())
def test_merges_and_choices_equal_the_oracle(data, names, vocab, mode, window, alpha, global_merges, min_frequency,  # noqa: ANN001
                                             pure) -> None:
    train = {name: data.draw(st.lists(texts, min_size=1, max_size=4), label=f"train {name}") for name in names}
    dev = {name: data.draw(st.lists(texts, min_size=1, max_size=2), label=f"dev {name}") for name in names}
    ratio = {name: data.draw(st.sampled_from([0.5, 1.0, 1.6]), label=f"ratio {name}") for name in names}
    variant = ParityAware(dev={n: iter(d) for n, d in dev.items()} if mode == "dev" else None,
                          ratio=ratio if mode == "ratio" else None, global_merges=global_merges, window=window,
                          alpha=alpha)
    restore = _with_pure(pure)
    try:
        run = core.train({n: iter(t) for n, t in train.items()},
                         core.TrainOptions(vocab, [], min_frequency=min_frequency, workers=1, variant=variant))
        _vocab, merges = run.result()
        records = run.provenance()
    finally:
        restore()
    want, chosen = parity_reference({n: _counts(t) for n, t in train.items()}, vocab, 0,
                                    dev={n: _counts(d) for n, d in dev.items()} if mode == "dev" else None,
                                    ratio=ratio if mode == "ratio" else None, global_merges=global_merges,
                                    window=window, alpha=alpha, min_frequency=min_frequency)
    assert merges == want
    assert [record.chosen for record in records] == chosen
    assert all(sum(record.counts.values()) == record.count for record in records)
    # each language's count of each merge, recomputed
    assert [record.counts for record in records] == per_source_counts(
        {name: _counts(train[name]) for name in names}, merges)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_files_at_every_worker_count(tmp_path: Path, workers: int) -> None:
    sources, dev = {}, {}
    for name, text in {"en": "the lower newest widest ", "el": "καλημέρα κόσμε ", "ja": "日本語のテキスト "}.items():
        sources[name] = tmp_path / f"{name}.txt"
        sources[name].write_text(text * (300 if name == "en" else 60), encoding="utf-8")
        dev[name] = tmp_path / f"dev-{name}.txt"
        dev[name].write_text(text, encoding="utf-8")
    options = core.TrainOptions(330, ["<|endoftext|>"], workers=workers, variant=ParityAware(dev=dev))
    run = core.train(sources, options)
    _vocab, merges = run.result()
    want, chosen = parity_reference({n: _counts([p.read_text(encoding="utf-8")]) for n, p in sources.items()}, 330, 1,
                                    dev={n: _counts([p.read_text(encoding="utf-8")]) for n, p in dev.items()})
    assert merges == want and [r.chosen for r in run.provenance()] == chosen
    assert set(chosen) == {"en", "el", "ja"}  # every language gets merges, not only the largest
    counts = core.count_pretokens(sources, ["<|endoftext|>"], workers=workers)
    assert core.train(counts, options).result()[1] == merges
    tokenizer = core.train(sources, options).tokenizer()
    assert tokenizer.decode(tokenizer.encode("καλημέρα the newest 日本語")) == "καλημέρα the newest 日本語"


@pytest.mark.parametrize(("make", "match"), [
    (lambda: ParityAware(), "one of dev"),
    (lambda: ParityAware(dev={"en": "x"}, ratio={"en": 1.0}), "one of dev"),
    (lambda: ParityAware(ratio={"en": 0}), "positive number"),
    (lambda: ParityAware(ratio={"en": float("nan")}), "positive number"),
    (lambda: ParityAware(ratio={"en": 1.0}, window=0), "window"),
    (lambda: ParityAware(ratio={"en": 1.0}, alpha=0), "alpha"),
    (lambda: ParityAware(ratio={"en": 1.0}, global_merges=-1), "global_merges"),
])
def test_bad_parameters(make, match: str) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match=match):
        make()


def test_sources_and_names_must_match() -> None:
    variant = ParityAware(ratio={"en": 1.0, "hi": 1.5})
    options = core.TrainOptions(300, [], variant=variant)
    with pytest.raises(ValueError, match="trains on named sources"):
        core.train(iter(["low"]), options)
    with pytest.raises(ValueError, match="missing el; not a source: hi"):
        core.train({"en": iter(["low"]), "el": iter(["κόσμε"])}, options)
    with pytest.raises(ValueError, match="max_token_length is not supported"):
        core.TrainOptions(300, [], max_token_length=4, variant=variant)


def test_the_window_keeps_a_language_at_its_allowance_and_passes_it_over_beyond() -> None:
    """Two languages, alpha 1, a window of 2: a language may take half of the last two
    choices (count / window <= alpha / n), not more — English, always worst off on its dev
    set, is passed over every third merge."""
    train = {"en": ["the lower newest widest thereby"] * 50, "el": ["καλημέρα κόσμε"] * 50}
    dev = {"en": ["the lower newest widest thereby " * 20], "el": ["καλημέρα"]}
    variant = ParityAware(dev={n: iter(d) for n, d in dev.items()}, window=2, alpha=1.0)
    run = core.train({n: iter(t) for n, t in train.items()}, core.TrainOptions(256 + 9, [], variant=variant))
    chosen = [record.chosen for record in run.provenance()]
    assert chosen[:6] == ["en", "en", "el", "en", "en", "el"]
    _want, expected = parity_reference({n: _counts(t) for n, t in train.items()}, 256 + 9, 0,
                                       dev={n: _counts(d) for n, d in dev.items()}, window=2, alpha=1.0)
    assert chosen == expected
