"""Picky BPE: the incremental loop equals the oracle (`core.variants.picky_reference`) event by
event, on generated text full of ties, repeats, multi-byte characters, invalid bytes and
special tokens; at 1, 2 and 3 workers, from files, texts and counts; and its tokenizer
replays the events as the oracle does, round-trips and saves."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import core
from core.training.reference import read_corpus, reference_counts
from core.variants import Picky
from core.variants.picky import picky_events
from core.variants.picky_reference import picky_encode_reference, picky_reference
from core.pretokenize.surrogates import replace_lone_surrogates

FRAGMENTS = ["aaaa", "aa", "a", "ab", "abab", "the", " the", " th", "then", " ", "  ", "\n", "\r\n", "\t",
             "é", "漢字", "🙂", "12", "345", "--", "!!", "x: y", "<|e|>", "\udcff", "\udc80"]
SPECIALS = ["<|e|>"]
texts = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=3).filter(lambda t: "\x00" not in t)),
                 min_size=1, max_size=60).map("".join).filter(lambda t: t.strip("\x00"))
thresholds = st.sampled_from([0.5, 0.6, 0.75, 0.9, 1.0])


def oracle(text: str, vocab_size: int, threshold: float):
    counts = reference_counts(read_corpus(text), SPECIALS)
    return picky_reference(counts, vocab_size, SPECIALS, threshold)


def fast(input, vocab_size: int, threshold: float, **kw):
    run = core.train(input, core.TrainOptions(vocab_size, SPECIALS, variant=Picky(threshold), **kw))
    vocab, merges = run.result()
    return run, vocab, picky_events(merges, run.finished.splits)


def write(tmp_path, text: str):
    path = tmp_path / "corpus.txt"
    path.write_bytes(text.encode("utf-8", errors="surrogateescape"))
    return path


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, extra=st.integers(1, 40), threshold=thresholds)
def test_events_equal_the_oracle(tmp_path, text, extra, threshold):
    want_vocab, want_events = oracle(text, 257 + extra, threshold)
    _, vocab, events = fast(write(tmp_path, text), 257 + extra, threshold, workers=1)
    assert events == want_events
    assert vocab == want_vocab


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_every_worker_count_and_input_form(tmp_path, workers):
    text = "".join(FRAGMENTS) * 3 + " the then there other these " * 20 + "aaaa aaa aa " * 7
    path = write(tmp_path, text)
    # (a file keeps its invalid bytes; a str's lone surrogates are U+FFFD, as Tokenizer.encode takes them)
    for input, seen in ((path, text), (iter([text]), replace_lone_surrogates(text)),
                        (core.count_pretokens(path, SPECIALS, workers=workers), text)):
        want_vocab, want_events = oracle(seen, 330, 0.7)
        run, vocab, events = fast(input, 330, 0.7, workers=workers)
        assert events == want_events
        assert vocab == want_vocab


def test_threshold_one_never_removes_and_is_plain_bpe(tmp_path):
    text = " the then there other these " * 30 + "abababab" * 5
    path = write(tmp_path, text)
    run, vocab, events = fast(path, 300, 1.0)
    assert all(kind == "merge" for kind, *_ in events)
    assert vocab == core.train_bpe(path, 300, SPECIALS)[0]


def test_removals_happen_and_are_reported(tmp_path):
    text = " the" * 50 + " th" * 2 + " then" * 3
    run = core.train(write(tmp_path, text), core.TrainOptions(260, SPECIALS, variant=Picky(0.8)))
    events = list(run.merge_events())
    splits = [e for e in events if isinstance(e, core.variants.picky.SplitEvent)]
    assert splits, "a token that lives only inside a longer one is removed"
    merges = [e for e in events if isinstance(e, core.MergeEvent)]
    for split in splits:  # each split follows the merge that triggered it
        assert events.index(split) > events.index(merges[split.rank])
        assert b"".join(split.pieces) == split.token
    vocab, _ = run.result()
    assert len(vocab) == 260
    assert sorted(vocab) == list(range(260))  # compact ids
    restored = {e.token for e in merges if events.index(e) > max(events.index(s) for s in splits)}
    assert {s.token for s in splits} & set(vocab.values()) <= restored  # removed unless made again


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, sample=texts, threshold=thresholds)
def test_tokenizer_replays_like_the_oracle_and_round_trips(tmp_path, text, sample, threshold):
    run, vocab, events = fast(write(tmp_path, text + " the then " * 5), 290, threshold, workers=1)
    tok = run.tokenizer()
    live = {t for i, t in vocab.items() if i >= 256 + len(SPECIALS)}
    for segment in sample.split("<|e|>"):
        data = segment.encode("utf-8", errors="surrogateescape")
        want = [t for p in core.resolve_pattern("gpt2").findall(data.decode("utf-8", "surrogateescape"))
                for t in picky_encode_reference(events, live, p.encode("utf-8", "surrogateescape"))]
        assert [vocab[i] for i in tok.encode(data)] == want
    clean = sample.encode("utf-8", errors="replace").decode("utf-8", errors="replace")
    assert tok.decode(tok.encode(clean)) == clean
    tok.save(tmp_path / "out")
    again = core.Tokenizer.load(tmp_path / "out")
    assert type(again) is type(tok)
    assert again.encode(clean) == tok.encode(clean)
    assert (tmp_path / "out" / "picky_events.txt").read_text(encoding="utf-8").startswith("#picky-bpe events")


@pytest.mark.parametrize("bad", [0, -0.5, 1.5, "0.9", True])
def test_bad_threshold(bad):
    with pytest.raises((TypeError, ValueError), match="threshold"):
        Picky(bad)


def test_refuses_options_it_does_not_follow():
    with pytest.raises(ValueError, match="max_token_length"):
        core.TrainOptions(300, variant=Picky(0.9), max_token_length=5)
