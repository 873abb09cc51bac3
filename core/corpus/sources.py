"""Corpora as people have them: paths, folders and globs of plain text, JSONL and Parquet, compressed or not.

`open_corpus` turns what the user gave — a path, a directory (walked recursively, files in
sorted path order, hidden files and folders skipped), a glob pattern, or a list of them —
into a checked `Corpus`: a list of `SourceFile`s, each with its format and compression
told by its name:

- ``.jsonl``/``.ndjson``: one JSON object a line, the text in a field (default ``text``);
- ``.parquet``: a string column (default ``text``), read with pyarrow (``bpe-studio[parquet]``);
- anything else: plain UTF-8 text (invalid bytes kept exactly);
- any of them (but Parquet, which compresses itself) as ``.gz``, ``.bz2``, ``.xz`` or ``.zst``.

Each JSONL record, Parquet row and plain file is a *document* (`core.corpus.documents`
reads them). Finding the files is `core.corpus.paths` (`resolve_paths`, re-exported here):
what a folder's walk cannot read is an error, or with ``ReadOptions.skip_unreadable`` a
warning listing it. Every file is checked before any work: a regular file (an empty one among
others is an empty document; a corpus of empty files holds no text, an error); plain text
not binary; a JSONL file's first record parses and has the field; a Parquet file has the
column. So a bad shard among good ones is refused before anything is counted or written;
what can only be seen deeper (line 90,000 is not JSON) stops the run with the file and line.
Decompressing is `core.corpus.streams` (`open_stream`, re-exported here).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any

from core.corpus.check import BINARY_SAMPLE_BYTES, FileInfo, check_regular_file, check_sample, read_regular_starts
from core.corpus.paths import Source, UnreadableError, UnreadableSkipped, resolve_paths
from core.corpus.streams import STREAM_BLOCK, corrupt_error, open_stream
from core.errors import CorpusError, OptionsError, OptionsTypeError
from core.pretokenize.surrogates import replace_lone_surrogates

__all__ = [
    "STREAM_BLOCK", "Corpus", "ReadOptions", "Source", "SourceFile", "UnreadableError", "UnreadableSkipped",
    "corpus_file_kind", "corrupt_error", "json_text", "open_corpus", "open_stream",
    "parse_size", "require_pyarrow", "resolve_paths", "text_fields",
]

COMPRESSIONS = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zst": "zstd"}
JSONL_SUFFIXES = (".jsonl", ".ndjson")
PARQUET_SUFFIX = ".parquet"
_NAMED_SUFFIXES = {suffix[1:] for suffix in (*COMPRESSIONS, *JSONL_SUFFIXES, PARQUET_SUFFIX)}
SHARD_SAMPLE_BYTES = 1 << 16
"""How much of each file's start is checked when the corpus has many files."""
KEPT_FILE_BYTES = 1 << 12
KEPT_BYTES = 32 << 20
"""A plain file of at most `KEPT_FILE_BYTES`, read whole by its check, keeps its bytes
(``SourceFile.data``, up to `KEPT_BYTES` in all) and is not opened again to be counted:
a folder of many small files costs one open each."""


@dataclass(frozen=True, slots=True)
class SourceFile:
    """One corpus file: ``kind`` is ``"text"``, ``"jsonl"`` or ``"parquet"``; ``compression``
    ``None`` or a `COMPRESSIONS` value; ``size``/``mtime_ns`` and ``identity`` (``(st_dev,
    st_ino)``: another file put in its place, by a rename, has another) as checked (a change
    during the run is an error); ``index`` its place in the corpus (part of each document's
    position); ``data``: the bytes of a small plain file, read by its check (`KEPT_FILE_BYTES`)."""

    path: Path
    kind: str
    compression: str | None
    size: int
    mtime_ns: int
    index: int
    identity: tuple[int, int]
    data: bytes | None = field(default=None, compare=False, repr=False)

    def changed(self, info: os.stat_result) -> bool:
        """Whether ``info`` (a stat of the file now) says the file is not the one checked."""
        return (info.st_size != self.size or info.st_mtime_ns != self.mtime_ns
                or (info.st_dev, info.st_ino) != self.identity)

    @property
    def streamed(self) -> bool:
        """Read once, in order, by this process (compressed): workers get its text in chunks."""
        return self.compression is not None


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """What to read of a corpus: how documents are read, sampled and capped
    (`core.corpus.documents`). Public as `core.ReadOptions`; checked when made (a bad value
    raises ``TypeError`` or ``ValueError`` naming it). All but ``field`` are keywords.

    Attributes:
        field: the JSONL field / Parquet column holding the text.
        sample: keep this fraction of the documents (``None``: all), chosen by a hash of
            ``seed`` and each document's position (file, and byte offset or row).
        seed: the sampling seed.
        doc_max_chars: cut each document after this many characters (never inside a
            special token: if the cut falls in one, the document ends before it).
        max_bytes: stop after this many bytes of (UTF-8) text; the document during which
            the cap is reached is cut there, at a character boundary (and, as above,
            never inside a special token).
        skip_unreadable: leave out what a folder's walk cannot read (a folder without
            permission, a link in a loop) with an `UnreadableSkipped` warning, instead of
            raising `UnreadableError`.
    """

    field: str = "text"
    _: KW_ONLY
    sample: float | None = None
    seed: int = 0
    doc_max_chars: int | None = None
    max_bytes: int | None = None
    skip_unreadable: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.field, str) or not self.field:
            raise OptionsError(f"the text field must be a non-empty string, got {self.field!r}")
        if self.sample is not None and (isinstance(self.sample, bool) or not isinstance(self.sample, (int, float))
                                        or not 0 < self.sample <= 1):
            raise OptionsError(f"sample must be a fraction in (0, 1], got {self.sample!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise OptionsTypeError(f"seed must be an integer, got {self.seed!r}")
        for name in ("doc_max_chars", "max_bytes"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise OptionsError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(self.skip_unreadable, bool):
            raise OptionsTypeError(f"skip_unreadable must be True or False, got {self.skip_unreadable!r}")


@dataclass(frozen=True, slots=True)
class Corpus:
    """Checked corpus files, in order; ``input_bytes`` is their size on disk (compressed)."""

    files: tuple[SourceFile, ...]
    options: ReadOptions

    @property
    def input_bytes(self) -> int:
        return sum(f.size for f in self.files)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12,
          "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}


def parse_size(text: str) -> int:
    """A size in bytes from ``"500MB"``, ``"2GiB"``, ``"1.5 GB"``, ``"300k"`` or ``"1000"``.

    Decimal units (KB, MB, GB, TB) are powers of 1000, binary ones (KiB, MiB, GiB, TiB)
    powers of 1024. ``parse_size("2GiB") -> 2147483648``.

    Raises:
        ValueError: not a size.
    """
    m = _SIZE.match(text)
    unit = m.group(2).lower().removesuffix("b") if m else ""
    if m is None or unit not in _UNITS:
        raise OptionsError(f"{text!r} is not a size; write it as e.g. 500MB, 2GiB or 1000000")
    size = int(float(m.group(1)) * _UNITS[unit])
    if size < 1:
        raise OptionsError(f"the size {text!r} must be at least 1 byte")
    return size


def corpus_file_kind(path: Path) -> tuple[str, str | None]:
    """``(kind, compression)`` of a corpus file, by its name (see `SourceFile`): ``"jsonl"``
    for ``.jsonl``/``.ndjson``, ``"parquet"`` for ``.parquet``, else ``"text"``."""
    name = path.name.lower()
    if name.rpartition(".")[2] not in _NAMED_SUFFIXES:  # (most files: plain text, told at once)
        return "text", None
    compression = None
    for suffix, method in COMPRESSIONS.items():
        if name.endswith(suffix):
            compression, name = method, name[: -len(suffix)]
            break
    if name.endswith(JSONL_SUFFIXES):
        return "jsonl", compression
    if name.endswith(PARQUET_SUFFIX):
        if compression is not None:
            raise CorpusError(f"{path}: compressed Parquet files are not read; Parquet compresses itself, "
                              "so decompress it first")
        return "parquet", None
    return "text", compression


def open_corpus(
    source: Source,
    options: ReadOptions | None = None,
    *,
    purpose: str = "train on",
) -> Corpus:
    """Resolve ``source`` into files and check each one before any work (see the module docstring).

    Raises:
        FileNotFoundError, IsADirectoryError, PermissionError, CorpusError: naming the file
            (and line, field or columns) and saying what to do.
    """
    options = options or ReadOptions()
    paths = resolve_paths(source, skip_unreadable=options.skip_unreadable)
    # A folder of thousands of shards: check the start of each, not a whole MB of each.
    sample = BINARY_SAMPLE_BYTES if len(paths) <= 16 else SHARD_SAMPLE_BYTES
    files = []
    kept = 0
    kinds = [_kind_of(path) for path in paths]
    starts = read_regular_starts([path for path, kind in zip(paths, kinds) if kind == _PLAIN], sample)
    for index, path in enumerate(paths):  # in order: the first bad file is the one reported
        kind = kinds[index]
        start = next(starts) if kind == _PLAIN else None
        file = _check_file(path, index, kind, options.field, purpose, sample, len(paths) == 1, start)
        if file.data is not None:
            if kept + file.size > KEPT_BYTES:  # enough kept: this one is read again when counted
                file = SourceFile(file.path, file.kind, None, file.size, file.mtime_ns, file.index, file.identity)
            kept += len(file.data or b"")
        files.append(file)
    if not any(file.size for file in files):
        raise CorpusError(f"the {len(files):,} files of the corpus are all empty; there is nothing to {purpose}")
    return Corpus(tuple(files), options)


_PLAIN = ("text", None)  # uncompressed plain text: the common case, without a stream's layers


def _kind_of(path: Path) -> tuple[str, str | None] | None:
    """`corpus_file_kind`, or ``None`` for a name it refuses (told when the file's turn comes)."""
    try:
        return corpus_file_kind(path)
    except CorpusError:
        return None


def _check_file(path: Path, index: int, kind_of: tuple[str, str | None] | None, field: str, purpose: str,
                sample: int, alone: bool, start: tuple[FileInfo, bytes] | None) -> SourceFile:
    """One file checked (see the module docstring): ``kind_of`` its `_kind_of`, ``start`` its
    `read_regular_start` when it is plain text; a small plain file keeps its bytes."""
    if kind_of is None:
        check_regular_file(path)  # a missing file is told as missing first
        corpus_file_kind(path)  # (raises)
    assert kind_of is not None
    kind, compression = kind_of
    plain = start is not None
    info, data = start if start is not None else (check_regular_file(path), None)
    if info.st_size == 0 and alone:
        raise CorpusError(f"{path} is empty; there is nothing to {purpose}")
    identity = (info.st_dev, info.st_ino)
    if plain:
        if info.st_size:  # (empty: an empty document)
            check_sample(path, data or b"", purpose=purpose)
        kept = data if data is not None and len(data) == info.st_size <= KEPT_FILE_BYTES else None
        return SourceFile(path, kind, compression, info.st_size, info.st_mtime_ns, index, identity, kept)
    file = SourceFile(path, kind, compression, info.st_size, info.st_mtime_ns, index, identity)
    if kind == "parquet":
        _check_parquet(path, field, purpose)
    elif info.st_size:
        _check_start(file, field, purpose, sample, not alone)
    return file


def json_text(line: bytes, field: str, path: Path, line_number: int) -> str | None:
    """The text of one JSONL line: ``None`` for a blank line, or a ``null`` in ``field``
    (no document, as a Parquet null).

    Raises:
        CorpusError: the line is not a JSON object, lacks ``field``, or its value is neither
            a string nor null — naming the file, the line and the field.
    """
    if not line.strip():
        return None
    try:
        record = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        reason = e.msg if isinstance(e, json.JSONDecodeError) else "not UTF-8"
        raise CorpusError(f"{path}, line {line_number}: not valid JSON ({reason}); "
                          "each line of a JSONL file must be one JSON object") from None
    if not isinstance(record, dict):
        raise CorpusError(f"{path}, line {line_number}: a JSON {type(record).__name__}, not an object; "
                          "each line of a JSONL file must be one JSON object")
    if field not in record:
        fields = ", ".join(record) or "none"
        raise CorpusError(f"{path}, line {line_number}: no field {field!r} (its fields: {fields}); "
                          "choose the text field (field=)")
    text = record[field]
    if text is None:
        return None
    if not isinstance(text, str):
        raise CorpusError(f"{path}, line {line_number}: the field {field!r} holds a "
                          f"{type(text).__name__}, not a string; choose a text field (field=)")
    if not text.isascii() and _SURROGATE_ESCAPE.search(line):
        # a lone surrogate escaped in JSON ("\ud83d") is no character: U+FFFD, as
        # Tokenizer.encode (and tiktoken) give it, not the bytes a file's invalid bytes are
        # (an ASCII text holds none: the search of each line is left to the others)
        text = replace_lone_surrogates(text)
    return text


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _check_start(file: SourceFile, field: str, purpose: str, limit: int, empty_ok: bool = False) -> None:
    """Read the start of a text or JSONL file (decompressed, at most ``limit`` bytes): not
    empty (unless ``empty_ok``: one among others), not binary, and for JSONL the first
    record parses and has the field."""
    with open_stream(file) as (stream, _):
        sample = stream.read(limit)
        if not sample and empty_ok:
            return
        check_sample(file.path, sample, purpose=purpose)
        if file.kind == "jsonl":
            lines = sample.split(b"\n")
            whole = len(sample) < limit
            for number, line in enumerate(lines if whole else lines[:-1], 1):
                if line.strip():  # the first record: an object with the field (its text may be null)
                    json_text(line, field, file.path, number)
                    return
            if whole:
                raise CorpusError(f"{file.path} holds no JSON record, only blank lines; "
                                  f"there is nothing to {purpose}")


def require_pyarrow(path: Path) -> Any:
    """``pyarrow.parquet``, or a `CorpusError` saying what to install."""
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        raise CorpusError(f"{path}: reading Parquet needs pyarrow; install it with "
                          "pip install 'bpe-studio[parquet]'") from None
    return pq


def _string_columns(schema: Any) -> list[str]:
    import pyarrow as pa  # type: ignore[import-untyped, import-not-found, unused-ignore]

    def text(type_: Any) -> bool:  # strings, or strings dictionary-encoded (a pandas category)
        if pa.types.is_dictionary(type_):
            return text(type_.value_type)
        return pa.types.is_string(type_) or pa.types.is_large_string(type_) or str(type_) == "string_view"

    return [f.name for f in schema if text(f.type)]


def _check_parquet(path: Path, field: str, purpose: str = "train on") -> None:
    pq = require_pyarrow(path)
    try:
        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
        rows = parquet.metadata.num_rows
    except Exception as e:  # pyarrow raises its own ArrowInvalid / OSError types
        raise CorpusError(f"{path} is not a valid Parquet file ({e}); check the file") from None
    if field not in schema.names:
        raise CorpusError(f"{path}: no column {field!r} (its columns: {', '.join(schema.names) or 'none'}); "
                          "choose the text column (field=)")
    if field not in _string_columns(schema):
        raise CorpusError(f"{path}: the column {field!r} holds {schema.field(field).type}, not strings; "
                          f"choose a text column (field=): {', '.join(_string_columns(schema)) or 'none'}")
    if rows == 0:
        raise CorpusError(f"{path} holds no rows; there is nothing to {purpose}")


def text_fields(path: str | os.PathLike[str], records: int = 20) -> list[str]:
    """The string fields of a JSONL file's first ``records`` records (or a Parquet file's
    string columns), in order of first appearance; ``[]`` for plain text or on any error.
    For a field chooser: fast, reads at most a few MB."""
    path = Path(path)
    try:
        kind, compression = corpus_file_kind(path)
        if kind == "parquet":
            return _string_columns(require_pyarrow(path).ParquetFile(path).schema_arrow)
        if kind != "jsonl":
            return []
        info = check_regular_file(path)
        file = SourceFile(path, kind, compression, info.st_size, info.st_mtime_ns, 0, (info.st_dev, info.st_ino))
        fields: dict[str, None] = {}
        with open_stream(file) as (stream, _):
            for _number, line in zip(range(records), stream):
                record = json.loads(line) if line.strip() else None
                if isinstance(record, dict):
                    fields.update((k, None) for k, v in record.items() if isinstance(v, str))
        return list(fields)
    except (OSError, ValueError, EOFError):
        return []
    except Exception:  # pyarrow's own errors
        return []
