"""`split_pickle`: a large object pickled in parts comes back equal, shared objects stay shared,
and no part is large (each unpickles in a few ms, the GIL free between them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from bpe_studio.app.workers.split_pickle import PART_ITEMS, dumps_parts, load_part, loads_parts


@dataclass
class Tables:
    vocab: dict[int, bytes]
    merges: list[tuple[bytes, bytes]]
    extra: dict[str, object] = field(default_factory=dict)


def make_tables(n: int) -> Tables:
    vocab = {i: bytes([i % 256]) * (1 + i % 7) for i in range(n)}
    merges = [(vocab[i], vocab[i + 1]) for i in range(n - 1)]
    return Tables(vocab, merges, {"same vocab": vocab, "ids": frozenset(range(n)), "small": [1, 2, 3],
                                  "order": tuple(range(n))})


def test_a_large_object_comes_back_equal_with_its_shared_parts_shared() -> None:
    tables = make_tables(5 * PART_ITEMS + 17)
    parts = dumps_parts(tables)
    back = loads_parts(parts, pause=0)
    assert back == tables and back is not tables
    assert back.extra["same vocab"] is back.vocab  # one object, pickled once
    assert type(back.extra["ids"]) is frozenset and type(back.extra["order"]) is tuple
    assert list(back.vocab) == list(tables.vocab)  # dict order kept across chunks


def test_no_part_holds_more_than_a_chunk() -> None:
    tables = make_tables(5 * PART_ITEMS + 17)
    parts = dumps_parts(tables)
    loaded: list[object] = []
    for part in parts:
        load_part(part, loaded)
        if part[0] == "pickle" and isinstance(loaded[-1], (dict, list, set, frozenset, tuple)):
            assert len(loaded[-1]) <= PART_ITEMS
    assert {part[1] for part in parts if part[0] == "join"} == {"dict", "list", "frozenset", "tuple"}
    assert loaded[-1] == tables


def test_a_small_object_is_one_part() -> None:
    assert len(dumps_parts({"a": [1, 2], "b": b"x"})) == 1
    assert loads_parts(dumps_parts({"a": [1, 2], "b": b"x"})) == {"a": [1, 2], "b": b"x"}


def test_a_tokenizer_in_parts_encodes_as_the_original(tmp_path) -> None:
    import core
    from core.encode.tokenizer import Tokenizer
    from core.events import Finished

    text = "".join(f"the cat {i} sat on the mat {i * 7}; the cats sat on the mats. " for i in range(3000))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(text, encoding="utf-8")
    finished = [e for e in core.train(str(corpus), core.TrainOptions(vocab_size=2600)) if isinstance(e, Finished)][0]
    tokenizer = Tokenizer(finished.vocab, finished.merges, [])
    parts = dumps_parts(tokenizer)
    assert len(parts) > 3  # its tables came in chunks
    back = loads_parts(parts, pause=0)
    assert back.encode(text) == tokenizer.encode(text)
    assert back.vocab == tokenizer.vocab and back.merges == tokenizer.merges
