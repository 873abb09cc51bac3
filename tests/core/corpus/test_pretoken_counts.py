"""Pre-token counts as an object: counted like the oracle, added in any order, saved and
loaded byte-exact, trained from with exactly `train_bpe`'s (and the oracle's) merges.

Both counting paths run (the native pre-tokenizer and ``BPE_STUDIO_PURE_PYTHON=1``).
"""

from __future__ import annotations

import pickle
import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import core
from core import PretokenCounts
from core.errors import FormatError
from core.training.merge import PackedWords
from core.training.reference import count_invalid_bytes as reference_invalid
from core.training.reference import reference_counts
from core.training.reference import read_corpus
from core.training.reference import train_bpe_reference

EOT = "<|endoftext|>"
fragments = st.one_of(
    st.sampled_from(["hi", " there", "  ", "\n", "don't", "12345", "٣٤", "日本", "!!", "naïve", "👍🏽", " \xa0",
                     EOT, " low", " lower", "est"]),
    st.text(max_size=3).map(lambda s: s.encode("utf-8", "surrogatepass").decode("utf-8", "replace")),
).map(lambda s: s.encode("utf-8"))
corpora = st.lists(st.one_of(fragments, st.binary(min_size=1, max_size=2)), min_size=1, max_size=60).map(lambda parts: b"".join(parts).replace(b"\0", b"")).filter(bool)
tables = st.dictionaries(st.binary(min_size=1, max_size=6), st.integers(1, 2**40), max_size=30)


def _corpus(seed: int, size: int = 60_000) -> bytes:
    rng = random.Random(seed)
    words = ["the", " cat", " sat", "\n", "  ", " über", " 東京", " 42", " don't", "!!", " low", " lower", EOT, "🙂"]
    return "".join(rng.choice(words) for _ in range(size // 4)).encode() + b"\xff\xfe tail"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=corpora, vocab=st.integers(256 + 1, 256 + 40))
def test_counts_and_training_from_them_equal_the_oracle(tmp_path, path_kind, data, vocab) -> None:
    path = tmp_path / "c.txt"
    path.write_bytes(data)
    counts = core.count_pretokens(path, [EOT], workers=1)
    assert counts.as_dict() == dict(reference_counts(path, [EOT]))
    assert counts.invalid_bytes == reference_invalid(read_corpus(path))
    words, numbers = counts.columns()
    lengths, occurrences = counts.lengths_and_counts()  # made in C on the native path
    assert lengths.tolist() == [len(w) for w in words] and occurrences.tolist() == numbers
    loaded = PretokenCounts.from_pairs(counts.as_dict())  # no native table: made from the lists
    assert [a.tolist() for a in loaded.lengths_and_counts()] == [[len(w) for w in loaded.columns()[0]], loaded.columns()[1]]
    assert core.train(counts, core.TrainOptions(vocab, counts.special_tokens, pattern=counts.pattern)).result() == train_bpe_reference(path, vocab, [EOT])


@pytest.mark.parametrize("workers", [1, 2])
def test_counts_fresh_from_the_native_table_pack_pickle_and_list_alike(tmp_path, workers) -> None:
    pytest.importorskip("core.pretokenize._native", reason="the native pre-tokenizer is not built")
    path = tmp_path / "c.txt"
    path.write_bytes(_corpus(2))
    counts = core.count_pretokens(path, [EOT], workers=workers, chunk_size=4096)
    packed = counts.packed_words()  # the table counting made, before the lists are made
    assert packed is not None
    lengths, occurrences = counts.lengths_and_counts()
    shipped = pickle.loads(pickle.dumps(counts))  # as to a Dask worker: no native table in it
    unpacked = PackedWords(*packed).unpacked()
    assert unpacked == counts.columns() == shipped.columns()
    assert dict(zip(*unpacked)) == dict(reference_counts(path, [EOT]))
    assert lengths.tolist() == [len(w) for w in unpacked[0]] and occurrences.tolist() == unpacked[1]
    assert counts.packed_words() is None  # the lists stand for the table now


@pytest.mark.parametrize("workers", [1, 2])
def test_training_from_counts_equals_train_bpe_merge_for_merge(tmp_path, path_kind, workers) -> None:
    path = tmp_path / "c.txt"
    path.write_bytes(_corpus(1))
    counts = core.count_pretokens(path, [EOT], workers=workers, chunk_size=4096)
    expected = core.train_bpe(path, 700, [EOT], workers=workers)
    assert core.train(counts, core.TrainOptions(700, [EOT], pattern=counts.pattern)).result() == expected
    assert counts.documents == 1 and counts.input_bytes == path.stat().st_size and counts.invalid_bytes == 2
    # the events and batch variants give the same merges, after a CountingDone with the counts' figures
    events = list(core.train(counts, core.TrainOptions(700, counts.special_tokens, pattern=counts.pattern)).merge_events())
    assert isinstance(events[0], core.CountingDone) and events[0].distinct == len(counts)
    assert events[0].input_bytes == counts.input_bytes and events[0].invalid_bytes == 2
    assert [(e.left, e.right) for e in events if isinstance(e, core.MergeEvent)] == expected[1]
    assert events[-1].merges == expected[1]


def test_shards_added_in_any_order_equal_the_whole(tmp_path, path_kind) -> None:
    data = _corpus(2)
    parts = [data[:20_000], data[20_000:41_000], data[41_000:]]
    shards = []
    for i, part in enumerate(parts):
        (tmp_path / f"{i}.txt").write_bytes(part)
        shards.append(core.count_pretokens(tmp_path / f"{i}.txt", [EOT], workers=1))
    whole = core.count_pretokens(sorted(tmp_path.glob("*.txt")), [EOT], workers=1)
    a, b, c = shards
    assert (a + b) + c == a + (b + c) == c + a + b == sum([b, c, a]) == whole
    assert (a + b + c).documents == 3 and (a + b + c).input_bytes == len(data)
    assert core.train(c + b + a, core.TrainOptions(600, [EOT])).result() == core.train_bpe(sorted(tmp_path.glob("*.txt")), 600, [EOT])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(x=tables, y=tables, z=tables)
def test_addition_is_commutative_and_associative(path_kind, x, y, z) -> None:
    a, b, c = (PretokenCounts.from_pairs(t.items(), documents=1, input_bytes=len(t)) for t in (x, y, z))
    expected = {k: x.get(k, 0) + y.get(k, 0) + z.get(k, 0) for k in {*x, *y, *z}}
    for total in (a + b + c, c + (b + a), (b + c) + a, PretokenCounts.add_all([c, a, b])):
        assert total.as_dict() == expected and total.documents == 3
    assert (a + b).to_bytes() == (b + a).to_bytes()  # the same table, the same file


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=tables, invalid=st.integers(0, 10**12), specials=st.lists(st.text(min_size=1, max_size=4), max_size=3,
                                                                         unique=True))
def test_save_then_load_is_identical(tmp_path, path_kind, table, invalid, specials) -> None:
    counts = PretokenCounts.from_pairs(table, pattern="gpt4", special_tokens=specials, documents=7,
                                       input_bytes=12345, invalid_bytes=invalid)
    counts.save(tmp_path / "c.bpc")
    loaded = PretokenCounts.load(tmp_path / "c.bpc")
    assert loaded == counts
    assert (loaded.pattern, loaded.special_tokens, loaded.documents, loaded.input_bytes, loaded.invalid_bytes) == (
        core.GPT4_PATTERN, tuple(specials), 7, 12345, invalid)
    assert loaded.as_dict() == table
    assert (loaded + loaded).as_dict() == {k: 2 * v for k, v in table.items()}
    assert loaded.to_bytes() == (tmp_path / "c.bpc").read_bytes()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_from_pairs_adds_repeats_and_refuses_nonsense() -> None:
    counts = PretokenCounts.from_pairs([("ab", 2), (b"ab", 3), (" c", 1)])
    assert counts.as_dict() == {b"ab": 5, b" c": 1} and counts.total == 6
    with pytest.raises(ValueError, match="pair 1: the count of b'x' must be a positive integer"):
        PretokenCounts.from_pairs([(b"a", 1), (b"x", 0)])
    with pytest.raises(ValueError, match="pair 0: a pre-token must be non-empty"):
        PretokenCounts.from_pairs([(b"", 1)])


def test_adding_counts_of_another_pattern_or_other_specials_is_refused() -> None:
    a = PretokenCounts.from_pairs({b"a": 1}, special_tokens=[EOT])
    with pytest.raises(ValueError, match="different patterns \\(gpt2 and gpt4\\)"):
        a + PretokenCounts.from_pairs({b"a": 1}, pattern="gpt4", special_tokens=[EOT])
    with pytest.raises(ValueError, match="different special tokens"):
        a + PretokenCounts.from_pairs({b"a": 1})
    # the same special tokens in another order are the same counting
    assert (a + PretokenCounts.from_pairs({b"b": 1}, special_tokens=[EOT])).as_dict() == {b"a": 1, b"b": 1}
    with pytest.raises(ValueError, match="made with the special tokens"):
        core.train(a, core.TrainOptions(300, ["<|other|>"], pattern=a.pattern)).result()


def test_a_truncated_damaged_or_foreign_file_names_itself(tmp_path) -> None:
    good = PretokenCounts.from_pairs({b"hello": 3, b" world": 2})
    data = good.to_bytes()
    cases = {
        "foreign.bpc": b"not a counts file at all",
        "empty.bpc": b"",
        "short.bpc": data[:-7],
        "cut.bpc": data[:30],
        "flipped.bpc": data[:-9] + bytes([data[-9] ^ 1]) + data[-8:],
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(FormatError, match=f"{name} is not a readable pre-token counts file"):
            PretokenCounts.load(tmp_path / name)
    newer = data[:8] + struct.pack("<I", 99) + data[12:]
    (tmp_path / "newer.bpc").write_bytes(newer)
    with pytest.raises(FormatError, match="newer.bpc is a pre-token counts file of version 99"):
        PretokenCounts.load(tmp_path / "newer.bpc")
    with pytest.raises(FormatError, match="missing.bpc: no such file"):
        PretokenCounts.load(tmp_path / "missing.bpc")



def test_without_dask_the_error_says_what_to_install(tmp_path, monkeypatch) -> None:
    import sys

    import core.distributed as cd

    monkeypatch.setitem(sys.modules, "distributed", None)  # as if not installed
    (tmp_path / "a.txt").write_text("hello")
    with pytest.raises(ImportError, match=r"pip install 'bpe-studio\[dask\]'"):
        cd.count_on_cluster(tmp_path / "a.txt", client=None)
