"""The documents pipeline: the documents of any corpus source, in order, to ids, in parallel.

`documents_events` is what `core.encode.corpus.encode_corpus_events` runs for every source
but a single plain file read whole: files, folders, globs; text, JSONL, Parquet;
compressed; sampled or capped (`core.corpus.sources.ReadOptions`). The documents come from
`core.corpus.documents` as tasks; each document is followed by a separator token's id (if
any).

A document boundary acts like a special token here: a task's documents are joined with a
character found in none of them, which the task's encoder treats as one more special
token mapped to the separator's id (or dropped), so no pre-token spans two documents and
each document encodes exactly as it would alone.

``max_bytes`` stops where that much text has been taken: results are taken in order, and
the task during which the cap is reached is encoded again, cut there (at a character
boundary, never inside a special token), as counting does (`core.corpus.counting`).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator

import numpy as np

from core.corpus.documents import (
    Block,
    FileRange,
    LazyTasks,
    Task,
    cut_bytes,
    encode_text,
    read_documents,
    separator_for,
)
from core.corpus.planning import plan_tasks
from core.workers.processes import can_fork
from core.workers.scheduler import WorkerPool, results_in_order
from core.corpus.sources import Corpus, ReadOptions
from core.encode.pipeline import (
    ENCODE_CACHE_ENTRIES,
    EncodeProgress,
    NpyOut,
    cache_snapshot,
    start_workers,
    thread_encoders,
    worker_encoder,
)
from core.encode.engine import TextEncoder
from core.encode.tokenizer import Tokenizer

__all__ = ["documents_events"]

_DROPPED = -1
"""The id a boundary gets when no separator is written (removed before writing)."""

Job = tuple[Task, ReadOptions, "int | None", str]
Encoded = tuple[np.ndarray, int]  # ids, text bytes


def documents_events(corpus: Corpus, tok: Tokenizer, out: NpyOut, sep_id: int | None, workers: int,
                     chunk_bytes: int, start_method: str | None) -> Generator[EncodeProgress, None, int]:
    """Encode ``corpus``'s documents into ``out``, yielding progress after each task;
    returns (as the generator's value) the bytes of text encoded.

    The caller owns ``out`` and checks afterwards that no file changed."""
    encoder = tok._text_encoder(ENCODE_CACHE_ENTRIES)
    encoder.pieces.prepare()
    options = corpus.options
    tasks = plan_tasks(corpus, tok.pattern, tok.special_tokens, chunk_bytes)
    lazy: LazyTasks[Job] = LazyTasks(tasks, lambda task: (task, options, sep_id, out.dtype.str))
    size = corpus.input_bytes
    cap = options.max_bytes
    pool = None
    try:
        results: Iterator[Encoded | None]
        if workers > 1 and lazy.at_least(2) and encoder.native_available() and all(
                file.kind == "text" for file in corpus.files):
            # threads: reading text and encoding release the GIL
            pool = WorkerPool(workers, threads=True)
            thread_encoder = thread_encoders(tok, encoder)

            def encode(job: Job, _warm: object = None) -> Encoded:
                return _encode_documents(thread_encoder(), *job)

            results = results_in_order(lazy, pool, encode)
        elif workers > 1 and lazy.at_least(2):
            fork = start_method == "fork" or (start_method is None and can_fork())
            pool = start_workers(encoder, workers if fork else workers - 1, fork)
            here = not pool.started_at_once
            results = results_in_order(
                lazy, pool, _encode_job,
                run_here=(lambda job: _encode_documents(encoder, *job)) if here else None,
                warm_up=cache_snapshot(encoder) if here else None,
            )
        else:
            results = (_encode_documents(encoder, *job) for job in iter(lazy.take, None))
        done = taken = 0
        yield EncodeProgress(0, size, 0)
        for result in results:
            if result is None:
                continue
            ids, text = result
            task = lazy.handed.popleft()
            if cap is not None and taken + text > cap:  # the cap falls here: encode again, cut
                fresh = tok._text_encoder(ENCODE_CACHE_ENTRIES)  # ``encoder`` may be a worker thread's
                ids, text = _encode_documents(fresh, task, options, sep_id, out.dtype.str, cap - taken)
            taken += text
            done += task.input_bytes
            out.write(ids)
            yield EncodeProgress(done, size, out.tokens)
            if cap is not None and taken >= cap:
                break
        if lazy.error is not None:
            raise lazy.error
    finally:
        if pool is not None:
            pool.close()
    return taken


def _encode_job(job: Job, warm: object = None) -> Encoded:
    encoder = worker_encoder()
    if warm is not None:
        encoder.pieces.warm(warm)  # type: ignore[arg-type]
    return _encode_documents(encoder, *job)


def _encode_documents(encoder: TextEncoder, task: Task, options: ReadOptions, sep_id: int | None,
                      dtype: str, cap: int | None = None) -> Encoded:
    """The ids of one task's documents, each followed by ``sep_id`` (if any), and their
    text's size in bytes; with ``cap``, only the first ``cap`` bytes of text."""
    out: list[np.ndarray] = []
    text_bytes = 0
    specials = list(encoder.special_ids)
    for part, _documents in read_documents(task, options, []):
        if cap is not None and text_bytes >= cap:
            break
        if isinstance(part, bytes):
            if cap is not None and text_bytes + len(part) > cap:
                text = cut_bytes(part.decode("utf-8", "surrogateescape"), cap - text_bytes, specials)
                part = encode_text(text)
            out.append(encoder.encode_to_array(part))
            text_bytes += len(part)
            continue
        if cap is not None:
            part = _cut_documents(part, cap - text_bytes, specials)
        if not part:
            continue
        marker = _DROPPED if sep_id is None else sep_id
        sep = separator_for(part, specials)
        if sep:
            joined = TextEncoder(encoder.pieces, {**encoder.special_ids, sep: marker})
            ids = joined.encode_to_array(encode_text(sep.join(part) + sep))
        else:  # every candidate character is in the text: one document at a time
            ids = np.concatenate([np.append(encoder.encode_to_array(encode_text(doc)), marker) for doc in part])
        out.append(ids[ids != _DROPPED] if sep_id is None else ids)
        text_bytes += sum(len(encode_text(doc)) for doc in part)
    ends_text_document = (isinstance(task, FileRange) and task.end == task.file.size) or (
        isinstance(task, Block) and task.ends_file)
    if cap is not None and text_bytes >= cap:
        ends_text_document = True  # the last document read is cut there: it ends
    if sep_id is not None and ends_text_document and isinstance(task, (FileRange, Block)) and task.file.kind == "text":
        out.append(np.array([sep_id], dtype=np.int64))
    if not out:
        return np.zeros(0, dtype=dtype), text_bytes
    return np.concatenate(out).astype(dtype), text_bytes


def _cut_documents(docs: list[str], limit: int, specials: list[str]) -> list[str]:
    """The documents up to ``limit`` bytes of text, the last one cut there (`cut_bytes`)."""
    kept: list[str] = []
    for doc in docs:
        if limit <= 0:
            break
        size = len(encode_text(doc))
        kept.append(doc if size <= limit else cut_bytes(doc, limit, specials))
        limit -= size
    return kept
