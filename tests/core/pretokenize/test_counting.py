"""`count_chunk` and `CountTable` count exactly what the reference trainer counts, on
both paths (the native pre-tokenizer and ``BPE_STUDIO_PURE_PYTHON=1``'s `regex` path),
chunk by chunk at the trainer's cut points, with special tokens and invalid bytes."""

from __future__ import annotations

import pickle
import random
from array import array
from collections import Counter

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import core
from core.corpus.chunks import plan_chunks
from core.pretokenize.counting import ChunkCounts, CountTable, count_chunk
from core.pretokenize.patterns import resolve_pattern
from core.training.reference import count_invalid_bytes, reference_counts, read_corpus, train_bpe_reference

SPECIALS = [
    [], ["<|e|>"], ["<|a|>", "<|a|><|b|>"], ["a b", "\n\n"],
    ["|><|", "<|a|><|b|>", "<|a|>", "b|>"],  # overlapping: the leftmost, then the longest there
    # more than the native scanner finds itself (16): cut in Python, each stretch scanned
    ["<|e|>", "<|a|>", "!!"] + [f"<{k}>" for k in range(14)],
]
fragments = st.one_of(
    st.sampled_from(["hi", " there", "  ", "\n", "\r\n", "don't", "DON'T", "12345", "٣٤", "日本", "!!", "\u3000",
                     "<|e|>", "<|a|>", "<|a|><|b|>", "a b", "\n\n", "naïve", "👍🏽", " \xa0"]),
    st.text(max_size=3).map(lambda s: s.encode("utf-8", "surrogatepass").decode("utf-8", "replace")),
).map(lambda s: s.encode("utf-8"))
corpora = st.lists(st.one_of(fragments, st.binary(min_size=1, max_size=2)), max_size=50).map(b"".join)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=corpora, specials=st.sampled_from(SPECIALS), name=st.sampled_from(["gpt2", "gpt4"]),
       chunk_size=st.sampled_from([1, 7, 64, 1 << 20]))
def test_chunks_add_up_to_the_reference_counts(tmp_path, path_kind, data, specials, name, chunk_size) -> None:
    pattern = resolve_pattern(name)
    file = tmp_path / "c.bin"
    file.write_bytes(data)
    total = CountTable()
    for start, end in plan_chunks(file, len(data), pattern, specials, chunk_size):
        chunk = count_chunk(data[start:end], pattern, specials)
        assert (chunk.packed is not None) == (path_kind == "native")
        total.add(pickle.loads(pickle.dumps(chunk)))  # as it comes back from a worker
    words, counts = total.items()
    assert len(set(words)) == len(words)
    assert dict(zip(words, counts)) == reference_counts(data, specials, pattern=name)
    assert total.invalid == count_invalid_bytes(read_corpus(data))


@pytest.mark.parametrize("specials", [["<|a|>", "<|a|><|b|>", "b|><"], ["b|><", "<|a|><|b|>", "<|a|>"]])
def test_special_tokens_cut_leftmost_then_longest(path_kind, specials) -> None:
    data = b"x<|a|><|b|>y<|a|>z b|><|a|>"
    chunk = count_chunk(data, resolve_pattern("gpt2"), specials)
    total = CountTable()
    total.add(chunk)
    words, counts = total.items()
    assert dict(zip(words, counts)) == reference_counts(data, specials, pattern="gpt2") == {
        b"x": 1, b"y": 1, b"z": 1, b" ": 1, b"|": 1, b"a": 1, b"|>": 1}


def test_count_chunk_takes_text_or_bytes(path_kind) -> None:
    gpt2 = resolve_pattern("gpt2")
    for data in (b"ab ab<|e|>ab \xff", "ab ab<|e|>ab \udcff"):
        total = CountTable()
        total.add(count_chunk(data, gpt2, ["<|e|>"]))
        assert dict(zip(*total.items())) == {b"ab": 2, b" ab": 1, b" \xff": 1}
        assert total.invalid == 1


def test_native_and_regex_chunks_add_together() -> None:
    pytest.importorskip("core.pretokenize._native")
    gpt2 = resolve_pattern("gpt2")
    total = CountTable()
    total.add(count_chunk(b"a b", gpt2, []))
    total.add(ChunkCounts(None, {b" b": 2, b"c": 1}, 3))
    assert dict(zip(*total.items())) == {b"a": 1, b" b": 3, b"c": 1}
    assert total.invalid == 3


@pytest.mark.parametrize("name", ["gpt2", "gpt4"])
def test_training_in_parallel_equals_the_reference_on_both_paths(tmp_path, path_kind, name) -> None:
    specials = ["<|endoftext|>"]
    parts = ["Hello world", " it's", " 2024", "\n\n", "<|endoftext|>", " naïve", " 日本語", "\xff", "  x", "DON'T"]
    data = b"".join(p.encode("utf-8", "surrogateescape") if p != "\xff" else b"\xff" for p in parts * 3000)
    file = tmp_path / "c.txt"
    file.write_bytes(data)
    events = list(core.train(file, core.TrainOptions(400, specials, pattern=name, workers=2), chunk_size=4096).merge_events())
    counting = next(e for e in events if isinstance(e, core.CountingDone))
    assert counting.invalid_bytes == 3000
    want = train_bpe_reference(data, 400, specials, pattern=name)
    assert (events[-1].vocab, events[-1].merges) == want
    assert Counter(dict(zip(*_items(data, name, specials)))) == reference_counts(data, specials, pattern=name)


def _items(data: bytes, name: str, specials: list[str]) -> tuple[list[bytes], list[int]]:
    total = CountTable()
    total.add(count_chunk(data, resolve_pattern(name), specials))
    return total.items()


def _words(first: int, count: int) -> bytes:
    return " ".join(f"w{i}" for i in range(first, first + count)).encode()


@settings(max_examples=50, deadline=None)
@given(texts=st.lists(corpora, min_size=1, max_size=4))
@example(texts=[_words(0, 50), _words(40, 500), _words(400, 20), _words(0, 3000), _words(2900, 200)])
def test_a_count_table_reads_the_tables_handed_over_as_their_sum(texts) -> None:
    """`CountTable` keeps the native tables handed over as two, the first and the sum of the
    others (a small table added to that sum, a larger one taking its place), and
    `packed_words` reads the two as their sum: whichever is called first, the words of
    `packed_words` and `items` are the reference counts of all the texts, in first-seen order."""
    native = pytest.importorskip("core.pretokenize._native", reason="the native pre-tokenizer is not built")
    want = Counter[bytes]()
    for text in texts:
        want.update(reference_counts(text, [], pattern="gpt2"))
    words = list(dict.fromkeys(word for text in texts for word in reference_counts(text, [], pattern="gpt2")))
    packed = (b"".join(words), array("q", map(len, words)).tobytes(), array("q", [want[w] for w in words]).tobytes())
    for packed_first in (True, False):
        total = CountTable()
        for text in texts:
            table = native.Counts()
            table.scan(text, native.GPT2)
            total.add(ChunkCounts(None, None, 0, table))
        if packed_first:
            assert total.packed_words() == packed
        assert total.items() == (words, [want[w] for w in words])
        assert total.packed_words() == packed


@settings(max_examples=100, deadline=None)
@given(first=corpora, second=corpora, name=st.sampled_from(["gpt2", "gpt4"]))
def test_native_tables_add_up_to_the_reference_counts(first, second, name) -> None:
    """`Counts.add` (the tables of two worker threads) and `add_packed` (a table sent by a
    worker process) give the counts of the two texts, and the first-seen order of one table."""
    native = pytest.importorskip("core.pretokenize._native", reason="the native pre-tokenizer is not built")
    scanner = {"gpt2": native.GPT2, "gpt4": native.GPT4}[name]
    tables = []
    for data in (first, second):
        table = native.Counts()
        table.scan(data, scanner)
        tables.append(table)
    packed = native.Counts()
    packed.add_packed(tables[0].packed())
    packed.add_packed(tables[1].packed())
    tables[0].add(tables[1])
    expected = reference_counts(first, [], pattern=name) + reference_counts(second, [], pattern=name)
    words, counts = tables[0].items()
    assert dict(zip(words, counts)) == expected
    assert tables[0].items() == packed.items()
    assert tables[0].invalid == count_invalid_bytes(read_corpus(first)) + count_invalid_bytes(read_corpus(second))
    doubled = native.Counts()
    doubled.add(tables[0])
    doubled.add(doubled)
    assert doubled.items() == (words, [2 * c for c in counts])


def test_a_native_table_grows_while_another_is_added_to_it() -> None:
    """Adding a table with many new keys grows the one it is added to half-way (a new table
    has room for 512 keys), keeping the counts and the first-seen order."""
    native = pytest.importorskip("core.pretokenize._native", reason="the native pre-tokenizer is not built")
    first = " ".join(f"w{i}" for i in range(0, 3000, 2)).encode() + b" shared shared"
    second = b"shared " + " ".join(f"w{i}" for i in range(2000, 5000)).encode()
    assert_tables_add_up(native, first, second)


def assert_tables_add_up(native, first: bytes, second: bytes) -> tuple[Counter[bytes], Counter[bytes]]:
    """The table of `second` added to that of `first` holds the reference counts of both, in
    first-seen order, and the columns of the sum read from the two tables (``columns(other)``,
    which changes neither) are those of the table they add up to; the reference counts of
    each are returned."""
    tables = []
    for data in (first, second):
        table = native.Counts()
        table.scan(data, native.GPT2)
        tables.append(table)
    alone = [table.items() for table in tables]
    summed = tables[0].columns(tables[1])
    assert [table.items() for table in tables] == alone
    tables[0].add(tables[1])
    one, two = reference_counts(first, [], pattern="gpt2"), reference_counts(second, [], pattern="gpt2")
    words, counts = tables[0].items()
    assert dict(zip(words, counts)) == one + two
    assert words == list(dict.fromkeys([*one, *two]))
    lengths = array("q", [len(word) for word in words]).tobytes()
    assert summed == (b"".join(words), lengths, array("q", counts).tobytes()) == tables[0].columns()
    return one, two


@pytest.mark.parametrize("big_first", [True, False])
def test_native_tables_of_different_sizes_add_up_in_first_seen_order(big_first: bool) -> None:
    """`Counts.add` looks the added table's keys up in its slots' order (a key's home in a
    table twice or half the size shares its low bits), then puts the new ones in first-seen
    order: a table of 60 k keys and one of a few hundred, short keys and long ones (kept
    in the arena, looked up by the hash bits their slot keeps), shared and not, either way."""
    native = pytest.importorskip("core.pretokenize._native", reason="the native pre-tokenizer is not built")
    rng = random.Random(5)

    def word(prefix: str, i: int) -> str:  # letters only: one pre-token
        return prefix + "".join("abcdefghijklmnopqrstuvwxyz"[i // 26**k % 26] for k in range(4))

    shared = [word("shared", i) * rng.randint(1, 3) for i in range(300)] + [word("", i) for i in range(300)]
    big = " ".join([word("big", i) * rng.randint(1, 4) for i in range(60_000)] + shared).encode()
    small = " ".join(shared[::-1] + [word("small", i) * rng.randint(1, 4) for i in range(300)]).encode()
    one, two = assert_tables_add_up(native, *((big, small) if big_first else (small, big)))
    assert any(len(w) > 8 for w in set(one) & set(two)) and any(len(w) <= 8 for w in set(one) & set(two))


@pytest.mark.parametrize("scanner", ["GPT2", "SUPERBPE"])
def test_keys_of_255_bytes_and_more_are_added_whole(scanner: str) -> None:
    """A pre-token of 255 bytes or more (its length kept beside it, not in its slot) that
    only the added table has is put in whole: the length once read its slot's 255 (C leaves
    the order of a call's arguments open), and two counting threads cut it there."""
    native = pytest.importorskip("core.pretokenize._native", reason="the native pre-tokenizer is not built")
    lengths = [16, 17, 254, 255, 256, 397, 4000]
    long_words = [("x" * n).encode() for n in lengths]
    first, second = native.Counts(), native.Counts()
    first.scan(b"shared\n" + b"\n".join(long_words[:1]), getattr(native, scanner))  # (a line ends a pre-token)
    second.scan(b"\n".join(long_words) + b"\nshared", getattr(native, scanner))
    expected = dict(zip(*first.items()))
    for word, count in zip(*second.items()):
        expected[word] = expected.get(word, 0) + count
    assert {254, 255, 256} & set(map(len, second.items()[0])) and max(map(len, second.items()[0])) >= 4000
    first.add(second)
    assert dict(zip(*first.items())) == expected


def _table_hash(key: bytes) -> int:
    """The native table's hash of a key of at most 16 bytes (`bpe_ct_hash_words`), to find
    keys that crowd one end of it."""
    word, ext = int.from_bytes(key[:8], "little"), int.from_bytes(key[8:16], "little")
    first = (word ^ 0xC2B2AE3D27D4EB4F) * 0x9E3779B97F4A7C15
    second = (ext ^ 0x165667B19E3779F9) * 0xD6E8FEB86659FD93
    fold = lambda x: (x & (2**64 - 1)) ^ (x >> 64)  # noqa: E731
    return (fold(first) + fold(second)) % 2**64


@pytest.mark.parametrize("length", [8, 12])
def test_a_table_grows_in_place_past_keys_crowding_its_end(length: int) -> None:
    """Growing rehashes the keys where they are, walking the slots from one after an empty
    one: a run of full slots that wraps from the last slot to the first, and keys whose
    search in the larger table runs past its last slot on to the first, keep every key and
    count: 64 keys whose homes are among the last 40 slots of a table of 32768 (and so of
    16384), with fillers around them, looked up again after the table has grown past them
    twice. (Walking from slot 0, or stopping a search at the last slot, loses keys.)"""
    native = pytest.importorskip("core.pretokenize._native", reason="the native pre-tokenizer is not built")
    from core.pretokenize.counting import pack_counts

    rng = random.Random(length)
    crowd: list[bytes] = []
    while len(crowd) < 64:
        key = bytes(rng.randrange(1, 256) for _ in range(length))
        if _table_hash(key) % 32768 >= 32768 - 40:
            crowd.append(key)
    fillers = [f"f{i}".encode() for i in range(30_000)]
    table = native.Counts()  # 16384 slots: grows at 12288 keys, and again at 24576
    words = fillers[:100] + crowd + fillers[100:]
    counts = list(range(1, len(words) + 1))
    table.add_packed(pack_counts(words[:12_000], counts[:12_000], 0))
    table.add_packed(pack_counts(words[12_000:], counts[12_000:], 0))
    table.add_packed(pack_counts(crowd, [1000] * len(crowd), 0))  # found again, not put in twice
    expected = dict(zip(words, counts))
    for key in crowd:
        expected[key] += 1000
    found_words, found_counts = table.items()
    assert found_words == words
    assert dict(zip(found_words, found_counts)) == expected


@pytest.mark.parametrize("distinct", [10, 150_000])
def test_counting_adds_one_past_31_bits_exactly(distinct: int) -> None:
    """The counting loops add 1 to a count in its slot until it would pass 31 bits, then in
    `big`: counts of 2**31 - 2 and 2**31 - 1 counted on by scanning, in a small table (the
    plain loop) and in one past the caches (the look-ahead loop)."""
    native = pytest.importorskip("core.pretokenize._native", reason="the native pre-tokenizer is not built")
    from core.pretokenize.counting import pack_counts

    words = [b" near", b" at", b" far"] + [f" w{i}".encode() for i in range(distinct)]
    counts = [2**31 - 2, 2**31 - 1, 5] + [1] * distinct
    table = native.Counts()
    table.add_packed(pack_counts(words, counts, 0))
    table.scan(b" near at far" * 3, 1)
    found = dict(zip(*table.items()))
    assert (found[b" near"], found[b" at"], found[b" far"]) == (2**31 + 1, 2**31 + 2, 8)


def test_a_native_table_keeps_keys_of_any_length_and_counts_of_any_size() -> None:
    """Keys of 0 to thousands of bytes (those of up to 16 live in the table's slots and ext,
    longer ones in an arena, those of 255 bytes or more with their length there) and
    counts past 31 and 32 bits (they move out of the slot) come back exactly, in first-seen
    order, through growing, adding, packing and the arrays."""
    native = pytest.importorskip("core.pretokenize._native", reason="the native pre-tokenizer is not built")
    from core.pretokenize.counting import pack_counts

    words = [b"", b"a", b"\x00", b"\x00\x00", b"12345678", b"123456789", b"x" * 254, b"x" * 255, b"y" * 4000]
    words += [b"\x00" * n for n in range(3, 19)] + [b"0123456789abcdef", b"0123456789abcdefg"]  # 9-16: slot and ext
    words += [f" w{i}".encode() * (1 + i % 30) for i in range(5000)]  # many keys: the table grows
    counts = [(2**31 - 1) if i % 3 == 0 else (2**40 + i if i % 3 == 1 else i + 1) for i in range(len(words))]
    table = native.Counts()
    table.add_packed(pack_counts(words, counts, 5))
    table.add_packed(pack_counts(words[::-1], counts[::-1], 0))  # every count doubles, past 32 bits
    assert table.items() == (words, [2 * c for c in counts])
    lengths, totals = table.arrays()
    assert table.columns() == (b"".join(words), lengths, totals)
    assert list(memoryview(lengths).cast("q")) == [len(w) for w in words]
    assert list(memoryview(totals).cast("q")) == [2 * c for c in counts]
    other = native.Counts()
    other.add_packed(table.packed())
    other.add(table)
    assert other.items() == (words, [4 * c for c in counts]) and other.invalid == 10
