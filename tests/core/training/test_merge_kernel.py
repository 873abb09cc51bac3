"""The compiled merge loop (`core.training._merge_kernel`) gives exactly what the Python loop gives.

`core.training.merge.merge_pairs` runs the C kernel when it is built and hands its merges over
in batches of columns; `merge_pairs_python` is the pure-Python loop it replaces, one merge
at a time (itself checked against the reference trainer by test_train_equivalence.py). Word tables are generated over a tiny alphabet so that
count ties, tokens that are prefixes of others and overlapping runs (``b"aaaa"``) are
frequent, with counts beyond 32 bits; the trainer is run end to end with and without
``BPE_STUDIO_PURE_PYTHON=1``.
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core.training import merge as merge_module
from core.training.merge import KERNEL_BATCH, MergeColumns, PackedWords, merge_pairs, merge_pairs_python

try:
    from core.training._merge_kernel import MergeState
except ImportError:
    pytest.skip(
        "core.training._merge_kernel is not built (no C compiler at install time?); "
        'build it with `pip install -e ".[test]"`',
        allow_module_level=True,
    )

BYTE_TOKENS = [bytes([i]) for i in range(256)]
Merge = tuple[int, int, int, int, int]


def rows(batches: Iterator[MergeColumns], token_bytes: list[bytes] | None = None) -> list[Merge]:
    """The merges of ``batches`` one by one, as ``merge_pairs_python`` yields them, checking
    each batch's shape (and, given the ``token_bytes`` the loop grows, that it has grown by
    exactly the batch's tokens when the batch arrives)."""
    merges: list[Merge] = []
    for columns in batches:
        assert len(columns) == 5 and all(type(c) is array and c.typecode == "q" for c in columns)
        assert 1 <= len(columns[0]) <= KERNEL_BATCH
        assert len({len(c) for c in columns}) == 1
        merges.extend(zip(*columns))
        if token_bytes is not None:
            assert len(token_bytes) == merges[-1][2] + 1
    return merges


def step_rows(columns: tuple[bytes, ...]) -> list[Merge]:
    """One `MergeState.step` result (five bytes columns of int64) as rows."""
    assert len(columns) == 5 and all(type(c) is bytes for c in columns)
    return list(zip(*(array("q", c) for c in columns)))


@pytest.fixture(autouse=True)
def _kernel_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BPE_STUDIO_PURE_PYTHON", raising=False)


def _run_both(
    words: list[bytes], counts: list[int], specials: list[bytes], num_merges: int, prune: int = 0
) -> tuple[list[tuple[int, int, int, int, int]], list[bytes], list[tuple[int, int, int, int, int]], list[bytes]]:
    python_tokens = BYTE_TOKENS + specials
    kernel_tokens = BYTE_TOKENS + specials
    expected = list(merge_pairs_python(list(words), list(counts), python_tokens, num_merges))
    got = rows(merge_pairs(list(words), list(counts), kernel_tokens, num_merges, prune=prune), kernel_tokens)
    return expected, python_tokens, got, kernel_tokens


word_tables = st.dictionaries(
    st.binary(min_size=1, max_size=10).map(lambda b: bytes(b"aAb\xff"[x % 4] for x in b)),
    st.one_of(
        st.integers(1, 5),
        st.integers(1, 2**40),
        st.sampled_from([2**31 - 1, 2**31, 2**32 + 1, 2**45]),
    ),
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(
    table=word_tables,
    specials=st.lists(st.sampled_from([b"<|endoftext|>", b"aa", b"A"]), max_size=2, unique=True),
    num_merges=st.integers(0, 80),
    prune=st.sampled_from([0, 2]),
)
def test_kernel_equals_python_loop(
    table: dict[bytes, int], specials: list[bytes], num_merges: int, prune: int
) -> None:
    """The kernel's merges are the Python loop's; also when the rare pairs leave the pair
    map (``prune=2``: at every merge, below a threshold of the best count, halved at each
    refill, so that the pairs are counted again often; a merge's changes buffered 2 at a
    time, then 4, then applied 8 at a time, so that a merge's new pairs, not all counted
    yet, are kept)."""
    expected, python_tokens, got, kernel_tokens = _run_both(
        list(table), list(table.values()), specials, num_merges, prune
    )
    assert got == expected
    assert kernel_tokens == python_tokens


def _packed(words: list[bytes], counts: list[int]) -> PackedWords:
    return PackedWords(b"".join(words), array("q", map(len, words)).tobytes(), array("q", counts).tobytes())


@settings(max_examples=200, deadline=None)
@given(table=word_tables, num_merges=st.integers(0, 80), pure=st.booleans())
def test_packed_words_give_the_merges_of_the_lists(table: dict[bytes, int], num_merges: int, pure: bool) -> None:
    # the native count table's form (CountTable.packed_words): the kernel reads it as it
    # is; the Python loop unpacks it
    words, counts = list(table), list(table.values())
    expected = list(merge_pairs_python(list(words), list(counts), list(BYTE_TOKENS), num_merges))
    tokens = list(BYTE_TOKENS)
    with pytest.MonkeyPatch.context() as patch:
        if pure:
            patch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
        got = rows(merge_pairs(_packed(words, counts), None, tokens, num_merges), tokens)
    assert got == expected


def test_packed_words_that_do_not_add_up_are_refused() -> None:
    lengths, counts = array("q", [2, 3]).tobytes(), array("q", [1, 1]).tobytes()
    with pytest.raises(ValueError, match="runs past the end"):
        MergeState((b"abcd", lengths), counts, list(BYTE_TOKENS))  # 2 + 3 bytes of 4
    with pytest.raises(ValueError, match="as many int64 counts"):
        MergeState((b"abcde", lengths), counts[:8], list(BYTE_TOKENS))
    with pytest.raises(TypeError, match="words must be"):
        MergeState(b"abcde", counts, list(BYTE_TOKENS))


@settings(max_examples=100, deadline=None)
@given(table=word_tables, batch=st.integers(1, 7))
def test_step_batches_do_not_change_the_merges(table: dict[bytes, int], batch: int) -> None:
    expected = list(merge_pairs_python(list(table), list(table.values()), list(BYTE_TOKENS), 10**6))
    tokens = list(BYTE_TOKENS)
    state = MergeState(list(table), list(table.values()), tokens)
    got: list[tuple[int, int, int, int, int]] = []
    while chunk := step_rows(state.step(batch)):
        assert len(chunk) <= batch
        got.extend(chunk)
    assert got == expected  # run to the end: the early stop is the same too
    assert state.step(batch) == (b"", b"", b"", b"", b"")
    assert tokens == BYTE_TOKENS + [tokens[a] + tokens[b] for a, b, _z, _c, _r in got]


@settings(max_examples=100, deadline=None)
@given(table=word_tables, num_merges=st.integers(0, 150))
def test_python_loop_gives_the_same_batches(table: dict[bytes, int], num_merges: int) -> None:
    # BPE_STUDIO_PURE_PYTHON=1: merge_pairs groups the Python loop's merges into columns
    kernel_tokens = list(BYTE_TOKENS)
    kernel = list(merge_pairs(list(table), list(table.values()), kernel_tokens, num_merges))
    python_tokens = list(BYTE_TOKENS)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
        patch.setattr(merge_module, "PYTHON_BATCH_SECONDS", float("inf"))  # no cut for time
        python = list(merge_pairs(list(table), list(table.values()), python_tokens, num_merges))
    assert rows(iter(python)) == rows(iter(kernel))
    assert python_tokens == kernel_tokens
    # whole batches of KERNEL_BATCH, as the kernel's
    assert [len(c[0]) for c in python] == [len(c[0]) for c in kernel]


def test_slow_python_merges_come_in_smaller_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
    monkeypatch.setattr(merge_module, "PYTHON_BATCH_SECONDS", 0.0)  # every merge is "slow"
    tokens = list(BYTE_TOKENS)
    batches = list(merge_pairs([b"abcdefgh"], [1], tokens, 5))
    assert [len(columns[0]) for columns in batches] == [1, 1, 1, 1, 1]
    assert rows(iter(batches)) == list(merge_pairs_python([b"abcdefgh"], [1], list(BYTE_TOKENS), 5))


def test_known_merges_and_ties() -> None:
    # "low low": (l, o) and (o, w) tie at 2, the greater pair (o, w) wins
    tokens = list(BYTE_TOKENS)
    assert rows(merge_pairs([b"low"], [2], tokens, 10)) == [
        (ord("o"), ord("w"), 256, 2, 2),
        (ord("l"), 256, 257, 2, 2),
    ]
    assert tokens[256:] == [b"ow", b"low"]
    # overlapping runs: b"aaaa" has (a, a) three times but only two merge
    assert rows(merge_pairs([b"aaaa"], [3], list(BYTE_TOKENS), 1)) == [(97, 97, 256, 9, 6)]
    # a tie at count 1 after (A, B) -> AB: (b"AB", b"C") > (b"A", b"C"), a prefix is smaller
    tokens = list(BYTE_TOKENS)
    steps = rows(merge_pairs([b"AB", b"ABC", b"AC"], [10, 1, 1], tokens, 5))
    A, B, C = b"ABC"
    assert steps == [(A, B, 256, 11, 11), (256, C, 257, 1, 1), (A, C, 258, 1, 1)]
    assert tokens[256:] == [b"AB", b"ABC", b"AC"]


def test_counts_beyond_64_bits_fall_back_to_python() -> None:
    # each pair count fits in 64 bits, their sum (which bounds all counts) does not
    words, counts = [b"ab", b"cd"], [2**62, 2**62]
    with pytest.raises(OverflowError):
        MergeState(words, counts, list(BYTE_TOKENS))
    got = rows(merge_pairs(list(words), counts, list(BYTE_TOKENS), 5))
    assert got == [(99, 100, 256, 2**62, 2**62), (97, 98, 257, 2**62, 2**62)]


def test_bad_input_is_rejected() -> None:
    with pytest.raises(TypeError, match="words"):
        MergeState(["ab"], [1], list(BYTE_TOKENS))
    with pytest.raises(ValueError, match="differ in length"):
        MergeState([b"ab"], [1, 2], list(BYTE_TOKENS))
    with pytest.raises(ValueError, match="negative"):
        MergeState([b"ab"], [-1], list(BYTE_TOKENS))
    with pytest.raises(ValueError, match="256 byte tokens"):
        MergeState([b"ab"], [1], BYTE_TOKENS[:10])
    with pytest.raises(ValueError, match="prune must be"):
        MergeState([b"ab"], [1], list(BYTE_TOKENS), prune=3)


def test_pure_python_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object) -> None:
        raise AssertionError("the kernel ran although BPE_STUDIO_PURE_PYTHON=1")

    monkeypatch.setattr(merge_module, "_MergeState", broken)
    monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
    assert rows(merge_pairs([b"ab"], [1], list(BYTE_TOKENS), 1)) == [(97, 98, 256, 1, 1)]
    monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "0")
    with pytest.raises(AssertionError, match="kernel ran"):
        rows(merge_pairs([b"ab"], [1], list(BYTE_TOKENS), 1))


def _generated_text(seed: int) -> str:
    rng = random.Random(seed)
    syllables = ["ka", "to", "ri", "an", "the", "ing", "é", "ß", "日本", "🙂", "aa", "aaa", "  "]
    words = ["".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(300)]
    lines = []
    for _ in range(600):
        line = " ".join(rng.choices(words, k=rng.randint(1, 12)))
        lines.append(line + rng.choice([".", ",", "!", "", " 42", "<|endoftext|>"]))
    return "\n".join(lines)


@pytest.mark.parametrize("seed", [0, 1])
def test_trainer_gives_the_same_merges_with_and_without_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    path = tmp_path / "corpus.txt"
    path.write_text(_generated_text(seed), encoding="utf-8")
    monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
    vocab_python, merges_python = core.train_bpe(path, 2000, ["<|endoftext|>"], workers=1)
    monkeypatch.delenv("BPE_STUDIO_PURE_PYTHON")
    vocab_kernel, merges_kernel = core.train_bpe(path, 2000, ["<|endoftext|>"], workers=1)
    assert len(merges_python) > 300
    assert merges_kernel == merges_python
    assert vocab_kernel == vocab_python


def test_a_merge_with_more_changes_than_the_kernel_buffers_at_once() -> None:
    # the first merge, (x, a), has 1.2M neighbour occurrences (b before it, b after it,
    # twice in each of 300k words): more than the kernel's pending buffer (2**20), so it
    # applies them in two flushes. Distinct tails keep the words distinct. The merges are
    # those of the kernel applying them 8 at a time (prune=2, which test_kernel_equals_
    # python_loop holds to the Python loop), and the loop's on a tenth of the words.
    letters = b"cdefghijklmnopqrstuv"
    words = [b"bxabxab" + bytes(letters[i // 20**k % 20] for k in range(5)) for i in range(300_000)]
    counts = [1 + i % 3 for i in range(len(words))]
    tokens, small_buffer_tokens = BYTE_TOKENS.copy(), BYTE_TOKENS.copy()
    got = rows(merge_pairs(list(words), list(counts), tokens, 6), tokens)
    assert got[0][:2] == (ord("x"), ord("a"))
    assert got == rows(merge_pairs(list(words), list(counts), small_buffer_tokens, 6, prune=2), small_buffer_tokens)
    assert tokens == small_buffer_tokens
    expected, python_tokens, few, few_tokens = _run_both(words[::10], counts[::10], [], 6)
    assert few == expected and few_tokens == python_tokens


def _wide_table() -> dict[bytes, int]:
    rng = random.Random(7)
    alphabet = bytes(range(40, 120))
    table: dict[bytes, int] = {}
    for _ in range(4000):
        word = bytes(rng.choices(alphabet[: rng.randint(3, len(alphabet))], k=rng.randint(1, 24)))
        table[word] = table.get(word, 0) + rng.choice([1, 1, 2, 3, 10, 1000])
    return table


def test_thousands_of_merges_over_a_wide_alphabet() -> None:
    # more merges than the kernel's first token tables hold (they grow past 1024 new
    # tokens), over words of many distinct bytes and counts; its pair map grows (in place,
    # by half: capacities that are not powers of two) several times on the way, and the
    # pairs that one word holds keep it inline (no list of their own) until merged
    table = _wide_table()
    expected, python_tokens, got, kernel_tokens = _run_both(list(table), list(table.values()), [b"<s>"], 3000)
    assert len(expected) > 1500
    assert got == expected
    assert kernel_tokens == python_tokens
    if merge_module._MergeState is None:
        return
    state = merge_module._MergeState(list(table), list(table.values()), BYTE_TOKENS + [b"<s>"])
    sizes = {state.memory()["map"]}
    inline = []
    while state.step(100)[0]:
        memory = state.memory()
        sizes.add(memory["map"])
        inline.append(memory["pairs_held_inline"])
    assert len(sizes) >= 3  # the map grew at least twice
    assert max(inline) > 1000 and min(inline) < max(inline)  # many held inline, and some of them merged


def test_merges_past_id_65535_widen_the_kernels_tokens() -> None:
    # the kernel keeps token ids in 16 bits until a merge makes id 65536; with 65,400
    # tokens given (bytes and placeholder specials), the merges cross that id early
    rng = random.Random(11)
    alphabet = bytes(range(97, 123))
    table: dict[bytes, int] = {}
    for _ in range(3000):
        word = bytes(rng.choices(alphabet, k=rng.randint(2, 12)))
        table[word] = table.get(word, 0) + rng.choice([1, 2, 5, 40])
    specials = [b"<%d>" % i for i in range(65_400 - 256)]
    expected, python_tokens, got, kernel_tokens = _run_both(list(table), list(table.values()), specials, 600)
    assert len(expected) == 600 and expected[-1][2] > 65_536
    assert max(max(m[0], m[1]) for m in expected) >= 65_536  # merged tokens of wide ids merge again
    assert got == expected
    assert kernel_tokens == python_tokens


def _forced_from_a_run(words: list[bytes], counts: list[int], tokens: list[bytes], n: int) -> list[tuple[int, int]]:
    """The first ``n`` merges plain BPE makes on ``words``: forced pairs as SuperBPE's
    stage 2 gets them (tokens made on other words, many absent from these)."""
    return [(left, right) for left, right, *_ in merge_pairs_python(list(words), list(counts), list(tokens), n)]


spaced_tables = st.dictionaries(
    st.binary(min_size=1, max_size=14).map(lambda b: bytes(b"ab \n:c"[x % 6] for x in b)),
    st.integers(1, 9),
    min_size=1,
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(first=spaced_tables, second=spaced_tables, forced=st.integers(0, 40), more=st.integers(0, 30),
       rules=st.booleans(), prune=st.sampled_from([0, 2]))
def test_forced_merges_made_at_the_start_equal_the_loop(
    first: dict[bytes, int], second: dict[bytes, int], forced: int, more: int, rules: bool, prune: int
) -> None:
    """The kernel makes forced merges in every word at once, piece by piece between bytes no
    forced token holds in a row (_merge_apply.h): the same counts, tokens removed, tokens
    and the merges after them as the Python loop, merge by merge (with SuperBPE's rules, and
    its rare pairs leaving the pair map)."""
    pairs = _forced_from_a_run(list(first), list(first.values()), BYTE_TOKENS, forced)
    options = {"forced": pairs, "max_words": 2 if rules else 0, "colon_rule": rules}
    python_tokens, kernel_tokens = list(BYTE_TOKENS), list(BYTE_TOKENS)
    words, counts = list(second), list(second.values())
    expected = list(merge_pairs_python(list(words), counts, python_tokens, len(pairs) + more, **options))
    got = rows(merge_pairs(list(words), counts, kernel_tokens, len(pairs) + more, prune=prune, **options),
               kernel_tokens)
    assert got == expected
    assert kernel_tokens == python_tokens


def test_forced_merges_made_at_the_start_past_id_65535() -> None:
    # 65,400 tokens given and 400 forced merges: the kernel's words hold 32-bit ids from the start
    rng = random.Random(5)
    alphabet = b"abcde fgh"

    def table() -> dict[bytes, int]:
        words: dict[bytes, int] = {}
        for _ in range(2000):
            word = bytes(rng.choices(alphabet, k=rng.randint(2, 16)))
            words[word] = words.get(word, 0) + rng.choice([1, 3, 7])
        return words

    specials = [b"<%d>" % i for i in range(65_400 - 256)]
    first, second = table(), table()
    pairs = _forced_from_a_run(list(first), list(first.values()), BYTE_TOKENS + specials, 400)
    assert len(pairs) == 400 and max(max(pair) for pair in pairs) > 65_536  # forced tokens of wide ids merge again
    python_tokens, kernel_tokens = BYTE_TOKENS + specials, BYTE_TOKENS + specials
    expected = list(merge_pairs_python(list(second), list(second.values()), python_tokens, 500, forced=pairs))
    got = rows(merge_pairs(list(second), list(second.values()), kernel_tokens, 500, forced=pairs), kernel_tokens)
    assert len(expected) == 500 and any(row[3] > 0 for row in expected[:400])
    assert got == expected
    assert kernel_tokens == python_tokens


@pytest.mark.parametrize(("wide", "totals_only"), [(False, False), (False, True), (True, False)])
def test_forced_merges_in_many_packed_words_made_by_two_threads_equal_one(wide: bool, totals_only: bool) -> None:
    """From 32,768 packed words the kernel makes the forced merges in two runs of the
    words at once, each with its own pieces: the merges, their counts and tokens removed
    (or, as SuperBPE asks, only the tokens removed), and the merges after them are those
    of the one-thread path the lists take (tested against the Python loop above)."""
    rng = random.Random(11)
    alphabet = "abcde fgh:\n" + "éß中"

    def table(n: int) -> dict[bytes, int]:
        words: dict[bytes, int] = {}
        while len(words) < n:
            word = "".join(rng.choices(alphabet, k=rng.randint(1, 30))).encode()
            words[word] = words.get(word, 0) + rng.choice([1, 1, 2, 5, 40])
        return words

    tokens = BYTE_TOKENS + ([b"<%d>" % i for i in range(65_400 - 256)] if wide else [])
    first, second = table(3000), table(40_000)
    pairs = _forced_from_a_run(list(first), list(first.values()), tokens, 300)
    options = {"forced": pairs, "forced_counts": not totals_only}
    packed = PackedWords(b"".join(second), array("q", map(len, second)).tobytes(),
                         array("q", second.values()).tobytes())
    one_tokens, two_tokens = list(tokens), list(tokens)
    one = rows(merge_pairs(list(second), list(second.values()), one_tokens, len(pairs) + 200, **options))
    two = rows(merge_pairs(packed, None, two_tokens, len(pairs) + 200, **options))
    assert len(one) == len(pairs) + 200 and sum(row[4] for row in one[: len(pairs)]) > 0
    assert two == one
    assert two_tokens == one_tokens


long_tables = st.dictionaries(
    st.binary(min_size=20, max_size=90).map(lambda b: bytes(b"aab c"[x % 5] for x in b)),
    st.integers(1, 9),
    min_size=1,
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(first=long_tables, second=long_tables, forced=st.integers(0, 60), more=st.integers(0, 10))
def test_forced_merges_in_long_words_equal_the_loop(
    first: dict[bytes, int], second: dict[bytes, int], forced: int, more: int
) -> None:
    """Pieces of 24 bytes and more take the heap path of _merge_apply.h (runs such as
    ``aaaa`` overlap): the same merges, counts and tokens removed as the Python loop."""
    pairs = _forced_from_a_run(list(first), list(first.values()), BYTE_TOKENS, forced)
    python_tokens, kernel_tokens = list(BYTE_TOKENS), list(BYTE_TOKENS)
    words, counts = list(second), list(second.values())
    expected = list(merge_pairs_python(list(words), counts, python_tokens, len(pairs) + more, forced=pairs))
    got = rows(merge_pairs(list(words), counts, kernel_tokens, len(pairs) + more, forced=pairs), kernel_tokens)
    assert got == expected


@settings(max_examples=150, deadline=None)
@given(table=word_tables, choices=st.lists(st.integers(0, 400), max_size=30), prune=st.sampled_from([0, 2]))
def test_best_and_a_chosen_merge_equal_the_python_loop(table: dict[bytes, int], choices: list[int],
                                                       prune: int) -> None:
    """`MergeState.best` and `.merge(left, right)` (parity-aware BPE picks a pair per
    language) against `PythonMerges`: the same best pair, and a chosen pair — the best, or
    any pair of existing tokens, present or not (or pruned from the pair map: counted
    again) — merged with the same count and effects."""
    from core.training.python_loop import PythonMerges

    words, counts = list(table), list(table.values())
    kernel_tokens, python_tokens = list(BYTE_TOKENS), list(BYTE_TOKENS)
    kernel = MergeState(list(words), list(counts), kernel_tokens, prune=prune)
    python = PythonMerges(list(words), list(counts), python_tokens)
    for choice in choices:
        best = python.best()
        assert kernel.best() == best
        rarest = sorted((count, code) for code, count in python.pair_counts.items() if count > 0)[:3]
        if best is not None and choice % 3 == 1:
            pair = best[:2]
        elif rarest and choice % 3 == 2:  # a pair that occurs, among the rarest (pruned first)
            code = rarest[choice % len(rarest)][1]
            pair = (code >> 32, code & 0xFFFFFFFF)
        else:
            pair = (choice % len(python_tokens), (choice * 7) % len(python_tokens))
        assert step_rows(kernel.merge(*pair)) == [python.merge(*pair)]
    assert kernel_tokens == python_tokens
    assert step_rows(kernel.step(KERNEL_BATCH)) == list(python.run(KERNEL_BATCH))


@settings(max_examples=100, deadline=None)
@given(first=spaced_tables, second=spaced_tables, forced=st.integers(1, 40), more=st.integers(0, 20))
def test_forced_merges_without_their_counts_remove_the_same_tokens(
    first: dict[bytes, int], second: dict[bytes, int], forced: int, more: int
) -> None:
    """``forced_counts=False`` (SuperBPE's stage 2): the forced merges report no count, the
    last one all the tokens they removed; the tokens, and every merge after them, as the loop."""
    pairs = _forced_from_a_run(list(first), list(first.values()), BYTE_TOKENS, forced)
    if not pairs:
        return
    python_tokens, kernel_tokens = list(BYTE_TOKENS), list(BYTE_TOKENS)
    words, counts = list(second), list(second.values())
    expected = list(merge_pairs_python(list(words), counts, python_tokens, len(pairs) + more, forced=pairs))
    got = rows(merge_pairs(list(words), counts, kernel_tokens, len(pairs) + more, forced=pairs, forced_counts=False),
               kernel_tokens)
    n = len(pairs)
    assert [row[:3] for row in got[:n]] == [row[:3] for row in expected[:n]]
    assert all(row[3] == 0 for row in got[:n]) and all(row[4] == 0 for row in got[:n - 1])
    assert got[n - 1][4] == sum(row[4] for row in expected[:n])
    assert got[n:] == expected[n:] and kernel_tokens == python_tokens
