"""Building a `core.Tokenizer` from a result off the GUI thread.

Building the encoder tables for a 20k-token vocabulary takes ~0.15 s, long enough to be a
visible stall at the end of a run, so it happens in a background thread and the result
comes back as a signal. A newer request supersedes an older one still being built.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Signal, Slot

from bpe_studio.app.models.session import Session
from core.encode.tokenizer import Tokenizer


class TokenizerBuilder(QObject):
    """Builds tokenizers for sessions in the background.

    Signals:
        ready(tokenizer, merge_counts): the latest requested tokenizer is built
            (``merge_counts``: token id -> pair count at its merge).
        failed(str): the latest request could not be built (the message is for the user).
    """

    ready = Signal(object, object)
    failed = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._generation = 0
        self._lock = threading.Lock()
        # Emitted from the builder thread, received in this object's (the GUI) thread.
        self._built.connect(self._on_built)

    _built = Signal(int, object, object, str)

    def build(self, session: Session, prebuilt: object | None = None) -> None:
        """Start building the tokenizer of ``session``; `ready` or `failed` follows.

        ``prebuilt``: the session's tokenizer if it already exists (the training process
        builds a finished run's), so only the merge counts are left to gather.
        """
        with self._lock:
            self._generation += 1
            generation = self._generation
        thread = threading.Thread(
            target=self._run, args=(generation, session, prebuilt), name="bpe-studio-tokenizer", daemon=True
        )
        thread.start()

    def _run(self, generation: int, session: Session, prebuilt: object | None) -> None:
        try:
            tokenizer = prebuilt if prebuilt is not None else Tokenizer(
                session.vocab, session.merges, list(session.settings.special_tokens),
                pattern=session.settings.pattern,
            )
        except ValueError as e:
            result: tuple[object, object, str] = (None, None, f"The tokenizer cannot be built: {e}")
        else:
            result = (tokenizer, session.merge_counts_by_id(), "")
        try:
            self._built.emit(generation, *result)
        except RuntimeError:
            pass  # the window was closed and deleted meanwhile

    @Slot(int, object, object, str)
    def _on_built(self, generation: int, tokenizer: object, merge_counts: object, error: str) -> None:
        if generation != self._generation:
            return  # superseded by a newer request
        if error:
            self.failed.emit(error)
        else:
            self.ready.emit(tokenizer, merge_counts)
