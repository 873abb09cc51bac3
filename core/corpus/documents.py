"""Documents: a corpus read as tasks of documents, sampled and capped.

A `Corpus` (`core.corpus.sources`) or an iterable of strings becomes a lazy stream of
*tasks*, each a few MB of documents that one worker process reads and counts:

- `FileRange`: a byte range of an uncompressed file, read by the worker itself — a plain
  file cut at exact pre-token boundaries (`core.corpus.chunks`), a JSONL file at line ends;
- `Files`: small plain files, whole, one after another (each a document), so that a
  folder of many small files is not one task per file;
- `Block`: text this process read from a stream (a compressed file, decompressed once, in
  order) and hands over — cut the same way;
- `RowGroup`: one row group of a Parquet file, read by the worker in batches;
- `Texts`: strings from a Python iterable.

A document boundary acts exactly like a special token: nothing is counted or merged
across it. A worker joins a task's documents with a *separator* — a character found in
none of them nor in any special token — and counts the joined text with the separator as
one more special token; so training on documents d1…dn gives the merges of training on
``d1<|endoftext|>d2…dn`` with ``<|endoftext|>`` special.

The tasks are planned (files cut, streams read) by `core.corpus.planning`. Sampling and
caps (`ReadOptions`) are deterministic whatever the number of workers:
a document is kept when a hash of (seed, file, byte offset or row) falls under
``sample``; ``doc_max_chars`` cuts each document; ``max_bytes`` stops the run where that
much text has been taken (`core.corpus.counting` takes results in order and counts the
task during which the cap is reached again, cut).
"""

from __future__ import annotations

import hashlib
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from core.corpus.sources import Corpus, ReadOptions, SourceFile, json_text, require_pyarrow
from core.corpus.streams import STREAM_BLOCK
from core.errors import CorpusError, OptionsTypeError
from core.pretokenize.specials import special_token_regex
from core.pretokenize.surrogates import replace_lone_surrogates

__all__ = [
    "Block", "FileRange", "Files", "LazyTasks", "RowGroup", "Task", "Texts", "check_unchanged", "cut_bytes",
    "encode_text", "line_of", "read_documents", "separator_for", "text_tasks",
]

SEPARATORS = ("\x00", "\x01", "\x02", "\ufdd0", "\ufdd1", "\ufdd2", "\ufdd3", "\ufdd4")
"""Candidates for the document separator of a task (the first found in no document and
no special token is used)."""

PARQUET_BATCH_ROWS = 4096


@dataclass(frozen=True, slots=True)
class FileRange:
    """Bytes ``start``-``end`` of an uncompressed file, read by the worker."""

    file: SourceFile
    start: int
    end: int

    @property
    def input_bytes(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class Block:
    """Text read by this process from a stream, at ``offset`` of the (decompressed) file,
    starting at line ``first_line``; ``input_bytes``: the file bytes it stands for."""

    file: SourceFile
    data: bytes
    offset: int
    first_line: int
    input_bytes: int
    ends_file: bool


@dataclass(frozen=True, slots=True)
class RowGroup:
    """Row group ``group`` of a Parquet file, its first row being row ``first_row``."""

    file: SourceFile
    group: int
    first_row: int
    input_bytes: int


@dataclass(frozen=True, slots=True)
class Texts:
    """Strings from an iterable, the first being item ``first_index``."""

    texts: list[str]
    first_index: int
    input_bytes: int


@dataclass(frozen=True, slots=True)
class Files:
    """Whole uncompressed plain files, each a document, read by the worker (or kept in
    ``SourceFile.data`` by their check)."""

    files: tuple[SourceFile, ...]

    @property
    def input_bytes(self) -> int:
        return sum(file.size for file in self.files)


@dataclass(frozen=True, slots=True)
class Skipped:
    """A plain file left out by sampling (it still counts as read, for progress)."""

    input_bytes: int


Task = FileRange | Block | RowGroup | Texts | Files | Skipped


# --------------------------------------------------------------------------- sampling and cuts


def kept(options: ReadOptions, file_index: int, position: int) -> bool:
    """Whether the document at ``position`` (byte offset or row) of file ``file_index`` is
    sampled: a hash of the seed and the position, so the same whatever the workers."""
    if options.sample is None or options.sample >= 1:
        return True
    digest = hashlib.blake2b(f"{options.seed}/{file_index}/{position}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") < options.sample * (1 << 64)


def cut_text(text: str, end: int, specials: Sequence[str]) -> str:
    """``text[:end]``, but never inside a special token: if one covers the cut, before it."""
    if end >= len(text):
        return text
    longest = max((len(t) for t in specials), default=0)
    if longest > 1 and any(t in text[max(0, end - longest + 1) : end + longest - 1] for t in specials):
        splitter = special_token_regex(list(specials))
        assert splitter is not None
        for m in splitter.finditer(text, 0, end + longest):
            if m.start() < end < m.end():
                return text[: m.start()]
            if m.start() >= end:
                break
    return text[:end]


def cut_bytes(text: str, limit: int, specials: Sequence[str]) -> str:
    """The longest start of ``text`` holding at most ``limit`` UTF-8 bytes, ending at a
    character boundary and never inside a special token (`cut_text`)."""
    data = encode_text(text)
    if len(data) <= limit:
        return text
    k = limit
    while k > 0 and 0x80 <= data[k] < 0xC0:
        k -= 1
    return cut_text(text, len(data[:k].decode("utf-8", errors="surrogateescape")), specials)


def encode_text(text: str) -> bytes:
    try:
        return text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate from a JSON escape: kept as its three bytes
        return text.encode("utf-8", errors="surrogatepass")


def separator_for(docs: list[str], specials: Sequence[str]) -> str:
    for sep in SEPARATORS:
        if not any(sep in t for t in specials) and not any(sep in d for d in docs):
            return sep
    # Practically impossible (every candidate in the text): fall back to one document at a time.
    return ""


# --------------------------------------------------------------------------- reading a task (in a worker)

Part = tuple[bytes | list[str], int]
"""What a task reads, in parts: text bytes of one plain document (part of it), or a list of
whole documents; with the number of documents that start in it."""


def read_documents(task: Task, options: ReadOptions, specials: Sequence[str]) -> Iterator[Part]:
    """The documents of ``task``, sampled and cut (``doc_max_chars``), in parts."""
    if isinstance(task, Skipped):
        return
    if isinstance(task, Texts):
        yield _sampled(task.texts, options, 0, task.first_index, specials, 1), len(task.texts)
        return
    if isinstance(task, RowGroup):
        yield from _read_row_group(task, options, specials)
        return
    if isinstance(task, Files):  # as documents given as text (invalid bytes escaped: counted as themselves)
        docs = [_file_bytes(file).decode("utf-8", errors="surrogateescape") for file in task.files]
        yield docs, len(docs)
        return
    data, offset = _task_bytes(task)
    if task.file.kind == "text":
        yield data, int(offset == 0)
        return
    yield from _read_jsonl(task, data, offset, options, specials)


def _file_bytes(file: SourceFile) -> bytes:
    """A whole file's bytes: kept by its check, or read now."""
    return file.data if file.data is not None else _task_bytes(FileRange(file, 0, file.size))[0]


def _task_bytes(task: FileRange | Block) -> tuple[bytes, int]:
    if isinstance(task, Block):
        return task.data, task.offset
    if task.file.data is not None and task.start == 0 and task.end == task.file.size:
        return task.file.data, 0
    with task.file.path.open("rb") as f:
        if task.file.changed(os.fstat(f.fileno())):  # another file put in its place, or rewritten
            raise CorpusError(changed_message(task.file.path))
        f.seek(task.start)
        data = f.read(task.end - task.start)
    if len(data) != task.end - task.start:
        raise CorpusError(changed_message(task.file.path))
    return data, task.start


def changed_message(path: object) -> str:
    return (f"{path} changed while it was being read (its size, modification time or file is not what it "
            "was at the start: rewritten, or replaced by another); start again on a corpus that does not "
            "change during the run")


def _sampled(texts: Iterable[str | None], options: ReadOptions, file_index: int, first: int,
             specials: Sequence[str], step: int) -> list[str]:
    """The kept texts (``None`` items skipped), cut to ``doc_max_chars``."""
    out = []
    for i, text in enumerate(texts):
        if text is None or not kept(options, file_index, first + i * step):
            continue
        if not isinstance(text, str):
            raise OptionsTypeError(f"item {first + i} of the texts is a {type(text).__name__}, not a str")
        if options.doc_max_chars is not None:
            text = cut_text(text, options.doc_max_chars, specials)
        out.append(text)
    return out


def _read_jsonl(task: FileRange | Block, data: bytes, offset: int, options: ReadOptions,
                specials: Sequence[str]) -> Iterator[Part]:
    docs: list[str] = []
    position = offset
    file = task.file
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    for number, line in enumerate(lines):
        start, position = position, position + len(line) + 1
        if not kept(options, file.index, start):
            continue
        try:
            text = json_text(line, options.field, file.path, number + 1)
        except CorpusError:
            first = task.first_line if isinstance(task, Block) else line_of(file, offset)
            json_text(line, options.field, file.path, first + number)  # raises with the real line
            raise
        if text is None:
            continue
        if options.doc_max_chars is not None:
            text = cut_text(text, options.doc_max_chars, specials)
        docs.append(text)
    yield docs, len(docs)


def line_of(file: SourceFile, offset: int) -> int:
    """The line number (from 1) at byte ``offset`` of an uncompressed file (for messages)."""
    newlines = 0
    with file.path.open("rb") as f:
        while f.tell() < offset:
            newlines += f.read(min(STREAM_BLOCK, offset - f.tell())).count(b"\n")
    return newlines + 1


def _read_row_group(task: RowGroup, options: ReadOptions, specials: Sequence[str]) -> Iterator[Part]:
    pq = require_pyarrow(task.file.path)
    row = task.first_row
    try:
        parquet = pq.ParquetFile(task.file.path)
        batches = parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS, row_groups=[task.group],
                                       columns=[options.field])
        for batch in batches:
            values = batch.column(0).to_pylist()
            docs = _sampled(values, options, task.file.index, row, specials, 1)
            row += len(values)
            yield docs, len(docs)
    except (CorpusError, TypeError, MemoryError):
        raise
    except Exception as e:  # pyarrow's own errors (ArrowInvalid, OSError) on a damaged page
        raise CorpusError(f"{task.file.path} is corrupt (row group {task.group}, from row {row:,}: "
                          f"{str(e).splitlines()[0] if str(e) else type(e).__name__}); check or rewrite the file") from None


JobT = TypeVar("JobT")


class LazyTasks(Sequence[JobT]):
    """Jobs made from a task iterator as the scheduler takes them, so a stream is read only
    a few chunks ahead of the workers. Only the scheduler's position is ever indexed (under
    its lock); a reading error ends the sequence and is kept in ``error`` (it may be raised
    in a pool thread, which must not die). Counting in threads takes the tasks themselves
    (`pop`, `peek`: `core.corpus.shares`)."""

    def __init__(self, tasks: Iterator[Any], make_job: Callable[[Any], JobT]) -> None:
        self._tasks = tasks
        self._make_job = make_job
        self._ahead: deque[Any] = deque()
        self._taken = 0
        self._ended = False
        self.error: BaseException | None = None
        self.handed: deque[Any] = deque()

    def _fill(self, count: int = 1) -> None:
        while len(self._ahead) < count and not self._ended:
            try:
                self._ahead.append(next(self._tasks))
            except StopIteration:
                self._ended = True
            except BaseException as e:  # noqa: BLE001 - re-raised by the consumer
                self.error, self._ended = e, True

    def at_least(self, count: int) -> bool:
        """Whether ``count`` more tasks are left (reading that far ahead)."""
        self._fill(count)
        return len(self._ahead) >= count

    def peek(self) -> Any:
        """The next task, not taken (None at the end)."""
        return self._ahead[0] if self.at_least(1) else None

    def pop(self) -> Any:
        """The next task itself (None at the end), taken but not made a job nor kept in
        ``handed``: for grouping tasks into larger jobs."""
        if not self.at_least(1):
            return None
        self._taken += 1
        return self._ahead.popleft()

    def take(self) -> JobT | None:
        """The next job, or None at the end (for a run without workers)."""
        return self[self._taken] if self.at_least(1) else None

    def __len__(self) -> int:
        self._fill()
        return self._taken + len(self._ahead)

    @overload
    def __getitem__(self, index: int) -> JobT: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[JobT]: ...

    def __getitem__(self, index: int | slice) -> JobT | Sequence[JobT]:
        if isinstance(index, slice) or index != self._taken:
            raise IndexError("tasks are taken in order, once")
        self._fill()
        if not self._ahead:
            raise IndexError(index)
        task = self._ahead.popleft()
        self._taken += 1
        self.handed.append(task)
        return self._make_job(task)


def text_tasks(texts: Iterable[str], chunk_size: int) -> Iterator[Texts]:
    """An iterable of strings as `Texts` tasks of about ``chunk_size`` bytes. A lone
    surrogate in a text is U+FFFD, a surrogate pair the character it stands for: the rule
    of `Tokenizer.encode` (`core.pretokenize.surrogates`), so training counts what encoding will see."""
    batch: list[str] = []
    size = first = 0
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise OptionsTypeError(f"item {i} of the texts is a {type(text).__name__}, not a str")
        batch.append(text)
        size += len(text)
        if size >= chunk_size:
            yield _texts(batch, first)
            first, batch, size = i + 1, [], 0
    if batch:
        yield _texts(batch, first)


def _texts(batch: list[str], first: int) -> Texts:
    try:
        size = len("".join(batch).encode("utf-8"))
    except UnicodeEncodeError:  # a surrogate somewhere (rare): each text as the encoder takes it
        batch = [replace_lone_surrogates(text) for text in batch]
        size = len("".join(batch).encode("utf-8"))
    return Texts(batch, first, size)


def check_unchanged(corpus: Corpus) -> None:
    """Raise if a file's size, modification time or identity (device and inode: replaced by a
    rename) changed since `open_corpus` checked it. A file whose bytes the check kept
    (``SourceFile.data``) was read once, then: what it holds now was never read."""
    for file in corpus.files:
        if file.data is not None:
            continue
        try:
            info = os.stat(file.path)
        except OSError:
            raise CorpusError(changed_message(file.path)) from None
        if file.changed(info):
            raise CorpusError(changed_message(file.path))
