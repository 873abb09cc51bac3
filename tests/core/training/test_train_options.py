"""Trainer options against the oracle: ``max_token_length``, ``min_frequency``, ``initial``.

The fast trainer — through the compiled merge loop and, with ``BPE_STUDIO_PURE_PYTHON=1``,
through the Python one — must give exactly what `core.training.reference.train_bpe_reference`
gives with the same options, merge by merge and count by count, on hypothesis texts.
Continued training is compared with the oracle given the initial tokenizer's vocab, merges
and special ids, for initial tokenizers trained here and for GPT-2's own (other ids).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import core
from tests.training import train_run
from core.encode.tokenizer import Tokenizer
from core.training.reference import reference_counts, reference_merges, train_bpe_reference

WORDS = ["hello", " hello", "the", " the", "=====", "==========", "--", "aaaa", "aaaaaaaa", "ab", "abab",
         "naïve", "漢字", "🙂", "42", "1234567", " ", "  ", "\n", "it's", "<|endoftext|>", "<|x|>"]
SPECIALS = ["<|endoftext|>"]
fragment = st.one_of(st.sampled_from(WORDS), st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=3))
texts = st.lists(fragment, min_size=1, max_size=60).map("".join).filter(bool)
fast_settings = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def write(tmp_path: Path, text: str, name: str = "corpus.txt") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    return path


def events_result(path: Path, vocab_size: int, specials: list[str], **options):  # noqa: ANN003, ANN201
    """Final (vocab, merges) and each merge's count, from the event stream."""
    events = list(train_run(path, vocab_size, specials, workers=1, **options).merge_events())
    counts = [e.count for e in events if isinstance(e, core.MergeEvent)]
    return events[-1].vocab, events[-1].merges, counts


@pytest.fixture
def pure_python(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1" if request.param else "0")


both_paths = pytest.mark.parametrize("pure_python", [False, True], ids=["kernel", "python"], indirect=True)


@both_paths
@fast_settings
@given(text=texts, max_len=st.integers(2, 6), min_freq=st.integers(1, 4), extra=st.integers(0, 60))
def test_options_match_the_oracle(pure_python, tmp_path: Path, text: str, max_len: int, min_freq: int, extra: int) -> None:  # noqa: ANN001
    path = write(tmp_path, text)
    vocab_size = 257 + extra
    options = {"max_token_length": max_len, "min_frequency": min_freq}
    vocab, merges, counts = events_result(path, vocab_size, SPECIALS, **options)
    want_vocab, want_merges = train_bpe_reference(path, vocab_size, SPECIALS, **options)
    assert merges == want_merges
    assert vocab == want_vocab
    steps = reference_merges(reference_counts(path, SPECIALS), extra, **options)
    assert counts == [s.count for s in steps]
    assert all(len(a) + len(b) <= max_len for a, b in merges)
    assert all(c >= min_freq for c in counts)


@both_paths
def test_max_token_length_goes_on_with_the_next_best_pair(pure_python, tmp_path: Path) -> None:  # noqa: ANN001
    path = write(tmp_path, "=" * 64 + " ab" * 3)
    # unlimited, '=' runs would take every merge: (=,=) then (==,==), ...
    _, free = core.train_bpe(path, 262, [], workers=1)
    assert free[:2] == [(b"=", b"="), (b"==", b"==")]
    _, capped = core.train(path, core.TrainOptions(262, [], workers=1, max_token_length=2)).result()
    # (=,=) is 2 bytes; (==,==) would be 4: never chosen, the next best pairs follow
    # then (a,b) wins its tie with ( ,a); ( ,ab) would be 3 bytes: no pair is left
    assert capped == [(b"=", b"="), (b"a", b"b")]
    assert capped == train_bpe_reference(path, 262, [], max_token_length=2)[1]


@both_paths
def test_min_frequency_stops_training(pure_python, tmp_path: Path) -> None:  # noqa: ANN001
    path = write(tmp_path, "ab ab ab cd cd xy")
    _, merges = core.train(path, core.TrainOptions(300, [], workers=1, min_frequency=2)).result()
    # (a,b) occurs 3 times, ( ,a)... then (c,d) twice; (x,y) once: training stops before it
    assert (b"x", b"y") not in merges and (b"c", b"d") in merges
    assert merges == train_bpe_reference(path, 300, [], min_frequency=2)[1]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_token_length": 1}, "max_token_length must be at least 2"),
        ({"max_token_length": 0}, "max_token_length must be at least 2"),
        ({"min_frequency": 0}, "min_frequency must be at least 1"),
        ({"min_frequency": -3}, "min_frequency must be at least 1"),
    ],
)
def test_bad_options_are_refused_before_any_work(tmp_path: Path, options: dict, message: str) -> None:
    path = write(tmp_path, "hello world")
    with pytest.raises(ValueError, match=message):
        train_run(path, 300, [], **options)
    with pytest.raises(TypeError, match="must be an integer"):
        core.train(path, core.TrainOptions(300, [], max_token_length=2.5))  # type: ignore[arg-type]


# ---------------------------------------------------------------- continued training


def oracle_initial(tok: Tokenizer) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]], dict[str, int]]:
    return tok.vocab, tok.merges, tok.special_ids


@both_paths
@fast_settings
@given(first=texts, second=texts, first_extra=st.integers(0, 30), extra=st.integers(0, 40),
       new_special=st.booleans(), max_len=st.sampled_from([None, 3]))
def test_continued_training_matches_the_oracle(
    pure_python, tmp_path: Path, first: str, second: str, first_extra: int, extra: int, new_special: bool, max_len: int | None  # noqa: ANN001
) -> None:
    base_vocab, base_merges = core.train_bpe(write(tmp_path, first, "a.txt"), 257 + first_extra, SPECIALS, workers=1)
    base = Tokenizer(base_vocab, base_merges, SPECIALS)
    specials = ["<|x|>"] if new_special else []
    vocab_size = len(base.vocab) + len(specials) + extra
    path = write(tmp_path, second, "b.txt")
    vocab, merges, counts = events_result(path, vocab_size, specials, initial=base, max_token_length=max_len)
    want_vocab, want_merges = train_bpe_reference(path, vocab_size, specials, initial=oracle_initial(base), max_token_length=max_len)
    assert merges == want_merges and vocab == want_vocab
    # the existing ids do not change; the inherited merges come first
    assert all(vocab[i] == t for i, t in base.vocab.items())
    assert merges[: len(base_merges)] == base_merges
    steps = reference_merges(
        reference_counts(path, SPECIALS + specials), len(merges), max_token_length=max_len, forced=base_merges
    )
    assert counts == [s.count for s in steps]


@functools.lru_cache(maxsize=1)
def _gpt2_and_german(fixtures: Path) -> tuple[Tokenizer, str, tuple[dict[int, bytes], list[tuple[bytes, bytes]]]]:
    """GPT-2, 20,000 characters of German, and the oracle's GPT-2 continued on them by 41
    tokens (the same for both merge paths, so made once)."""
    gpt2 = Tokenizer.from_files(fixtures / "gpt2_vocab.json", fixtures / "gpt2_merges.txt", ["<|endoftext|>"])
    text = (fixtures / "german.txt").read_text(encoding="utf-8")[:20_000]
    return gpt2, text, train_bpe_reference(text, 50257 + 41, ["<|de|>"], initial=oracle_initial(gpt2))


@both_paths
def test_continue_gpt2_keeps_its_ids(pure_python, shared_dir: Path, tmp_path: Path) -> None:  # noqa: ANN001
    gpt2, text, (want_vocab, want_merges) = _gpt2_and_german(shared_dir / "fixtures")
    path = write(tmp_path, text)
    vocab, merges = core.train(path, core.TrainOptions(50257 + 40 + 1, ["<|de|>"], workers=1, initial=gpt2)).result()
    assert all(vocab[i] == t for i, t in gpt2.vocab.items())  # ids unchanged; <|endoftext|> stays 50256
    assert vocab[50257] == b"<|de|>" and len(vocab) == 50257 + 41
    assert merges[:50000] == gpt2.merges
    assert merges == want_merges and vocab == want_vocab
    # the continued tokenizer encodes text as GPT-2 did where no new merge applies
    continued = Tokenizer(vocab, merges, ["<|endoftext|>", "<|de|>"])
    assert continued.encode("Hello world<|endoftext|>") == gpt2.encode("Hello world<|endoftext|>")


def test_continued_training_refuses_another_pattern_and_a_small_vocab(tmp_path: Path) -> None:
    path = write(tmp_path, "hello hello world")
    vocab, merges = core.train_bpe(path, 260, [], workers=1, pattern="gpt4")
    base = Tokenizer(vocab, merges, pattern="gpt4")
    with pytest.raises(core.InvalidPatternError, match="initial tokenizer splits text with the pattern 'gpt4'"):
        core.train(path, core.TrainOptions(300, [], initial=base))
    with pytest.raises(ValueError, match="vocab_size 259 is too small: the initial tokenizer .* 260 tokens"):
        core.train(path, core.TrainOptions(259, [], initial=base, pattern="gpt4"))
    save = tmp_path / "tok"
    core.save_tokenizer(save, vocab, merges, [], "gpt4")
    # a path is loaded; the same result as the Tokenizer
    assert core.train(path, core.TrainOptions(262, [], pattern="gpt4", initial=save, workers=1)).result() == core.train(path, core.TrainOptions(262, [], pattern="gpt4", initial=base, workers=1)).result()


# ---------------------------------------------------------------- the merge loops themselves


words_strategy = st.lists(st.binary(min_size=1, max_size=8).map(lambda b: bytes(c % 4 + 97 for c in b)), min_size=1, max_size=30)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), max_len=st.one_of(st.none(), st.integers(2, 5)), min_freq=st.integers(1, 3))
def test_kernel_python_and_oracle_agree_on_forced_pairs_and_limits(data, max_len: int | None, min_freq: int) -> None:  # noqa: ANN001
    """merge_pairs with the kernel, the Python loop and `reference_merges`, on random words
    over a 4-letter alphabet and random forced pairs (often of count 0, often of tokens made
    by earlier forced merges)."""
    from collections import Counter

    from core.training import merge as merge_module

    words = data.draw(words_strategy)
    counts = data.draw(st.lists(st.integers(1, 5), min_size=len(words), max_size=len(words)))
    tokens = [bytes([i]) for i in range(256)]
    forced: list[tuple[int, int]] = []
    for _ in range(data.draw(st.integers(0, 6))):
        left = data.draw(st.sampled_from([97, 98, 99, 100, *range(256, len(tokens))]))
        right = data.draw(st.sampled_from([97, 98, 99, 100, *range(256, len(tokens))]))
        if tokens[left] + tokens[right] in tokens:
            continue  # a tokenizer's merges each make a new token (its bytes are its identity)
        forced.append((left, right))
        tokens.append(tokens[left] + tokens[right])
    num = len(forced) + data.draw(st.integers(0, 20))
    options = {"max_token_length": max_len, "min_frequency": min_freq, "forced": forced}

    def run(pure: bool) -> list[tuple[int, ...]]:
        token_bytes = [bytes([i]) for i in range(256)]
        before = os.environ.get("BPE_STUDIO_PURE_PYTHON")
        os.environ["BPE_STUDIO_PURE_PYTHON"] = "1" if pure else "0"
        try:
            batches = list(merge_module.merge_pairs(list(words), list(counts), token_bytes, num, **options))
        finally:
            if before is None:
                del os.environ["BPE_STUDIO_PURE_PYTHON"]
            else:
                os.environ["BPE_STUDIO_PURE_PYTHON"] = before
        return [row for b in batches for row in zip(*b)]

    kernel, python = run(False), run(True)
    assert kernel == python
    table: Counter[bytes] = Counter()
    for w, c in zip(words, counts):
        table[w] += c
    steps = reference_merges(
        table, num, max_token_length=max_len, min_frequency=min_freq,
        forced=[(tokens[a], tokens[b]) for a, b in forced],
    )
    assert [row[3] for row in kernel] == [s.count for s in steps]
    assert [row[4] for row in kernel] == [prev - s.corpus_tokens for prev, s in zip(
        [sum(len(w) * c for w, c in zip(words, counts))] + [s.corpus_tokens for s in steps], steps)]
    merged = [bytes([i]) for i in range(256)]
    for a, b, z, *_ in kernel:
        merged.append(merged[a] + merged[b])
    assert [(merged[a], merged[b]) for a, b, *_ in kernel] == [s.pair for s in steps]


def test_the_kernel_refuses_a_forced_pair_of_unknown_tokens() -> None:
    from array import array

    from core.training import merge as merge_module

    if merge_module._MergeState is None:
        pytest.skip("the kernel is not built")
    state = merge_module._MergeState([b"ab"], [1], [bytes([i]) for i in range(256)], forced=array("i", [97, 300]).tobytes())
    with pytest.raises(ValueError, match="forced merge uses a token id that does not exist"):
        state.step(1)


def test_options_at_two_workers_on_a_larger_file(tmp_path: Path) -> None:
    import random

    rng = random.Random(7)
    text = "".join(rng.choice(WORDS) + rng.choice([" ", "", "\n"]) for _ in range(30_000))
    path = write(tmp_path, text)
    options = {"max_token_length": 5, "min_frequency": 3}
    got = train_run(path, 700, SPECIALS, workers=2, chunk_size=4096, **options).merge_events()
    finished = list(got)[-1]
    assert (finished.vocab, finished.merges) == train_bpe_reference(path, 700, SPECIALS, **options)
