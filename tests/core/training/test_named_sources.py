"""Named sources (`core.train({name: source})`, `NamedCounts`) and merge provenance.

Training on named sources gives the merges of training on them all together, at every
worker count and input form. Each merge's count per source (`TrainRun.provenance`) equals
a plain recomputation: each source's pre-tokens (the `regex` module's), the merges made in
rank order, the merged pair's adjacent occurrences counted per source at its rank — from
the compiled kernel and from the Python loop. Counts of named sources are saved, loaded,
added and pickled source by source; bad names and mixed additions get one clear error.
"""

from __future__ import annotations

import os
import pickle
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core.corpus.named_counts import NamedCounts
from core.pretokenize.patterns import resolve_pattern
from core.training.provenance import provenance_tsv
from tests.provenance import per_source_counts

EOT = "<|endoftext|>"
pieces = st.sampled_from(["low", " lower", " newest", " wid", "est", " the", "aaaa", " é", "日本", " 42", "\n",
                          "  ", "!!", EOT, "a"])
texts = st.lists(pieces, min_size=1, max_size=40).map("".join).filter(lambda text: text.replace(EOT, ""))
named_texts = st.dictionaries(st.sampled_from(["en", "hi", "el", "ja"]), st.lists(texts, min_size=1, max_size=3),
                              min_size=1, max_size=4)


def _oracle_provenance(sources: dict[str, list[str]], merges: list[tuple[bytes, bytes]]) -> list[dict[str, int]]:
    """Each source's count of each merged pair at its rank, recomputed from scratch."""
    pattern = resolve_pattern("gpt2")
    pretokens = {name: Counter(token.encode() for doc in docs for part in doc.split(EOT)
                               for token in pattern.findall(part)) for name, docs in sources.items()}
    return per_source_counts(pretokens, merges)


@settings(max_examples=60, deadline=None)
@given(sources=named_texts, vocab=st.integers(257, 330), pure=st.booleans())
def test_named_sources_train_like_one_corpus_and_provenance_is_exact(
    sources: dict[str, list[str]], vocab: int, pure: bool
) -> None:
    before = os.environ.get("BPE_STUDIO_PURE_PYTHON")
    os.environ["BPE_STUDIO_PURE_PYTHON"] = "1" if pure else "0"  # the Python loop, or the kernel
    try:
        options = core.TrainOptions(vocab, [EOT], workers=1)
        run = core.train({name: iter(docs) for name, docs in sources.items()}, options)
        together = core.train(iter([doc for docs in sources.values() for doc in docs]), options).result()
        assert run.result() == together
    finally:
        if before is None:
            del os.environ["BPE_STUDIO_PURE_PYTHON"]
        else:
            os.environ["BPE_STUDIO_PURE_PYTHON"] = before
    records = run.provenance()
    assert [record.token for record in records] == [left + right for left, right in together[1]]
    assert all(sum(record.counts.values()) == record.count for record in records)
    assert [record.counts for record in records] == _oracle_provenance(sources, together[1])
    assert run.sources == tuple(sources)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_named_files_at_every_worker_count(tmp_path: Path, workers: int) -> None:
    files = {}
    for name, text in {"en": "the lower newest " * 300, "el": "καλημέρα κόσμε " * 200, "mix": "low 42 !! " * 100}.items():
        path = tmp_path / f"{name}.txt"
        path.write_text(text, encoding="utf-8")
        files[name] = path
    options = core.TrainOptions(400, [EOT], workers=workers)
    run = core.train(files, options)
    assert run.result() == core.train(list(files.values()), options).result()
    records = run.provenance()
    assert records[0].counts["el"] == 0 or records[0].counts["en"] == 0  # a first merge of one script
    counts = core.count_pretokens(files, [EOT], workers=workers)
    assert counts.sources == ("en", "el", "mix") and counts.source("el") == core.count_pretokens(files["el"], [EOT])
    named = core.train(counts, options)
    assert named.result() == run.result() and named.provenance() == records


def test_named_counts_save_load_add_and_pickle(tmp_path: Path) -> None:
    a = core.count_pretokens({"en": iter(["low lower", "newest"]), "hi": iter(["नमस्ते दुनिया"])})
    b = core.count_pretokens({"hi": iter(["दुनिया"]), "el": iter(["κόσμε"])})
    assert isinstance(a, NamedCounts) and a.sources == ("en", "hi")
    assert dict(a) == dict(a.source("en") + a.source("hi"))
    a.save(tmp_path / "a.bpc")
    loaded = core.PretokenCounts.load(tmp_path / "a.bpc")
    assert isinstance(loaded, NamedCounts) and loaded == a and loaded.source("hi") == a.source("hi")
    assert core.PretokenCounts.read_info(tmp_path / "a.bpc")["sources"][1]["name"] == "hi"
    both = a + b
    assert both.sources == ("en", "hi", "el")
    assert both.source("hi") == a.source("hi") + b.source("hi") and dict(both) == dict(a) | {
        k: a.get(k, 0) + b.get(k, 0) for k in set(a) | set(b)}
    assert pickle.loads(pickle.dumps(both)) == both
    with pytest.raises(KeyError, match="the sources are en, hi"):
        a.source("fr")
    plain = core.count_pretokens(iter(["low"]))
    with pytest.raises(ValueError, match="named sources to counts of one unnamed corpus"):
        a + plain
    with pytest.raises(ValueError, match="named sources to counts of one unnamed corpus"):
        plain + a


@pytest.mark.parametrize(("sources", "error", "match"), [
    ({}, ValueError, "at least one name"),
    ({"": iter(["x"])}, ValueError, "1 to 64 characters"),
    ({"a\tb": iter(["x"])}, ValueError, "without tabs"),
    ({1: iter(["x"])}, TypeError, "must be a string"),
    ({"en": b"bytes"}, TypeError, "source 'en'"),
])
def test_bad_names_and_sources_get_one_clear_error(sources: dict, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        core.train(sources, core.TrainOptions(300))
    with pytest.raises(error, match=match):
        core.count_pretokens(sources)


def test_an_empty_source_is_named_in_the_error() -> None:
    with pytest.raises(core.CorpusError, match="source 'hi': the corpus holds no text"):
        core.train({"en": iter(["low"]), "hi": iter([""])}, core.TrainOptions(300)).result()


def test_counts_as_a_named_source_are_refused() -> None:
    counts = core.count_pretokens(iter(["low"]))
    with pytest.raises(TypeError, match="NamedCounts"):
        core.train({"en": counts}, core.TrainOptions(300))


def test_provenance_tsv_and_errors() -> None:
    run = core.train({"en": iter(["low lower lowest"] * 4), "de": iter(["lowe lowen"] * 3)}, core.TrainOptions(262))
    records = run.provenance()
    text = provenance_tsv(records, run.sources)
    lines = text.splitlines()
    assert lines[0] == "rank\ttoken\tcount\ten\tde" and len(lines) == 1 + len(records)
    rank, token, count, en, de = lines[1].split("\t")
    assert int(en) + int(de) == int(count) == records[0].count and token == "ow" and rank == "0"  # ties go to the greater pair
    with pytest.raises(ValueError, match="needs named sources"):
        core.train(iter(["low"]), core.TrainOptions(260)).provenance()
