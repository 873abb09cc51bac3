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

import regex

LETTER = 1
NUMBER = 2
SPACE = 4
CONTRACTION_LETTERS = "sdmtlvre"
CODE_POINTS = 0x110000


def all_code_points() -> str:
    """Every code point, surrogates included, in order: ``s[cp] == chr(cp)``."""
    return "".join(map(chr, range(CODE_POINTS)))


def class_flags() -> bytes:
    """One flag byte per code point (see the module docstring), from `regex`; ~0.5 s."""
    text = all_code_points()
    flags = bytearray(CODE_POINTS)
    for bit, prop in ((LETTER, r"\p{L}"), (NUMBER, r"\p{N}"), (SPACE, r"\s")):
        for m in regex.finditer(prop, text):
            flags[m.start()] |= bit
    for i, letter in enumerate(CONTRACTION_LETTERS):
        for m in regex.finditer(f"(?i:{letter})", text):
            if flags[m.start()] >> 4:
                raise AssertionError(f"U+{m.start():04X} matches two contraction letters")
            flags[m.start()] |= (i + 1) << 4
    return bytes(flags)


def flags_digest(flags: bytes) -> str:
    """A short fingerprint of a flag table (the tables' header records it)."""
    return hashlib.sha256(flags).hexdigest()[:16]
