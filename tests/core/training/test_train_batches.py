"""The batched stream of a `core.train` run and its `MergeBatch` events.

The batches, grown into bytes with `MergeBatch.extend_vocab`, must give exactly the
per-merge stream of `TrainRun.merge_events` and the reference trainer's merges, counts and
token totals, with the compiled kernel and with the pure-Python loop
(``BPE_STUDIO_PURE_PYTHON=1``). A batch must survive pickling (the GUI's training process
sends batches as they are) and join with its neighbours.
"""

from __future__ import annotations

import dataclasses
import pickle
from array import array
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import core
from core.events import CountingDone, Finished, MergeBatch, MergeEvent, PretokenizeProgress, initial_token_bytes
from core.training.merge import KERNEL_BATCH
from core.training.reference import reference_counts, reference_merges

WORDS = ["the", " cat", " sat", "aaaa", " aa", "don't", " 42", "🙂", " привет", "\n", "  ", "<|a|>"]


def _flatten(events: list[object], specials: list[str]) -> list[object]:
    """The batched stream as the per-merge stream: each batch becomes its `MergeEvent`s."""
    tokens = initial_token_bytes(specials)
    flat: list[object] = []
    for event in events:
        if isinstance(event, MergeBatch):
            event.extend_vocab(tokens)
            flat.extend(event.events(tokens))
        else:
            flat.append(event)
    return flat


def _check_batches(path: Path, vocab_size: int, specials: list[str], pattern: str) -> None:
    batched = list(core.train(path, core.TrainOptions(vocab_size, specials, pattern=pattern, workers=1)))
    kinds = [type(e) for e in batched]
    counting_at = kinds.index(CountingDone)
    assert set(kinds[:counting_at]) <= {PretokenizeProgress}
    assert set(kinds[counting_at + 1 : -1]) <= {MergeBatch} and kinds[-1] is Finished

    batches = batched[counting_at + 1 : -1]
    first_id = 256 + len(specials)
    rank = 0
    for batch in batches:
        assert 1 <= len(batch) <= KERNEL_BATCH
        assert batch.first_rank == rank and batch.ranks == range(rank, rank + len(batch))
        assert list(batch.token_ids) == list(range(first_id + rank, first_id + rank + len(batch)))
        for column in (batch.token_ids, batch.left_ids, batch.right_ids, batch.counts, batch.corpus_tokens):
            assert type(column) is array and column.typecode == "q" and len(column) == len(batch)
        rank += len(batch)

    # the same events as the per-merge stream, one by one
    per_merge = list(core.train(path, core.TrainOptions(vocab_size, specials, pattern=pattern, workers=1)).merge_events())
    assert _flatten(batched, specials) == per_merge

    # and the reference trainer's merges, counts and token totals
    counts = reference_counts(path.read_bytes(), specials, pattern=pattern)
    steps = reference_merges(counts, vocab_size - first_id)
    merges = [e for e in per_merge if isinstance(e, MergeEvent)]
    assert [(e.left, e.right, e.count, e.corpus_tokens) for e in merges] == [
        (*s.pair, s.count, s.corpus_tokens) for s in steps
    ]
    assert batched[-1].merges == [s.pair for s in steps]


@pytest.mark.parametrize("pure_python", [False, True], ids=["kernel", "python"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=300),
    specials=st.sampled_from([[], ["<|a|>"]]),
    pattern=st.sampled_from(["gpt2", "gpt4"]),
    extra=st.one_of(st.integers(0, 200), st.just(2000)),
)
def test_batches_equal_the_per_merge_stream_and_the_reference(
    tmp_path: Path, pure_python: bool, words: list[str], specials: list[str], pattern: str, extra: int
) -> None:
    path = tmp_path / "c.txt"
    path.write_text("".join(words), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        if pure_python:
            patch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
        else:
            patch.delenv("BPE_STUDIO_PURE_PYTHON", raising=False)
        _check_batches(path, 256 + len(specials) + extra, specials, pattern)


def test_many_merges_come_in_several_batches(tmp_path: Path) -> None:
    words = [f" w{i:x}{i * 7 % 13:x}z" for i in range(3000)]
    path = tmp_path / "c.txt"
    path.write_text("".join(words), encoding="utf-8")
    batches = [e for e in core.train(path, core.TrainOptions(256 + 500, [], workers=1)) if isinstance(e, MergeBatch)]
    assert len(batches) > 3
    _check_batches(path, 256 + 500, [], "gpt2")


def _batch(first_rank: int, n: int, first_id: int = 256) -> MergeBatch:
    ids = range(first_id + first_rank, first_id + first_rank + n)
    return MergeBatch(
        first_rank,
        array("q", ids),
        array("q", [97] * n),
        array("q", [98 + i for i in range(n)]),
        array("q", [10 * (n - i) for i in range(n)]),
        array("q", [1000 - i for i in range(n)]),
    )


def test_a_merge_batch_pickles_round_trip_and_views_as_numpy() -> None:
    batch = _batch(0, 5)
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        copy = pickle.loads(pickle.dumps(batch, protocol))
        assert copy == batch and copy is not batch
        assert all(type(c) is array and c.typecode == "q" for c in (copy.token_ids, copy.counts))
    counts = np.asarray(batch.counts)
    assert counts.dtype == np.int64 and np.shares_memory(counts, np.frombuffer(batch.counts, dtype=np.int64))
    assert counts.tolist() == [50, 40, 30, 20, 10]


def test_extend_vocab_and_events() -> None:
    # "aaab": (a, a) -> 256, then (256, a) -> 257, a merge using one made in the same batch
    batch = MergeBatch(0, array("q", [257, 258]), array("q", [97, 257]), array("q", [97, 97]),
                       array("q", [2, 1]), array("q", [3, 2]))
    tokens = initial_token_bytes(["<|x|>"])
    assert len(tokens) == 257 and tokens[256] == b"<|x|>" and tokens[97] == b"a"
    batch.extend_vocab(tokens)
    assert tokens[257:] == [b"aa", b"aaa"]
    assert list(batch.events(tokens)) == [
        MergeEvent(0, 257, b"a", b"a", 2, 3),
        MergeEvent(1, 258, b"aa", b"a", 1, 2),
    ]
    with pytest.raises(ValueError, match="in order"):
        batch.extend_vocab(tokens)  # applied twice


def test_concat_joins_consecutive_batches() -> None:
    parts = [_batch(0, 3), _batch(3, 1), _batch(4, 2)]
    joined = MergeBatch.concat(parts)
    assert joined.first_rank == 0 and len(joined) == 6
    assert list(joined.token_ids) == list(range(256, 262))
    assert list(joined.counts) == [30, 20, 10, 10, 20, 10]
    tokens, each = initial_token_bytes([]), initial_token_bytes([])
    joined.extend_vocab(tokens)
    for part in parts:
        part.extend_vocab(each)
    assert tokens == each
    assert MergeBatch.concat(parts[:1]) is parts[0]
    assert joined.per_source is None and joined.chosen is None
    # named sources: each merge's counts per source (and parity-aware BPE's choosers) join too
    named = [dataclasses.replace(part, per_source=array("q", range(2 * len(part))), chosen=array("q", [1] * len(part)))
             for part in parts]
    both = MergeBatch.concat(named)
    assert list(both.per_source) == [0, 1, 2, 3, 4, 5, 0, 1, 0, 1, 2, 3] and list(both.chosen) == [1] * 6
    with pytest.raises(ValueError, match="not consecutive"):
        MergeBatch.concat([parts[0], parts[2]])
