"""Held-out text for evaluation: sources as labelled groups of documents.

A source given to `core.evaluate.evaluate` becomes one or more *groups*, each a label and
its documents, read lazily:

- a plain file: one group (its path), one document, read in blocks (invalid UTF-8
  bytes kept exactly, as for training);
- a folder or glob: one group per file;
- a JSONL file: one group of its records' ``field`` — or, with ``group_by``, one group
  per value of that field (``lang``), labelled ``path [lang=en]``;
- a Parquet file: one group of its ``field`` column (``group_by`` works there too).

Files are checked as for training (`core.corpus.sources.open_corpus`) before any work.
"""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.corpus.sources import STREAM_BLOCK, ReadOptions, SourceFile, open_corpus, open_stream, require_pyarrow
from core.errors import CorpusError

__all__ = ["Group", "is_stream", "read_groups"]


@dataclass
class Group:
    """One row's text: ``label`` (file, or file and group value) and its documents."""

    label: str
    file: SourceFile
    value: str | None = None
    documents: list[str] = field(default_factory=list)


def _plain_blocks(file: SourceFile) -> Iterator[str]:
    """The text of a plain (possibly compressed) file, in blocks of about a MB."""
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    with open_stream(file) as (stream, _raw):
        while True:
            data = stream.read(STREAM_BLOCK)
            if not data:
                break
            yield decoder.decode(data)
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail


def _jsonl_records(file: SourceFile) -> Iterator[tuple[int, dict[str, Any]]]:
    with open_stream(file) as (stream, _raw):
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as e:
                raise CorpusError(f"{file.path}, line {number}: not valid JSON ({e}); "
                                  "each line of a JSONL file must be one JSON object") from None
            if not isinstance(record, dict):
                raise CorpusError(f"{file.path}, line {number}: not a JSON object; "
                                  "each line of a JSONL file must be one JSON object")
            yield number, record


def _parquet_records(file: SourceFile, columns: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    pq = require_pyarrow(file.path)
    row = 0
    for batch in pq.ParquetFile(file.path).iter_batches(columns=columns):
        for record in batch.to_pylist():
            row += 1
            yield row, record


def _grouped(file: SourceFile, text_field: str, group_by: str | None) -> list[Group]:
    records = (_jsonl_records(file) if file.kind == "jsonl"
               else _parquet_records(file, [text_field] + ([group_by] if group_by else [])))
    groups: dict[str | None, Group] = {}
    for number, record in records:
        text = record.get(text_field)
        if text is None:
            continue
        if not isinstance(text, str):
            raise CorpusError(f"{file.path}, record {number}: field {text_field!r} is a "
                              f"{type(text).__name__}, not a string; choose the text field (field=)")
        value: str | None = None
        if group_by is not None:
            raw = record.get(group_by)
            value = "(none)" if raw is None else str(raw)
        group = groups.get(value)
        if group is None:
            label = str(file.path) if value is None else f"{file.path} [{group_by}={value}]"
            group = groups[value] = Group(label, file, value)
        group.documents.append(text)
    return [groups[k] for k in sorted(groups, key=lambda v: (v is None, v or ""))]


def read_groups(source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *,
                field: str = "text", group_by: str | None = None) -> Iterator[tuple[str, Iterable[str], SourceFile]]:
    """``(label, texts, file)`` for each group of ``source``, in order (see the module docstring).

    ``texts`` is an iterable of text; for a plain file its blocks (one document), for
    records their texts (each a document).

    Raises:
        FileNotFoundError, CorpusError: a missing, empty or unreadable source, naming it.
    """
    corpus = open_corpus(source, ReadOptions(field), purpose="evaluate")
    for file in corpus.files:
        if file.kind == "text":
            yield str(file.path), _PlainText(file), file
            continue
        groups = _grouped(file, field, group_by)
        if not groups:
            raise CorpusError(f"{file.path} has no text in field {field!r}; choose the text field (field=)")
        for group in groups:
            yield group.label, group.documents, file


class _PlainText:
    """A plain file's blocks, as one document (``is_document_stream`` marks it)."""

    is_document_stream = True

    def __init__(self, file: SourceFile) -> None:
        self.file = file

    def __iter__(self) -> Iterator[str]:
        return _plain_blocks(self.file)


def is_stream(texts: Iterable[str]) -> bool:
    """Whether ``texts`` are the blocks of one document (else each item is a document)."""
    return getattr(texts, "is_document_stream", False)
