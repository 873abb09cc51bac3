"""Encoding a corpus to ``.npy`` with the current tokenizer, without a window.

Adds `EncodingController` (one `EncodeJob` at a time: checks, progress, the result line,
cancel) and `separator_choices`. The separator after each document follows one rule for the
window and ``bpe-studio encode`` alike — `core.encode.corpus.separator_id`: the
default (``True``) is ``<|endoftext|>`` when the tokenizer has it, else none; a token
(``--doc-separator TOKEN``) or none (``--no-doc-separator``) can be chosen. Given the same
text, tokenizer and choice, both write the same bytes.

    encoding = EncodingController(); encoding.finished.connect(banner.show_info)
    encoding.start("corpus.txt", "ids.npy", current)            # the CLI's default separator
    encoding.start("corpus.txt", "ids.npy", current, doc_separator=None)   # --no-doc-separator
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from bpe_studio.app.models.current_tokenizer import CurrentTokenizer
from bpe_studio.app.workers.encode_job import EncodeJob

DEFAULT_SEPARATOR = "<|endoftext|>"
"""What ``doc_separator=True`` means when the tokenizer has it (`core.encode.corpus`)."""


def separator_choices(tokenizer: Any) -> list[tuple[str, str | bool | None]]:
    """The separators the Encode dialog offers, as (label, ``doc_separator``), the default first.

    The same choices as ``bpe-studio encode``: its default, each special token
    (``--doc-separator TOKEN``), and none (``--no-doc-separator``).
    """
    specials = list(getattr(tokenizer, "special_tokens", ()) or ())
    default = (f"{DEFAULT_SEPARATOR} after each document (the default)" if DEFAULT_SEPARATOR in specials
               else "none: the tokenizer has no <|endoftext|> (the default)")
    choices: list[tuple[str, str | bool | None]] = [(default, True)]
    choices += [(f"{token} after each document", token) for token in specials if token != DEFAULT_SEPARATOR]
    if DEFAULT_SEPARATOR in specials:
        choices.append(("none between documents", None))
    return choices


class EncodingController(QObject):
    """Encodes one corpus at a time with a given tokenizer.

    Signals:
        started(EncodeJob): a job started (its corpus, output and title are known).
        progress(EncodeProgress): throttled progress of the running job.
        finished(str): the ``.npy`` is written: its one-line summary, naming the tokenizer.
        failed(str): it could not start, or stopped on an error (one line for the user).
        stopped(bool): the job is over (True if cancelled; no ``.npy`` written then).
    """

    started = Signal(object)
    progress = Signal(object)
    finished = Signal(str)
    failed = Signal(str)
    stopped = Signal(bool)

    def __init__(self, parent: QObject | None = None, *, workers: int | None = None) -> None:
        super().__init__(parent)
        self.job: EncodeJob | None = None
        self.title = ""  # the tokenizer of the running (or last) job
        self.workers = workers

    @property
    def running(self) -> bool:
        return self.job is not None and self.job.running

    busy = running

    def refusal(self, corpus: str | os.PathLike[str], out: str | os.PathLike[str], current: CurrentTokenizer) -> str:
        """Why encoding ``corpus`` into ``out`` cannot start ("" if it can)."""
        if self.running:
            return "A corpus is being encoded already: wait for it or cancel it first."
        if current.tokenizer is None:
            return "Nothing to encode with yet: train a tokenizer or open one first."
        if Path(out).resolve() == Path(corpus).resolve():
            return f"{Path(out).name} is the corpus itself: choose another name for the .npy."
        return ""

    def start(self, corpus: str | os.PathLike[str], out: str | os.PathLike[str], current: CurrentTokenizer, *,
              doc_separator: str | bool | None = True) -> EncodeJob | None:
        """Start encoding ``corpus`` into ``out`` with ``current``'s tokenizer.

        Returns the job, or None when it could not start (`failed` says why).
        """
        problem = self.refusal(corpus, out, current)
        if problem:
            self.failed.emit(problem)
            return None
        job = EncodeJob(corpus, current.tokenizer, out, workers=self.workers, doc_separator=doc_separator, parent=self)
        self.title = current.title
        job.progress.connect(self.progress)
        job.finished.connect(lambda f: self.finished.emit(f"{f.summary()} — tokenizer “{self.title}”"))
        job.failed.connect(self.failed)
        job.stopped.connect(self.stopped)
        self.job = job
        job.start()
        self.started.emit(job)
        return job

    def cancel(self) -> bool:
        """Stop encoding; no ``.npy`` is written. False if nothing runs."""
        if not self.running or self.job is None:
            return False
        self.job.cancel()
        return True

    def shutdown(self, timeout_ms: int = 30_000) -> bool:
        """Cancel and wait for the job's thread (and its worker processes) to end."""
        return self.job.shutdown(timeout_ms) if self.job is not None else True
