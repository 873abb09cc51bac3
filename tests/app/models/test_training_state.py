"""`TrainingState` built from merge batches: the same columns as one merge at a time. No Qt.

The state appends each `MergeBatch`'s columns to its arrays; whatever the batches (as the
trainer yields them, joined as the training process sends them, pickled), the columns must
equal those read off the per-merge events of `TrainRun.merge_events`, and the session made
at the end (or on cancel) and reopened must give them back.
"""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest

from core import TrainOptions
import core
from bpe_studio.app.models.session import TrainSettings
from bpe_studio.app.models.run_progress import Stage
from bpe_studio.app.models.training_state import TrainingState
from bpe_studio.app.workers.train_process import _joined
from core.events import MergeBatch, MergeEvent
from core.progress import training_summary

EOT = "<|endoftext|>"
COLUMNS = ("token_ids", "left_ids", "right_ids", "counts", "corpus_tokens", "lengths")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[TrainSettings, list[object], list[MergeEvent]]:
    """A small run: its settings, its batched events, and its merges one by one."""
    rng = random.Random(5)
    syllables = ["ka", "lo", "mi", "ne", "θα", "語", " ", "  ", "\n", "aa", "7"]
    text = EOT.join("".join(rng.choices(syllables, k=400)) for _ in range(20))
    path = tmp_path_factory.mktemp("state") / "c.txt"
    path.write_text(text, encoding="utf-8")
    settings = TrainSettings(str(path), TrainOptions(900, (EOT,), pattern="gpt2", workers=1))
    events = list(core.train(path, core.TrainOptions(900, [EOT], workers=1)))
    merges = [e for e in core.train(path, core.TrainOptions(900, [EOT], workers=1)).merge_events() if isinstance(e, MergeEvent)]
    assert sum(isinstance(e, MergeBatch) for e in events) > 3 and len(merges) > 300
    return settings, events, merges


def expected_columns(merges: list[MergeEvent]) -> dict[str, list[int]]:
    """The columns as the state kept them one merge at a time."""
    return {
        "token_ids": [e.token_id for e in merges],
        "counts": [e.count for e in merges],
        "corpus_tokens": [e.corpus_tokens for e in merges],
        "lengths": [len(e.left) + len(e.right) for e in merges],
    }


def check_columns(state: TrainingState, merges: list[MergeEvent]) -> None:
    for name, values in expected_columns(merges).items():
        assert getattr(state, name).tolist() == values, name
    assert state.merges() == [(e.left, e.right) for e in merges]
    assert [state.merge(rank) for rank in (0, len(merges) - 1)] == [
        (merges[0].left, merges[0].right), (merges[-1].left, merges[-1].right)
    ]
    assert all(state.token_bytes[e.token_id] == e.token for e in merges)
    assert {len(getattr(state, name)) for name in COLUMNS} == {len(merges)}


def chunked(events: list[object], seed: int) -> list[list[object]]:
    """``events`` cut into lists of random lengths, as the worker emits them."""
    rng = random.Random(seed)
    lists, i = [], 0
    while i < len(events):
        n = rng.randint(1, 6)
        lists.append(events[i : i + n])
        i += n
    return lists


def test_batches_give_the_columns_of_one_merge_at_a_time(run) -> None:
    settings, events, merges = run
    finished = events[-1]
    for way in ("all at once", "in pieces", "joined and pickled as the training process sends them"):
        state = TrainingState()
        state.start(settings, now=0.0)
        if way == "all at once":
            lists = [events]
        elif way == "in pieces":
            lists = chunked(events, 1)
        else:
            lists = [pickle.loads(pickle.dumps(_joined(part))) for part in chunked(events, 2)]
        for now, part in enumerate(lists, 1):
            state.apply(part, now=float(now))
            sizes, bpt = state.bytes_per_token()  # the charts read while merges arrive
            assert len(sizes) == len(state.token_ids) == len(bpt)
            assert len(state.token_lengths()) == 256 + len(state.token_ids)
        assert state.stage is Stage.FINISHED, way
        check_columns(state, merges)
        assert state.token_bytes == [finished.vocab[i] for i in range(len(finished.vocab))]
        session = state.session
        assert session.vocab == finished.vocab and session.merges == finished.merges
        assert session.merge_counts == [e.count for e in merges]
        assert session.corpus_tokens == [e.corpus_tokens for e in merges]


def test_a_cancelled_run_keeps_the_merges_so_far(run) -> None:
    settings, events, merges = run
    merging_at = next(i for i, e in enumerate(events) if isinstance(e, MergeBatch))
    state = TrainingState()
    state.start(settings, now=0.0)
    state.apply(events[: merging_at + 3], now=1.0)
    assert state.stage is Stage.MERGING
    state.cancel(now=2.0)
    k = len(state.token_ids)
    assert state.stage is Stage.CANCELLED and 0 < k < len(merges)
    check_columns(state, merges[:k])
    session = state.session
    assert session.partial and session.merges == [(e.left, e.right) for e in merges[:k]]
    assert session.vocab == {i: token for i, token in enumerate(state.token_bytes)}
    assert len(session.vocab) == 257 + k


def test_a_loaded_session_gives_the_same_columns(run) -> None:
    settings, events, merges = run
    trained = TrainingState()
    trained.start(settings, now=0.0)
    trained.apply(events, now=1.0)
    loaded = TrainingState()
    loaded.load(trained.session)
    check_columns(loaded, merges)
    for name in COLUMNS:
        assert getattr(loaded, name) == getattr(trained, name), name
    assert loaded.token_bytes == trained.token_bytes
    assert np.array_equal(loaded.token_lengths(), trained.token_lengths())


def test_a_batch_out_of_order_is_refused(run) -> None:
    settings, events, _ = run
    batches = [e for e in events if isinstance(e, MergeBatch)]
    state = TrainingState()
    state.start(settings, now=0.0)
    with pytest.raises(ValueError, match="in order"):
        state.apply([batches[1]], now=1.0)


def test_the_summary_finds_the_longest_token_from_the_lengths_it_kept(run) -> None:
    settings, events, merges = run
    state = TrainingState()
    state.start(settings, now=0.0)
    state.apply(events, now=1.0)
    rows = dict(state.summary())
    longest = max(merges, key=lambda e: len(e.left) + len(e.right))  # the first of the longest
    assert rows["Longest token"].startswith(f"{len(longest.token):,} bytes: ")
    session = state.session
    plain = dict(training_summary(seconds=float(session.stats["elapsed"]), vocab_size=len(session.vocab),
                                  merges=session.merges, partial=False, planned=session.settings.max_merges))
    assert rows["Longest token"] == plain["Longest token"]
    state.lengths = state.lengths[:-1]  # lengths that do not match the merges are not trusted
    assert dict(state.summary())["Longest token"] == plain["Longest token"]
