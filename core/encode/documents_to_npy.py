"""Encoding a corpus source — files, folders, globs; text, JSONL, Parquet; compressed — to ``.npy``.

Adds `encode_source_events` / `encode_source`: the documents of a source
(`core.corpus.documents`), in order, encoded in parallel, with a separator token's id after
each document (by default ``<|endoftext|>`` when the tokenizer has it). A single plain
file without a separator goes `core.encode.corpus_to_npy`'s way (the same ids).

A document boundary acts like a special token here too: a task's documents are joined
with a character found in none of them, which the task's encoder treats as one more
special token mapped to the separator's id (or dropped), so no pre-token spans two
documents and each document encodes exactly as it would alone.
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator, Iterator
from pathlib import Path

import numpy as np

from core.corpus.documents import (
    Block,
    FileRange,
    LazyTasks,
    Task,
    check_unchanged,
    encode_text,
    plan_tasks,
    read_documents,
    separator_for,
)
from core.corpus.processes import can_fork
from core.corpus.scheduler import WorkerPool, results_in_order
from core.corpus.sources import Corpus, ReadOptions, Source, open_corpus
from core.encode import corpus_to_npy as single
from core.encode.corpus_to_npy import EncodeFinished, EncodeProgress
from core.encode.tokenizer import TextEncoder, Tokenizer
from core.formats.atomic import atomic_output, check_output_dir

__all__ = ["DEFAULT_SEPARATOR", "check_output", "encode_source", "encode_source_events", "separator_id"]

DEFAULT_SEPARATOR = "<|endoftext|>"
_DROPPED = -1
"""The id a boundary gets when no separator is written (removed before writing)."""

EncodeJob = tuple[Task, ReadOptions, "int | None", str]


def check_output(out: Path) -> None:
    """Refuse an output path that is a folder, whose folder does not exist, or where no
    file can be created (before any work)."""
    if out.is_dir():
        raise IsADirectoryError(f"--out {out} is a directory; give a file name such as ids.npy")
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
        raise ValueError(f"--doc-separator {token!r} is not one token of this tokenizer "
                         f"(its special tokens: {specials}); choose one of them")
    return ids[0]


def _encode_documents(encoder: TextEncoder, task: Task, options: ReadOptions, sep_id: int | None,
                      dtype: str) -> tuple[np.ndarray, int]:
    """The ids of one task's documents, each followed by ``sep_id`` (if any), and their
    text's size in bytes."""
    out: list[np.ndarray] = []
    text_bytes = 0
    specials = list(encoder.special_ids)
    for part, _documents in read_documents(task, options, []):
        if isinstance(part, bytes):
            out.append(encoder.encode_bytes_array(part))
            text_bytes += len(part)
            continue
        if not part:
            continue
        marker = _DROPPED if sep_id is None else sep_id
        sep = separator_for(part, specials)
        if sep:
            joined = TextEncoder(encoder.pieces, {**encoder.special_ids, sep: marker})
            ids = joined.encode_bytes_array(encode_text(sep.join(part) + sep))
        else:  # every candidate character is in the text: one document at a time
            ids = np.concatenate([np.append(encoder.encode_bytes_array(encode_text(doc)), marker) for doc in part])
        out.append(ids[ids != _DROPPED] if sep_id is None else ids)
        text_bytes += sum(len(encode_text(doc)) for doc in part)
    ends_text_document = (isinstance(task, FileRange) and task.end == task.file.size) or (
        isinstance(task, Block) and task.ends_file)
    if sep_id is not None and ends_text_document and isinstance(task, (FileRange, Block)) and task.file.kind == "text":
        out.append(np.array([sep_id], dtype=np.int64))
    if not out:
        return np.zeros(0, dtype=dtype), text_bytes
    return np.concatenate(out).astype(dtype), text_bytes


def _encode_job(job: EncodeJob, warm: object = None) -> tuple[np.ndarray, int]:
    encoder = single._worker_encoder
    assert encoder is not None
    if warm is not None:
        encoder.pieces.warm(warm)  # type: ignore[arg-type]
    return _encode_documents(encoder, *job)


def encode_source_events(
    source: Source,
    tokenizer: Tokenizer,
    out_path: str | os.PathLike[str],
    *,
    field: str = "text",
    doc_separator: str | None | bool = True,
    workers: int | None = None,
    chunk_bytes: int | None = None,
    start_method: str | None = None,
) -> Iterator[EncodeProgress | EncodeFinished]:
    """Encode a corpus source into ``out_path`` (``.npy``), yielding progress as it goes.

    The source and output are checked at once (the same checks as training: regular,
    non-empty, text files; JSONL fields; Parquet columns), before any work. Closing the
    iterator early stops the workers and leaves ``out_path`` untouched.

    Args:
        source: a file, folder, glob or a list of them (see `core.train_bpe`).
        field: the JSONL field / Parquet column holding the text.
        doc_separator: the token whose id follows each document (see `separator_id`).
        workers, chunk_bytes, start_method: as `core.encode_file_events`.
    """
    out = Path(out_path)
    sep_id = separator_id(tokenizer, doc_separator)
    corpus = open_corpus(source, ReadOptions(field), purpose="encode")
    check_output(out)
    [first, *others] = corpus.files
    if sep_id is None and not others and first.kind == "text" and not first.streamed:
        return single.encode_file_events(first.path, tokenizer, out, workers=workers, chunk_bytes=chunk_bytes,
                                         start_method=start_method)
    workers = max(1, workers if workers is not None else (os.cpu_count() or 1))
    size = corpus.input_bytes
    if chunk_bytes is None:
        chunk_bytes = min(single.MAX_CHUNK_BYTES, max(single.MIN_CHUNK_BYTES, size // (workers * 8) + 1))
    if start_method not in (None, "fork", "spawn"):
        raise ValueError(f'start_method must be "fork", "spawn" or None, not {start_method!r}')
    return _encode_source(corpus, tokenizer, out, sep_id, workers, chunk_bytes, start_method)


def _encode_source(corpus: Corpus, tok: Tokenizer, out: Path, sep_id: int | None, workers: int, chunk_bytes: int,
                   start_method: str | None) -> Iterator[EncodeProgress | EncodeFinished]:
    started = time.monotonic()
    dtype = single.ids_dtype(tok)  # from the largest id, never the token count
    encoder = tok.text_encoder(single.ENCODE_CACHE_ENTRIES)
    encoder.pieces.prepare()
    tasks = plan_tasks(corpus, tok.pattern, tok.special_tokens, chunk_bytes)
    lazy: LazyTasks[EncodeJob] = LazyTasks(tasks, lambda task: (task, corpus.options, sep_id, dtype.str))
    reserved = single._npy_header(0, dtype)
    size = corpus.input_bytes
    pool = None
    try:
        with atomic_output(out) as f:
            f.write(reserved)
            results: Iterator[tuple[np.ndarray, int] | None]
            if workers > 1 and lazy.at_least(2) and encoder.native_available() and all(
                    file.kind == "text" for file in corpus.files):
                # threads, as single.encode_file_events: reading text and encoding release the GIL
                pool = WorkerPool(workers, threads=True)
                thread_encoder = single.thread_encoders(tok, encoder)

                def encode(job: EncodeJob, _warm: object = None) -> tuple[np.ndarray, int]:
                    return _encode_documents(thread_encoder(), *job)

                results = results_in_order(lazy, pool, encode)
            elif workers > 1 and lazy.at_least(2):
                fork = start_method == "fork" or (start_method is None and can_fork())
                pool = single._start_workers(encoder, workers if fork else workers - 1, fork)
                here = not pool.started_at_once
                results = results_in_order(
                    lazy, pool, _encode_job,
                    run_here=(lambda job: _encode_documents(encoder, *job)) if here else None,
                    warm_up=single._cache_snapshot(encoder) if here else None,
                )
            else:
                results = (_encode_documents(encoder, *job) for job in iter(lazy.take, None))
            tokens = done = text_bytes = 0
            yield EncodeProgress(0, size, 0)
            for result in results:
                if result is None:
                    continue
                ids, text = result
                text_bytes += text
                done += lazy.handed.popleft().input_bytes
                ids.tofile(f)
                tokens += len(ids)
                yield EncodeProgress(done, size, tokens)
            if lazy.error is not None:
                raise lazy.error
            check_unchanged(corpus)
            single._write_npy_header(f, tokens, dtype)
    finally:
        if pool is not None:
            pool.close()
    yield EncodeFinished(out, tokens, text_bytes, dtype.name, time.monotonic() - started)


def encode_source(
    source: Source,
    tokenizer: Tokenizer,
    out_path: str | os.PathLike[str],
    *,
    field: str = "text",
    doc_separator: str | None | bool = True,
    workers: int | None = None,
) -> EncodeFinished:
    """Encode a corpus source into a ``.npy`` of ids; see `encode_source_events`."""
    events = encode_source_events(source, tokenizer, out_path, field=field, doc_separator=doc_separator,
                                  workers=workers)
    finished = None
    try:
        for event in events:
            if isinstance(event, EncodeFinished):
                finished = event
    finally:
        if isinstance(events, Generator):
            events.close()
    assert finished is not None
    return finished

