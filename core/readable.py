"""Human-readable forms of token bytes: readable text, GPT-2's form, and hex. No Qt.

Byte-level tokens are raw bytes. Shown naively they become `Ġthe` / `Ã¡` gibberish, or
`�` for a token that holds only part of a character. This module turns them into text a
person can read, used by every table and pane of the application:

- ``readable(b" the\\n")`` -> ``"·the↵"``: the decoded text with whitespace made visible,
  control characters escaped and bytes that are not whole characters shown as hex chips,
  e.g. ``readable(b"\\xe2\\x80")`` -> ``"⟨E2 80⟩"``.
- ``gpt2_form(b" the")`` -> ``"Ġthe"``: GPT-2's bytes-to-unicode spelling (vocab.json keys).
- ``hex_form(b"\\xe2\\x80\\x99")`` -> ``"E2 80 99"``: the exact bytes.

The readable form is for display: it is not injective (a literal ``·`` in a token reads
like a space); the hex form is the exact one.

Visible symbols used by the readable form:

====================  =========================================================
space                 ``·`` (U+00B7 middle dot)
tab                   ``→`` (U+2192)
newline (LF)          ``↵`` (U+21B5)
carriage return (CR)  ``\\r`` (the escape: U+240D ␍ is missing from common fonts)
other controls        Python-style escapes: ``\\x00``, ``\\x1c``, ``\\x7f``, ``\\x85``
other whitespace and  ``⟨U+3000⟩``, ``⟨U+00A0⟩``, ``⟨U+2028⟩``, ``⟨U+200B⟩``: code point in
invisible formatting  a chip (no-break and ideographic spaces, line/paragraph
characters             separators, zero-width characters, byte-order mark, ...)
a combining mark that ``◌`` (U+25CC dotted circle) is put before it so it has a base
starts the token
bytes that are not    ``⟨E2 80⟩``: consecutive such bytes in one chip, upper-case hex
whole characters
====================  =========================================================
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache
from typing import Literal

import regex

from core.formats.bytes_unicode import bytes_to_unicode

# Kinds of the pieces returned by readable_parts (a renderer styles each kind).
PartKind = Literal["text", "space", "control", "unicode", "bytes"]

_VISIBLE_WHITESPACE = {" ": "·", "\t": "→", "\n": "↵", "\r": "\\r"}
_CHIP_OPEN, _CHIP_CLOSE = "⟨", "⟩"
_DOTTED_CIRCLE = "◌"

# Fast path of `readable`: ASCII whitespace and controls by one str.translate, once a
# search proved there is nothing else to treat (C1 controls, Unicode spaces and
# separators, invisible format characters, a leading combining mark).
_ASCII_TABLE = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F]}
_ASCII_TABLE.update({ord(k): v for k, v in _VISIBLE_WHITESPACE.items()})
_NEEDS_SLOW_PATH = regex.compile(r"(?! )[\x80-\x9f\p{Cf}\p{Z}]|^\p{M}")


def gpt2_form(token: bytes) -> str:
    """GPT-2's printable spelling of ``token``, as used in vocab.json and merges.txt.

    Example: ``gpt2_form(b" the")`` -> ``"Ġthe"``; ``gpt2_form(b"\\xc3\\xa1")`` -> ``"Ã¡"``.
    """
    return token.decode("latin-1").translate(_gpt2_table())


@lru_cache(maxsize=1)
def _gpt2_table() -> dict[int, str]:
    # Latin-1 decodes byte b to code point b, so one str.translate applies the map.
    return {b: ch for b, ch in bytes_to_unicode().items() if chr(b) != ch}


def hex_form(token: bytes) -> str:
    """The bytes of ``token`` as upper-case hex pairs: ``b"\\xe2\\x80\\x99"`` -> ``"E2 80 99"``."""
    return token.hex(" ").upper()


def _char_part(ch: str, first: bool) -> list[tuple[PartKind, str]]:
    """The display pieces of one decoded character (see the module table)."""
    visible = _VISIBLE_WHITESPACE.get(ch)
    if visible is not None:
        return [("space", visible)]
    cat = unicodedata.category(ch)
    code = ord(ch)
    if cat == "Cc":
        return [("control", f"\\x{code:02x}")]
    if cat in ("Zs", "Zl", "Zp", "Cf"):
        return [("unicode", f"{_CHIP_OPEN}U+{code:04X}{_CHIP_CLOSE}")]
    if first and cat in ("Mn", "Mc", "Me"):
        return [("text", _DOTTED_CIRCLE + ch)]
    return [("text", ch)]


def readable_parts(token: bytes) -> list[tuple[PartKind, str]]:
    """``token`` cut into display pieces ``(kind, text)``; joined they give `readable`.

    Kinds: ``"text"`` (ordinary characters, merged into one piece per run), ``"space"``
    (a visible whitespace symbol), ``"control"`` (an escape such as ``\\x00``),
    ``"unicode"`` (a code-point chip for invisible characters), ``"bytes"`` (a hex chip
    for bytes that are not whole characters).

    Example: ``readable_parts(b"a b\\xe2")`` ->
    ``[("text", "a"), ("space", "·"), ("text", "b"), ("bytes", "⟨E2⟩")]``.
    """
    # surrogateescape turns each byte that is not part of a valid UTF-8 character into a
    # lone surrogate U+DC80..U+DCFF, so invalid and partial sequences survive decoding
    # byte-exact and can be told apart from real characters.
    text = token.decode("utf-8", errors="surrogateescape")
    parts: list[tuple[PartKind, str]] = []
    pending: list[int] = []  # invalid bytes waiting to be emitted as one chip

    def flush_bytes() -> None:
        if pending:
            chip = " ".join(f"{b:02X}" for b in pending)
            parts.append(("bytes", f"{_CHIP_OPEN}{chip}{_CHIP_CLOSE}"))
            pending.clear()

    for i, ch in enumerate(text):
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            pending.append(code - 0xDC00)
            continue
        flush_bytes()
        for kind, piece in _char_part(ch, first=(i == 0)):
            if kind == "text" and parts and parts[-1][0] == "text":
                parts[-1] = ("text", parts[-1][1] + piece)
            else:
                parts.append((kind, piece))
    flush_bytes()
    return parts


def readable(token: bytes) -> str:
    """The decoded text of ``token`` with whitespace, controls and stray bytes visible.

    Examples: ``readable(b" the")`` -> ``"·the"``; ``readable(b"\\t\\n")`` -> ``"→↵"``;
    ``readable(b"\\x00")`` -> ``"\\x00"``; ``readable(b"\\xe2\\x80")`` -> ``"⟨E2 80⟩"``;
    ``readable("\\u3000".encode())`` -> ``"⟨U+3000⟩"``.
    """
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        if not _NEEDS_SLOW_PATH.search(text):
            return text.translate(_ASCII_TABLE)  # fast path: most tokens of a large vocabulary
    return "".join(piece for _, piece in readable_parts(token))


def readable_text(text: str) -> str:
    """`readable` for a str (e.g. a special token or a slice of the inspected text)."""
    return readable(text.encode("utf-8", errors="surrogateescape"))
