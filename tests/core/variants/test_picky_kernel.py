"""Picky BPE's compiled merge loop (`core.variants._picky_kernel`) gives exactly what the oracle
(`core.variants.picky_reference`) and the Python loop (`core.variants.picky_loop`) give.

`core.variants.picky.PickyLoop` runs the kernel when it is built unless
``BPE_STUDIO_PURE_PYTHON=1``; here the same generated texts as test_picky.py (ties, ``aaaa``
repeats, multi-byte characters, invalid bytes, special tokens, thresholds 0.5-1.0) are trained
both ways and compared event by event, merge batch by merge batch, with the oracle and with
each other; plus a removal followed by a restore, packed and list input, long word lists
(compacted between merges), ids past 65535 (the kernel's 16-bit tokens widened), the
fallback for counts the kernel cannot hold, and the kernel's own errors.
"""

from __future__ import annotations

import os
import random
from array import array
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import core
import core.variants.picky as picky_module
from core.events import MergeBatch
from core.training.merge import PackedWords
from core.training.reference import read_corpus, reference_counts
from core.variants import Picky
from core.variants.picky import PickyLoop, picky_events
from core.variants.picky_reference import picky_reference
from core.pretokenize.surrogates import replace_lone_surrogates

try:
    from core.variants._picky_kernel import PickyState
except ImportError:
    if os.environ.get("CI") == "true":  # CI builds the kernels: one missing is a broken build, not a skip
        raise
    pytest.skip(
        "core.variants._picky_kernel is not built (no C compiler at install time?); "
        'build it with `pip install -e ".[test]"`',
        allow_module_level=True,
    )

FRAGMENTS = ["aaaa", "aa", "a", "ab", "abab", "the", " the", " th", "then", " ", "  ", "\n", "\r\n", "\t",
             "é", "漢字", "🙂", "12", "345", "--", "!!", "x: y", "<|e|>", "\udcff", "\udc80"]
SPECIALS = ["<|e|>"]
texts = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=3).filter(lambda t: "\x00" not in t)),
                 min_size=1, max_size=60).map("".join).filter(lambda t: t.strip("\x00"))
thresholds = st.sampled_from([0.5, 0.6, 0.75, 0.9, 1.0])


@pytest.fixture(autouse=True)
def _kernel_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BPE_STUDIO_PURE_PYTHON", raising=False)


def oracle(text: str, vocab_size: int, threshold: float):
    return picky_reference(reference_counts(read_corpus(text), SPECIALS), vocab_size, SPECIALS, threshold)


def train(input, vocab_size: int, threshold: float, *, pure: bool, workers: int = 1):
    """``(vocab, events, batches, finished)`` of a Picky run, by the kernel or (``pure``) the Python loop."""
    with pytest.MonkeyPatch.context() as mp:
        if pure:
            mp.setenv("BPE_STUDIO_PURE_PYTHON", "1")
        run = core.train(input, core.TrainOptions(vocab_size, SPECIALS, variant=Picky(threshold), workers=workers))
        batches = [event for event in run if isinstance(event, MergeBatch)]
    vocab, merges = run.result()
    return vocab, picky_events(merges, run.finished.splits), batches, run.finished


def merged(batches: list[MergeBatch]) -> tuple[list[tuple[int, ...]], list[object]]:
    """The batches' merges as rows and their splits, whatever the batch boundaries."""
    rows = [row for b in batches for row in zip(b.ranks, b.token_ids, b.left_ids, b.right_ids, b.counts,
                                                  b.corpus_tokens)]
    return rows, [split for b in batches for split in b.splits]


def check_batches(batches: list[MergeBatch]) -> None:
    rank = 0
    for batch in batches:
        assert 1 <= len(batch) <= 64 and batch.first_rank == rank
        assert all(split.rank in batch.ranks for split in batch.splits)
        rank += len(batch)


def write(tmp_path, text: str):
    path = tmp_path / "corpus.txt"
    path.write_bytes(text.encode("utf-8", errors="surrogateescape"))
    return path


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, extra=st.integers(1, 40), threshold=thresholds, workers=st.sampled_from([1, 2, 3]))
def test_the_kernel_equals_the_oracle_and_the_python_loop(tmp_path, text, extra, threshold, workers):
    want_vocab, want_events = oracle(text, 257 + extra, threshold)
    path = write(tmp_path, text)
    vocab, events, batches, finished = train(path, 257 + extra, threshold, pure=False, workers=workers)
    assert events == want_events
    assert vocab == want_vocab
    check_batches(batches)
    py_vocab, py_events, py_batches, py_finished = train(path, 257 + extra, threshold, pure=True, workers=workers)
    assert (py_vocab, py_events, py_finished) == (vocab, events, finished)
    assert merged(py_batches) == merged(batches)
    if [len(b) for b in py_batches] == [len(b) for b in batches]:  # (the Python loop may cut one at 20 ms)
        assert py_batches == batches


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("threshold", [0.5, 0.75, 0.9])
def test_every_worker_count_and_input_form(tmp_path, workers, threshold):
    rng = random.Random(workers)
    text = "".join(rng.choice(FRAGMENTS) for _ in range(400)) + " the then there other these " * 20
    path = write(tmp_path, text)
    python = train(path, 340, threshold, pure=True, workers=workers)
    # (a file keeps its invalid bytes; a str's lone surrogates are U+FFFD, as Tokenizer.encode takes them)
    for input, seen in ((path, text), (iter([text]), replace_lone_surrogates(text)),
                        (core.count_pretokens(path, SPECIALS, workers=workers), text)):
        want_vocab, want_events = oracle(seen, 340, threshold)
        vocab, events, batches, finished = train(input, 340, threshold, pure=False, workers=workers)
        assert events == want_events
        assert vocab == want_vocab
        if seen == text:  # (the Python loop ran on the file)
            assert finished == python[3] and merged(batches) == merged(python[2])


def test_a_removed_token_made_again_keeps_its_first_id():
    words, counts = [b"b  ", b"  "], [2, 1]  # "  " is made, removed inside "b  " (2/3 > 0.6), made again
    loop = PickyLoop(words, counts, [], 0.6)
    assert loop.compiled
    batches = list(loop.batches(300, 8))
    assert [(b.token_ids.tolist(), b.restores) for b in batches] == [([256, 257, 256], True)]
    [split] = loop.splits
    assert (split.rank, split.token_id, split.token, split.pieces, split.occurrences) == (1, 256, b"  ", (b" ", b" "), 1)
    assert batches[0].corpus_tokens.tolist() == [5, 4, 3]  # the split's pieces added a token back
    assert loop.merges == [(32, 32, 256), (98, 256, 257), (32, 32, 256)]
    assert loop.finished().vocab == {**{i: bytes([i]) for i in range(256)}, 256: b"  ", 257: b"b  "}
    want_vocab, want_events = picky_reference(Counter(dict(zip(words, counts))), 300, [], 0.6)
    assert picky_events(loop.finished().merges, loop.splits) == want_events
    assert loop.finished().vocab == want_vocab


def random_table(rng: random.Random) -> tuple[list[bytes], list[int]]:
    """Distinct words over a tiny alphabet (ties, prefixes, runs), some counts beyond 32 bits."""
    alphabet = rng.choice([b"ab", b"abc", b"aAb\xff", b"ab \xc3\xa9"])
    table = {bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 12))): rng.choice([1, 2, 3, rng.randint(1, 2**40)])
             for _ in range(rng.randint(1, 40))}
    return list(table), list(table.values())


def loop_result(loop: PickyLoop, vocab_size: int) -> tuple[object, ...]:
    batches = list(loop.batches(vocab_size, 10**15))
    check_batches(batches)
    return merged(batches), loop.finished(), loop.tokens, loop.live, loop.parents, loop.merges


@pytest.mark.parametrize("seed", range(8))
def test_packed_and_list_words_give_the_python_loops_result(monkeypatch, seed):
    rng = random.Random(seed)
    for _ in range(40):
        words, counts = random_table(rng)
        threshold, vocab_size = rng.choice([0.3, 0.5, 0.6, 0.9, 1.0]), 256 + rng.randint(1, 80)
        packed = PackedWords(b"".join(words), array("q", map(len, words)).tobytes(), array("q", counts).tobytes())
        from_list, from_packed = PickyLoop(words, counts, ["<|e|>"], threshold), PickyLoop(packed, None, ["<|e|>"], threshold)
        assert from_list.compiled and from_packed.compiled
        want = loop_result(from_list, vocab_size)
        assert loop_result(from_packed, vocab_size) == want
        monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
        python = PickyLoop(packed, None, ["<|e|>"], threshold)
        assert not python.compiled
        assert loop_result(python, vocab_size) == want
        monkeypatch.delenv("BPE_STUDIO_PURE_PYTHON")


def test_training_runs_the_kernel_when_it_is_built(tmp_path, monkeypatch):
    made: list[PickyState] = []

    def counting(*args: object) -> PickyState:
        made.append(PickyState(*args))  # type: ignore[arg-type]
        return made[-1]

    monkeypatch.setattr(picky_module, "_PickyState", counting)
    train(write(tmp_path, " the then there " * 30), 280, 0.9, pure=False)
    assert len(made) == 1, "Picky training did not use the compiled kernel"
    made.clear()
    train(write(tmp_path, " the then there " * 30), 280, 0.9, pure=True)
    assert made == []


def test_counts_beyond_the_kernel_fall_back_to_python():
    words = [b"abab", b"ab", b"ba"]
    for big in (2**51, 2**60):  # weighted bytes past 2**53: not exact in doubles
        loop = PickyLoop(words, [big, 3, 1], [], 0.6)
        assert not loop.compiled
        vocab_size = 260
        batches = list(loop.batches(vocab_size, 4 * big + 8))
        want_vocab, want_events = picky_reference(Counter({b"abab": big, b"ab": 3, b"ba": 1}), vocab_size, [], 0.6)
        assert picky_events(loop.finished().merges, loop.splits) == want_events
        assert loop.finished().vocab == want_vocab and batches
    assert PickyLoop(words, [2**50, 3, 1], [], 0.6).compiled


def test_the_kernels_steps_and_errors():
    words, counts = [b"b  ", b"  "], [2, 1]
    args = (b"".join(words), array("q", map(len, words)).tobytes(), array("q", counts).tobytes())
    state = PickyState(*args, [], 0.6)
    lefts, rights, new_ids, pair_counts, removed, restored, splits = state.step(2, 300, 0.0)
    assert [array("q", c).tolist() for c in (lefts, rights, new_ids, pair_counts, removed, restored)] == [
        [32, 98], [32, 256], [256, 257], [3, 2], [3, 1], [0, 0]]
    assert splits == [(1, 256, array("i", [32, 32]).tobytes(), 1)]
    assert array("q", state.step(64, 300, 1e-12)[2]).tolist() == [256]  # the time limit: one merge
    assert state.step(64, 300, 0.0)[:6] == (b"",) * 6  # no pair left
    assert PickyState(*args, [], 0.6).step(64, 257, 0.0)[2] == array("q", [256]).tobytes()  # vocabulary full
    with pytest.raises(ValueError, match="not positive"):
        PickyState(b"ab", array("q", [2]).tobytes(), array("q", [0]).tobytes(), [], 0.9)
    with pytest.raises(ValueError, match="past the words' bytes"):
        PickyState(b"ab", array("q", [3]).tobytes(), array("q", [1]).tobytes(), [], 0.9)
    with pytest.raises(ValueError, match="int64"):
        PickyState(b"ab", b"\x02", b"\x01", [], 0.9)
    with pytest.raises(OverflowError, match="2\\*\\*53"):
        PickyState(b"ab", array("q", [2]).tobytes(), array("q", [2**52]).tobytes(), [], 0.9)
    with pytest.raises(TypeError, match="special token 0"):
        PickyState(*args, ["<|e|>"], 0.9)
    with pytest.raises(RuntimeError, match="not initialized"):
        PickyState.__new__(PickyState).step(1, 300)


def run_both(monkeypatch: pytest.MonkeyPatch, words: list[bytes], counts: list[int], specials: list[str],
             threshold: float, vocab_size: int) -> tuple[object, ...]:
    """The kernel's run (`loop_result`), checked equal to the Python loop's."""
    kernel = PickyLoop(words, counts, specials, threshold)
    assert kernel.compiled
    got = loop_result(kernel, vocab_size)
    monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
    python = PickyLoop(words, counts, specials, threshold)
    monkeypatch.delenv("BPE_STUDIO_PURE_PYTHON")
    assert not python.compiled
    assert loop_result(python, vocab_size) == got
    return got


@pytest.mark.parametrize("seed", range(3))
def test_long_word_lists_compacted_between_merges_give_the_python_loops_result(monkeypatch, seed):
    # thousands of words made of a few pieces: pairs and tokens held by hundreds of words
    # each, which merges take from most of them (their lists compacted once half may be
    # stale), and removals, which list words again (repeats)
    rng = random.Random(seed)
    pieces = [b"the", b"then", b" th", b"ing", b"abab", b"aaaa", b"xyz", b"q", b"\xc3\xa9", b"  "]
    table: dict[bytes, int] = {}
    for _ in range(3000):
        word = b"".join(rng.choices(pieces, [8, 4, 1, 6, 3, 3, 2, 2, 2, 2], k=rng.randint(1, 4)))
        word += bytes([rng.choice(b"abc")])
        table[word] = table.get(word, 0) + rng.choice([1, 2, 7])
    for word in rng.sample(sorted(table), 5):  # far more frequent: the heap's floor starts above the others
        table[word] = 10**8 + table[word]
    for threshold in (0.5, 0.9):
        (rows, splits), *_ = run_both(monkeypatch, list(table), list(table.values()), [], threshold, 256 + 300)
        assert len(rows) >= 300 and any(split.occurrences > 0 for split in splits)


def test_merges_past_id_65535_widen_the_kernels_tokens(monkeypatch):
    # the kernel keeps token ids in 16 bits until a merge makes id 65536; with 65,400
    # tokens given (bytes and placeholder specials), the merges cross that id early, and
    # tokens of wide ids are merged, removed and restored after it; the pair map and the
    # bytes -> id table grow on the way (thousands of pairs, hundreds of tokens)
    rng = random.Random(11)
    alphabet = bytes(range(33, 127))
    table: dict[bytes, int] = {}
    for _ in range(3000):
        word = bytes(rng.choices(alphabet[: rng.choice([4, 8, 94])], k=rng.randint(2, 12)))
        table[word] = table.get(word, 0) + rng.choice([1, 2, 5, 40])
    specials = [f"<{i}>" for i in range(65_400 - 256)]
    for threshold in (0.6, 0.9):
        (rows, splits), _, tokens, *_ = run_both(monkeypatch, list(table), list(table.values()), specials, threshold,
                                                 65_400 + 1000)
        assert len(tokens) > 65_536 + 1000
        assert any(left >= 65_536 or right >= 65_536 for _, _, left, right, _, _ in rows)  # wide tokens merged
        assert any(split.token_id >= 65_536 for split in splits)  # and removed
        if threshold == 0.6:  # and made again
            made: set[int] = set()
            restored: set[int] = set()
            for _, new, *_ in rows:
                (restored if new in made else made).add(new)
            assert max(restored) >= 65_536
