"""GPT-2's reversible map between the 256 byte values and 256 printable characters.

GPT-2's ``vocab.json`` and ``merges.txt`` store token bytes as text: each byte becomes one
visible character, so a token can be written without spaces, control characters or
invalid UTF-8. Printable Latin-1 bytes map to themselves; the other 68 bytes map to
U+0100 onwards in byte order, so ``b" "`` (0x20) becomes ``"Ġ"`` and ``b"\\n"`` becomes ``"Ċ"``:
``bytes_to_string(b" hi\\n") -> "ĠhiĊ"``.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from functools import lru_cache
from itertools import accumulate
from typing import Any

from core.pretokenize.native import python_forced

_native_texts_to_bytes: Callable[[list[str], str], list[bytes] | None] | None
try:
    from core.formats._reading import texts_to_bytes as _native_texts_to_bytes
except ImportError:  # built without a C compiler: the joined text mapped and cut, in Python
    _native_texts_to_bytes = None


@lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map from each byte value to its character, in GPT-2's order.

    The dict's insertion order is GPT-2's id order of the single bytes: ``"!"`` (0x21)
    first, ... ``"ÿ"``, then the 68 remapped bytes (0x00 -> ``"Ā"``, ... 0x20 -> ``"Ġ"``, ...).
    """
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(printable, chars)}


@lru_cache(maxsize=1)
def unicode_to_bytes() -> dict[str, int]:
    """The inverse of `bytes_to_unicode`: ``"Ġ" -> 0x20``."""
    return {c: b for b, c in bytes_to_unicode().items()}


@lru_cache(maxsize=1)
def _decoding_table() -> str:
    """`bytes_to_unicode` as a ``charmap`` decoding table: character ``b`` stands for byte ``b``."""
    table = bytes_to_unicode()
    return "".join(table[b] for b in range(256))


NOT_MAPPED = 0xFFFF
"""What `_to_bytes` and `_byte_of_char` turn a character outside GPT-2's map into: not
Latin-1 (and not a byte), so a character outside the map is found wherever it is."""


@lru_cache(maxsize=1)
def _to_bytes() -> dict[int, int]:
    """The inverse table, for ``str.translate``; the Latin-1 characters GPT-2 does not use
    (its 68 remapped bytes, the space among them) go to `NOT_MAPPED`."""
    table = dict.fromkeys(range(256), NOT_MAPPED)
    table.update({ord(c): b for b, c in bytes_to_unicode().items()})
    return table


LONG_TEXT = 1 << 16
"""Text of at least this many characters, not all ASCII, goes to bytes through `_byte_of_char`
(``str.translate`` looks up each such character in a dict)."""

_SLICE = 1 << 22
"""Characters converted at a time on that path, so its arrays stay a few MB."""


@lru_cache(maxsize=1)
def _byte_of_char() -> Any:
    """The inverse table as a ``uint16`` array over the UTF-16 code units: a byte, or `NOT_MAPPED`."""
    import numpy as np  # only for long text

    table = np.full(1 << 16, NOT_MAPPED, np.uint16)
    for b, c in bytes_to_unicode().items():
        table[ord(c)] = b
    return table


def bytes_to_string(token: bytes) -> str:
    """Token bytes as GPT-2 text: ``bytes_to_string(b" the") -> "Ġthe"``, at C speed
    (a single-byte ``charmap`` decoding)."""
    return codecs.charmap_decode(token, "strict", _decoding_table())[0]


def string_to_bytes(text: str) -> bytes:
    """GPT-2 text back to bytes: ``string_to_bytes("Ġthe") -> b" the"``.

    At C speed: ``str.translate`` for short or ASCII text, a table lookup over the text's
    UTF-16 code units for long text (a character outside the Basic Multilingual Plane is
    two units, neither of them mapped).

    Raises:
        KeyError: a character is not one of the 256 mapped characters (the key names it).
    """
    if len(text) < LONG_TEXT or text.isascii():
        return _translated(text)
    import numpy as np

    table = _byte_of_char()
    parts = []
    for start in range(0, len(text), _SLICE):
        piece = text[start : start + _SLICE]
        units = table[np.frombuffer(piece.encode("utf-16-le", "surrogatepass"), np.uint16)]
        if units.max() > 0xFF:  # a character outside the map: the plain path names it
            return _translated(text)
        parts.append(units.astype(np.uint8).tobytes())
    return b"".join(parts)


def _translated(text: str) -> bytes:
    try:
        return text.translate(_to_bytes()).encode("latin-1")
    except UnicodeEncodeError as e:
        raise KeyError(text[e.start]) from None


def strings_to_bytes(texts: list[str]) -> list[bytes] | None:
    """`string_to_bytes` of many tokens in one pass (a character is one byte, so the joined
    text's bytes are cut where each token ends): the 150,000 tokens of GPT-2's files in
    milliseconds, not a call each. ``None`` if a character is outside the map (the caller
    then goes token by token, to name it). In C where it is built (``_reading.c``)."""
    native = None if python_forced() else _native_texts_to_bytes
    if native is not None:
        return native(texts, _decoding_table())
    try:
        data = string_to_bytes("".join(texts))
    except KeyError:
        return None
    ends = list(accumulate(map(len, texts)))
    return list(map(data.__getitem__, map(slice, [0, *ends[:-1]], ends)))
