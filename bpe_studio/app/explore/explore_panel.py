"""The Explore panel: browse a tokenizer's vocabulary, inspect text, compare tokenizers.

Assembles the vocabulary browser with the merge tree of the selected token, the
inspector and the compare view in three tabs under one heading naming the tokenizer,
and opens existing tokenizers (GPT-2 ``vocab.json`` + ``merges.txt``, or
``tokenizer.json``) without training. The main window calls `set_tokenizer` when a
training run ends; `open_tokenizer` loads one from disk. Selecting a token in the
vocabulary highlights its occurrences in the inspector; clicking a token in the
inspector selects it in the vocabulary.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from bpe_studio.app.explore.inspector import InspectorPanel
from bpe_studio.app.file_dialogs import FileDialogs
from bpe_studio.app.explore.merge_tree import MergeTreeView
from bpe_studio.app.widgets.splitters import splitter
from bpe_studio.app.explore.vocab_browser import VocabBrowser
from bpe_studio.app.models.provenance import SourceOrigins
from bpe_studio.app.models.vocab_data import VocabData
from bpe_studio.app.workers.heap import collections_paused
from bpe_studio.app.workers.thread_job import LatestJob

_FILE_FILTER = "Tokenizer files (*vocab.json *merges.txt *.json *.tiktoken *.model);;All files (*)"
NO_TOKENIZER = "No tokenizer yet: train one, or open existing files."


def _vocab_columns(tokenizer: Any, title: str, merge_counts: dict[int, int] | None,
                   origins: SourceOrigins | None = None) -> tuple[Any, str, VocabData]:
    """Build the vocabulary columns of ``tokenizer`` (in the panel's background job)."""
    with collections_paused():
        return tokenizer, title, VocabData.from_tokenizer(tokenizer, merge_counts, origins)


class CannotOpen(ValueError):
    """A tokenizer's files cannot be opened; the message names them and says why."""


def _open_tokenizer(path: Path, for_compare: bool) -> tuple[Any, str, VocabData | None]:
    """Load the tokenizer at ``path`` and, unless it is only for Compare, its vocabulary
    columns (in the panel's background job: a large vocabulary takes a while).

    Raises:
        OSError, ValueError: the files cannot be read or do not make a tokenizer.
    """
    from core.encode.tokenizer import Tokenizer  # the window starts without loading it

    try:
        with collections_paused():
            tokenizer = Tokenizer.load(path)
    except (OSError, ValueError) as e:
        raise CannotOpen(f"Cannot open {path}: {e}") from e
    name = path.name if path.is_dir() or path.name not in ("vocab.json", "merges.txt", "tokenizer.json", "tokenizer.tiktoken") else path.parent.name
    title = f"{name} ({len(tokenizer):,} tokens)"
    if for_compare:
        return tokenizer, title, None
    return _vocab_columns(tokenizer, title, None)


class ExplorePanel(QWidget):
    """Vocabulary, Inspector and Compare tabs for the current tokenizer.

    Args:
        compare: the Compare tab (a `bpe_studio.app.compare.compare_view.CompareView`); the
            window makes it, so the two areas do not import each other.
        dialogs: the window's file dialogs (Open tokenizer… starts in the folder used last).
    """

    tokenizer_changed = Signal(str)  # the title of the tokenizer now shown
    vocab_ready = Signal()  # set_tokenizer finished: browser, inspector and compare show it
    open_failed = Signal(str)  # open_tokenizer could not load the files (the message is shown too)
    compare_ready = Signal()  # a tokenizer opened for Compare was added to its choices

    def __init__(self, *, compare: QWidget, dialogs: FileDialogs | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._dialogs = dialogs
        self.tokenizer: Any = None
        self.vocab: VocabData | None = None
        self.title = ""
        self._tokenizers: list[tuple[str, Any]] = []  # choices offered by Compare
        self._showing = 0  # counts the tokenizers shown: a newer one drops the older one's steps
        self._reading_title = ""  # the tokenizer whose columns are being built
        self._columns = LatestJob("reading the vocabulary", name="bpe-studio-vocab-columns", parent=self)
        self._columns.returned.connect(self._show_tokenizer)
        self._columns.failed.connect(self._on_columns_failed)
        self._opening = LatestJob("opening the tokenizer", name="bpe-studio-open-tokenizer", parent=self)
        self._opening.returned.connect(self._on_opened)
        self._opening.failed.connect(self._on_open_failed)
        self._opening_for_compare = False

        self.heading = QLabel(NO_TOKENIZER)
        self.heading.setWordWrap(True)  # five special tokens or a long path must not widen the window
        self.heading.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label = QLabel()
        self.error_label.setStyleSheet("color: #c62828;")
        self.error_label.setWordWrap(True)
        self.error_label.hide()
        self.open_button = QPushButton("Open tokenizer…")
        self.open_button.setToolTip("GPT-2 vocab.json + merges.txt, a tokenizer.json or a .tiktoken file (Ctrl+Shift+T)")

        self.browser = VocabBrowser()
        self.tree = MergeTreeView()
        self.occurrences_label = QLabel("Select a token to see how it was built.")
        self.occurrences_label.setWordWrap(True)
        self.occurrences_label.setTextFormat(Qt.TextFormat.PlainText)  # a token's “&” is shown as “&”
        self.show_in_inspector = QPushButton("Show in inspector")
        self.show_in_inspector.setEnabled(False)
        self.inspector = InspectorPanel()
        self.compare: Any = compare

        side = QWidget()
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        side_layout.addWidget(QLabel("<b>How it was built</b> (merge tree down to bytes)"))
        side_layout.addWidget(self.tree, 1)
        side_layout.addWidget(self.occurrences_label)
        side_layout.addWidget(self.show_in_inspector)
        vocab_tab = splitter(Qt.Orientation.Horizontal, [self.browser, side], stretch=[3, 1], sizes=[900, 280])

        self.tabs = QTabWidget()
        self.tabs.addTab(vocab_tab, "Vocabulary")
        self.tabs.addTab(self.inspector, "Inspector")
        self.tabs.addTab(self.compare, "Compare")

        top = QHBoxLayout()
        top.addWidget(self.heading, 1)
        top.addWidget(self.open_button)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.error_label)
        layout.addWidget(self.tabs, 1)

        self.open_button.clicked.connect(self.open_tokenizer_dialog)
        self.browser.token_selected.connect(self._on_token_selected)
        self.inspector.token_clicked.connect(self._on_inspector_token)
        self.inspector.encoded.connect(self._update_occurrences)
        self.show_in_inspector.clicked.connect(lambda: self.tabs.setCurrentWidget(self.inspector))
        self.compare.open_requested.connect(lambda: self.open_tokenizer_dialog(for_compare=True))
        self.tabs.currentChanged.connect(self._on_tab_changed)

    # -- the tokenizer --------------------------------------------------------------
    def set_tokenizer(self, tokenizer: Any, *, merge_counts: dict[int, int] | None = None,
                      origins: SourceOrigins | None = None, title: str = "") -> None:
        """Browse and inspect ``tokenizer`` (a ``core.Tokenizer``).

        The vocabulary columns are built in a background job (about a second for
        GPT-2's 50k tokens), so the window never freezes; `vocab_ready` says when the
        tokenizer is shown. A newer call supersedes one whose columns are still being built.

        Args:
            tokenizer: the tokenizer to show.
            merge_counts: token id -> pair count when its merge was made (from training).
            origins: trained on named sources, each merged token's pair counts per source
                (the browser then offers "Mostly from <source>").
            title: how to name it (e.g. "Trained on sample.txt (partial)").
        """
        title = title or f"Tokenizer with {len(tokenizer):,} tokens"
        self._reading_title = title
        self.heading.setText(f"<b>{html.escape(title)}</b> — reading {len(tokenizer):,} tokens…")
        self._columns.start(_vocab_columns, tokenizer, title, merge_counts, origins)

    def shutdown(self, timeout_ms: int = 30_000) -> bool:
        """Stop the background work of the panel, its inspector and compare (the window is closing)."""
        done = [self._columns.shutdown(timeout_ms), self._opening.shutdown(timeout_ms),
                self.inspector.shutdown(timeout_ms), self.compare.shutdown(timeout_ms),
                self.browser.shutdown(timeout_ms)]
        return all(done)

    def _show_heading(self) -> None:
        tokenizer = self.tokenizer
        if tokenizer is None:
            self.heading.setText(NO_TOKENIZER)
            return
        specials = ", ".join(getattr(tokenizer, "special_tokens", []) or []) or "none"
        pattern = getattr(getattr(tokenizer, "pattern", None), "name", "")
        size = f"{len(tokenizer):,} tokens"
        size = "" if size in self.title else f"{size} · "  # ("Trained on a.txt (2,000 tokens)" says it)
        self.heading.setText(
            f"<b>{html.escape(self.title)}</b> — {size}{len(tokenizer.merges):,} merges · "
            f"special: {html.escape(specials)}" + (f" · pattern: {html.escape(pattern)}" if pattern else "")
        )

    def _on_columns_failed(self, message: str) -> None:
        self._show_heading()  # the tokenizer shown before, if any, stays
        self.error_label.setText(f"Cannot show {self._reading_title}: {message}")
        self.error_label.show()

    def _show_tokenizer(self, payload: tuple[Any, str, VocabData]) -> None:
        """Show a tokenizer in three steps, each in its own pass of the event loop (vocabulary;
        inspector; compare, then `vocab_ready`): in one pass they held the GUI thread too long
        while training ended. A newer tokenizer shown meanwhile drops the older one's steps."""
        tokenizer, title, data = payload
        self.tokenizer, self.title, self.vocab = tokenizer, title, data
        self._showing += 1
        self.error_label.hide()
        self._show_heading()
        self.browser.set_vocab(data, tokenizer)
        self.tree.set_vocab(data)
        self.occurrences_label.setText("Select a token to see how it was built.")
        self.show_in_inspector.setEnabled(False)
        self._next_step(self._show_in_inspector)

    def _next_step(self, step: Callable[[], None]) -> None:
        showing = self._showing
        QTimer.singleShot(0, self, lambda: step() if showing == self._showing else None)

    def _show_in_inspector(self) -> None:
        self.inspector.set_highlight_id(None)
        self.inspector.set_tokenizer(self.tokenizer)
        self._next_step(self._show_in_compare)

    def _show_in_compare(self) -> None:
        title, tokenizer = self.title, self.tokenizer
        self._add_choice(title, tokenizer)
        self.compare.set_tokenizers(self._tokenizers, a=self._index_of(title))
        self.tokenizer_changed.emit(title)
        self.vocab_ready.emit()

    def _index_of(self, title: str) -> int:
        return next(i for i, (t, _) in enumerate(self._tokenizers) if t == title)

    def _add_choice(self, title: str, tokenizer: Any) -> None:
        for i, (t, _) in enumerate(self._tokenizers):
            if t == title:
                self._tokenizers[i] = (title, tokenizer)
                return
        self._tokenizers.append((title, tokenizer))

    def open_tokenizer(self, path: str | Path, *, for_compare: bool = False) -> bool:
        """Start loading a tokenizer from ``path`` (in the background), then show it (or only
        add it to Compare); `vocab_ready` (or `compare_ready`) follows, or `open_failed` with
        the reason, which the panel shows. Returns False when ``path`` does not exist.
        """
        path = Path(path)
        if not path.exists():
            self._on_open_failed(f"Cannot open {path}: no such file or folder")
            return False
        for_compare = for_compare and self.tokenizer is not None
        self._opening_for_compare = for_compare
        self._reading_title = path.name
        if not for_compare:
            self.heading.setText(f"Opening <b>{html.escape(str(path))}</b>…")
        self._opening.start(_open_tokenizer, path, for_compare)
        return True

    @property
    def opening(self) -> bool:
        """True while a tokenizer is being loaded."""
        return self._opening.running

    def _on_opened(self, opened: tuple[Any, str, VocabData | None]) -> None:
        tokenizer, title, data = opened
        self.error_label.hide()
        if data is None:  # for Compare only
            self._add_choice(title, tokenizer)
            self.compare.set_tokenizers(self._tokenizers, b=self._index_of(title))
            self.compare_ready.emit()
        else:
            self._show_tokenizer((tokenizer, title, data))

    def _on_open_failed(self, message: str) -> None:
        if not self._opening_for_compare:
            self._show_heading()
        self.error_label.setText(message)
        self.error_label.show()
        self.open_failed.emit(message)

    def open_tokenizer_dialog(self, for_compare: bool = False) -> None:
        """Ask for a tokenizer file (vocab.json, merges.txt or tokenizer.json) and open it."""
        if self._dialogs is not None:
            path = self._dialogs.open_file("Open a tokenizer", "paths/tokenizer_folder", _FILE_FILTER)
        else:
            path, _ = QFileDialog.getOpenFileName(self, "Open a tokenizer", "", _FILE_FILTER)
        if path:
            self.open_tokenizer(path, for_compare=for_compare)

    # -- selection links ----------------------------------------------------------------
    def _on_token_selected(self, token_id: int) -> None:
        if token_id < 0:  # none selected (e.g. the filter hid it)
            self.tree.show_token(None)
            self.inspector.set_highlight_id(None)
            self.occurrences_label.setText("Select a token to see how it was built.")
            self.show_in_inspector.setEnabled(False)
            return
        self.tree.show_token(token_id)
        self.inspector.set_highlight_id(token_id)
        self._update_occurrences()

    def _update_occurrences(self) -> None:
        token_id = self.browser.selected_id
        if token_id is None or self.vocab is None:
            return
        n = self.inspector.result["ids"].count(token_id)  # C speed, even for 300k tokens
        readable = self.vocab.readable[self.vocab.row_of_id[token_id]]
        if n:
            where = "once" if n == 1 else f"{n:,} times"
            message = f"occurs {where} in the inspector text (highlighted in yellow there)."
        else:
            message = "does not occur in the inspector text."
        self.occurrences_label.setText(f"“{readable}” {message}")
        self.show_in_inspector.setEnabled(n > 0)

    def _on_inspector_token(self, token_id: int) -> None:
        if not self.browser.select_token(token_id):
            self.tree.show_token(token_id)

    def _on_tab_changed(self, index: int) -> None:
        # Compare starts from the inspector's text the first time it is opened.
        if self.tabs.widget(index) is self.compare and not getattr(self, "_compare_seeded", False):
            self._compare_seeded = True
            self.compare.set_text(self.inspector.text())
