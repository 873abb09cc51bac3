"""Saving and opening sessions (a training result in a ``.bpesession`` file), without a window.

Adds `SessionController`: the session policy (only a result trained here has a session; a
tokenizer opened from files has none, and the message says what to do instead), saving in
a `ThreadJob` off the GUI thread (the writer is atomic: nothing half-written), and opening.

    sessions = SessionController(); sessions.saved.connect(...); sessions.save("run.bpesession", current)
    session = sessions.open("run.bpesession")       # None on error (`failed` says why)
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import Signal

from bpe_studio.app.models.current_tokenizer import CurrentTokenizer
from bpe_studio.app.models.session import Session, load_session, save_session
from bpe_studio.app.workers.thread_job import OneJobAtATime, ThreadJob

SESSION_SUFFIX = ".bpesession"


def session_refusal(current: CurrentTokenizer) -> str:
    """Why ``current`` has no session to save ("" if it has one)."""
    if current.session is not None:
        return ""
    if current.tokenizer is not None:
        return (f"“{current.title}” was opened from files, not trained here: a session holds a training "
                "result. Export (Ctrl+E) writes its files; train to make a session.")
    return "Nothing to save yet: train a tokenizer first."


class SessionController(OneJobAtATime):
    """Saves sessions in the background and opens them.

    Signals:
        saved(str, Path): the session is written: the message for the user, and its path.
        failed(str): nothing to save, or saving or opening failed (one line for the user).
    """

    saved = Signal(str, object)

    def save(self, path: str | os.PathLike[str], current: CurrentTokenizer) -> ThreadJob | None:
        """Start saving ``current``'s session to ``path``; `saved` or `failed` follows.

        Returns the job, or None if it did not start (`failed` says why).
        """
        problem = session_refusal(current) or ("A session is being saved already: wait for it." if self.busy else "")
        if problem:
            self.failed.emit(problem)
            return None
        job = ThreadJob(save_session, Path(path), current.session, what="Saving the session",
                        name="bpe-studio-session", failure_prefix="The session could not be saved: ", parent=self)
        return self._start(job, lambda written: self.saved.emit(f"Session of “{current.title}” saved to {written}", written))

    def open(self, path: str | os.PathLike[str]) -> Session | None:
        """The session in ``path``, or None (`failed` says why)."""
        try:
            return load_session(path)
        except (OSError, ValueError) as e:
            self.failed.emit(f"The session could not be opened: {e}")
            return None
