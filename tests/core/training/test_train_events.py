"""The events of a `core.train` run (`TrainRun.merge_events`), and cancelling it by closing the iterator.

Every event is checked against the reference: the counting summary against the reference's
pre-token counts, each merge event's pair, count and running token total against the
reference's step, and the final event against `core.train_bpe`. Closing the iterator (or the
batched run itself) must stop training within a second and leave no
worker process behind.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import threading
import time
import weakref
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import core
from core.events import CountingDone, Finished, MergeBatch, MergeEvent, PretokenizeProgress
from core.training.reference import count_invalid_bytes, reference_counts, read_corpus, reference_merges

TEXT_PIECES = [
    "the", " cat", " sat", " on", " the", " mat", ".", "\n", "\r\n", "  ", "\u3000", "\x1c",
    "don't", " DON'T", " 123", "4567", "🙂", " привет", "<|a|>", "<|a|><|b|>", "<|b|>", "\xa0",
]


def _check_stream(path: Path, data: bytes, vocab_size: int, specials: list[str], pattern: str) -> None:
    events = list(core.train(path, core.TrainOptions(vocab_size, specials, pattern=pattern, workers=1)).merge_events())

    # order: progress..., one CountingDone, merges..., one Finished (last)
    kinds = [type(e) for e in events]
    assert kinds.count(CountingDone) == 1 and kinds.count(Finished) == 1
    counting_at = kinds.index(CountingDone)
    assert set(kinds[:counting_at]) <= {PretokenizeProgress}
    assert set(kinds[counting_at + 1 : -1]) == ({MergeEvent} if counting_at + 2 < len(kinds) else set())
    assert kinds[-1] is Finished

    for p in events[:counting_at]:
        assert 0 <= p.done <= p.total == len(data)
    dones = [p.done for p in events[:counting_at]]
    assert dones == sorted(dones)

    counts = reference_counts(data, specials, pattern=pattern)
    counting = events[counting_at]
    assert counting.distinct == len(counts)
    assert counting.total == sum(counts.values())
    assert counting.invalid_bytes == count_invalid_bytes(read_corpus(data))
    assert counting.corpus_bytes == sum(len(t) * n for t, n in counts.items())
    assert list(counting.frequencies) == sorted(counts.values(), reverse=True)
    assert np.asarray(counting.frequencies).dtype == np.int64
    if counts:
        assert counting.longest_pretoken in counts
        assert len(counting.longest_pretoken) == max(len(t) for t in counts)
    else:  # the text was nothing but special tokens
        assert counting.longest_pretoken == b""

    n_specials = len(specials)
    steps = reference_merges(counts, vocab_size - 256 - n_specials)
    merge_events = events[counting_at + 1 : -1]
    for rank, (event, step) in enumerate(zip(merge_events, steps)):
        assert (event.left, event.right) == step.pair, f"first differing merge at rank {rank}"
        assert event.rank == rank
        assert event.token_id == 256 + n_specials + rank
        assert event.token == step.pair[0] + step.pair[1]
        assert event.count == step.count, f"pair count differs at rank {rank}"
        assert event.corpus_tokens == step.corpus_tokens, f"corpus_tokens differs at rank {rank}"
    assert len(merge_events) == len(steps)

    finished = events[-1]
    assert finished.merges == [(e.left, e.right) for e in merge_events]
    assert all(finished.vocab[e.token_id] == e.token for e in merge_events)
    assert (finished.vocab, finished.merges) == core.train_bpe(
        path, vocab_size, specials, pattern=pattern, workers=1
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pieces=st.lists(
        st.one_of(
            st.sampled_from(TEXT_PIECES).map(str.encode),
            st.binary(min_size=1, max_size=2).map(lambda b: b.replace(b"\x00", b" ")),
        ),
        min_size=1,
        max_size=40,
    ),
    specials=st.sampled_from([[], ["<|a|>"], ["<|a|>", "<|a|><|b|>"]]),
    pattern=st.sampled_from(["gpt2", "gpt4"]),
    extra=st.one_of(st.integers(0, 30), st.just(1000)),
)
def test_event_stream_matches_reference(tmp_path, pieces, specials, pattern, extra) -> None:
    data = b"".join(pieces)
    path = tmp_path / "c.txt"
    path.write_bytes(data)
    _check_stream(path, data, 256 + len(specials) + extra, specials, pattern)


def test_event_stream_on_a_known_text(tmp_path) -> None:
    data = "aaabdaaabac\n".encode() * 3
    path = tmp_path / "c.txt"
    path.write_bytes(data)
    _check_stream(path, data, 300, [], "gpt2")
    merges = [e for e in core.train(path, core.TrainOptions(259, [], workers=1)).merge_events() if isinstance(e, MergeEvent)]
    assert [(e.left, e.right, e.count) for e in merges] == [
        (b"a", b"a", 12),
        (b"aa", b"a", 6),
        (b"aaa", b"b", 6),
    ]


def test_the_trainer_does_not_hold_the_counting_statistics_while_it_merges(tmp_path) -> None:
    """`CountingDone.frequencies` is 8 bytes per distinct pre-token (30 MB of the peak for
    3.8 M): once the caller has let the event go, the merges must not keep it alive."""
    path = tmp_path / "c.txt"
    path.write_bytes(" ".join(f"w{i} x{i % 7}" for i in range(3000)).encode())
    run = core.train(path, core.TrainOptions(300, [], workers=1))
    for event in run:
        if isinstance(event, CountingDone):
            frequencies = weakref.ref(event.frequencies)
            assert len(event.frequencies) > 3000
            del event
            break
    assert isinstance(next(run), MergeBatch)  # the trainer has moved on to the merges
    assert frequencies() is None
    run.close()


# --- cancellation -------------------------------------------------------------------------


def _children_of_this_process() -> dict[int, str]:
    """Live (non-zombie) child processes: pid -> command line. Linux only."""
    me = os.getpid()
    children = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # it ended while we looked
        # the command name (field 2) may hold spaces; fields after it follow the last ')'
        state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
        if int(ppid) == me and state != "Z":
            children[int(entry.name)] = cmdline
    return children


def _worker_children() -> dict[int, str]:
    # multiprocessing's own helpers (resource tracker, fork server) live as long as the
    # interpreter by design; they are not training workers
    return {
        pid: cmd
        for pid, cmd in _children_of_this_process().items()
        if "resource_tracker" not in cmd and "forkserver" not in cmd
    }


@pytest.fixture(scope="module")
def large_corpus(tmp_path_factory) -> Path:
    """~17 MB of varied text with 60,000 distinct words: many seconds of training."""
    rng = random.Random(3)
    letters = "abcdefghijklmnopqrstuvwxyzéßø"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 12))) for _ in range(60_000)]
    block = " ".join(rng.choice(words) for _ in range(200_000)) + "\n"
    path = tmp_path_factory.mktemp("large") / "large.txt"
    with path.open("w", encoding="utf-8") as f:
        for i in range(10):
            f.write(f"{i} " + block)
    return path


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux only)")
@pytest.mark.parametrize("stop_after", [PretokenizeProgress, MergeEvent, MergeBatch])
def test_closing_the_iterator_cancels_promptly(large_corpus: Path, stop_after: type) -> None:
    before = _worker_children()
    threads_before = threading.active_count()
    run = core.train(large_corpus, core.TrainOptions(50_000, ["<|endoftext|>"], workers=2))
    events = run if stop_after is MergeBatch else run.merge_events()
    for event in events:
        if isinstance(event, Finished):
            pytest.fail("training finished before it could be cancelled; use a larger corpus")
        if stop_after is PretokenizeProgress:
            # stop while the workers are busy: some bytes done, not all
            assert not isinstance(event, CountingDone), "no progress event during pre-tokenization"
            if isinstance(event, PretokenizeProgress) and 0 < event.done < event.total:
                # the point of this case: workers (threads on the native path, else processes)
                # are alive and must be stopped
                assert set(_worker_children()) - set(before) or threading.active_count() > threads_before, \
                    "no worker during pre-tokenization"
                break
        elif isinstance(event, MergeEvent) and event.rank == 2:
            break
        elif isinstance(event, MergeBatch) and event.first_rank > 0:
            break
    start = time.monotonic()
    events.close()
    elapsed = time.monotonic() - start
    assert elapsed < 2.0, f"closing the event iterator took {elapsed:.2f} s"
    assert multiprocessing.active_children() == []
    assert threading.active_count() == threads_before
    leftover = {pid: cmd for pid, cmd in _worker_children().items() if pid not in before}
    assert leftover == {}, f"worker processes still alive after cancel: {leftover}"
