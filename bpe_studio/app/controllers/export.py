"""Exporting the current tokenizer's files, off the GUI thread, with the export policy.

Adds `ExportController`: what may be exported (a cancelled run without a single merge
only when confirmed), the files written by `core.formats.save_tokenizer` in a `ThreadJob`
(the writers are atomic: a close while it runs waits for it, and nothing is half-written),
with ``provenance.tsv`` beside them for a result trained on named sources (as ``bpe-studio
train NAME=SOURCE …`` writes it), and the message that names what was written.

    exports = ExportController(); exports.finished.connect(banner.show_info)
    exports.export("out/", current)          # -> finished("Exported the tokenizer … to out/: vocab.json, …")
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import Signal

from bpe_studio.app.models.current_tokenizer import CurrentTokenizer
from bpe_studio.app.models.session import Session
from bpe_studio.app.workers.thread_job import OneJobAtATime, ThreadJob

NOTHING_TO_EXPORT = "Nothing to export yet: train a tokenizer, open a session, or open a tokenizer first."
EMPTY_PARTIAL = (
    "Not exported: training was cancelled before its first merge, so the result holds no merge. "
    "Train again, or confirm in File › Export… to write it anyway."
)


def write_tokenizer_files(folder: Path, current: CurrentTokenizer) -> list[Path]:
    """Write ``current``'s files into ``folder`` (runs in the export's worker thread)."""
    from core.formats import save_tokenizer  # not at the window's start

    session, tokenizer = current.session, current.tokenizer
    if session is not None:
        paths = save_tokenizer(folder, session.vocab, session.merges, list(session.settings.special_tokens),
                               session.settings.pattern)
    else:
        paths = save_tokenizer(folder, tokenizer.vocab, tokenizer.merges, list(tokenizer.special_tokens),
                               tokenizer.pattern)
    paths = list(paths)
    if session is not None and session.sources and len(session.per_source) == len(session.sources) * len(session.merges):
        paths.append(write_provenance(folder, session))
    return paths


def write_provenance(folder: Path, session: Session) -> Path:
    """``provenance.tsv`` in ``folder`` (docs/formats.md): each merge's count per named source
    (and, trained parity-aware, the language it was made for)."""
    from core.formats.atomic import atomic_output
    from core.training.provenance import provenance_records, provenance_tsv

    tokens = [left + right for left, right in session.merges]
    chosen = session.chosen if len(session.chosen) == len(session.merges) else ()  # parity-aware: the language
    records = provenance_records(session.sources, tokens, session.merge_counts, session.per_source, chosen)
    path = folder / "provenance.tsv"
    with atomic_output(path) as f:
        f.write(provenance_tsv(records, session.sources).encode("utf-8"))
    return path


def export_message(current: CurrentTokenizer, folder: Path, paths: list[Path]) -> str:
    """``"Exported the tokenizer “…” to out: vocab.json, merges.txt, …"`` (partial runs say so)."""
    session = current.session
    kind = "tokenizer"
    if session is not None and session.partial:
        kind = f"partial tokenizer ({len(session.merges):,} of {session.settings.max_merges:,} merges)"
    return f"Exported the {kind} “{current.title}” to {folder}: {', '.join(p.name for p in paths)}"


class ExportController(OneJobAtATime):
    """Writes tokenizer files in the background, one export at a time.

    Signals:
        finished(str, list): the files are written: the message for the user, and their paths.
        failed(str): nothing to export, or the export failed ("Export failed: …").
    """

    finished = Signal(str, object)

    def refusal(self, current: CurrentTokenizer, *, allow_empty: bool = False) -> str:
        """Why ``current`` cannot be exported now ("" if it can)."""
        if not current.exists:
            return NOTHING_TO_EXPORT
        if current.empty_partial and not allow_empty:
            return EMPTY_PARTIAL
        if current.session is None and current.tokenizer is None:
            return NOTHING_TO_EXPORT
        if self.busy:
            return "An export is being written already: wait for it to finish."
        return ""

    def export(self, folder: str | os.PathLike[str], current: CurrentTokenizer, *,
               allow_empty: bool = False) -> ThreadJob | None:
        """Start writing ``current``'s files into ``folder``; `finished` or `failed` follows.

        Returns the job, or None if it did not start (`failed` says why).
        """
        problem = self.refusal(current, allow_empty=allow_empty)
        if problem:
            self.failed.emit(problem)
            return None
        folder = Path(folder)
        job = ThreadJob(write_tokenizer_files, folder, current, what="Export", name="bpe-studio-export",
                        failure_prefix="Export failed: ", parent=self)
        return self._start(job, lambda paths: self.finished.emit(export_message(current, folder, paths), paths))
