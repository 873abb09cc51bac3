"""Tokenizer files read at once (every token mapped to bytes in one pass) give exactly what
reading them line by line and key by key gives: GPT-2's vocab.json + merges.txt and a
tokenizer.json alike, the same vocabulary and merges in the same order for any well-formed
file, and the same error for any malformed one."""

from __future__ import annotations

import functools
import json
import os
import random
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import FormatError
from core.formats import bytes_unicode, gpt2_files, hf_json
from core.formats.bytes_unicode import (
    LONG_TEXT,
    bytes_to_string,
    bytes_to_unicode,
    string_to_bytes,
    strings_to_bytes,
    unicode_to_bytes,
)
from core.formats.gpt2_files import load_gpt2_files


def _read(tmp: Path, vocab_text: str, merges_text: str, at_once: bool,
          monkeypatch: pytest.MonkeyPatch) -> object:
    (tmp / "vocab.json").write_text(vocab_text, encoding="utf-8")
    (tmp / "merges.txt").write_bytes(merges_text.encode("utf-8"))
    with monkeypatch.context() as patched:
        if not at_once:
            patched.setattr(gpt2_files, "_merges_at_once", lambda text, known: None)
            patched.setattr(gpt2_files, "vocab_at_once", lambda data, specials, limit: None)
        try:
            vocab, merges = load_gpt2_files(tmp / "vocab.json", tmp / "merges.txt", ["<|endoftext|>"])
        except FormatError as e:
            return ("error", str(e))
    return list(vocab.items()), merges


tokens = st.binary(min_size=1, max_size=4)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(tokens, tokens), max_size=30), st.sampled_from(["", "#version: 0.2\n"]),
       st.sampled_from(["\n", "\r\n", "\n\n"]), st.sampled_from(["", "tab", "double space", "missing", "twice", "foreign"]))
def test_at_once_equals_line_by_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pairs: list[tuple[bytes, bytes]],
                                     version: str, newline: str, damage: str) -> None:
    vocab = [bytes([b]) for b in range(256)]
    for left, right in pairs:
        for token in (left, right, left + right):
            if token not in vocab:
                vocab.append(token)
    vocab_map = {bytes_to_string(t): i for i, t in enumerate(vocab)}
    vocab_map["<|endoftext|>"] = len(vocab)
    lines = [f"{bytes_to_string(a)} {bytes_to_string(b)}" for a, b in pairs]
    if lines and damage == "tab":
        lines[-1] = lines[-1].replace(" ", "\t")
    elif lines and damage == "double space":
        lines[0] = lines[0].replace(" ", "  ")
    elif damage == "missing":
        lines.append("Ā Ā")  # bytes 0x00 0x00: a merge whose result is not in the vocabulary
    elif damage == "twice":
        vocab_map["é"] = 5  # an id given twice
    elif damage == "foreign":
        vocab_map["中"] = len(vocab) + 1  # a key outside the byte map
    merges_text = version + newline.join(lines) + newline
    vocab_text = json.dumps(vocab_map, ensure_ascii=False)
    assert _read(tmp_path, vocab_text, merges_text, True, monkeypatch) == \
        _read(tmp_path, vocab_text, merges_text, False, monkeypatch)


def _from_json(data: dict[str, object], at_once: bool, monkeypatch: pytest.MonkeyPatch) -> object:
    with monkeypatch.context() as patched:
        if not at_once:
            patched.setattr(hf_json, "json_merges_at_once", lambda raw_merges, known: None)
            patched.setattr(hf_json, "vocab_at_once", lambda data, specials, limit: None)
        try:
            vocab, merges, specials, _ = hf_json.tokenizer_from_json(json.loads(json.dumps(data)), "t.json")
        except FormatError as e:
            return ("error", str(e))
    return list(vocab.items()), merges, specials


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(tokens, tokens), max_size=30), st.booleans(), st.sampled_from([None, 0, "new"]),
       st.sampled_from(["", "missing", "twice", "foreign", "empty", "three", "not text", "mixed", "bool id"]))
def test_tokenizer_json_at_once_equals_merge_by_merge(monkeypatch: pytest.MonkeyPatch, pairs: list[tuple[bytes, bytes]],
                                                      as_lists: bool, added_id: int | str | None, damage: str) -> None:
    vocab = [bytes([b]) for b in range(256)]
    for left, right in pairs:
        for token in (left, right, left + right):
            if token not in vocab:
                vocab.append(token)
    model_vocab: dict[str, object] = {bytes_to_string(t): i for i, t in enumerate(vocab)}
    merges: list[object] = [[bytes_to_string(a), bytes_to_string(b)] if as_lists else f"{bytes_to_string(a)} {bytes_to_string(b)}"
                            for a, b in pairs]
    added = []
    if added_id is not None:  # <|endoftext|> after the tokens, or on an id the model gives another token
        added = [{"id": len(vocab) if added_id == "new" else added_id, "content": "<|endoftext|>", "special": True}]
    if damage == "missing":
        merges.append(["Ā", "Ā"] if as_lists else "Ā Ā")  # bytes 0x00 0x00: a result not in the vocabulary
    elif damage == "twice":
        model_vocab["é"] = 5
    elif damage == "foreign":
        model_vocab["中"] = len(vocab) + 1
    elif damage == "empty":
        merges.append(["", "a"] if as_lists else " a")
    elif damage == "three":
        merges.append(["a", "b", "c"] if as_lists else "a b c")
    elif damage == "not text":
        merges.append([97, "a"] if as_lists else 97)
    elif damage == "mixed":
        merges.append("a b" if as_lists else ["a", "b"])
    elif damage == "bool id":
        model_vocab["Ā"] = True
    data = json.loads(hf_json.tokenizer_json_text({b: bytes([b]) for b in range(256)}, [], [], "gpt2"))  # (GPT-2's other keys)
    data["model"] |= {"vocab": model_vocab, "merges": merges}
    data["added_tokens"] = added
    read = _from_json(data, True, monkeypatch)
    assert read == _from_json(data, False, monkeypatch)
    if not damage and added_id != 0:
        assert read[1] == pairs  # type: ignore[index]


def test_many_tokens_at_once_are_each_token_alone() -> None:
    texts = ["Ġthe", "", "ĊĠ", "abc", "Ā" * 5, "ÿ"]
    assert strings_to_bytes(texts) == [string_to_bytes(t) for t in texts]
    assert strings_to_bytes(["ok", "a b"]) is None  # a space is no GPT-2 character


mapped_texts = st.lists(st.binary(max_size=12).map(bytes_to_string), max_size=20)
# a character outside the map somewhere: a space, Latin-1 GPT-2 leaves out, past U+0143, a surrogate, astral
outside = st.sampled_from([" ", "\xa0", "\xad", "\u0144", "\u01ff", "\u0200", "中", "\ud800", "\U0001f600"])


@settings(max_examples=200, deadline=None)
@given(mapped_texts, st.one_of(st.none(), st.tuples(outside, st.integers(0, 40))))
def test_many_tokens_at_once_in_c_equal_python(texts: list[str], bad: tuple[str, int] | None) -> None:
    """`strings_to_bytes` in C (``_reading.c``) and in Python give the same bytes, or both
    ``None`` for a character outside the map wherever it is."""
    if bad is not None and texts:
        char, at = bad
        k = at % len(texts)
        texts[k] = texts[k][: at % (len(texts[k]) + 1)] + char + texts[k][at % (len(texts[k]) + 1) :]
    with mock.patch.dict(os.environ, {"BPE_STUDIO_PURE_PYTHON": "1"}):
        in_python = strings_to_bytes(texts)
    with mock.patch.dict(os.environ, {"BPE_STUDIO_PURE_PYTHON": "0"}):
        assert strings_to_bytes(texts) == in_python
    assert in_python == (None if bad is not None and texts else [string_to_bytes(t) for t in texts])


def _spelled_char_by_char(text: str) -> bytes:
    """GPT-2 text to bytes one character at a time, through the map itself (`KeyError` names
    the first character outside it)."""
    table = unicode_to_bytes()
    return bytes(table[c] for c in text)


@functools.lru_cache(maxsize=1)
def _long_mapped_text(seed: int) -> str:
    """``4 * LONG_TEXT`` random characters of the byte map (one text per seed, kept while the
    tests that share it run)."""
    return "".join(random.Random(seed).choices(list(bytes_to_unicode().values()), k=4 * LONG_TEXT))


@pytest.mark.parametrize("outside", [None, " ", "中", "\U0001f600", "\ud800", "\udcff", "\x00", "\uffff"])
@pytest.mark.parametrize("where", [0, 1, LONG_TEXT - 1, 3 * LONG_TEXT + 5, -1])
def test_long_text_becomes_the_bytes_each_character_stands_for(outside: str | None, where: int,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Long text that is not all ASCII goes through a table over its UTF-16 units, a slice at
    a time (here slices of 4,099 characters, so there are many): every character becomes its
    byte, and the first one outside the map (a space, a character past U+FFFF whose two units
    are not mapped, a lone surrogate) is named, wherever it lies, in both directions."""
    monkeypatch.setattr(bytes_unicode, "_SLICE", 4099)
    text = _long_mapped_text(where)
    if outside is None:
        assert string_to_bytes(text) == _spelled_char_by_char(text)
        assert bytes_to_string(string_to_bytes(text)) == text
        assert strings_to_bytes([text[:7], text[7:]]) == [_spelled_char_by_char(text[:7]), _spelled_char_by_char(text[7:])]
        return
    text = text[:where] + outside + text[where:] if where >= 0 else text + outside
    with pytest.raises(KeyError) as raised:
        _spelled_char_by_char(text)
    with pytest.raises(KeyError) as got:
        string_to_bytes(text)
    assert got.value.args == raised.value.args == (outside,)
    assert strings_to_bytes([text]) is None


def test_every_byte_value_round_trips_in_long_tokens() -> None:
    data = bytes(range(256)) * (LONG_TEXT // 64)
    text = bytes_to_string(data)
    assert text == "".join(bytes_to_unicode()[b] for b in data)
    assert string_to_bytes(text) == data
