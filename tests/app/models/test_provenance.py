"""Provenance in the window's models: source names, per-source tokens, "mostly from", sessions
that keep the names, and batches joined with their counts per source. No Qt."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

import core
from bpe_studio.app.models.provenance import (
    SOURCE_COLOURS,
    default_names,
    mostly_from,
    names_problem,
    source_tokens,
    stem,
)
from bpe_studio.app.models.session import (
    Session,
    SessionError,
    TrainSettings,
    load_session,
    save_session,
    session_from_json,
    session_to_json,
)
from bpe_studio.app.models.training_state import TrainingState
from bpe_studio.app.workers.train_process import NamedRun, _joined, source_bytes
from core.events import MergeBatch


def test_sixteen_distinct_colours() -> None:
    assert len(set(SOURCE_COLOURS)) == len(SOURCE_COLOURS) == 16


def test_default_names_are_stems_made_unique() -> None:
    assert stem("data/en.txt.xz") == "en" and stem("data/hi/") == "hi" and stem("data/fr/*.txt") == "fr"
    assert stem("shards/web.jsonl.zst") == "web" and stem(".txt") == ".txt"
    assert default_names(["x/en.txt", "y/en.txt.gz", "hi/"]) == ["en", "en-2", "hi"]
    assert default_names(["a/en.txt"], taken=["en"]) == ["en-2"]
    assert names_problem(["en", "en"]) == "Two sources are named “en”: give each source its own name."
    assert names_problem(["en", ""]) is not None and names_problem(["a\tb"]) is not None
    assert names_problem(["en", "el"]) is None


def test_source_tokens_exact_for_distinct_pairs_and_shared_for_a_doubled_token() -> None:
    # merge 1: (a, b) 3 in the first source, 1 in the second; merge 2: (c, c) counted 3 (one
    # source holds "cccc": 3 pairs, 2 merged), removing 2 tokens
    tokens = source_tokens(np.array([10.0, 6.0]), 16, np.array([[3, 1], [3, 0]]), np.array([4, 3]),
                           np.array([12, 10]), np.array([False, True]))
    assert tokens.tolist() == [[7.0, 5.0], [5.0, 5.0]]
    # (c, c) in both sources, 4 + 2 counted, 3 removed: shared in proportion, the total exact
    tokens = source_tokens(np.array([10.0, 6.0]), 16, np.array([[4, 2]]), np.array([6]), np.array([13]),
                           np.array([True]))
    assert tokens.sum() == 13 and tokens.tolist() == [[8.0, 5.0]]


def test_mostly_from_marks_every_source_tied_for_the_largest_share() -> None:
    marks = mostly_from(np.array([[5, 1], [2, 2], [0, 0], [0, 3]]))
    assert marks.tolist() == [[True, False], [True, True], [False, False], [False, True]]


def test_settings_and_sessions_keep_the_names(tmp_path) -> None:
    settings = TrainSettings("a/en.txt; b/el.txt", core.TrainOptions(300), names=("en", "el"))
    assert settings.named_sources == {"en": "a/en.txt", "el": "b/el.txt"}
    assert TrainSettings("a/en.txt", core.TrainOptions(300)).named_sources is None
    with pytest.raises(ValueError, match="2 source names for 1 sources"):
        _ = TrainSettings("a/en.txt", core.TrainOptions(300), names=("en", "el")).named_sources
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab"}
    session = Session(settings, vocab, [(b"a", b"b")], [5], [9], stats={"corpus_bytes": 14},
                      sources=("en", "el"), per_source=[4, 1], source_bytes=[6, 8])
    path = save_session(tmp_path / "s.bpesession", session)
    loaded = load_session(path)
    assert loaded.settings.names == ("en", "el") and loaded.sources == ("en", "el")
    assert loaded.per_source == [4, 1] and loaded.source_bytes == [6, 8]
    assert loaded.provenance_by_id() == {256: (4, 1)}
    state = TrainingState()
    state.load(loaded)
    assert state.provenance(0) == (4, 1)
    assert state.source_bytes_per_token().tolist() == [[6 / 2, 8 / 7]]
    assert state.source_bytes_per_token(np.array([0])).tolist() == [[6 / 2, 8 / 7]]
    assert state.bytes_per_token()[0].tolist() == [257]
    # an older session (no names) still opens
    raw = session_to_json(session)
    for key in ("sources", "per_source", "source_bytes"):
        del raw[key]
    del raw["settings"]["source_names"]
    assert session_from_json(raw).settings.names == ()
    # damaged provenance is refused in words
    raw = json.loads(json.dumps(session_to_json(session)))
    raw["per_source"] = [4, 1, 2]
    with pytest.raises(SessionError, match="per_source holds 3 counts"):
        session_from_json(raw)
    raw = json.loads(json.dumps(session_to_json(session)))
    raw["settings"]["source_names"] = ["en", "en"]
    with pytest.raises(SessionError, match="twice"):
        session_from_json(raw)
    raw = json.loads(json.dumps(session_to_json(session)))
    raw["source_bytes"] = [6]
    with pytest.raises(SessionError, match="source_bytes holds 1 sizes for 2 sources"):
        session_from_json(raw)


def test_joined_batches_keep_their_counts_per_source(tmp_path) -> None:
    (tmp_path / "en.txt").write_text("low lower lowest " * 30, encoding="utf-8")
    (tmp_path / "de.txt").write_text("neu neuer neueste " * 30, encoding="utf-8")
    named = {"en": str(tmp_path / "en.txt"), "de": str(tmp_path / "de.txt")}
    events = list(core.train(named, core.TrainOptions(300, workers=1)))
    batches = [e for e in events if isinstance(e, MergeBatch)]
    split = [MergeBatch(b.first_rank + i, *(array_part(getattr(b, c), i) for c in
                                            ("token_ids", "left_ids", "right_ids", "counts", "corpus_tokens")),
                        per_source=array_part(b.per_source, i, 2))
             for b in batches for i in range(len(b))]
    joined = _joined(pickle.loads(pickle.dumps(split)))
    assert len(joined) == 1 and len(split) > 1
    assert list(joined[0].per_source) == [v for b in batches for v in b.per_source]


def array_part(column, i: int, width: int = 1):
    from array import array

    return array("q", column[i * width:(i + 1) * width])


def test_the_named_run_sends_each_sources_bytes_before_the_merges(tmp_path) -> None:
    (tmp_path / "en.txt").write_text("the cat " * 20, encoding="utf-8")
    (tmp_path / "el.txt").write_text("η γάτα " * 20, encoding="utf-8")
    settings = TrainSettings(f"{tmp_path}/en.txt; {tmp_path}/el.txt", core.TrainOptions(280, workers=1),
                             names=("en", "el"))
    run = NamedRun.of(settings)
    events = list(run)
    kinds = [type(e).__name__ for e in events]
    first = kinds.index("SourceBytes")
    assert "PretokenizeProgress" in kinds[:first] and kinds[first + 1] == "CountingDone"
    sizes = events[first]
    assert sizes.names == ("en", "el") and sizes.sizes == (len("the cat ".encode()) * 20, len("η γάτα ".encode()) * 20)
    assert run.tokenizer().encode("the cat") == core.Tokenizer(*core.train(
        {"en": str(tmp_path / "en.txt"), "el": str(tmp_path / "el.txt")}, core.TrainOptions(280, workers=1)).result()
    ).encode("the cat")
    counts = core.count_pretokens({"en": str(tmp_path / "en.txt")})
    assert source_bytes(counts).sizes == (160,)
