"""The `Tokenizer`'s encode family: one method each for text (str or bytes), many texts, a
stream and spans, arrays through `encode_to_array` (and a stream's ``.arrays()``); the
specification's spellings (`encode_bytes`, ``encode_batch(..., return_numpy=True)``) typed
apart, so no flag changes what a method is declared to return. Runs on the native encoder
and the Python path."""

from __future__ import annotations

import inspect
import itertools
import types
import typing

import numpy as np
import pytest

from core.encode.streaming import TokenStream
from core.encode.tokenizer import Tokenizer
from core.errors import OptionsError

SPECIALS = ["<|endoftext|>"]
TEXT = "hello world<|endoftext|> hello there, hello! " * 50


@pytest.fixture(params=["native", "pure"])
def tok(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Tokenizer:
    if request.param == "pure":
        monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
    else:
        monkeypatch.delenv("BPE_STUDIO_PURE_PYTHON", raising=False)
    vocab = {i: bytes([i]) for i in range(256)}
    merges = [(b"h", b"e"), (b"l", b"l"), (b"he", b"ll"), (b"hell", b"o"), (b" ", b"hello")]
    for i, (a, b) in enumerate(merges):
        vocab[256 + i] = a + b
    return Tokenizer(vocab, merges, SPECIALS)


def test_the_encode_family_is_four_methods_its_aliases_and_one_array_method() -> None:
    public = {name for name in dir(Tokenizer) if name.startswith("encode")}
    assert public == {"encode", "encode_batch", "encode_iterable", "encode_with_spans",  # the four
                      "encode_ordinary",  # tiktoken's spelling of encode(text, ordinary=True)
                      "encode_bytes",  # the specification's spelling of encode(bytes)
                      "encode_to_array"}  # the one way to arrays of one text
    for name in sorted(public):
        method = getattr(Tokenizer, name)
        overloads = typing.get_overloads(method)
        if name == "encode_batch":  # return_numpy, the specification's flag: one overload each
            assert [typing.get_type_hints(o)["return_numpy"] for o in overloads] == \
                [typing.Literal[False], typing.Literal[True]]
            assert typing.get_type_hints(overloads[0])["return"] == list[list[int]]
            assert typing.get_origin(typing.get_type_hints(overloads[1])["return"]) is tuple
        else:
            assert not overloads, name
            assert not [p for p in inspect.signature(method).parameters if p.startswith("return")], name
            returns = typing.get_type_hints(method)["return"]
            assert typing.get_origin(returns) not in (typing.Union, types.UnionType), name
        assert "``" in (method.__doc__ or "") and "(" in (method.__doc__ or ""), f"{name} shows no example"


def test_encode_bytes_is_encode_of_bytes_and_refuses_text(tok: Tokenizer) -> None:
    raw = TEXT.encode() + b"\xff\xfe caf\xc3"
    assert tok.encode_bytes(raw) == tok.encode(raw)
    assert tok.encode_bytes(bytearray(raw)) == tok.encode_bytes(memoryview(raw)) == tok.encode(raw)
    assert tok.encode_bytes(raw, ordinary=True) == tok.encode_ordinary(raw)
    assert tok.decode_bytes(tok.encode_bytes(raw)) == raw
    with pytest.raises(TypeError, match=r"encode_bytes\(\) takes bytes, got str: use Tokenizer.encode\(\) for text"):
        tok.encode_bytes("text")  # type: ignore[arg-type]


def test_encode_takes_text_or_bytes(tok: Tokenizer) -> None:
    raw = TEXT.encode() + b"\xff\xfe caf\xc3"
    assert tok.encode(TEXT.encode()) == tok.encode(TEXT)
    assert tok.decode_bytes(tok.encode(raw)) == raw  # invalid UTF-8 kept byte-exactly
    assert tok.encode(bytearray(raw)) == tok.encode(memoryview(raw)) == tok.encode(raw)
    eot = tok.special_ids["<|endoftext|>"]
    assert eot in tok.encode(raw) and eot not in tok.encode(raw, ordinary=True)
    assert tok.encode(raw, ordinary=True) == tok.encode_ordinary(raw)
    assert tok.encode(TEXT, ordinary=True) == tok.encode_ordinary(TEXT)
    assert tok.decode(tok.encode_ordinary(TEXT)) == TEXT


def test_encode_to_array_equals_encode(tok: Tokenizer) -> None:
    raw = TEXT.encode() + b"\xff"
    for text in (TEXT, raw, "a\udcffb", ""):
        ids = tok.encode_to_array(text)
        assert isinstance(ids, np.ndarray) and ids.dtype == np.int64 and ids.tolist() == tok.encode(text)
    assert tok.encode_to_array(raw, ordinary=True).tolist() == tok.encode(raw, ordinary=True)


def test_encode_batch_takes_text_or_bytes(tok: Tokenizer) -> None:
    texts: list[str | bytes] = [TEXT, b"caf\xff", "", "hello"]
    assert tok.encode_batch(texts, workers=2) == [tok.encode(t) for t in texts]
    ids, offsets = tok.encode_batch(texts, workers=2, return_numpy=True)
    assert [ids[offsets[i] : offsets[i + 1]].tolist() for i in range(len(texts))] == tok.encode_batch(texts)


def test_a_stream_gives_ids_or_arrays(tok: Tokenizer) -> None:
    parts = [TEXT[i : i + 7] for i in range(0, len(TEXT), 7)] * 40
    want = tok.encode("".join(parts))
    stream = tok.encode_iterable(parts)
    assert isinstance(stream, TokenStream) and next(stream) == want[0] and list(stream) == want[1:]
    assert list(itertools.islice(tok.encode_iterable(iter(parts)), 5)) == want[:5]
    arrays = list(tok.encode_iterable(parts).arrays())
    assert len(arrays) > 1 and all(a.dtype == np.int64 for a in arrays)
    assert np.concatenate(arrays).tolist() == want
    started = tok.encode_iterable(parts)
    next(started)
    with pytest.raises(OptionsError, match="before taking any id"):
        started.arrays()


def test_an_escaped_stream_gives_the_bytes_it_stands_for(tok: Tokenizer) -> None:
    raw = b"hello \xff\xfe world " * 300
    text = raw.decode("utf-8", "surrogateescape")
    parts = [text[i : i + 100] for i in range(0, len(text), 100)]
    assert list(tok.encode_iterable(parts, escaped=True)) == tok.encode(raw)
    assert list(tok.encode_iterable(parts)) == tok.encode(text)  # not escaped: lone surrogates are U+FFFD
