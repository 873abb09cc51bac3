"""Readable, GPT-2 and hex forms of token bytes (core.readable; no Qt needed)."""

from __future__ import annotations

import unicodedata

import pytest
import regex
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from core.readable import (
    bytes_to_unicode,
    gpt2_form,
    hex_form,
    readable,
    readable_parts,
    readable_text,
)


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        (b"hello", "hello"),
        (b" the", "·the"),
        (b"   ", "···"),
        (b"\t", "→"),
        (b"\n\n", "↵↵"),
        (b"\r\n", "\\r↵"),
        (b"\x00", "\\x00"),
        (b"\x1c", "\\x1c"),
        (b"\x7f", "\\x7f"),
        ("\x85".encode(), "\\x85"),
        (b"\x0b\x0c", "\\x0b\\x0c"),
        (b"\xe2\x80", "⟨E2 80⟩"),
        (b"\xff", "⟨FF⟩"),
        (b"a\xe2\x80b\xff", "a⟨E2 80⟩b⟨FF⟩"),
        (b"\x80\x99 x", "⟨80 99⟩·x"),
        ("\u3000".encode(), "⟨U+3000⟩"),
        ("\xa0".encode(), "⟨U+00A0⟩"),
        ("\u2028\u2029".encode(), "⟨U+2028⟩⟨U+2029⟩"),
        ("\u200b\ufeff".encode(), "⟨U+200B⟩⟨U+FEFF⟩"),
        ("é".encode(), "é"),
        ("e\u0301".encode(), "e\u0301"),
        ("\u0301".encode(), "◌\u0301"),
        ("日本".encode(), "日本"),
        ("😀".encode(), "😀"),
        ("😀".encode()[:2], "⟨F0 9F⟩"),
        ("😀".encode()[2:], "⟨98 80⟩"),
        # An encoded surrogate is not valid UTF-8: three stray bytes, not a character.
        (b"\xed\xa0\x80", "⟨ED A0 80⟩"),
        (b"", ""),
    ],
)
def test_readable_examples(token: bytes, expected: str) -> None:
    assert readable(token) == expected


def test_readable_parts_kinds() -> None:
    parts = readable_parts(b"ab c\x00\xe2\x80" + "\u3000".encode())
    assert parts == [
        ("text", "ab"),
        ("space", "·"),
        ("text", "c"),
        ("control", "\\x00"),
        ("bytes", "⟨E2 80⟩"),
        ("unicode", "⟨U+3000⟩"),
    ]


def test_readable_text_matches_bytes_form() -> None:
    assert readable_text("<|endoftext|> a\n") == "<|endoftext|>·a↵"


_INVISIBLE = {"Cc", "Cf", "Cs", "Zs", "Zl", "Zp"}


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=24))
def test_readable_never_shows_invisible_or_replacement_chars(token: bytes) -> None:
    shown = readable(token)
    # Chips ("⟨E2 80⟩") separate their hex pairs with ordinary spaces; look outside them.
    outside = regex.sub(r"⟨[^⟩]*⟩", "", shown)
    for ch in outside:
        assert unicodedata.category(ch) not in _INVISIBLE, (token, shown)
    assert "\ufffd" not in shown


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=24))
def test_readable_chips_hold_exactly_the_invalid_bytes(token: bytes) -> None:
    # Independent truth: Python's decoder with errors="replace" marks the invalid bytes.
    chips = [p for k, p in readable_parts(token) if k == "bytes"]
    chip_bytes = bytes.fromhex(" ".join(c[1:-1] for c in chips))
    strict_ok = b""
    for ch in token.decode("utf-8", errors="ignore"):
        strict_ok += ch.encode("utf-8")
    assert len(chip_bytes) + len(strict_ok) == len(token)
    # The chip bytes appear in the token in order (a subsequence).
    it = iter(token)
    assert all(b in it for b in chip_bytes)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(categories=["L", "N", "P", "S"]), max_size=20))
def test_readable_is_identity_on_visible_text(text: str) -> None:
    assume(not text or unicodedata.category(text[0]) not in ("Mn", "Mc", "Me"))
    assert readable(text.encode("utf-8")) == text


def test_hex_form() -> None:
    assert hex_form(b"\xe2\x80\x99") == "E2 80 99"
    assert hex_form(b"") == ""
    assert hex_form(b"a") == "61"


@given(st.binary(max_size=32))
def test_hex_form_round_trips(token: bytes) -> None:
    assert bytes.fromhex(hex_form(token)) == token


def test_gpt2_form_examples() -> None:
    assert gpt2_form(b" the") == "Ġthe"
    assert gpt2_form("á".encode()) == "Ã¡"
    assert gpt2_form(b"\n") == "Ċ"
    assert gpt2_form(b"\t") == "ĉ"


def test_bytes_to_unicode_matches_hugging_face_alphabet() -> None:
    from tokenizers import pre_tokenizers

    table = bytes_to_unicode()
    assert len(set(table.values())) == 256
    assert set(table.values()) == set(pre_tokenizers.ByteLevel.alphabet())


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20))
def test_gpt2_form_matches_hugging_face_byte_level(text: str) -> None:
    from tokenizers import pre_tokenizers

    pre = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    expected = "".join(piece for piece, _ in pre.pre_tokenize_str(text))
    assert gpt2_form(text.encode("utf-8")) == expected


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.binary(max_size=16), st.text(max_size=16).map(str.encode)))
def test_readable_fast_path_agrees_with_parts(token: bytes) -> None:
    assert readable(token) == "".join(piece for _, piece in readable_parts(token))
