"""The vocabulary as columns of numpy arrays and string lists, filtered and sorted fast. No Qt.

The vocabulary browser shows every token of a 50k-200k vocabulary and filters and sorts
as the user types. A Qt proxy model took seconds per keystroke at that size, so the work
happens here instead: each column is precomputed once (numbers as numpy arrays, strings
as Python lists plus an integer "sort rank" array), a filter is one C-speed pass over a
list of strings, and a sort is a numpy argsort over integers restricted to the rows that
passed the filter. `VocabTableModel` (Qt) only reads ``view`` and the columns.

Example::

    data = VocabData.from_tokenizer(tok)
    data.set_filter("the", scope="readable")   # -> None, or an error message
    data.sort(COL_LENGTH, descending=True)
    data.view[:3]                              # row indices (== positions in data.ids)

``spans_spaces`` marks the tokens that cross a word boundary (a space after a byte that
is not whitespace: ``b"of the"``, ``b" in order"``, what SuperBPE learns); ``only_spanning = True`` keeps
just those from the next `set_filter` on.

Trained on named sources (``origins``: each merged token's pair counts per source), ``mostly``
marks the sources holding the largest share of the merge that made each token, and
``only_source = k`` keeps the tokens mostly from source ``k`` (a tie: from each tied source).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import regex

from bpe_studio.app.models.provenance import SourceOrigins, mostly_from
from core.readable import gpt2_form, hex_form, readable

Scope = Literal["readable", "gpt2", "hex"]

COL_ID, COL_READABLE, COL_GPT2, COL_HEX, COL_LENGTH, COL_RANK, COL_PARTS, COL_COUNT = range(8)
COLUMN_TITLES = ("Id", "Readable", "GPT-2 form", "Hex", "Length", "Merge rank", "Parts", "Count")
_NUMERIC = {COL_ID, COL_LENGTH, COL_RANK, COL_COUNT}
_SPANS_SPACES = regex.compile(rb"\S ")
"""A space after a byte that is not whitespace: the token crosses a word boundary
(``b"of the"``, ``b"the "``; not ``b" the"`` nor ``b"\\n  "``)."""


def _string_ranks(strings: Sequence[Any]) -> np.ndarray:
    """The position of each distinct string in sorted order (equal strings, equal ranks),
    so that sorting rows by these integers is sorting them by the strings.

    Python's sort, not numpy's: a numpy unicode array is as wide as the longest string
    (GPT-2 has 128-byte tokens), which made this far slower.
    """
    order = sorted(range(len(strings)), key=strings.__getitem__)
    ranks = [0] * len(strings)
    rank, previous = -1, None
    for i in order:
        value = strings[i]
        if value != previous or rank < 0:
            rank += 1
            previous = value
        ranks[i] = rank
    return np.array(ranks, dtype=np.int64)


class VocabData:
    """Every token of a vocabulary with the columns the browser shows.

    Rows are the tokens in id order; ``view`` is the current filtered and sorted list of
    row indices. Missing numbers (rank of a byte or special token, an unknown count) are
    -1 in the arrays and shown empty.
    """

    def __init__(
        self,
        vocab: Mapping[int, bytes],
        merges: Sequence[tuple[bytes, bytes]],
        special_tokens: Sequence[str] = (),
        merge_counts: Mapping[int, int] | None = None,
        origins: SourceOrigins | None = None,
    ) -> None:
        ids = sorted(vocab)
        self.ids = np.array(ids, dtype=np.int64)
        self.token_bytes: list[bytes] = [vocab[i] for i in ids]
        self.row_of_id: dict[int, int] = {tid: row for row, tid in enumerate(ids)}
        specials = {s.encode("utf-8") for s in special_tokens}
        self.is_special = np.array([b in specials for b in self.token_bytes], dtype=bool)

        id_of_bytes: dict[bytes, int] = {}
        for tid, tok in zip(ids, self.token_bytes):
            id_of_bytes.setdefault(tok, tid)
        n = len(ids)
        self.ranks = np.full(n, -1, dtype=np.int64)
        # (left id, right id) of the merge that made each token; -1 when not a merge.
        self.left = np.full(n, -1, dtype=np.int64)
        self.right = np.full(n, -1, dtype=np.int64)
        for rank, (a, b) in enumerate(merges):
            tid = id_of_bytes.get(a + b)
            if tid is None:
                continue
            row = self.row_of_id[tid]
            if self.ranks[row] >= 0:
                continue  # a merge repeating an earlier result: the first one made it
            self.ranks[row] = rank
            self.left[row] = id_of_bytes.get(a, -1)
            self.right[row] = id_of_bytes.get(b, -1)
        self.counts = np.full(n, -1, dtype=np.int64)
        for tid, count in (merge_counts or {}).items():
            row = self.row_of_id.get(tid)
            if row is not None:
                self.counts[row] = count
        self.source_names: tuple[str, ...] = origins.names if origins is not None else ()
        self.source_counts = np.zeros((n, len(self.source_names)), dtype=np.int64)
        """Each token's pair count per source at the merge that made it (zeros: not a merge)."""
        for tid, shares in (origins.counts_by_id.items() if origins is not None else ()):
            at = self.row_of_id.get(tid)
            if at is not None and len(shares) == len(self.source_names):
                self.source_counts[at] = shares
        self.mostly = mostly_from(self.source_counts)
        self.only_source: int | None = None
        """Keep only the tokens mostly from this source (its index in ``source_names``; `set_filter` applies it)."""
        self.lengths = np.array([len(b) for b in self.token_bytes], dtype=np.int64)
        self.spans_spaces = np.fromiter(map(bool, map(_SPANS_SPACES.search, self.token_bytes)), dtype=bool, count=n)
        self.only_spanning = False
        """Keep only the tokens that span spaces (`set_filter` applies it)."""

        self.readable = [readable(b) for b in self.token_bytes]
        self.gpt2 = [gpt2_form(b) for b in self.token_bytes]
        self.hex = [hex_form(b) for b in self.token_bytes]
        readable_of_id = {tid: s for tid, s in zip(ids, self.readable)}
        self.parts = [
            f"{readable_of_id.get(int(le), '?')} + {readable_of_id.get(int(ri), '?')}"
            if rank >= 0
            else ("special" if special else ("byte" if length == 1 else ""))
            for le, ri, rank, special, length in zip(
                self.left, self.right, self.ranks, self.is_special, self.lengths
            )
        ]
        # What a user types: a real space, tab or "\s" (the readable form shows "·", "→").
        self.text = [b.decode("utf-8", errors="replace") for b in self.token_bytes]
        self._text_lower = [s.lower() for s in self.text]
        self._lower = {
            "readable": [s.lower() for s in self.readable],
            "gpt2": [s.lower() for s in self.gpt2],
            "hex": [s.lower() for s in self.hex],
        }
        self._sort_keys: dict[int, np.ndarray] = {
            COL_ID: self.ids,
            COL_LENGTH: self.lengths,
            COL_RANK: self.ranks,
            COL_COUNT: self.counts,
            COL_READABLE: _string_ranks(self.readable),
            COL_GPT2: _string_ranks(self.gpt2),
            COL_HEX: _string_ranks(self.token_bytes),  # hex order is byte order
            COL_PARTS: _string_ranks(self.parts),
        }
        self._filtered = np.arange(n, dtype=np.int64)
        self.allowed: np.ndarray | None = None
        """Rows a health filter keeps (bool per row), or None: every row; `set_filter` applies it."""
        self.sort_column = COL_ID
        self.descending = False
        self.view = self._filtered

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, merge_counts: Mapping[int, int] | None = None,
                       origins: SourceOrigins | None = None) -> VocabData:
        """Build from a ``core.Tokenizer`` (its vocab, merges and special tokens)."""
        specials = getattr(tokenizer, "special_tokens", None) or ()
        if isinstance(specials, Mapping):
            specials = list(specials)
        return cls(tokenizer.vocab, tokenizer.merges, specials, merge_counts, origins)

    def __len__(self) -> int:
        return len(self.token_bytes)

    def cell_text(self, row: int, column: int) -> str:
        """The text shown in one cell (row = index into the columns, not into view)."""
        if column == COL_ID:
            return str(int(self.ids[row]))
        if column == COL_READABLE:
            return self.readable[row]
        if column == COL_GPT2:
            return self.gpt2[row]
        if column == COL_HEX:
            return self.hex[row]
        if column == COL_LENGTH:
            return str(int(self.lengths[row]))
        if column == COL_PARTS:
            return self.parts[row]
        value = int(self.ranks[row] if column == COL_RANK else self.counts[row])
        return "" if value < 0 else f"{value:,}"

    def set_filter(
        self,
        text: str,
        *,
        use_regex: bool = False,
        scope: Scope = "readable",
        case_sensitive: bool = False,
    ) -> str | None:
        """Keep the rows whose ``scope`` column contains ``text`` (or matches it as a regex).

        In the readable scope the token's own text is searched too, so what a user types
        finds it: " the" as well as "·the", and the regex ``\\s`` a token with a space.

        Returns None on success, or a message for an invalid regex (the previous filter
        then stays in force). An empty ``text`` keeps every row.
        """
        if scope not in self._lower:
            raise ValueError(f"unknown filter scope {scope!r}; use readable, gpt2 or hex")
        if scope == "hex":
            case_sensitive = False  # hex digits have no meaningful case
        strings = {"readable": self.readable, "gpt2": self.gpt2, "hex": self.hex}[scope]
        n = len(strings)
        if not text:
            keep = np.arange(n, dtype=np.int64)
        elif use_regex:
            try:
                pattern = regex.compile(text, 0 if case_sensitive else regex.IGNORECASE)
            except (regex.error, ValueError, OverflowError) as e:
                return f"Invalid regular expression: {e}"
            hits = np.fromiter(map(bool, map(pattern.search, strings)), dtype=bool, count=n)
            if scope == "readable":  # "\s" or " the" match the token's own text too
                hits |= np.fromiter(map(bool, map(pattern.search, self.text)), dtype=bool, count=n)
            keep = np.flatnonzero(hits)
        else:
            if scope == "hex" and " " not in text:
                # "e280" finds the bytes E2 80 just as "E2 80" does.
                text = " ".join(text[i : i + 2] for i in range(0, len(text), 2))
            haystack = strings if case_sensitive else self._lower[scope]
            needle = text if case_sensitive else text.lower()
            hits = np.fromiter(
                map(str.__contains__, haystack, [needle] * n), dtype=bool, count=n
            )
            if scope == "readable":
                # A typed space (or tab) finds "·the": search the tokens' own text as well.
                raw = self.text if case_sensitive else self._text_lower
                hits |= np.fromiter(map(str.__contains__, raw, [needle] * n), dtype=bool, count=n)
            keep = np.flatnonzero(hits)
        if self.allowed is not None:
            keep = keep[self.allowed[keep]]
        if self.only_spanning:
            keep = keep[self.spans_spaces[keep]]
        if self.only_source is not None and 0 <= self.only_source < len(self.source_names):
            keep = keep[self.mostly[keep, self.only_source]]
        self._filtered = keep
        self._apply_sort()
        return None

    def allow_ids(self, ids: Sequence[int] | None) -> None:
        """Keep only the tokens ``ids`` (None: all) from the next `set_filter` on."""
        if ids is None:
            self.allowed = None
            return
        allowed = np.zeros(len(self.token_bytes), dtype=bool)
        rows = [self.row_of_id[i] for i in ids if i in self.row_of_id]
        allowed[np.array(rows, dtype=np.int64)] = True
        self.allowed = allowed

    def sort(self, column: int, *, descending: bool = False) -> None:
        """Order the filtered rows by ``column`` (ties keep id order)."""
        if column not in self._sort_keys:
            raise ValueError(f"unknown column {column}")
        self.sort_column = column
        self.descending = descending
        self._apply_sort()

    def _apply_sort(self) -> None:
        rows = self._filtered
        key = self._sort_keys[self.sort_column][rows]
        if self.descending:
            # Negate rather than reverse so that ties still come in ascending id order.
            order = np.argsort(-key, kind="stable")
        else:
            order = np.argsort(key, kind="stable")
        self.view = rows[order]

    def children(self, token_id: int) -> tuple[int, int] | None:
        """The (left id, right id) of the merge that made ``token_id``, or None."""
        row = self.row_of_id.get(token_id)
        if row is None or self.ranks[row] < 0 or self.left[row] < 0 or self.right[row] < 0:
            return None
        return int(self.left[row]), int(self.right[row])
