"""Which tokenizer the window's file actions act on: the one trained last, or one opened in Explore.

Adds `CurrentController`. A training result (finished, cancelled, or a session opened)
becomes current at once, named ``"Trained on pydocs.txt (…)"``, and its `core.Tokenizer`
is built in the background (`TokenizerBuilder`); a tokenizer opened from files in Explore
becomes current when Explore shows it. Export, Save session and Encode all act on
`current`, so a message can never name one tokenizer and write another. The Result panel's
own Export and Save session act on `trained`, the result it shows, whatever is current.

    current = CurrentController(); current.changed.connect(rename_actions)
    current.publish(session)          # -> changed(…), then ready(tokenizer, merge_counts, title)
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Signal

from bpe_studio.app.models.current_tokenizer import CurrentTokenizer, trained_title
from bpe_studio.app.models.provenance import SourceOrigins
from bpe_studio.app.models.session import Session
from bpe_studio.app.workers.tokenizer_builder import TokenizerBuilder


class CurrentController(QObject):
    """Keeps `current` and the latest trained tokenizer.

    Signals:
        changed(CurrentTokenizer): another tokenizer (or the same one, now built) is current.
        ready(tokenizer, merge_counts, title): a trained tokenizer is built (Explore shows it;
            `origins` holds its merged tokens' provenance, if trained on named sources).
        failed(str): it could not be built.
    """

    changed = Signal(object)
    ready = Signal(object, object, str)
    failed = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.current = CurrentTokenizer()
        self.trained = CurrentTokenizer()  # the training result (or session) last published
        self.tokenizer: Any = None  # the latest trained one
        self.merge_counts: dict[int, int] | None = None
        self.origins: SourceOrigins | None = None  # its merged tokens' provenance (named sources)
        self.builder = TokenizerBuilder(self)
        self.builder.ready.connect(self._on_built)
        self.builder.failed.connect(self.failed)

    def publish(self, session: Session, prebuilt: object | None = None) -> None:
        """A training result exists: it becomes current; its tokenizer is built in the
        background (``prebuilt``: the training process's, if it made one)."""
        self.trained = CurrentTokenizer(None, trained_title(session), session)
        self._set(self.trained)
        self.builder.build(session, prebuilt)

    def show_opened(self, tokenizer: Any, title: str) -> None:
        """Explore shows ``tokenizer``: one opened from files becomes current."""
        if tokenizer is not self.current.tokenizer:
            self._set(CurrentTokenizer(tokenizer, title, None))

    def shutdown(self, timeout_ms: int = 30_000) -> bool:
        return self.builder.shutdown(timeout_ms)

    def _set(self, current: CurrentTokenizer) -> None:
        self.current = current
        self.changed.emit(current)

    def _on_built(self, tokenizer: Any, merge_counts: dict[int, int]) -> None:
        self.tokenizer, self.merge_counts, self.origins = tokenizer, merge_counts, self.builder.origins
        trained = self.trained
        if trained.session is not None:
            self.trained = CurrentTokenizer(tokenizer, trained.title, trained.session)
        if self.current.session is not None:
            self._set(self.trained)
        self.ready.emit(tokenizer, merge_counts, self.trained.title)
