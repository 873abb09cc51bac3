"""Encoding a corpus to a ``.npy`` off the GUI thread: a `ThreadJob` over the core's events.

Its work (`encode_corpus`, in the job's worker thread) follows
`core.encode.corpus.encode_corpus_events` with workers *spawned* (forking a process
that runs Qt is unsafe); the job passes its progress on at most a few times a second.
Cancelling stops it at the next progress event: the job closes the generator in its
thread, which stops the worker processes and removes the temporary file. `EncodeJob` is
what the window uses:

    job = EncodeJob(corpus, tokenizer, "ids.npy"); job.finished.connect(...); job.start()
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

from bpe_studio.app.workers.thread_job import ThreadJob

if TYPE_CHECKING:
    from core.encode.corpus import EncodeFinished, EncodeProgress

PROGRESS_INTERVAL = 0.25
"""Seconds between two progress signals (the first and the last always go out)."""


def encode_corpus(
    corpus: Path, tokenizer: Any, out: Path, workers: int | None, doc_separator: str | bool | None = True,
) -> Generator[EncodeProgress, None, EncodeFinished]:
    """Encode ``corpus`` into ``out``, yielding progress; return the `EncodeFinished`.

    Documents (a plain file is one; JSONL records, Parquet rows) are each followed by the id
    of ``doc_separator`` — `core.encode.corpus.separator_id`'s rule, the one
    ``bpe-studio encode`` follows (``True``: ``<|endoftext|>`` when the tokenizer has it).
    """
    # not at the GUI's start
    from core.encode.corpus import EncodeFinished, encode_corpus_events

    events = encode_corpus_events(corpus, tokenizer, out, workers=workers, start_method="spawn",
                                  doc_separator=doc_separator)
    try:
        for event in events:
            if isinstance(event, EncodeFinished):
                return event  # the file is in place: a cancel now is too late to matter
            yield event
    finally:
        events.close()  # type: ignore[attr-defined]  # on cancel: stops the processes and removes the temporary file
    raise RuntimeError("the encoder ended without saying it finished")


class EncodeJob(ThreadJob):
    """One encoding run (`encode_corpus` in a `ThreadJob`).

    Signals:
        progress(EncodeProgress): throttled to one every `PROGRESS_INTERVAL` seconds.
        finished(EncodeFinished): the ``.npy`` is written.
        failed(str): encoding stopped on an error; one line for the user, naming the encoding.
        stopped(bool): the run is over (emitted last); ``True`` if it was cancelled.
    """

    progress = Signal(object)
    finished = Signal(object)

    def __init__(
        self,
        corpus: str | os.PathLike[str],
        tokenizer: Any,
        out: str | os.PathLike[str],
        *,
        workers: int | None = None,
        doc_separator: str | bool | None = True,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(
            encode_corpus, Path(corpus), tokenizer, Path(out), workers, doc_separator, what="Encoding",
            name="bpe-studio-encoding", interval_ms=int(PROGRESS_INTERVAL * 1000), parent=parent,
        )
        self.corpus = Path(corpus)
        self.out = Path(out)
        self.yielded.connect(self.progress)
        self.returned.connect(self.finished)

    def describe_failure(self, error: BaseException) -> str:
        # The banner shows this line alone, so it says what failed: "Encoding failed: …",
        # or "Encoding failed unexpectedly (KeyError: …)" for a bug.
        message = super().describe_failure(error)
        return f"Encoding failed: {message}" if isinstance(error, self.user_errors) else message
