"""Encoding a corpus — files, folders, globs; text, JSONL, Parquet; compressed — to a ``.npy`` of ids.

Adds `encode_corpus_events` (an iterator of progress events that a GUI worker or a terminal
display follows; closing it cancels) and `encode_corpus`, which consumes it. Documents are
encoded in order, in parallel, each followed by a separator token's id (by default
``<|endoftext|>`` when the tokenizer has it; `separator_id`):

    encode_corpus("corpus.txt", tok, "ids.npy", doc_separator=None)   # == tok.encode(file's bytes)
    encode_corpus(["shards/", "more/*.jsonl.zst"], tok, "ids.npy", read=ReadOptions(field="body"))

A single plain file read whole, with no separator, goes through `core.encode.plain_file`
(chunks of the file, exactly the ids of its text); everything else through
`core.encode.documents`. The ids stream into a temporary file beside the output, which is
renamed into place only when all is done: nothing is left on error or cancel. A source
that changes while it is encoded (truncated, appended, rewritten) is an error
(`core.corpus.documents.check_unchanged`, as training and counting check it).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

from core.corpus.documents import check_unchanged
from core.corpus.sources import Corpus, ReadOptions, Source, open_corpus
from core.encode.documents import documents_events
from core.encode.pipeline import (
    EncodeFinished,
    EncodeProgress,
    NpyOut,
    chunk_bytes_for,
    dtype_for_largest_id,
    ids_dtype,
)
from core.encode.plain_file import plain_file_events
from core.encode.tokenizer import Tokenizer
from core.errors import OptionsError, OptionsTypeError
from core.formats.atomic import atomic_output, check_output_dir

__all__ = [
    "DEFAULT_SEPARATOR", "EncodeFinished", "EncodeProgress", "check_output", "dtype_for_largest_id",
    "encode_corpus", "encode_corpus_events", "ids_dtype", "separator_id",
]

DEFAULT_SEPARATOR = "<|endoftext|>"


def check_output(out: Path) -> None:
    """Refuse an output path that is a folder, whose folder does not exist, or where no
    file can be created (before any work)."""
    if out.is_dir():
        raise IsADirectoryError(f"{out} is a directory (out=); give a file name such as ids.npy")
    if not out.parent.is_dir():
        raise FileNotFoundError(f"the directory for {out} does not exist; create it first")
    check_output_dir(out.parent)


def separator_id(tokenizer: Tokenizer, token: str | None | bool) -> int | None:
    """The id written after each document: ``True`` means `DEFAULT_SEPARATOR` if the
    tokenizer has it (else none); ``None``/``False`` none; a string, that token.

    Raises:
        ValueError: the token is not one token of this tokenizer.
    """
    if token is None or token is False:
        return None
    if token is True:
        return tokenizer.special_ids.get(DEFAULT_SEPARATOR)
    if token in tokenizer.special_ids:
        return tokenizer.special_ids[token]
    ids = tokenizer.encode(token) if token else []
    if len(ids) != 1:
        specials = ", ".join(tokenizer.special_tokens) or "none"
        raise OptionsError(f"the separator {token!r} (doc_separator=) is not one token of this tokenizer "
                           f"(its special tokens: {specials}); choose one of them")
    return ids[0]


def encode_corpus_events(
    sources: Source | Corpus,
    tokenizer: Tokenizer,
    out_npy: str | os.PathLike[str],
    *,
    read: ReadOptions | None = None,
    workers: int | None = None,
    doc_separator: str | None | bool = True,
    chunk_bytes: int | None = None,
    start_method: str | None = None,
) -> Iterator[EncodeProgress | EncodeFinished]:
    """Encode ``sources`` into ``out_npy``, yielding `EncodeProgress` as it goes and
    `EncodeFinished` last.

    The sources and the output are checked at once (this call raises before any work: the
    same checks as training — regular, non-empty, text files; JSONL fields; Parquet
    columns). Closing the iterator early stops the workers and leaves ``out_npy`` untouched.

    Args:
        sources: a file, folder or glob, or a list of them (invalid UTF-8 bytes of plain
            text are encoded as the bytes they are); or a `Corpus` already checked
            (`open_corpus`, with ``read``), not checked again.
        tokenizer: the tokenizer to encode with.
        out_npy: the ``.npy`` to write (``uint16`` ids when the largest id fits, else ``uint32``).
        read: what to read (`ReadOptions`: field, sample and seed, document cap, max bytes).
        workers: threads (native encoder) or processes to encode in (default: all cores).
        doc_separator: the token whose id follows each document (see `separator_id`).
        chunk_bytes: approximate task size (default: from the input size and workers).
        start_method: how worker processes start, ``"fork"`` or ``"spawn"``; by default fork
            when that is safe (`core.workers.processes.can_fork`), else spawn.

    Raises:
        FileNotFoundError, IsADirectoryError, PermissionError, CorpusError, ValueError:
            a bad source, output or argument, with a message saying what to fix.
        CorpusError: (while iterating) a source changed during the run; nothing is written.
    """
    started = time.monotonic()  # the checks of many small files are part of the time
    out = Path(out_npy)
    read = read if read is not None else ReadOptions()
    if not isinstance(read, ReadOptions):
        raise OptionsTypeError(f"read must be a ReadOptions, got {type(read).__name__}")
    sep_id = separator_id(tokenizer, doc_separator)
    corpus = sources if isinstance(sources, Corpus) else open_corpus(sources, read, purpose="encode")
    check_output(out)
    workers = max(1, workers if workers is not None else (os.cpu_count() or 1))
    if chunk_bytes is None:
        chunk_bytes = chunk_bytes_for(corpus.input_bytes, workers)
    if start_method not in (None, "fork", "spawn"):
        raise OptionsError(f'start_method must be "fork", "spawn" or None, not {start_method!r}')
    return _encode(corpus, tokenizer, out, sep_id, workers, chunk_bytes, start_method, started)


def _encode(corpus: Corpus, tok: Tokenizer, out: Path, sep_id: int | None, workers: int, chunk_bytes: int,
            start_method: str | None, started: float) -> Iterator[EncodeProgress | EncodeFinished]:
    [first, *others] = corpus.files
    options = corpus.options
    whole = options.sample is None and options.max_bytes is None and options.doc_max_chars is None
    with atomic_output(out) as f:
        npy = NpyOut(f, ids_dtype(tok))  # from the largest id, never the token count
        try:
            if sep_id is None and whole and not others and first.kind == "text" and not first.streamed:
                yield from plain_file_events(first, tok, npy, workers, chunk_bytes, start_method)
                text_bytes = first.size
            else:
                text_bytes = yield from documents_events(corpus, tok, npy, sep_id, workers, chunk_bytes,
                                                         start_method)
        except (OSError, ValueError):
            check_unchanged(corpus)  # a file that changed explains a read error (half a line): say so
            raise
        check_unchanged(corpus)  # a file truncated, appended or rewritten: no output
        npy.finish()
    yield EncodeFinished(out, npy.tokens, text_bytes, npy.dtype.name, time.monotonic() - started)


def encode_corpus(
    sources: Source,
    tokenizer: Tokenizer,
    out_npy: str | os.PathLike[str],
    *,
    read: ReadOptions | None = None,
    workers: int | None = None,
    doc_separator: str | None | bool = True,
    progress: Callable[[EncodeProgress], object] | None = None,
    chunk_bytes: int | None = None,
    start_method: str | None = None,
) -> EncodeFinished:
    """Encode ``sources`` into a ``.npy`` of ids; see `encode_corpus_events`.

    With ``doc_separator=None`` and one plain file, ``numpy.load(out_npy)`` equals
    ``tokenizer.encode(the file's bytes)``.

    Args:
        progress: called with each `EncodeProgress`.
    """
    events = encode_corpus_events(sources, tokenizer, out_npy, read=read, workers=workers,
                                  doc_separator=doc_separator, chunk_bytes=chunk_bytes, start_method=start_method)
    assert isinstance(events, Generator)
    finished = None
    try:
        for event in events:
            if isinstance(event, EncodeFinished):
                finished = event
            elif progress is not None:
                progress(event)
    finally:
        events.close()
    assert finished is not None
    return finished
