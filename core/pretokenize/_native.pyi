"""Types of the native pre-tokenizer (``_native.c``), optional: `core.pretokenize.native` says when it is used."""

from collections.abc import Callable, Sequence

GPT2: int
GPT4: int
SUPERBPE: int

class Counts:
    """Pre-token bytes -> occurrences, counted by the native scanner."""

    invalid: int
    def __init__(self) -> None: ...
    def scan(
        self, data: bytes | bytearray | memoryview, pattern: int, start: int = 0, end: int = -1,
        specials: Sequence[bytes] = (),
    ) -> None:
        """Count the pre-tokens of ``data[start:end]`` (its end is the end of the text), cut at
        the ``specials`` (at most 16), which are not counted."""
    def packed(self) -> bytes:
        """The counts as one bytes object, for `add_packed` (in another process)."""
    def add_packed(self, packed: bytes) -> None:
        """Add counts given by `packed`."""
    def add(self, other: Counts) -> None:
        """Add another table's counts (in this process: no packing)."""
    def items(self) -> tuple[list[bytes], list[int]]:
        """The pre-tokens and their counts, in the order first seen."""
    def arrays(self) -> tuple[bytes, bytes]:
        """The pre-tokens' lengths and counts as int64 bytes, in the order of `items`."""
    def columns(self, other: Counts | None = None) -> tuple[bytes, bytes, bytes]:
        """``(keys, lengths, counts)``: every pre-token's bytes one after another, and the
        lengths and counts as int64 bytes, in the order of `items`; with ``other``, of the
        sum of the two (this table's pre-tokens first, then the other's new ones), neither
        changed."""
    def totals(self) -> tuple[int, int]:
        """``(sum of the counts, sum of each pre-token's length times its count)``, each at most 2**64 - 1."""
    def sort_slots(self) -> bytes:
        """The table's slots sorted by their pre-tokens' bytes (uint32 each), for `write_sorted`."""
    def sorted_size(self, slots: bytes, other: Counts | None = None, other_slots: bytes | None = None) -> tuple[int, int]:
        """``(distinct pre-tokens, their bytes)`` of this table (plus ``other``)."""
    def write_sorted(
        self, write: Callable[[bytes], object], section: int, slots: bytes, other: Counts | None = None,
        other_slots: bytes | None = None, block: int = ...,
    ) -> None:
        """Section ``section`` (0: counts, 1: lengths, 2: keys) of the packed layout of this
        table (plus ``other``), sorted by pre-token bytes, little-endian, to ``write`` in blocks."""
    def __len__(self) -> int: ...

def pretokenize(data: bytes, pattern: int) -> list[bytes]:
    """The pre-tokens of ``data``."""

def class_flags() -> bytes:
    """The tables' class flags of every code point (`core.pretokenize.unicode_classes`)."""

def tables_info() -> tuple[str, str]:
    """``(regex version, digest)`` of the tables."""
