"""Pre-token counts as a first-class object: count once (here or on a cluster), add, save, train.

BPE training splits in two: counting pre-tokens (reads every byte, parallel) and merging
(needs only the table of distinct pre-tokens). `PretokenCounts` is that table — a
``Mapping[bytes, int]`` — with what it was counted with (pattern, special tokens,
documents, input and invalid bytes):

    a = core.count_pretokens("shard-1.jsonl", ["<|endoftext|>"])
    b = core.count_pretokens("shard-2.jsonl", ["<|endoftext|>"])
    (a + b).save("counts.bpc")
    counts = core.PretokenCounts.load("counts.bpc")
    core.train(counts, core.TrainOptions(32_000, counts.special_tokens)).result()

Counting a corpus into one: `core.corpus.count_run`. The file format: `core.corpus.bpc_file`.
"""

from __future__ import annotations

import contextlib
import operator
import os
import threading
from collections.abc import Callable, ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, ClassVar

from core.corpus import bpc_file
from core.corpus.counts_checks import sum_of_columns, table_of_pairs, too_large
from core.corpus.sources import ReadOptions
from core.errors import FormatError, OptionsError, OptionsTypeError
from core.pretokenize.counting import ChunkCounts, CountTable, chunk_totals
from core.pretokenize.native import native_module
from core.pretokenize.patterns import resolve_pattern
from core.pretokenize.specials import validate_special_tokens

if TYPE_CHECKING:
    import numpy as np

__all__ = ["PretokenCounts"]


class PretokenCounts(Mapping[bytes, int]):
    """Pre-token bytes -> occurrences (a read-only ``Mapping``), with what they were counted with.

    ``len``, ``[]``, ``in``, iteration, ``items()`` (pairs), ``dict(counts)`` and ``==``
    work as on a dict; `columns`, `lengths_and_counts` and `packed_words` give the whole
    table at once, without a Python object per pre-token where they can (training uses them).

    Attributes:
        pattern: the pre-tokenization regex (its source text; `resolve_pattern` takes it).
        special_tokens: the special tokens that split the text (not counted).
        read: how the corpus was read (`ReadOptions`: field, sample + seed, caps), or
            ``None`` when not known (counts from pairs, or added from differently read parts).
        documents: documents counted; input_bytes: bytes of input read; invalid_bytes:
            bytes that were not valid UTF-8 (kept byte-exact).

    ``a + b`` adds two tables counted with the same pattern and special tokens (in any
    order, the same table); anything else is refused with a ``ValueError``, as is a sum
    whose pre-tokens would add up to more than 2**63 - 1 bytes (what training and the file
    count in). Two counts are equal when their tables and what they were counted with are;
    a counts and a plain mapping, when their tables are.

    Any number of threads may read one counts at once (each lazy form is made once, under
    a lock).
    """

    # a file of named sources' counts is read by `core.corpus.named_counts` (which sits above), set there
    _read_named: ClassVar[Callable[[list[ChunkCounts], dict[str, Any], str], PretokenCounts] | None] = None

    def __init__(
        self,
        chunk: ChunkCounts | None = None,
        *,
        pattern: str = "gpt2",
        special_tokens: Iterable[str] = (),
        documents: int = 0,
        input_bytes: int = 0,
        read: ReadOptions | None = None,
    ) -> None:
        self.pattern = resolve_pattern(pattern).source
        self.read = read
        self.special_tokens = tuple(validate_special_tokens(special_tokens))
        self.documents = documents
        self.input_bytes = input_bytes
        # at least one of three: the compact form (to add, to ship), the table counting made
        # (to train from without an object per pre-token), or the lists
        self._chunk: ChunkCounts | None = chunk if chunk is not None else ChunkCounts(None, {}, 0)
        self._table: CountTable | None = None
        self._columns: tuple[list[bytes], list[int]] | None = None
        self._arrays: tuple[bytes, bytes] | None = None  # lengths and counts of _columns, when made in C
        self._dict: dict[bytes, int] | None = None  # for lookups, made on the first one
        self._lock = threading.RLock()  # around every change of form (and every use of the native table)
        self._distinct: int | None = None  # len, once known without making the lists
        self.invalid_bytes = self._chunk.invalid

    @classmethod
    def from_table(cls, table: CountTable, **meta: Any) -> PretokenCounts:
        """Counts from the accumulator training adds chunks into (kept until the lists are
        made: `packed_words` reads it)."""
        counts = cls(**meta)
        counts._chunk = None
        counts._table = table
        counts.invalid_bytes = table.invalid
        return counts

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (e.g. for a Dask worker): the compact form or the lists, not the native table."""
        with self._lock:
            if self._table is not None:
                self.chunk()
            return {**self.__dict__, "_table": None, "_dict": None, "_lock": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def chunk(self) -> ChunkCounts:
        """The counts in the compact form workers send (packed where the native counter is built)."""
        with self._lock:
            if self._chunk is None and self._table is not None:
                self._chunk = self._table.chunk()
            if self._chunk is None:
                words, counts = self.columns()
                if native_module() is not None:
                    self._chunk = ChunkCounts(bpc_file.pack(words, counts, self.invalid_bytes, "native"), None,
                                              self.invalid_bytes)
                else:
                    self._chunk = ChunkCounts(None, dict(zip(words, counts)), self.invalid_bytes)
            return self._chunk

    @classmethod
    def from_pairs(
        cls,
        pairs: Iterable[tuple[bytes | str, int]] | Mapping[bytes | str, int],
        *,
        pattern: str = "gpt2",
        special_tokens: Iterable[str] = (),
        documents: int = 0,
        input_bytes: int = 0,
        invalid_bytes: int = 0,
    ) -> PretokenCounts:
        """Counts from any engine's ``(pre-token, count)`` output (a str pre-token is
        UTF-8 encoded with ``surrogateescape``); repeated pre-tokens add up. A count may be
        any integer type (``int``, a numpy integer), not a bool.

        Raises:
            TypeError: a pre-token that is not bytes or str, a count that is not an integer.
            ValueError: an empty pre-token, a str that is not UTF-8 text (a lone surrogate
                such as ``"\\ud800"``: give such a pre-token as bytes), a count below 1, or
                counts adding up to more bytes than training counts in (2**63).
            Each message names the pair (its place in ``pairs``).
        """
        table = table_of_pairs(pairs)
        return cls(ChunkCounts(None, table, invalid_bytes), pattern=pattern, special_tokens=special_tokens,
                   documents=documents, input_bytes=input_bytes)

    # -- the whole table at once ---------------------------------------------------------------

    def columns(self) -> tuple[list[bytes], list[int]]:
        """``(pre-tokens, counts)``, every distinct pre-token once (in no set order)."""
        columns = self._columns
        if columns is not None:
            return columns
        with self._lock:
            if self._columns is None:
                table = self._table
                if table is None:
                    table = CountTable()
                    table.add(self.chunk())
                self._arrays = table.arrays()
                self._columns = table.items()
                self._table = None  # the lists stand for it now (and take the memory)
            return self._columns

    def lengths_and_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """The length and count of each pre-token, in the order of `columns` (and of
        `packed_words`), as int64 arrays: from a native table, made in C (no object per
        pre-token, half a second less on 7.5 million of them)."""
        import numpy as np  # only here: counting alone does not load numpy

        with self._lock:
            arrays = self._table.arrays() if self._table is not None else None
            if arrays is None:
                words, counts = self.columns()
                arrays = self._arrays
                if arrays is None:
                    return np.fromiter(map(len, words), np.int64, len(words)), np.array(counts, dtype=np.int64)
        return np.frombuffer(arrays[0], np.int64), np.frombuffer(arrays[1], np.int64)

    def packed_words(self) -> tuple[bytes, bytes, bytes] | None:
        """``(every pre-token's bytes one after another, lengths, counts)``, the last two as
        int64 bytes, in the order of `columns`: while the native table counting made is
        still here (`columns` not called yet), else None. The merge kernel reads them as
        they are (`core.training.merge.PackedWords`): no Python object per pre-token."""
        with self._lock:
            return self._table.packed_words() if self._table is not None else None

    def as_dict(self) -> dict[bytes, int]:
        """A plain dict of the counts (a copy)."""
        return dict(self._mapping())

    @property
    def total(self) -> int:
        """Pre-tokens counted (special tokens not included)."""
        return self._totals()[0]

    @property
    def total_bytes(self) -> int:
        """Bytes of the pre-tokens counted: each one's length times its count (the text
        counted, special tokens not included)."""
        return self._totals()[1]

    def _totals(self) -> tuple[int, int]:
        """``(pre-tokens counted, their bytes: each length times its count)``, exact, with no
        object per pre-token where the counts are native."""
        with self._lock:
            if self._columns is None and self._table is not None:
                totals = self._table.totals()
                if totals is not None:
                    return totals
            if self._columns is None and self._table is None and self._chunk is not None:
                return chunk_totals(self._chunk)
            words, counts = self.columns()
            return sum(counts), sum(map(operator.mul, map(len, words), counts))

    def _check_fits(self, corpus_bytes: int) -> None:
        """Refuse counts whose pre-tokens add up past what training and the file count in
        (2**63 - 1 bytes), naming the pre-token that weighs most."""
        if corpus_bytes > bpc_file.MAX_CORPUS_BYTES:
            raise too_large("these pre-token counts add up", zip(*self.columns()))

    # -- the Mapping ------------------------------------------------------------------------------

    def _mapping(self) -> dict[bytes, int]:
        mapping = self._dict
        if mapping is None:
            with self._lock:
                if self._dict is None:
                    self._dict = dict(zip(*self.columns()))
                mapping = self._dict
        return mapping

    def __getitem__(self, token: bytes) -> int:
        return self._mapping()[token]

    def __contains__(self, token: object) -> bool:
        return token in self._mapping()

    def __len__(self) -> int:
        with self._lock:
            if self._distinct is not None:
                return self._distinct
            if self._columns is None and self._table is not None:
                arrays = self._table.arrays()  # counted in C: no lists made (packed_words stays)
                if arrays is not None:
                    return len(arrays[0]) // 8
            return len(self.columns()[0])

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.columns()[0])

    def keys(self) -> KeysView[bytes]:
        return self._mapping().keys()

    def values(self) -> ValuesView[int]:
        return self._mapping().values()

    def items(self) -> ItemsView[bytes, int]:
        """``(pre-token, count)`` pairs, as a dict's ``items()``."""
        return self._mapping().items()

    def _meta(self) -> tuple[str, frozenset[str], int, int, int]:
        return (self.pattern, frozenset(self.special_tokens), self.documents, self.input_bytes, self.invalid_bytes)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PretokenCounts):
            return self._meta() == other._meta() and self._mapping() == other._mapping()
        if isinstance(other, Mapping):
            return self._mapping() == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        name = resolve_pattern(self.pattern).name
        return (f"PretokenCounts({len(self):,} distinct, {self.total:,} pre-tokens, pattern={name}, "
                f"special_tokens={list(self.special_tokens)}, documents={self.documents:,})")

    # -- adding -------------------------------------------------------------------------------

    def check_compatible(self, other: PretokenCounts) -> None:
        """Raise ``ValueError`` unless ``other`` was counted with this pattern and these special tokens."""
        if other.pattern != self.pattern:
            raise OptionsError(
                f"cannot add pre-token counts made with different patterns ({_short(self.pattern)} "
                f"and {_short(other.pattern)}); count every part with the same pattern"
            )
        if set(other.special_tokens) != set(self.special_tokens):
            raise OptionsError(
                f"cannot add pre-token counts made with different special tokens "
                f"({list(self.special_tokens)} and {list(other.special_tokens)}); "
                "count every part with the same special tokens"
            )

    def __add__(self, other: object) -> PretokenCounts:
        if not isinstance(other, PretokenCounts):
            return NotImplemented
        return PretokenCounts.add_all((self, other))

    @staticmethod
    def add_all(parts: Iterable[PretokenCounts]) -> PretokenCounts:
        """The sum of ``parts``, added into one table at once.

        Raises:
            TypeError: a part that is not `PretokenCounts`.
            ValueError: no parts (an empty sum has no pattern or special tokens: count
                something, or make empty counts with ``PretokenCounts(pattern=...)``),
                parts counted differently (`check_compatible`), or parts whose pre-tokens
                add up past 2**63 - 1 bytes (the message names the pre-token that weighs most).
        """
        parts = list(parts)
        if not parts:
            raise OptionsError("parts is empty: add_all needs at least one PretokenCounts (the sum of none has no "
                               "pattern or special tokens); make empty counts with PretokenCounts(pattern=...)")
        for number, part in enumerate(parts):
            if not isinstance(part, PretokenCounts):
                raise OptionsTypeError(f"parts[{number}] is {type(part).__name__}, not PretokenCounts")
        first = parts[0]
        for part in parts[1:]:
            first.check_compatible(part)
        named = [part for part in parts if getattr(part, "sources", None) is not None]
        if named:  # counts of named sources add up source by source (core.corpus.named_counts)
            return named[0].add_named(parts)  # type: ignore[attr-defined, no-any-return]
        if len(parts) == 1:
            return first
        # the bytes of a sum are the sum of the parts' bytes: checked before adding, so no
        # count can outgrow the native table's int64 (nor the file)
        if sum(part._totals()[1] for part in parts) > bpc_file.MAX_CORPUS_BYTES:
            raise too_large("cannot add these pre-token counts: they add up", sum_of_columns(parts))
        table = CountTable()
        for part in parts:
            table.add(part.chunk())
        return PretokenCounts.from_table(table, pattern=first.pattern, special_tokens=first.special_tokens,
                                         documents=sum(p.documents for p in parts),
                                         input_bytes=sum(p.input_bytes for p in parts),
                                         read=first.read if all(p.read == first.read for p in parts) else None)

    def __radd__(self, other: object) -> PretokenCounts:
        if other == 0:  # sum(counts)
            return self
        return NotImplemented

    # -- the file (core.corpus.bpc_file) --------------------------------------------------------

    def to_bytes(self) -> bytes:
        """The file's bytes (docs/formats.md, "Pre-token counts")."""
        import io

        out = io.BytesIO()
        with self._locked():
            bpc_file.write_file(out, *self._file_parts())
        return out.getvalue()

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the counts to ``path`` atomically (``.bpc`` by convention), as the file is
        made: a native table is sorted in place (4 bytes a pre-token), not copied.

        Raises:
            ValueError: counts that `load` could not read back (more than 2**63 - 1 bytes
                of pre-tokens), before anything is written.
        """
        from core.formats.atomic import atomic_output

        with self._locked():
            parts = self._file_parts()  # (checked before the file is opened)
            with atomic_output(path) as f:
                bpc_file.write_file(f, *parts)

    def _locked(self) -> contextlib.AbstractContextManager[object]:
        """Held while the file is written (the tables it reads must not change meanwhile)."""
        return self._lock

    def _file_parts(self) -> tuple[int, list[bpc_file.Body], dict[str, Any]]:
        """The file's version, bodies and metadata, checked: counts `load` could not read back
        are refused here, before anything is written."""
        total, corpus_bytes = self._totals()
        self._check_fits(corpus_bytes)
        body, distinct = self._body()
        return bpc_file.VERSION, [body], {
            "pattern": self.pattern, "special_tokens": list(self.special_tokens), "documents": self.documents,
            "input_bytes": self.input_bytes, "invalid_bytes": self.invalid_bytes, "distinct": distinct,
            "total": total, **({"read": asdict(self.read)} if self.read is not None else {}),
        }

    def _body(self) -> tuple[bpc_file.Body, int]:
        """The table as the file's body (sorted by pre-token bytes), and its distinct pre-tokens:
        from a native table without copying it; else made in memory."""
        with self._lock:
            if self._columns is None:
                table = self._table
                if table is None and self._chunk is not None and self._chunk.packed is not None:
                    table = CountTable()  # (packed counts, e.g. from a cluster: a table to sort)
                    table.add(self._chunk)
                body = table.sorted_body() if table is not None else None
                if body is not None:
                    self._distinct = body.distinct  # (len without adding the table's two parts)
                    return body, body.distinct
            words, counts = self.columns()
            return bpc_file.BytesBody(bpc_file.sorted_body(words, counts, self.invalid_bytes)), len(words)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> PretokenCounts:
        """Read a file `save` wrote (`core.corpus.named_counts.NamedCounts` for counts of named
        sources). Not a regular file (a folder, a pipe, a device), or a
        truncated, damaged or foreign file, raises `FormatError` (the header is checked
        before the body is read)."""
        chunks, meta = bpc_file.read_file(path)
        return cls._from_file(chunks, meta, str(path))

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "<bytes>") -> PretokenCounts:
        """The counts `to_bytes` wrote (`FormatError` if they are not readable)."""
        chunks, meta = bpc_file.decode(data, name)
        return cls._from_file(chunks, meta, name)

    @classmethod
    def _from_file(cls, chunks: list[ChunkCounts], meta: dict[str, Any], name: str) -> PretokenCounts:
        if "sources" in meta:  # one table per named source
            assert PretokenCounts._read_named is not None, "core.corpus.named_counts reads these; import it"
            return PretokenCounts._read_named(chunks, meta, name)
        (chunk,) = chunks
        try:
            read = ReadOptions(**meta["read"]) if meta.get("read") is not None else None
            return cls(chunk, pattern=meta["pattern"], special_tokens=meta["special_tokens"],
                       documents=int(meta["documents"]), input_bytes=int(meta["input_bytes"]), read=read)
        except (KeyError, TypeError, ValueError) as e:
            raise FormatError(f"{name} is not a readable pre-token counts file (its metadata is damaged: {e})") from None

    @staticmethod
    def read_info(path: str | os.PathLike[str]) -> dict[str, Any]:
        """What a counts file was made with — ``pattern``, ``special_tokens``, ``documents``,
        ``input_bytes``, ``distinct``, ... — from its header alone (cheap whatever its size);
        a file that is not one raises `FormatError` (`load` checks the rest)."""
        return bpc_file.read_info(path)


def _short(pattern: str) -> str:
    name = resolve_pattern(pattern).name
    return name if name != "custom" else repr(pattern if len(pattern) < 40 else pattern[:37] + "...")
