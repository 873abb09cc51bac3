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
import sys
from array import array

import regex

LETTER = 1
NUMBER = 2
SPACE = 4
CONTRACTION_LETTERS = "sdmtlvre"
CODE_POINTS = 0x110000


def all_code_points() -> str:
    """Every code point, surrogates included, in order: ``s[cp] == chr(cp)``.

    Decoded from UTF-32 made plane by plane (the 65,536 code points of plane 0 as
    integers, each plane p the same bytes with p as every third byte, set at once on a
    big integer): much faster than joining a million ``chr``, and without the long call
    holding the GIL that an ``array`` of the whole range takes.
    """
    plane_size = 1 << 16
    low = array("I", range(plane_size))
    if sys.byteorder != "little":
        low.byteswap()
    plane0 = int.from_bytes(low.tobytes(), "little")
    third_bytes = int.from_bytes(b"\x00\x00\x01\x00" * plane_size, "little")  # 1 in every third byte
    planes = [(plane0 | p * third_bytes).to_bytes(4 * plane_size, "little") for p in range(CODE_POINTS // plane_size)]
    return b"".join(planes).decode("utf-32-le", "surrogatepass")


def class_flags() -> bytes:
    """One flag byte per code point (see the module docstring), from `regex`.

    Each class is found as runs (``\\p{L}+``: a few thousand matches, not 140,000), laid
    into a layer of its bit, and the layers are OR-ed as integers of a million bytes. The
    searches let other threads run (``concurrent``): the first native scan in a process
    runs this, and in the window the GUI thread must not wait for it.
    """
    text = all_code_points()
    combined = 0
    for bit, prop in ((LETTER, r"\p{L}+"), (NUMBER, r"\p{N}+"), (SPACE, r"\s+")):
        layer = bytearray(CODE_POINTS)
        for m in regex.finditer(prop, text, concurrent=True):
            layer[m.start() : m.end()] = bytes([bit]) * (m.end() - m.start())
        combined |= int.from_bytes(layer, "little")
    flags = bytearray(combined.to_bytes(CODE_POINTS, "little"))
    for i, letter in enumerate(CONTRACTION_LETTERS):
        for m in regex.finditer(f"(?i:{letter})", text, concurrent=True):
            if flags[m.start()] >> 4:
                raise AssertionError(f"U+{m.start():04X} matches two contraction letters")
            flags[m.start()] |= (i + 1) << 4
    return bytes(flags)


def flags_digest(flags: bytes) -> str:
    """A short fingerprint of a flag table (the tables' header records it)."""
    return hashlib.sha256(flags).hexdigest()[:16]
