"""The Evaluate tab's Health view and language-model panel.

Both work on the Evaluate tab's first tokenizer and its held-out sources, in a `ThreadJob`:

- `HealthView`: unreachable, partial, repetitive and (given held-out sources) unused
  tokens, one list each, with the token in readable form;
- `LmPanel`: a Kneser–Ney trigram model counted on a training source, its bits per byte
  on the held-out sources, and a few sampled lines with their tokens tinted.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from bpe_studio.app.file_dialogs import dialogs_for
from bpe_studio.app.widgets.token_view import TokenView
from bpe_studio.app.workers.thread_job import ThreadJob
from core.errors import CorpusError
from core.readable import readable

SHOWN = 500
"""Tokens listed per check (the count is always whole)."""


def _load(spec: Any) -> Any:
    from core.encode.tokenizer import Tokenizer

    return spec if isinstance(spec, Tokenizer) else Tokenizer.load(spec)


def _health_work(spec: Any, sources: list[str]) -> Any:
    from core.evaluate.health import health
    from core.evaluate.measures import evaluate

    tokenizer = _load(spec)
    counts = evaluate({"t": tokenizer}, sources).counts["t"] if sources else None
    return tokenizer, health(tokenizer, counts)


def _lm_work(spec: Any, train: str, held: list[str], samples: int) -> Any:
    from core.evaluate.ngram import bits_per_byte, encode_sources, sample_spans, train_ngram

    tokenizer = _load(spec)
    ids, _ = encode_sources(tokenizer, train)
    if len(ids) < 3:
        raise CorpusError(f"{train}: too little text to train on (fewer than 3 tokens)")
    model = train_ngram(ids, max(tokenizer.vocab) + 1)
    held_ids, nbytes = encode_sources(tokenizer, held)
    bpb = bits_per_byte(model, held_ids, nbytes)
    lines = [sample_spans(tokenizer, model.sample(40, seed=k)) for k in range(samples)]
    return tokenizer, len(ids), len(held_ids), bpb, lines


class HealthView(QWidget):
    """Junk tokens of one tokenizer. `check(spec, sources)` runs in the background.

    Signals: error(str), finished().
    """

    error = Signal(str)
    finished = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.job: ThreadJob | None = None
        self.report: Any = None
        self._name = ""
        self.check_button = QPushButton("Check the first tokenizer")
        self.status = QLabel("Unreachable, partial, repetitive and unused tokens of the first tokenizer listed.")
        self.status.setWordWrap(True)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["check / id", "token"])
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        top.addWidget(self.check_button)
        top.addWidget(self.status, 1)
        layout.addLayout(top)
        layout.addWidget(self.tree, 1)

    def check(self, spec: Any, sources: list[str], *, name: str = "") -> None:
        """Check ``spec`` (a tokenizer or its path), called ``name`` in the result line."""
        if self.job is not None and self.job.running:
            return
        self._name = name
        job = ThreadJob(_health_work, spec, sources, what="the health check", name="bpe-studio-health")
        job.returned.connect(self._on_result)
        job.failed.connect(self._on_failed)
        job.stopped.connect(self._on_stopped)
        self.job = job
        self.check_button.setEnabled(False)
        self.status.setText("Checking…")
        job.start()

    def shutdown(self) -> None:
        if self.job is not None:
            self.job.shutdown()

    def _on_result(self, result: tuple[Any, Any]) -> None:
        tokenizer, report = result
        self.report = report
        self.tree.clear()
        checks = [("unreachable", report.unreachable), ("partial UTF-8", report.partial),
                  ("repetitive", report.repetitive)]
        if report.unused is not None:
            checks.append(("unused on held-out text", report.unused))
        for title, ids in checks:
            top = QTreeWidgetItem([f"{title} ({len(ids):,})", ""])
            for token_id in ids[:SHOWN]:
                top.addChild(QTreeWidgetItem([str(token_id), readable(tokenizer.vocab[token_id])]))
            self.tree.addTopLevelItem(top)
        self.tree.resizeColumnToContents(0)
        self.status.setText(f"“{self._name}”: {report.size:,} tokens checked." if self._name
                            else f"{report.size:,} tokens checked.")

    def _on_failed(self, message: str) -> None:
        self.status.setText(message)
        self.error.emit(message)

    def _on_stopped(self, _cancelled: bool) -> None:
        self.check_button.setEnabled(True)
        self.finished.emit()


class LmPanel(QWidget):
    """A tiny trigram model on the first tokenizer's tokens: bits per byte and samples.

    Signals: error(str), finished().
    """

    error = Signal(str)
    finished = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.job: ThreadJob | None = None
        self.result: Any = None
        self._name = ""
        self.train_edit = QLineEdit()
        self.train_edit.setPlaceholderText("training text (file or folder)")
        self.browse_button = QPushButton("Browse…")
        self.run_button = QPushButton("Train and measure")
        self.status = QLabel("A Kneser–Ney trigram model on the first tokenizer's tokens, measured in bits per "
                             "byte on the held-out sources.")
        self.status.setWordWrap(True)
        self.samples = TokenView(limit=400)
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        top.addWidget(self.train_edit, 1)
        top.addWidget(self.browse_button)
        top.addWidget(self.run_button)
        layout.addLayout(top)
        layout.addWidget(self.status)
        layout.addWidget(self.samples, 1)
        self.browse_button.clicked.connect(self._browse)

    def _browse(self) -> None:
        path = dialogs_for(self).open_file("Training text for the model", "paths/heldout_folder")
        if path:
            self.train_edit.setText(path)

    def run(self, spec: Any, held: list[str], samples: int = 3, *, name: str = "") -> None:
        """Count the model on ``spec``'s tokens (``name``: how the result names the tokenizer)."""
        if self.job is not None and self.job.running:
            return
        self._name = name
        train = self.train_edit.text().strip()
        if not train:
            self._on_failed("choose the training text for the model first")
            self.finished.emit()
            return
        if not held:
            self._on_failed("add held-out sources to measure the model on")
            self.finished.emit()
            return
        job = ThreadJob(_lm_work, spec, train, held, samples, what="the language model", name="bpe-studio-lm")
        job.returned.connect(self._on_result)
        job.failed.connect(self._on_failed)
        job.stopped.connect(self._on_stopped)
        self.job = job
        self.run_button.setEnabled(False)
        self.status.setText(f"Counting the model on the tokens of “{name}”…" if name else "Counting the model…")
        job.start()

    def shutdown(self) -> None:
        if self.job is not None:
            self.job.shutdown()

    def _on_result(self, result: tuple[Any, int, int, float, list[Any]]) -> None:
        tokenizer, train_tokens, held_tokens, bpb, lines = result
        self.result = result
        who = f"“{self._name}” ({len(tokenizer):,} tokens)" if self._name else f"the tokenizer ({len(tokenizer):,} tokens)"
        self.status.setText(f"{who}: bits per byte on held-out text: {bpb:.4f}  ·  trained on {train_tokens:,} "
                            f"tokens, measured on {held_tokens:,}. Samples below, one token per tint.")
        from core.encode.tokenizer import TokenSpans

        text, spans = "", TokenSpans()
        for line_text, line_spans in lines:
            chars, nbytes = len(text), len(text.encode("utf-8"))
            for s in line_spans:
                spans.append(s.token_id, s.byte_start + nbytes, s.byte_end + nbytes, s.char_start + chars,
                             s.char_end + chars, s.partial, s.special)
            text += line_text + "\n\n"
        self.samples.set_encoding(text, spans, tokenizer)

    def _on_failed(self, message: str) -> None:
        self.status.setText(message)
        self.error.emit(message)

    def _on_stopped(self, _cancelled: bool) -> None:
        self.run_button.setEnabled(True)
        self.finished.emit()
