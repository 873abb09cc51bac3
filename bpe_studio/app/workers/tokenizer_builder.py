"""Building a `core.Tokenizer` from a result off the GUI thread.

Building the encoder tables for a large vocabulary takes long enough to be a visible stall
at the end of a run, so it happens in a background job (`LatestJob`) and the result comes
back as a signal. A newer request supersedes an older one still being built.
Trained on named sources, the merged tokens' provenance is gathered there too (`origins`).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal, Slot

from bpe_studio.app.models.provenance import SourceOrigins
from bpe_studio.app.models.session import Session
from bpe_studio.app.workers.thread_job import LatestJob
from core.encode.tokenizer import Tokenizer
from core.errors import BpeStudioError, TokenizerError
from core.events import Finished
from core.pretokenize.patterns import resolve_pattern


def build_tokenizer(session: Session, prebuilt: object | None = None) -> tuple[object, dict[int, int]]:
    """The tokenizer of ``session`` (``prebuilt`` if given) and its merge counts by token id.

    Raises:
        TokenizerError: the session's vocabulary, merges or special tokens do not make a tokenizer.
    """
    if prebuilt is not None:
        tokenizer = prebuilt
    else:
        settings = session.settings
        variant = getattr(settings.options, "variant", None)
        try:
            if variant is not None:  # encodes as the variant does (SuperBPE's cut, Picky's removals)
                finished = Finished(session.vocab, session.merges, tuple(session.splits),
                                    session.stats.get("stage1_merges"))
                tokenizer = variant.tokenizer(finished, list(settings.special_tokens), resolve_pattern(settings.pattern))
            else:
                tokenizer = Tokenizer(session.vocab, session.merges, list(settings.special_tokens),
                                      pattern=settings.pattern)
        except BpeStudioError as e:
            raise TokenizerError(f"The tokenizer cannot be built: {e}") from e
    return tokenizer, session.merge_counts_by_id()


def session_origins(session: Session) -> SourceOrigins | None:
    """Each merged token's pair counts per source, if ``session`` was trained on named sources."""
    sources = getattr(session, "sources", ())
    by_id = session.provenance_by_id() if sources else {}
    return SourceOrigins(tuple(sources), by_id) if by_id else None


def _build(session: Session, prebuilt: object | None) -> tuple[object, dict[int, int], SourceOrigins | None]:
    tokenizer, merge_counts = build_tokenizer(session, prebuilt)
    return tokenizer, merge_counts, session_origins(session)


class TokenizerBuilder(QObject):
    """Builds tokenizers for sessions in the background.

    Signals:
        ready(tokenizer, merge_counts): the latest requested tokenizer is built
            (``merge_counts``: token id -> pair count at its merge).
        failed(str): the latest request could not be built (the message is for the user).

    Attributes:
        origins: when `ready` is emitted, the provenance of that tokenizer's merged tokens
            (`SourceOrigins`; None unless trained on named sources).
    """

    ready = Signal(object, object)
    failed = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._builds = LatestJob("building the tokenizer", name="bpe-studio-tokenizer", parent=self)
        self._builds.returned.connect(self._on_built)
        self._builds.failed.connect(self.failed)
        self.origins: SourceOrigins | None = None

    def build(self, session: Session, prebuilt: object | None = None) -> None:
        """Start building the tokenizer of ``session``; `ready` or `failed` follows.

        ``prebuilt``: the session's tokenizer if it already exists (the training process
        builds a finished run's), so only the merge counts are left to gather.
        """
        self._builds.start(_build, session, prebuilt)

    def shutdown(self, timeout_ms: int = 30_000) -> bool:
        """Drop the pending request and wait for the builds still running (window closing)."""
        return self._builds.shutdown(timeout_ms)

    @Slot(object)
    def _on_built(self, built: tuple[object, dict[int, int], SourceOrigins | None]) -> None:
        tokenizer, merge_counts, self.origins = built
        self.ready.emit(tokenizer, merge_counts)
