"""The inspector: type or open text and see exactly how the tokenizer cuts it.

An editable text pane; below it the same text rendered as tokens (`TokenView`); beside
it the ids (copyable as a Python list or JSON). A figures line (tokens, characters,
UTF-8 bytes, bytes and characters per token), a round-trip indicator
(decode(encode(text)) == text, with the first difference when it fails) and a detail
line for the token under the mouse or clicked. Re-encodes 250 ms after typing stops;
long texts are encoded in a background job (`LatestJob`: the latest text wins) and only
the first tokens are drawn. A text too long to edit (a paste, a drop or a file past
`LONG_CHARS`) is shown in part: the editor holds its start, read-only; its first tokens
are drawn as soon as they are known while the rest is encoded in a stream (`long_text`),
and a note says so. An encoding error is shown in the panel's error line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from bpe_studio.app.explore.long_text import encode_long
from bpe_studio.app.models.sample_text import SAMPLE_TEXT
from bpe_studio.app.widgets.splitters import splitter
from bpe_studio.app.workers.heap import collections_paused
from bpe_studio.app.workers.thread_job import LatestJob, failure_message
from core.readable import readable_text
from bpe_studio.app.widgets.messages import as_sentence
from bpe_studio.app.widgets.text_editor import TextEditor, join_paste
from bpe_studio.app.widgets.token_view import TokenView

ENCODING = "encoding the text"  # for messages: "encoding the text failed unexpectedly (…)"
DEBOUNCE_MS = 250
HOVER_HINT = "Hover or click a token to see its id, bytes and merge rank."
BACKGROUND_CHARS = 20_000  # longer texts are encoded off the GUI thread
MAX_IDS_SHOWN = 2_000  # the ids pane shows this many (as many as the tokens drawn); Copy copies them all
MAX_FILE_BYTES = 20_000_000
BACKGROUND_FILE_BYTES = 1 << 20  # larger files are read and decoded off the GUI thread
LONG_CHARS = 1_000_000  # longer texts are shown in part, read-only, and encoded in a stream
PREVIEW_CHARS = 100_000  # the editor shows this much of such a text


def round_trip_report(text: str, decoded: str) -> str | None:
    """None when ``decoded == text``, else where and how they first differ."""
    if decoded == text:
        return None
    i = next((k for k, (a, b) in enumerate(zip(text, decoded)) if a != b), min(len(text), len(decoded)))
    want = readable_text(text[i : i + 8]) or "end of text"
    got = readable_text(decoded[i : i + 8]) or "end of text"
    return f"first difference at character {i:,}: text has “{want}”, decode gives “{got}”"


def encode_text(tokenizer: Any, text: str) -> dict[str, Any]:
    """Encode ``text`` and gather everything the inspector shows (runs in any thread)."""
    with collections_paused():
        spans = tokenizer.encode_with_spans(text)
        ids = spans.token_ids.tolist()
        decoded = tokenizer.decode(ids)
    return {"error": None, "text": text, "spans": spans, "ids": ids, "round_trip": round_trip_report(text, decoded)}


def read_text_file(path: Path) -> str:
    """A text file's text, invalid UTF-8 replaced (runs in any thread; `join_paste` decodes
    a megabyte at a time, so the GUI thread gets the GIL between the pieces).

    Raises:
        OSError: the file cannot be read; the message names it.
    """
    try:
        data = path.read_bytes()
    except OSError as e:
        raise OSError(f"Cannot read {path}: {e.strerror or e}") from None
    return join_paste("", data, "")


class InspectorPanel(QWidget):
    """Text in, tokens out. `set_tokenizer` chooses the tokenizer; `set_text` the text."""

    token_clicked = Signal(int)  # a token id clicked in the rendered pane
    encoded = Signal()  # an encoding finished and is shown

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._tokenizer: Any = None
        self.result: dict[str, Any] = {"error": None, "spans": [], "ids": []}
        self.round_trip_ok: bool | None = None
        self.figures: dict[str, int] = {}
        self._encoding = LatestJob(ENCODING, name="bpe-studio-inspector", parent=self)
        self._encoding.returned.connect(self._on_encoded)
        self._encoding.failed.connect(self._on_encode_failed)
        self._reading = LatestJob("reading the text", name="bpe-studio-reading", parent=self)
        self._reading.returned.connect(self.set_text)
        self._reading.failed.connect(self._on_read_failed)

        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.editor = TextEditor(LONG_CHARS)
        self.editor.setPlaceholderText("Type or paste text here, or open a text file…")
        self.editor.setFont(mono)
        self.token_view = TokenView()
        self.token_view.setFont(mono)

        self.open_button = QPushButton("Open text file…")
        self.sample_button = QPushButton("Sample text")
        self.figures_label = QLabel()
        self.figures_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.round_trip_label = QLabel()
        self.round_trip_label.setWordWrap(True)
        self.error_label = QLabel()
        self.error_label.setStyleSheet("color: #c62828;")
        self.error_label.setTextFormat(Qt.TextFormat.PlainText)  # messages may quote "<|…|>"
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.hide()
        self.long_note = QLabel()  # what of a long text is shown, edited and coloured
        self.long_note.setWordWrap(True)
        self.long_note.setStyleSheet("color: #b26a00;")
        self.edit_start_button = QPushButton("Edit the start only")
        self.edit_start_button.setToolTip("Keep the characters the editor shows, drop the rest, and edit them.")
        long_row = QWidget()
        long_layout = QHBoxLayout(long_row)
        long_layout.setContentsMargins(0, 0, 0, 0)
        long_layout.addWidget(self.long_note, 1)
        long_layout.addWidget(self.edit_start_button)
        self._long_row = long_row
        long_row.hide()
        self._long_text: str | None = None  # the whole text, while it is too long for the editor
        self.detail_label = QLabel(HOVER_HINT)
        self.detail_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.detail_label.setFont(mono)
        self.detail_label.setWordWrap(True)

        self.ids_view = QPlainTextEdit()
        self.ids_view.setReadOnly(True)
        self.ids_view.setFont(mono)
        self.ids_format = QComboBox()
        self.ids_format.addItem("Python list", "python")
        self.ids_format.addItem("JSON", "json")
        self.copy_button = QPushButton("Copy ids")

        top = QHBoxLayout()
        top.addWidget(self.open_button)
        top.addWidget(self.sample_button)
        top.addStretch(1)
        top.addWidget(self.round_trip_label, 2)

        ids_box = QWidget()
        ids_layout = QVBoxLayout(ids_box)
        ids_layout.setContentsMargins(0, 0, 0, 0)
        ids_bar = QHBoxLayout()
        ids_bar.addWidget(QLabel("Ids as"))
        ids_bar.addWidget(self.ids_format, 1)
        ids_layout.addLayout(ids_bar)
        ids_layout.addWidget(self.ids_view, 1)
        ids_layout.addWidget(self.copy_button)

        panes = splitter(Qt.Orientation.Vertical, [self.editor, self.token_view], stretch=[1, 2])
        outer = splitter(Qt.Orientation.Horizontal, [panes, ids_box], stretch=[4, 1], sizes=[900, 260])

        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.error_label)
        layout.addWidget(long_row)
        layout.addWidget(outer, 1)
        layout.addWidget(self.figures_label)
        layout.addWidget(self.detail_label)

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self.encode_now)
        self.editor.textChanged.connect(self._debounce.start)
        self.editor.too_long.connect(self.set_text)
        self.editor.too_long_data.connect(self._read_paste)
        self.edit_start_button.clicked.connect(lambda: self.set_text(self.editor.toPlainText()))
        self.open_button.clicked.connect(self._open_file_dialog)
        self.sample_button.clicked.connect(lambda: self.set_text(SAMPLE_TEXT))
        self.copy_button.clicked.connect(self.copy_ids)
        self.ids_format.currentIndexChanged.connect(self._show_ids)
        self.token_view.token_hovered.connect(self._on_hover)
        self.token_view.token_clicked.connect(self._on_click)
        self._show_figures()

    # -- inputs ---------------------------------------------------------------------
    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    def set_tokenizer(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer
        self.detail_label.setText(HOVER_HINT)  # a line about the previous tokenizer's token would mislead
        if not self.editor.toPlainText():
            self.editor.setPlainText(SAMPLE_TEXT)  # textChanged schedules the encoding
        self.encode_now()

    def set_text(self, text: str) -> None:
        """Show ``text``: in the editor, or past `LONG_CHARS` its start, read-only."""
        self._reading.cancel()  # (a paste still being read is superseded by this text)
        long = len(text) > LONG_CHARS
        self._long_text = text if long else None
        self.editor.setReadOnly(long)
        self.editor.setPlainText(text[:PREVIEW_CHARS] if long else text)
        self._long_row.setVisible(long)
        if long:
            self.long_note.setText(
                f"This text is {len(text):,} characters long: the editor shows the first "
                f"{PREVIEW_CHARS:,}, read-only; the figures, ids and round trip cover all of it, and "
                f"the first {self.token_view.limit:,} tokens are coloured."
            )
        self.encode_now()

    def _read_paste(self, before: str, data: Any, after: str) -> None:
        """A paste too long for the editor, given as UTF-8: decoded in a thread, then shown."""
        self._read_in_background(f"the pasted text ({data.size() / 1e6:,.1f} MB)", join_paste, before, data, after)

    def _read_in_background(self, what: str, work: Any, *args: Any) -> None:
        """Run ``work(*args)`` (it returns the text) in a thread, saying so; `set_text` shows it."""
        self._encoding.cancel()
        self.figures_label.setText(f"Reading {what}…")
        self._reading.start(work, *args)

    def _on_read_failed(self, message: str) -> None:
        """A file or paste could not be read: the text shown stays, with the reason above it."""
        self._show_error(message)
        self._show_figures()

    def text(self) -> str:
        """The text being inspected (all of it, also when the editor shows only its start)."""
        return self.editor.toPlainText() if self._long_text is None else self._long_text

    @property
    def long(self) -> bool:
        """True while the text is too long for the editor (shown in part, encoded in a stream)."""
        return self._long_text is not None

    def load_file(self, path: str | Path) -> str | None:
        """Load a text file into the editor; returns an error message or None. A file of more
        than `BACKGROUND_FILE_BYTES` is read and decoded in a thread, then shown."""
        path = Path(path)
        try:
            size = path.stat().st_size
            if size > MAX_FILE_BYTES:
                return f"{path.name} is {size / 1e6:.0f} MB; the inspector opens files up to {MAX_FILE_BYTES // 1_000_000} MB."
            if size > BACKGROUND_FILE_BYTES:
                self._read_in_background(f"{path.name} ({size / 1e6:,.1f} MB)", read_text_file, path)
                return None
            data = path.read_bytes()
        except OSError as e:
            return f"Cannot read {path}: {e.strerror or e}"
        self.set_text(data.decode("utf-8", errors="replace"))
        return None

    def _open_file_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a text file", "", "Text files (*.txt *.md *.py *.json *.csv);;All files (*)")
        if path:
            error = self.load_file(path)
            if error:
                self._show_error(error)

    def set_highlight_id(self, token_id: int | None) -> None:
        """Emphasise the occurrences of ``token_id`` (the vocabulary's selection)."""
        self.token_view.set_highlight_id(token_id)

    # -- encoding -------------------------------------------------------------------
    def encode_now(self) -> None:
        """Encode the editor's text now (typing triggers this after a short pause)."""
        self._debounce.stop()
        if self._tokenizer is None:
            return
        text, tokenizer = self.text(), self._tokenizer
        if self.long:
            self.figures_label.setText(f"Encoding {len(text):,} characters…")
            generation = self._encoding.generation + 1
            job = self._encoding.start(encode_long, tokenizer, text)
            job.yielded.connect(lambda value: self._on_long_progress(generation, value))
            return
        if len(text) >= BACKGROUND_CHARS:
            self.figures_label.setText(f"Encoding {len(text):,} characters…")
            self._encoding.start(encode_text, tokenizer, text)
            return
        self._encoding.cancel()  # an older, longer text still encoding must not replace this one
        try:
            result = encode_text(tokenizer, text)
        except Exception as e:  # noqa: BLE001 - shown like the background job's failures
            self._on_encode_failed(failure_message(e, ENCODING))
        else:
            self._on_encoded(result)

    def shutdown(self, timeout_ms: int = 30_000) -> bool:
        """Drop the pending encoding and wait for the background ones (the window is closing)."""
        reading = self._reading.shutdown(timeout_ms)
        encoding = self._encoding.shutdown(timeout_ms) and reading
        return self.token_view.shutdown(timeout_ms) and encoding

    def _on_long_progress(self, generation: int, value: dict[str, Any]) -> None:
        """The start of a long text's encoding (drawn at once), or how far it has got."""
        if generation != self._encoding.generation:
            return  # a superseded text's
        if "head" in value:
            self.error_label.hide()
            self.token_view.set_encoding(value["head"], value["spans"], self._tokenizer, total=None)
            return
        total = len(self.text())
        self.figures_label.setText(
            f"Encoding… {value['chars']:,} of {total:,} characters · {value['tokens']:,} tokens so far"
        )

    def _on_encoded(self, result: dict[str, Any]) -> None:
        text = result["text"]
        self.result = result
        self.error_label.hide()
        if "head" in result:
            if self.token_view.spans is not result["spans"]:  # drawn already, as it came
                self.token_view.set_encoding(result["head"], result["spans"], self._tokenizer, total=None)
        else:
            self.token_view.set_encoding(text, result["spans"], self._tokenizer)
        report = result["round_trip"]
        self._set_round_trip(report is None, report or "")
        self._show_figures(text)
        self._show_ids()
        self.encoded.emit()

    def _on_encode_failed(self, message: str) -> None:
        self.result = {"error": message, "spans": [], "ids": []}
        self.token_view.clear_encoding()
        self.round_trip_label.clear()
        self.round_trip_ok = None
        self._show_error(message)
        self._show_figures()
        self._show_ids()
        self.encoded.emit()

    def _show_error(self, message: str) -> None:
        self.error_label.setText(as_sentence(message))  # "stdlib_all.txt is …" keeps its file name
        self.error_label.show()

    def _set_round_trip(self, ok: bool, detail: str) -> None:
        if ok:
            self.round_trip_label.setText("<b style='color:#2e7d32'>✓ Round trip passes</b>: decode(encode(text)) == text")
        else:
            self.round_trip_label.setText(f"<b style='color:#c62828'>✗ Round trip fails</b> — {detail}")
        self.round_trip_ok = ok

    def _show_figures(self, text: str | None = None) -> None:
        if self._tokenizer is None:
            self.figures_label.setText("No tokenizer: train one or open one.")
            return
        text = self.text() if text is None else text
        tokens = len(self.result["ids"])
        chars = len(text)
        nbytes = self.result.get("bytes")
        if nbytes is None or self.result.get("text") is not text:
            nbytes = len(text.encode("utf-8", errors="surrogatepass"))
        per = (lambda x: f"{x / tokens:.2f}") if tokens else (lambda x: "–")
        self.figures = {"tokens": tokens, "chars": chars, "bytes": nbytes}
        self.figures_label.setText(
            f"<b>{tokens:,}</b> tokens · {chars:,} characters · {nbytes:,} UTF-8 bytes · "
            f"<b>{per(nbytes)}</b> bytes/token · {per(chars)} characters/token"
        )

    # -- ids --------------------------------------------------------------------------
    def ids_text(self, limit: int | None = None) -> str:
        ids = self.result["ids"] if limit is None else self.result["ids"][:limit]
        ids = ids if isinstance(ids, list) else ids.tolist()  # a long text's are an array
        if self.ids_format.currentData() == "json":
            return json.dumps(ids, separators=(",", ":"))
        return repr(ids)

    def _show_ids(self) -> None:
        ids = self.result["ids"]
        text = self.ids_text(MAX_IDS_SHOWN)
        if len(ids) > MAX_IDS_SHOWN:
            text += f"\n… first {MAX_IDS_SHOWN:,} of {len(ids):,} ids shown; Copy copies all."
        self.ids_view.setPlainText(text)

    def copy_ids(self) -> None:
        QGuiApplication.clipboard().setText(self.ids_text())

    # -- hover and click --------------------------------------------------------------
    def _on_hover(self, index: int) -> None:
        if index >= 0:
            self.detail_label.setText(self.token_view.describe(index))

    def _on_click(self, index: int) -> None:
        self.detail_label.setText(self.token_view.describe(index))
        spans = self.token_view.spans
        if 0 <= index < len(spans):
            self.token_clicked.emit(spans[index].token_id)
