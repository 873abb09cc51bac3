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
reads them). Every file is checked before any work: a regular, non-empty file; plain text
not binary; a JSONL file's first record parses and has the field; a Parquet file has the
column. So a bad shard among good ones is refused before anything is counted or written;
what can only be seen deeper (line 90,000 is not JSON) stops the run with the file and line.
Decompressing is `core.corpus.streams` (`open_stream`, re-exported here).
"""

from __future__ import annotations

import fnmatch
import glob
import json
import os
import re
from collections.abc import Iterable
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Any, Union

from core.corpus.check import BINARY_SAMPLE_BYTES, check_regular_file, check_sample
from core.corpus.streams import STREAM_BLOCK, corrupt_error, open_stream
from core.errors import CorpusError

__all__ = [
    "STREAM_BLOCK", "Corpus", "ReadOptions", "Source", "SourceFile", "corpus_file_kind", "corrupt_error", "json_text",
    "open_corpus", "open_stream",
    "parse_size", "require_pyarrow", "resolve_paths", "text_fields",
]

Source = Union[str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]]]
"""A corpus: a path, a directory, a glob pattern, or a list of them."""

COMPRESSIONS = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zst": "zstd"}
JSONL_SUFFIXES = (".jsonl", ".ndjson")
PARQUET_SUFFIX = ".parquet"
SHARD_SAMPLE_BYTES = 1 << 16
"""How much of each file's start is checked when the corpus has many files."""


@dataclass(frozen=True, slots=True)
class SourceFile:
    """One corpus file: ``kind`` is ``"text"``, ``"jsonl"`` or ``"parquet"``; ``compression``
    ``None`` or a `COMPRESSIONS` value; ``size``/``mtime_ns`` and ``identity`` (``(st_dev,
    st_ino)``: another file put in its place, by a rename, has another) as checked (a change
    during the run is an error); ``index`` its place in the corpus (part of each document's
    position)."""

    path: Path
    kind: str
    compression: str | None
    size: int
    mtime_ns: int
    index: int
    identity: tuple[int, int]

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
    """

    field: str = "text"
    _: KW_ONLY
    sample: float | None = None
    seed: int = 0
    doc_max_chars: int | None = None
    max_bytes: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.field, str) or not self.field:
            raise ValueError(f"the text field must be a non-empty string, got {self.field!r}")
        if self.sample is not None and (isinstance(self.sample, bool) or not isinstance(self.sample, (int, float))
                                        or not 0 < self.sample <= 1):
            raise ValueError(f"sample must be a fraction in (0, 1], got {self.sample!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise TypeError(f"seed must be an integer, got {self.seed!r}")
        for name in ("doc_max_chars", "max_bytes"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be a positive integer, got {value!r}")


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
        raise ValueError(f"{text!r} is not a size; write it as e.g. 500MB, 2GiB or 1000000")
    size = int(float(m.group(1)) * _UNITS[unit])
    if size < 1:
        raise ValueError(f"the size {text!r} must be at least 1 byte")
    return size


def _is_hidden(name: str) -> bool:
    return name.startswith(".")


def _walk(folder: Path) -> list[Path]:
    """The files under ``folder``, recursively, in sorted path order; hidden ones skipped."""
    found: list[Path] = []
    for root, dirs, names in os.walk(folder):  # linked folders are not followed (no cycles)
        dirs[:] = sorted(d for d in dirs if not _is_hidden(d))
        found += [Path(root) / n for n in names if not _is_hidden(n)]
    return sorted(found)


def _glob(pattern: str) -> list[str]:
    """``glob.glob(pattern, recursive=True)``, except that ``**`` does not go into linked
    folders, as a folder's walk does not: ``glob`` follows them, so a link to a parent
    folder repeated files (``a.txt``, ``l/a.txt``, ``l/l/a.txt`` ...) and two such links
    never ended. Without ``**`` the depth is the pattern's, and ``glob`` serves."""
    parts = pattern.split(os.sep)
    if "**" not in parts:
        return glob.glob(pattern)
    first = next(i for i, part in enumerate(parts) if glob.has_magic(part))
    top = os.sep.join(parts[:first]) or (os.sep if pattern.startswith(os.sep) else "")
    wanted = [part for part in parts[first:] if part]  # ("a/**/" as "a/**")
    hidden_wanted = any(part.startswith(".") for part in wanted)
    start = top or "."
    if not os.path.isdir(start):
        return []
    matches = []
    for root, dirs, names in os.walk(start):  # links to folders are listed, not entered
        dirs[:] = sorted(d for d in dirs if hidden_wanted or not _is_hidden(d))
        below = os.path.relpath(root, start).split(os.sep) if root != start else []
        folders = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
        for name, folder in [(d, True) for d in folders] + [(n, False) for n in names]:
            if _glob_match(below + [name], wanted, folder):
                matches.append(os.path.join(top, *below, name))
    return matches


def _glob_match(names: list[str], parts: list[str], folder: bool) -> bool:
    """Whether the path ``names`` (a folder or not) matches the glob ``parts`` as `glob`
    matches: ``**`` any number of folders, ``*`` and the like within one name, neither a
    hidden name unless the part itself starts with a dot, and a name that more parts
    follow a folder."""
    if not parts:
        return not names
    if parts[0] == "**":
        return any(_glob_match(names[skip:], parts[1:], folder) for skip in range(len(names) + 1)
                   if not any(_is_hidden(name) for name in names[:skip]))
    if not names or (_is_hidden(names[0]) and not parts[0].startswith(".")):
        return False
    if len(names) == 1 and len(parts) > 1 and not folder:
        return False
    return fnmatch.fnmatchcase(names[0], parts[0]) and _glob_match(names[1:], parts[1:], folder)


def resolve_paths(source: Source) -> list[Path]:
    """The files ``source`` names, in order: each path as given, each directory's files
    (recursive, sorted, hidden skipped), each glob's files (in path order, each once;
    ``**`` recurses, not into links to folders: `_glob`).

    Raises:
        FileNotFoundError: a path that does not exist, a glob matching nothing, a folder
            holding no file, or no source at all.
    """
    items = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    files: list[Path] = []
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(f"a corpus source must be a path, a directory or a glob, got {item!r}")
        text = os.fspath(item)
        path = Path(text)
        if os.path.isdir(path):
            found = _walk(path)
            if not found:
                links = any(os.path.islink(os.path.join(root, d)) for root, dirs, _ in os.walk(path) for d in dirs)
                raise FileNotFoundError(f"the folder {path} holds no files to read (hidden files are skipped"
                                        f"{', and links to folders are not followed' if links else ''})")
            files += found
        elif os.path.lexists(path) or not glob.has_magic(text):
            files.append(path)  # checked (and reported if missing) by `check_regular_file`
        else:
            matched: dict[Path, None] = {}  # each file once ("a/**" matches a folder and its files)
            for match in sorted(map(Path, _glob(text))):  # in path order, as a folder's files
                matched.update(dict.fromkeys(_walk(match) if match.is_dir() else [match]))
            if not matched:
                raise FileNotFoundError(f"no file matches {text} (hidden files are skipped); check the pattern")
            files += matched
    if not files:
        raise FileNotFoundError("no corpus given; name a file, a folder or a glob pattern")
    return files


def corpus_file_kind(path: Path) -> tuple[str, str | None]:
    """``(kind, compression)`` of a corpus file, by its name (see `SourceFile`): ``"jsonl"``
    for ``.jsonl``/``.ndjson``, ``"parquet"`` for ``.parquet``, else ``"text"``."""
    name = path.name.lower()
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
    files = []
    paths = resolve_paths(source)
    # A folder of thousands of shards: check the start of each, not a whole MB of each.
    sample = BINARY_SAMPLE_BYTES if len(paths) <= 16 else SHARD_SAMPLE_BYTES
    for index, path in enumerate(paths):
        info = check_regular_file(path)
        kind, compression = corpus_file_kind(path)
        if info.st_size == 0:
            raise CorpusError(f"{path} is empty; there is nothing to {purpose}")
        file = SourceFile(path, kind, compression, info.st_size, info.st_mtime_ns, index, (info.st_dev, info.st_ino))
        if kind == "parquet":
            _check_parquet(path, options.field, purpose)
        else:
            _check_start(file, options.field, purpose, sample)
        files.append(file)
    return Corpus(tuple(files), options)


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
                          "choose the text field (--field)")
    text = record[field]
    if text is None:
        return None
    if not isinstance(text, str):
        raise CorpusError(f"{path}, line {line_number}: the field {field!r} holds a "
                          f"{type(text).__name__}, not a string; choose a text field (--field)")
    if not text.isascii() and _SURROGATE_ESCAPE.search(line):
        # a lone surrogate escaped in JSON ("\ud83d") is no character: U+FFFD, as
        # Tokenizer.encode (and tiktoken) give it, not the bytes a file's invalid bytes are
        # (an ASCII text holds none: the search of each line is left to the others)
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _check_start(file: SourceFile, field: str, purpose: str, limit: int) -> None:
    """Read the start of a text or JSONL file (decompressed, at most ``limit`` bytes): not
    empty, not binary, and for JSONL the first record parses and has the field."""
    with open_stream(file) as (stream, _):
        sample = stream.read(limit)
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
                          "choose the text column (--field)")
    if field not in _string_columns(schema):
        raise CorpusError(f"{path}: the column {field!r} holds {schema.field(field).type}, not strings; "
                          f"choose a text column (--field): {', '.join(_string_columns(schema)) or 'none'}")
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
