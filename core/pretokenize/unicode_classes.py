"""The Unicode classes the native pre-tokenizer needs, computed from the installed `regex` module.

The built-in GPT-2 and GPT-4 patterns look at only a few properties of a character:
``\\p{L}``, ``\\p{N}``, ``\\s`` (White_Space) and, for GPT-4's case-insensitive contractions
(``'(?i:[sdmt]|ll|ve|re)``), which of ``s d m t l v r e`` it matches ignoring case (``ſ``
U+017F matches ``s``). `class_flags` asks `regex` itself about every code point and packs
the answers into one byte each:

    bit 0: \\p{L}    bit 1: \\p{N}    bit 2: \\s    bits 4-7: 1 + "sdmtlvre".index(letter), or 0

``tools/gen_unicode_tables.py`` writes these bytes into ``_unicode_tables.h`` for the C
scanner; at run time `core.pretokenize.native` compares them again when the installed
`regex` is not the one the tables came from, and the tests compare every code point.
"""

from __future__ import annotations

import hashlib
from array import array

import regex

LETTER = 1
NUMBER = 2
SPACE = 4
CONTRACTION_LETTERS = "sdmtlvre"
CODE_POINTS = 0x110000


def all_code_points() -> str:
    """Every code point, surrogates included, in order: ``s[cp] == chr(cp)`` (decoded from
    UTF-32 at C speed: joining a million ``chr`` took 0.19 s)."""
    return array("I", range(CODE_POINTS)).tobytes().decode("utf-32-le", "surrogatepass")


def class_flags() -> bytes:
    """One flag byte per code point (see the module docstring), from `regex`; ~0.1 s.

    Each class is found as runs (``\\p{L}+``: a few thousand matches, not 140,000), laid
    into a layer of its bit, and the layers are OR-ed as integers of a million bytes.
    """
    text = all_code_points()
    combined = 0
    for bit, prop in ((LETTER, r"\p{L}+"), (NUMBER, r"\p{N}+"), (SPACE, r"\s+")):
        layer = bytearray(CODE_POINTS)
        for m in regex.finditer(prop, text):
            layer[m.start() : m.end()] = bytes([bit]) * (m.end() - m.start())
        combined |= int.from_bytes(layer, "little")
    flags = bytearray(combined.to_bytes(CODE_POINTS, "little"))
    for i, letter in enumerate(CONTRACTION_LETTERS):
        for m in regex.finditer(f"(?i:{letter})", text):
            if flags[m.start()] >> 4:
                raise AssertionError(f"U+{m.start():04X} matches two contraction letters")
            flags[m.start()] |= (i + 1) << 4
    return bytes(flags)


def flags_digest(flags: bytes) -> str:
    """A short fingerprint of a flag table (the tables' header records it)."""
    return hashlib.sha256(flags).hexdigest()[:16]
