"""The line under the corpus path: its size and files, kept true to what is on disk.

`CorpusInfo` shows `describe`'s line for the corpus (``"2 files · 1.2 MB"``), and reads the
disk again while the window is open — every few seconds for files named one by one (a few
stats), and for folders and globs too when the window comes back to the front and when Train
is pressed (`refresh`) — so a file changed or deleted elsewhere never leaves an old size on
screen, and the GUI thread never walks a folder on a timer. A source that no longer exists is shown as missing (red).
"""

from __future__ import annotations

import glob
import os

from PySide6.QtCore import QEvent, QTimer
from PySide6.QtWidgets import QWidget

from bpe_studio.app.models.sample_corpus import SAMPLE_CORPUS_PATH
from bpe_studio.app.models.session import split_sources
from bpe_studio.app.train.corpus_picker import describe, sources_exist
from bpe_studio.app.widgets.wrapped_hint import WrappedHint

WATCH_MS = 2000
"""How often files named one by one are looked at again."""


def corpus_line(path: str) -> tuple[str, bool]:
    """What the line says about the corpus ``path``, and whether a source of it is missing."""
    if not path:
        return "No corpus chosen.", False
    if os.path.isfile(path) and os.path.abspath(path) == str(SAMPLE_CORPUS_PATH):
        return f"{describe(path)} · the built-in sample corpus", False
    return describe(path), not sources_exist(path)


class CorpusInfo(WrappedHint):
    """The corpus's size line, read again from disk while it is shown (see the module docstring)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._corpus = ""
        self._watching = True
        self._timer = QTimer(self)
        self._timer.setInterval(WATCH_MS)
        self._timer.timeout.connect(self._on_timer)
        self._timer.start()

    def set_corpus(self, path: str) -> None:
        self._corpus = path
        self.refresh()

    def set_watching(self, watching: bool) -> None:
        """Look at the files again from time to time (not while a run reads them)."""
        self._watching = watching
        if watching:
            self.refresh()

    def refresh(self) -> None:
        """Read the corpus's files again now."""
        text, missing = corpus_line(self._corpus)
        self.setText(text)
        if self.property("invalid") != missing:
            self.setProperty("invalid", missing)
            self.style().unpolish(self)
            self.style().polish(self)

    def _on_timer(self) -> None:
        if self._watching and self.isVisible() and not any(os.path.isdir(s) or glob.has_magic(s)
                                                           for s in split_sources(self._corpus)):
            self.refresh()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.ActivationChange and self.isActiveWindow() and self._watching:
            self.refresh()  # back from another program, which may have changed the files
