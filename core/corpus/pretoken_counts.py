"""Pre-token counts as a first-class object: count once (here or on a cluster), add, save, train.

BPE training splits in two: counting pre-tokens (reads every byte, parallel) and merging
(needs only the table of distinct pre-tokens). `PretokenCounts` is that table with what
it was counted with (pattern, special tokens, documents, input and invalid bytes):

    a = core.count_pretokens("shard-1.jsonl", ["<|endoftext|>"])
    b = core.count_pretokens("shard-2.jsonl", ["<|endoftext|>"])
    (a + b).save("counts.bpc")
    core.train_bpe_from_counts(PretokenCounts.load("counts.bpc"), 32_000)

`count_events` is the one counting path: `core.train_bpe` counts through it, then
trains from its counts (`core.train.trainer`). The file format is in docs/formats.md,
"Pre-token counts (.bpc)": a header, JSON metadata, then the counts in the native
counter's packed layout (`core.pretokenize.counting.ChunkCounts.packed`), little-endian,
sorted by pre-token bytes (so equal tables give equal files), and a CRC-32.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import zlib
from array import array
from collections.abc import Generator, Iterable, Iterator, Mapping
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.corpus.counting import count_documents
from core.corpus.documents import Task, check_unchanged, plan_tasks, text_tasks
from core.corpus.sources import Corpus, ReadOptions, Source, open_corpus
from core.errors import FormatError
from core.events import PretokenizeProgress
from core.pretokenize.counting import ChunkCounts, count_chunk_bytes
from core.pretokenize.counting import CountTable
from core.pretokenize.native import native_module
from core.pretokenize.patterns import Pattern, resolve_pattern
from core.pretokenize.specials import validate_special_tokens

if TYPE_CHECKING:
    import numpy as np

__all__ = ["MAGIC", "VERSION", "PretokenCounts", "check_counting", "count_events", "count_pretokens"]

MAGIC = b"BPECOUNT"
VERSION = 1
_HEADER = struct.Struct("<8sII")  # magic, version, metadata length
MIN_CHUNK_BYTES = 1 << 20
MAX_CHUNK_BYTES = 2 << 20


class PretokenCounts:
    """Pre-token bytes -> occurrences, with what they were counted with.

    Attributes:
        pattern: the pre-tokenization regex (its source text; `resolve_pattern` takes it).
        special_tokens: the special tokens that split the text (not counted).
        documents: documents counted; input_bytes: bytes of input read; invalid_bytes:
            bytes that were not valid UTF-8 (kept byte-exact).

    ``a + b`` adds two tables counted with the same pattern and special tokens (in any
    order, the same table); anything else is refused with a ``ValueError``.
    """

    def __init__(
        self,
        chunk: ChunkCounts | None = None,
        *,
        pattern: str = "gpt2",
        special_tokens: Iterable[str] = (),
        documents: int = 0,
        input_bytes: int = 0,
    ) -> None:
        self.pattern = resolve_pattern(pattern).source
        self.special_tokens = tuple(validate_special_tokens(special_tokens))
        self.documents = documents
        self.input_bytes = input_bytes
        # at least one of three: the compact form (to add, to ship), the table counting made
        # (to train from without an object per pre-token), or the lists
        self._chunk: ChunkCounts | None = chunk if chunk is not None else ChunkCounts(None, {}, 0)
        self._table: CountTable | None = None
        self._items: tuple[list[bytes], list[int]] | None = None
        self._arrays: tuple[bytes, bytes] | None = None  # lengths and counts of _items, when made in C
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
        if self._table is not None:
            self.chunk()
        return {**self.__dict__, "_table": None}

    def chunk(self) -> ChunkCounts:
        """The counts in the compact form workers send (packed where the native counter is built)."""
        if self._chunk is None and self._table is not None:
            self._chunk = self._table.chunk()
        if self._chunk is None:
            words, counts = self.items()
            if native_module() is not None:
                self._chunk = ChunkCounts(_pack(words, counts, self.invalid_bytes, "native"), None, self.invalid_bytes)
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
        UTF-8 encoded with ``surrogateescape``); repeated pre-tokens add up."""
        items = pairs.items() if isinstance(pairs, Mapping) else pairs
        table: dict[bytes, int] = {}
        get = table.get
        for number, (token, n) in enumerate(items):
            if isinstance(token, str):
                token = token.encode("utf-8", errors="surrogateescape")
            if not isinstance(token, bytes) or not token:
                raise ValueError(f"pair {number}: a pre-token must be non-empty bytes or str, got {token!r}")
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ValueError(f"pair {number}: the count of {token!r} must be a positive integer, got {n!r}")
            table[token] = get(token, 0) + n
        return cls(ChunkCounts(None, table, invalid_bytes), pattern=pattern, special_tokens=special_tokens,
                   documents=documents, input_bytes=input_bytes)

    def items(self) -> tuple[list[bytes], list[int]]:
        """``(pre-tokens, counts)``, every distinct pre-token once (in no set order)."""
        if self._items is None:
            table = self._table
            if table is None:
                table = CountTable()
                table.add(self.chunk())
            self._items = table.items()
            self._arrays = table.arrays()
            self._table = None  # the lists stand for it now (and take the memory)
        return self._items

    def lengths_and_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """The length and count of each pre-token, in the order of `items` (and of
        `packed_words`), as int64 arrays: from a native table, made in C (no object per
        pre-token, half a second less on 7.5 million of them)."""
        import numpy as np  # only here: counting alone does not load numpy

        arrays = self._table.arrays() if self._table is not None else None
        if arrays is None:
            words, counts = self.items()
            arrays = self._arrays
            if arrays is None:
                return np.fromiter(map(len, words), np.int64, len(words)), np.array(counts, dtype=np.int64)
        return np.frombuffer(arrays[0], np.int64), np.frombuffer(arrays[1], np.int64)

    def packed_words(self) -> tuple[bytes, bytes, bytes] | None:
        """``(every pre-token's bytes one after another, lengths, counts)``, the last two as
        int64 bytes, in the order of `items`: while the native table counting made is still
        here (`items` not called yet), else None. The merge kernel reads them as they are
        (`core.train.merge.PackedWords`): no Python object per pre-token."""
        return self._table.packed_words() if self._table is not None else None

    def as_dict(self) -> dict[bytes, int]:
        return dict(zip(*self.items()))

    def __len__(self) -> int:
        return len(self.items()[0])

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.items()[0])

    def __getitem__(self, token: bytes) -> int:
        return self.as_dict()[token]

    @property
    def total(self) -> int:
        """Pre-tokens counted (special tokens not included)."""
        return sum(self.items()[1])

    def _meta(self) -> tuple[str, frozenset[str], int, int, int]:
        return (self.pattern, frozenset(self.special_tokens), self.documents, self.input_bytes, self.invalid_bytes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PretokenCounts):
            return NotImplemented
        return self._meta() == other._meta() and self.as_dict() == other.as_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        name = resolve_pattern(self.pattern).name
        return (f"PretokenCounts({len(self):,} distinct, {self.total:,} pre-tokens, pattern={name}, "
                f"special_tokens={list(self.special_tokens)}, documents={self.documents:,})")

    def check_compatible(self, other: PretokenCounts) -> None:
        """Raise ``ValueError`` unless ``other`` was counted with this pattern and these special tokens."""
        if other.pattern != self.pattern:
            raise ValueError(
                f"cannot add pre-token counts made with different patterns ({_short(self.pattern)} "
                f"and {_short(other.pattern)}); count every part with the same --pattern"
            )
        if set(other.special_tokens) != set(self.special_tokens):
            raise ValueError(
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
        """The sum of ``parts`` (at least one), added into one table at once."""
        parts = list(parts)
        first = parts[0]
        for part in parts[1:]:
            first.check_compatible(part)
        if len(parts) == 1:
            return first
        table = CountTable()
        for part in parts:
            table.add(part.chunk())
        return PretokenCounts(table.chunk(), pattern=first.pattern, special_tokens=first.special_tokens,
                              documents=sum(p.documents for p in parts),
                              input_bytes=sum(p.input_bytes for p in parts))

    def __radd__(self, other: object) -> PretokenCounts:
        if other == 0:  # sum(counts)
            return self
        return NotImplemented

    # -- the file --------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """The file's bytes (docs/formats.md, "Pre-token counts")."""
        words, counts = self.items()
        order = sorted(range(len(words)), key=words.__getitem__)
        body = _pack([words[i] for i in order], [counts[i] for i in order], self.invalid_bytes, "little")
        meta = json.dumps({
            "pattern": self.pattern, "special_tokens": list(self.special_tokens), "documents": self.documents,
            "input_bytes": self.input_bytes, "invalid_bytes": self.invalid_bytes, "distinct": len(words),
            "total": sum(counts),
        }, ensure_ascii=False).encode()
        return b"".join((_HEADER.pack(MAGIC, VERSION, len(meta)), meta, body,
                         struct.pack("<I", zlib.crc32(body, zlib.crc32(meta)))))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the counts to ``path`` atomically (``.bpc`` by convention)."""
        from core.formats.atomic import atomic_output

        data = self.to_bytes()
        with atomic_output(path) as f:
            f.write(data)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> PretokenCounts:
        """Read a file `save` wrote; a truncated, damaged or foreign file raises `FormatError`."""
        path = Path(path)
        try:
            data = path.read_bytes()
        except IsADirectoryError:
            raise FormatError(f"{path} is a folder, not a pre-token counts file") from None
        except FileNotFoundError:
            raise FormatError(f"{path}: no such file") from None
        return cls.from_bytes(data, str(path))

    @staticmethod
    def read_info(path: str | os.PathLike[str]) -> dict[str, Any]:
        """What a counts file was made with — ``pattern``, ``special_tokens``, ``documents``,
        ``input_bytes``, ``distinct``, ... — from its header alone (cheap whatever its size);
        a file that is not one raises `FormatError` (`load` checks the rest)."""
        path = Path(path)
        try:
            with open(path, "rb") as f:
                head = f.read(_HEADER.size)
                if len(head) < _HEADER.size or not head.startswith(MAGIC):
                    raise FormatError(f"{path} is not a pre-token counts file (it does not start with BPECOUNT)")
                _, version, meta_size = _HEADER.unpack(head)
                if version != VERSION:
                    raise FormatError(f"{path} is a pre-token counts file of version {version}; this BPE "
                                      f"Studio reads version {VERSION}: upgrade BPE Studio or count again")
                raw = f.read(meta_size)
        except IsADirectoryError:
            raise FormatError(f"{path} is a folder, not a pre-token counts file") from None
        except FileNotFoundError:
            raise FormatError(f"{path}: no such file") from None
        try:
            meta = json.loads(raw)
        except ValueError:
            meta = None
        if not isinstance(meta, dict) or not {"pattern", "special_tokens"} <= meta.keys():
            raise FormatError(f"{path} is not a readable pre-token counts file (its header is damaged)")
        return meta

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "<bytes>") -> PretokenCounts:
        def bad(why: str) -> FormatError:
            return FormatError(f"{name} is not a readable pre-token counts file ({why}); "
                               "write it again with 'bpe-studio count' or PretokenCounts.save")

        if len(data) < _HEADER.size or not data.startswith(MAGIC):
            raise bad("it does not start with BPECOUNT")
        _, version, meta_size = _HEADER.unpack_from(data)
        if version != VERSION:
            raise FormatError(f"{name} is a pre-token counts file of version {version}; this BPE Studio "
                              f"reads version {VERSION}: upgrade BPE Studio or count again")
        start = _HEADER.size + meta_size
        if len(data) < start + 24 + 4:
            raise bad("it is truncated")
        meta_bytes, body = data[_HEADER.size:start], data[start:-4]
        (crc,) = struct.unpack_from("<I", data, len(data) - 4)
        try:
            meta = json.loads(meta_bytes)
            n, invalid, keys_length = struct.unpack_from("<qqq", body)
            keys_at = 24 + 12 * n
            if n < 0 or keys_length < 0 or keys_at + keys_length != len(body):
                raise ValueError("truncated")
            lengths = array("I", body[24 + 8 * n:keys_at])
            numbers = array("q", body[24:24 + 8 * n])
            if sys.byteorder != "little":  # pragma: no cover
                lengths.byteswap()
                numbers.byteswap()
            if sum(lengths) != keys_length or min(numbers, default=1) < 1:
                raise ValueError("truncated")
        except (ValueError, struct.error):
            raise bad("it is truncated or damaged") from None
        if zlib.crc32(body, zlib.crc32(meta_bytes)) != crc:
            raise bad("its checksum does not match: it is damaged")
        if native_module() is not None and sys.byteorder == "little":
            chunk = ChunkCounts(body, None, invalid)  # the native counter's own packed layout
        else:
            ends = list(accumulate(lengths, initial=keys_at))
            chunk = ChunkCounts(None, {body[a:b]: c for a, b, c in zip(ends, ends[1:], numbers)}, invalid)
        return cls(chunk, pattern=meta["pattern"], special_tokens=meta["special_tokens"],
                   documents=meta["documents"], input_bytes=meta["input_bytes"])


def _pack(words: list[bytes], counts: list[int], invalid: int, order: str) -> bytes:
    """The native counter's packed layout (``_native.c``): int64 n, int64 invalid, int64 keys'
    length, int64 × n counts, uint32 × n key lengths, the keys; ``order`` "little" or "native"."""
    numbers = array("q", counts)
    lengths = array("I", map(len, words))
    if order == "little" and sys.byteorder != "little":  # pragma: no cover - big-endian machines
        numbers.byteswap()
        lengths.byteswap()
    head = struct.pack("<qqq" if order == "little" else "=qqq", len(words), invalid, sum(lengths))
    return b"".join((head, numbers.tobytes(), lengths.tobytes(), *words))


def _short(pattern: str) -> str:
    name = resolve_pattern(pattern).name
    return name if name != "custom" else repr(pattern if len(pattern) < 40 else pattern[:37] + "...")


# -- counting a corpus --------------------------------------------------------------------


Counting = tuple["Corpus | Iterator[str]", int, list[str], Pattern, int, int, ReadOptions]


def check_counting(
    source: Source | None,
    texts: Iterator[str] | None,
    specials: list[str],
    pattern: Pattern,
    workers: int | None,
    chunk_size: int | None,
    options: ReadOptions,
) -> Counting:
    """Check the workers and chunk size, then the corpus (raising on a bad one); give
    `count_events`' arguments."""
    workers = (os.cpu_count() or 1) if workers is None else workers
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if chunk_size is not None and chunk_size < 1:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    corpus: Corpus | Iterator[str]
    if texts is not None:
        corpus, size = texts, 0
    else:
        assert source is not None
        corpus = open_corpus(source, options)
        size = corpus.input_bytes
    if chunk_size is None:
        # in one process a chunk is also the longest stretch without an event to cancel at
        largest = MAX_CHUNK_BYTES if workers > 1 else MIN_CHUNK_BYTES
        chunk_size = min(largest, max(MIN_CHUNK_BYTES, size // (8 * workers)))
    return corpus, size, specials, pattern, workers, chunk_size, options


def count_events(
    corpus: Corpus | Iterator[str],
    size: int,
    specials: list[str],
    pattern: Pattern,
    workers: int,
    chunk_size: int,
    options: ReadOptions,
) -> Generator[PretokenizeProgress, None, PretokenCounts]:
    """Count the corpus in ``workers`` processes, yielding progress; return the counts.
    Closing the generator stops the workers."""
    yield PretokenizeProgress(0, size)
    table = CountTable()
    done = documents = 0
    if isinstance(corpus, Corpus):
        tasks: Iterator[Task] = plan_tasks(corpus, pattern, specials, chunk_size)
    else:
        tasks = text_tasks(corpus, chunk_size)
    for step in count_documents(tasks, options, pattern, specials, workers, count_chunk_bytes, size):
        if step.counts is not None:
            table.add(step.counts)
            done += step.input_bytes
            documents += step.documents
        read = done + step.counting
        yield PretokenizeProgress(read, max(size, read), documents)
    if isinstance(corpus, Corpus):
        check_unchanged(corpus)
    return PretokenCounts.from_table(table, pattern=pattern.source, special_tokens=specials,
                                     documents=documents, input_bytes=done)


def count_pretokens(
    source: Source,
    special_tokens: Iterable[str] | None = None,
    *,
    pattern: str = "gpt2",
    workers: int | None = None,
    field: str = "text",
    max_bytes: int | None = None,
    sample: float | None = None,
    seed: int = 0,
    doc_max_chars: int | None = None,
    chunk_size: int | None = None,
) -> PretokenCounts:
    """Count a corpus's pre-tokens exactly as `core.train_bpe` does (the same sources and
    keywords), for `core.train_bpe_from_counts` or to add to other counts.

    ``train_bpe_from_counts(count_pretokens(src, specials), n, specials)`` gives the
    merges of ``train_bpe(src, n, specials)``.
    """
    specials = validate_special_tokens(special_tokens)
    run = check_counting(source, None, specials, resolve_pattern(pattern), workers, chunk_size,
                         ReadOptions(field, sample, seed, doc_max_chars, max_bytes))
    events = count_events(*run)
    while True:
        try:
            next(events)
        except StopIteration as stop:
            result: PretokenCounts = stop.value
            return result
