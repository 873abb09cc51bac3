"""BPE Studio's main window: assembles the panels, the menus and shortcuts; does no work itself.

The Train tab holds the settings and result panels on the left, and progress, the live
merges table and the charts on the right. Training runs in a `TrainJob` (a worker thread);
its event batches go into one `TrainingState` that every panel reads from its own timer.
When a tokenizer is ready (training finished or cancelled, or a session opened) the
window calls `_on_tokenizer_ready`, where the vocabulary browser and inspector tabs hook in.
With a tokenizer, File › Encode a corpus to .npy… runs an `EncodeJob` (a worker thread and
spawned processes) that a strip under the banner follows.

    window = MainWindow(corpus="corpus.txt", vocab_size=5000); window.show()
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QIcon, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog,
    QMainWindow,
    QMessageBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from bpe_studio.app.resources import resource, style_sheet
from bpe_studio.app.train.charts import ChartsPanel
from bpe_studio.app.train.corpus_picker import join_sources
from bpe_studio.app.encode.encode_strip import EncodeStrip
from bpe_studio.app.evaluate.evaluate_panel import EvaluatePanel
from bpe_studio.app.workers.encode_job import EncodeJob
from bpe_studio.app.widgets.error_banner import ErrorBanner
from bpe_studio.app.explore.explore_panel import ExplorePanel
from bpe_studio.app.workers.heap import freeze_long_lived_objects
from bpe_studio.app.train.merges_table import MergesTable
from bpe_studio.app.train.progress_panel import ProgressPanel
from bpe_studio.app.models.session import Session, load_session, save_session
from bpe_studio.app.train.settings_panel import SettingsPanel
from bpe_studio.app.widgets.screen_fit import place_window
from bpe_studio.app.widgets.side_scroll import SideScrollArea
from bpe_studio.app.widgets.wheel_guard import guard_wheel
from bpe_studio.app.widgets.splitters import splitter
from bpe_studio.app.train.summary_panel import SummaryPanel
from bpe_studio.app.workers.tokenizer_builder import TokenizerBuilder
from bpe_studio.app.workers.thread_job import LatestJob
from bpe_studio.app.workers.train_job import TrainJob
from bpe_studio.app.models.training_state import TrainingState
from core.errors import FormatError
from core.formats import save_tokenizer

if TYPE_CHECKING:
    from core.encode.corpus import EncodeFinished, EncodeProgress

NOTHING_TO_EXPORT = "Nothing to export yet: train a tokenizer, open a session, or open a tokenizer first."


@dataclass(frozen=True)
class CurrentTokenizer:
    """The tokenizer Export, Save session and Encode act on: the one last trained (or opened
    as a session), or opened from files in Explore — whichever came last.

    Attributes:
        tokenizer: the `core.Tokenizer` (None while a trained one is still being built).
        title: its name in menus, dialogs and messages ("Trained on pydocs.txt", "gpt2 (50,257 tokens)").
        session: the training result it comes from (None for one opened from files).
    """

    tokenizer: object | None = None
    title: str = ""
    session: Session | None = None

    @property
    def exists(self) -> bool:
        return self.tokenizer is not None or self.session is not None


def _is_empty_partial(session: Session | None) -> bool:
    return session is not None and session.partial and not session.merges


def trained_title(session: Session) -> str:
    """``"Trained on pydocs.txt (10,000 tokens)"``, ``"… partial"`` for a cancelled run."""
    name = os.path.basename(session.settings.corpus) or "a corpus"
    partial = ", partial" if session.partial else ""
    return f"Trained on {name} ({len(session.vocab):,} tokens{partial})"

SESSION_SUFFIX = ".bpesession"
SESSION_FILTER = f"BPE Studio sessions (*{SESSION_SUFFIX});;All files (*)"
NPY_FILTER = "NumPy arrays (*.npy);;All files (*)"
CORPUS_FILTER = "Text files (*.txt *.md *.jsonl *.csv);;All files (*)"
DEFAULT_SIZE = (1360, 860)
CLOSE_POLL_MS = 50
APP_NAME = "BPE Studio"


def default_qsettings() -> QSettings:
    """The application's QSettings (INI file under the user's config folder)."""
    org = QCoreApplication.organizationName() or "BPE Studio"
    app = QCoreApplication.applicationName() or "BPE Studio"
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, org, app)


class MainWindow(QMainWindow):
    """The application window.

    Args:
        corpus: a corpus path to preselect (else the last one used, or the sample corpus).
        vocab_size: a vocabulary size to preselect (else the last one used).
        settings: where to keep persistent settings (default: `default_qsettings()`).
    """

    def __init__(
        self,
        corpus: str | None = None,
        vocab_size: int | None = None,
        *,
        settings: QSettings | None = None,
    ) -> None:
        super().__init__()
        self.qsettings = settings if settings is not None else default_qsettings()
        self.state = TrainingState()
        self.job: TrainJob | None = None
        self._previous_session: Session | None = None
        self._close_timer: QTimer | None = None
        self.encode_job: EncodeJob | None = None
        self.tokenizer: object | None = None  # the latest trained one
        self.merge_counts: dict[int, int] | None = None
        self.current = CurrentTokenizer()  # what Export, Save session and Encode act on
        self.tokenizer_builder = TokenizerBuilder(self)

        self.banner = ErrorBanner()
        self.encode_strip = EncodeStrip()
        self.settings_panel = SettingsPanel(self.qsettings)
        self.summary_panel = SummaryPanel(self.state)
        self.progress_panel = ProgressPanel(self.state)
        self.merges_table = MergesTable(self.state)
        self.charts = ChartsPanel(self.state)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self._train_tab(), "Train")
        self.explore_panel = ExplorePanel()  # vocabulary, inspector, compare
        self.tabs.addTab(self.explore_panel, "Explore")
        self.evaluate_panel = EvaluatePanel()  # held-out evaluation of tokenizers
        self.tabs.addTab(self.evaluate_panel, "Evaluate")
        self.evaluate_panel.error.connect(self.banner.show_error)

        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        self.banner.float_over(self.tabs)  # over the pages, under the tab bar: nothing moves
        layout.addWidget(self.encode_strip)
        layout.addWidget(self.tabs, 1)
        self.setCentralWidget(central)
        self.setAcceptDrops(True)
        self.setStyleSheet(style_sheet())
        self.setWindowIcon(QIcon(str(resource("icon.svg"))))

        self._make_actions()
        self.settings_panel.trainClicked.connect(self.start_training)
        self.settings_panel.cancelClicked.connect(self.cancel_training)
        self.settings_panel.corpusChanged.connect(self._update_title)
        self.settings_panel.corpusChanged.connect(self.summary_panel.set_chosen_corpus)
        self.summary_panel.exportClicked.connect(self.export_dialog)
        self.summary_panel.saveClicked.connect(self.save_session_dialog)
        self.progress_panel.statusChanged.connect(self.statusBar().showMessage)
        self.tokenizer_builder.ready.connect(self._on_tokenizer_ready)
        self.tokenizer_builder.failed.connect(self.banner.show_error)
        self.explore_panel.tokenizer_changed.connect(self._on_explore_tokenizer)
        self.encode_strip.cancelClicked.connect(self.cancel_encoding)

        self.settings_panel.restore()
        if corpus:
            self.settings_panel.set_corpus(str(corpus))
        if vocab_size is not None:
            self.settings_panel.set_vocab_size(int(vocab_size))
        place_window(self, self.qsettings.value("window/geometry", b""), DEFAULT_SIZE)  # inside the screen
        guard_wheel(self)  # the wheel changes a setting only when it has focus
        self._update_title()
        freeze_long_lived_objects()  # so no full collection of the whole heap stalls a run

    # -- assembly -------------------------------------------------------------------------------

    def _train_tab(self) -> QWidget:
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(10, 10, 6, 10)
        left_layout.addWidget(self.settings_panel)
        left_layout.addWidget(self.summary_panel)
        left_layout.addStretch(1)
        scroll = SideScrollArea(left)  # never narrower than its controls need
        self.left_scroll = scroll

        work = splitter(
            Qt.Orientation.Horizontal, [self.merges_table, self.charts],
            stretch=[2, 3], sizes=[430, 620], collapsible=False,
        )
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(6, 10, 10, 10)
        right_layout.addWidget(self.progress_panel)
        right_layout.addWidget(work, 1)

        return splitter(
            Qt.Orientation.Horizontal, [scroll, right], stretch=[0, 1], sizes=[360, 1000], collapsible=False
        )

    def _action(self, text: str, slot, shortcuts: list[str] | None = None, tip: str = "") -> QAction:
        action = QAction(text, self)
        if shortcuts:
            action.setShortcuts([QKeySequence(s) for s in shortcuts])
        if tip:
            action.setStatusTip(tip)
        action.triggered.connect(lambda _checked=False: slot())
        self.addAction(action)
        return action

    def _make_actions(self) -> None:
        self.open_corpus_action = self._action("&Open corpus…", self.settings_panel.browse, ["Ctrl+O"])
        self.sample_action = self._action("Use the &sample corpus", self.settings_panel.use_sample_corpus)
        self.open_counts_action = self._action(
            "Open pre-token &counts…", self.open_counts_dialog, [],
            "Train from .bpc files of pre-token counts (bpe-studio count, core.PretokenCounts), added up",
        )
        self.open_session_action = self._action("Open &session…", self.open_session_dialog, ["Ctrl+Shift+O"])
        self.save_session_action = self._action("Sa&ve session…", self.save_session_dialog, ["Ctrl+S"])
        self.export_action = self._action("&Export tokenizer…", self.export_dialog, ["Ctrl+E"],
                                          "Write vocab.json, merges.txt, tokenizer.json and tokenizer.tiktoken")
        self.encode_action = self._action(
            "Encode a &corpus to .npy…", self.encode_corpus_dialog, ["Ctrl+Shift+E"],
            "Encode a text file with the current tokenizer into a .npy of token ids",
        )
        self.encode_action.setEnabled(False)  # until there is a tokenizer
        self.quit_action = self._action("&Quit", self.close, ["Ctrl+Q"])
        # Ctrl+Shift+O is Open session, so the tokenizer gets Ctrl+Shift+T.
        self.open_tokenizer_action = self._action(
            "Open &tokenizer…", self.open_tokenizer_dialog, ["Ctrl+Shift+T"],
            "Browse and inspect GPT-2 vocab.json + merges.txt, a tokenizer.json or a .tiktoken file without training",
        )
        self.train_action = self._action("&Train", self.start_training, ["Ctrl+Return", "Ctrl+Enter"])
        self.cancel_action = self._action("&Cancel", self.cancel_running, ["Esc"],
                                          "Stop the training (keeping the merges so far) or the encoding")

        file_menu = self.menuBar().addMenu("&File")
        file_menu.addAction(self.open_corpus_action)
        self.recent_menu = file_menu.addMenu("Recent corpora")
        self.recent_menu.aboutToShow.connect(
            lambda: self.settings_panel.recent.fill_menu(self.recent_menu, self.settings_panel.set_corpus)
        )
        file_menu.addAction(self.sample_action)
        file_menu.addAction(self.open_counts_action)
        file_menu.addAction(self.open_tokenizer_action)
        file_menu.addSeparator()
        file_menu.addAction(self.open_session_action)
        file_menu.addAction(self.save_session_action)
        file_menu.addAction(self.export_action)
        file_menu.addAction(self.encode_action)
        file_menu.addSeparator()
        file_menu.addAction(self.quit_action)
        train_menu = self.menuBar().addMenu("&Training")
        train_menu.addAction(self.train_action)
        train_menu.addAction(self.cancel_action)

    # -- training -------------------------------------------------------------------------------

    def is_training(self) -> bool:
        return self.job is not None and self.job.running

    def start_training(self) -> None:
        """Start a run with the panel's settings (errors go to the banner)."""
        if self.is_training():
            return
        self.banner.clear()
        problem = self.settings_panel.validation_error()
        if problem:
            self.banner.show_error(problem)
            return
        settings = self.settings_panel.settings()
        if os.path.isfile(settings.corpus):
            self.settings_panel.recent.add(settings.corpus)
        # Kept until the new run has something to show: a cancel before its first merge restores it.
        previous = self.state.session
        self._previous_session = previous if previous is not None and not self.state.stage.running else None
        self.state.start(settings)
        self.merges_table.refresh()  # drop the previous run's rows now
        self.job = TrainJob(settings)
        self.job.events.connect(self.state.apply)
        self.job.failed.connect(self._on_failed)
        self.job.stopped.connect(self._on_stopped)
        self.settings_panel.set_running(True)
        freeze_long_lived_objects()  # the run's collections then only walk what it creates
        self.job.start()

    def cancel_running(self) -> None:
        """Esc: stop the training if one runs, else the encoding of a corpus."""
        if self.is_training():
            self.cancel_training()
        else:
            self.cancel_encoding()

    def cancel_training(self) -> None:
        """Stop the run; the merges learned so far stay as a partial result."""
        if self.is_training() and self.job is not None:
            self.job.cancel()
            self.statusBar().showMessage("Cancelling…")

    def _on_failed(self, message: str) -> None:
        self.state.fail(message)
        self.banner.show_error(message)

    def _on_stopped(self, cancelled: bool) -> None:
        self.settings_panel.set_running(False)
        if cancelled:
            self.state.cancel()
            if self._restore_previous_result():
                return
        for panel in (self.progress_panel, self.merges_table, self.summary_panel):
            panel.refresh()  # show the end at once, not at the next timer tick
        # The charts catch up one per tick (as while training): redrawing all four here
        # queued four repaints into one stretch of the GUI thread (60-120 ms).
        if self.state.session is not None and not self.state.stage.running:
            prebuilt = self.job.tokenizer if self.job is not None and not cancelled else None
            self._publish(self.state.session, prebuilt)

    def _restore_previous_result(self) -> bool:
        """After a cancel before the first merge, show the previous result again (not an
        empty partial one). Returns whether it did."""
        session, previous = self.state.session, self._previous_session
        if previous is None or session is None or session.merges:
            return False
        self.state.load(previous)
        for panel in (self.progress_panel, self.merges_table, self.summary_panel):
            panel.refresh()
        self._update_title()
        self.banner.show_info(
            f"Training cancelled before its first merge: the previous result ({trained_title(previous)}) is kept."
        )
        return True

    def _publish(self, session: Session, prebuilt: object | None = None) -> None:
        """A result exists: it becomes the current tokenizer; build its tokenizer (in the
        background; `_on_tokenizer_ready` follows)."""
        self._update_title()
        self._set_current(CurrentTokenizer(None, trained_title(session), session))
        self.tokenizer_builder.build(session, prebuilt)

    def _on_tokenizer_ready(self, tokenizer: object, merge_counts: dict[int, int]) -> None:
        """A trained tokenizer is ready (finished, cancelled with a partial result, or a session opened)."""
        self.tokenizer = tokenizer
        self.merge_counts = merge_counts
        if self.current.session is not None:
            self._set_current(CurrentTokenizer(tokenizer, self.current.title, self.current.session))
        self.explore_panel.set_tokenizer(tokenizer, merge_counts=merge_counts, title=self.current.title)

    def _on_explore_tokenizer(self, title: str) -> None:
        """The Explore tab shows another tokenizer: the trained one, or one opened from files,
        which then becomes the current tokenizer (exported and encoded with, by name)."""
        tokenizer = self.explore_panel.tokenizer
        if tokenizer is self.current.tokenizer:
            return
        self._set_current(CurrentTokenizer(tokenizer, title, None))

    def _set_current(self, current: CurrentTokenizer) -> None:
        """One rule for Export, Save session and Encode: they act on ``current``, named in the
        menus, the dialogs, the encode strip and every result message."""
        self.current = current
        name = f"“{current.title}”"
        self.export_action.setText(f"&Export {name}…")
        self.encode_action.setText(f"Encode a &corpus to .npy with {name}…")
        self.save_session_action.setText(f"Sa&ve session of {name}…" if current.session else "Sa&ve session…")
        self.summary_panel.export_button.setToolTip(f"Write {name}'s vocab.json, merges.txt and tokenizer.json (Ctrl+E)")
        self._update_encode_action()
        # The trained tokenizer: its training corpus's bytes per token as the vocabulary grew.
        sizes, bpt = self.state.bytes_per_token() if current.session is not None else ((), ())
        self.evaluate_panel.set_current_tokenizer(current.tokenizer, (sizes, bpt) if len(sizes) else None)

    def open_counts_dialog(self) -> None:
        """Choose pre-token counts files to train from (Train then merges from their sum)."""
        if self.is_training():
            return
        paths, _ = QFileDialog.getOpenFileNames(
            self, "Open pre-token counts", self._last_folder(), "Pre-token counts (*.bpc);;All files (*)"
        )
        if paths:
            self.open_counts(paths)

    def open_counts(self, paths: list[str]) -> None:
        try:
            self.settings_panel.use_counts_files(paths)
        except FormatError as e:
            self.banner.show_error(str(e))
            return
        self.tabs.setCurrentIndex(0)  # the Train tab
        self.banner.show_info(f"Train merges from the pre-token counts in {len(paths)} file"
                              f"{'s' * (len(paths) != 1)} (their pattern and special tokens are set).")

    def open_tokenizer_dialog(self) -> None:
        """Open an existing tokenizer in the Explore tab."""
        self.tabs.setCurrentWidget(self.explore_panel)
        self.explore_panel.open_tokenizer_dialog()

    # -- files -------------------------------------------------------------------------------------

    def _last_folder(self, key: str = "paths/last_folder") -> str:
        return str(self.qsettings.value(key, "") or str(Path.home()))

    def export_dialog(self) -> None:
        current = self.current
        if not current.exists:
            self.banner.show_error(NOTHING_TO_EXPORT)
            return
        allow_empty = False
        if _is_empty_partial(current.session):
            answer = QMessageBox.question(
                self, "Export an empty result?",
                "Training was cancelled before its first merge: this tokenizer has only the 256 byte "
                "tokens and the special tokens. Export it anyway?",
            )
            if answer != QMessageBox.StandardButton.Yes:
                return
            allow_empty = True
        folder = QFileDialog.getExistingDirectory(
            self, f"Export “{current.title}” to folder", self._last_folder("paths/export_folder")
        )
        if folder:
            self.export_to(folder, allow_empty=allow_empty)

    def export_to(self, folder: str | os.PathLike[str], *, allow_empty: bool = False) -> list[Path]:
        """Write the current tokenizer's vocab.json, merges.txt, tokenizer.json (and its config) into ``folder``.

        A partial result without a single merge is only written with ``allow_empty`` (the
        Export dialog asks first).
        """
        current = self.current
        if not current.exists:
            self.banner.show_error(NOTHING_TO_EXPORT)
            return []
        session, tokenizer = current.session, current.tokenizer
        if _is_empty_partial(session) and not allow_empty:
            self.banner.show_error(
                "Not exported: training was cancelled before its first merge, so the result holds no merge. "
                "Train again, or confirm in File › Export… to write it anyway."
            )
            return []
        try:
            if session is not None:
                paths = save_tokenizer(
                    folder, session.vocab, session.merges, list(session.settings.special_tokens),
                    session.settings.pattern,
                )
            else:
                paths = save_tokenizer(folder, tokenizer.vocab, tokenizer.merges,  # type: ignore[union-attr]
                                       list(tokenizer.special_tokens), tokenizer.pattern)  # type: ignore[union-attr]
        except (OSError, ValueError) as e:
            self.banner.show_error(f"Export failed: {e}")
            return []
        self.qsettings.setValue("paths/export_folder", str(folder))
        kind = "tokenizer"
        if session is not None and session.partial:
            kind = f"partial tokenizer ({len(session.merges):,} of {session.settings.max_merges:,} merges)"
        self.banner.show_info(f"Exported the {kind} “{current.title}” to {folder}: {', '.join(p.name for p in paths)}")
        return list(paths)

    # -- encoding a corpus ----------------------------------------------------------------------

    def is_encoding(self) -> bool:
        return self.encode_job is not None and self.encode_job.running

    def _update_encode_action(self) -> None:
        self.encode_action.setEnabled(self.current.tokenizer is not None and not self.is_encoding())

    def encode_corpus_dialog(self) -> None:
        """Ask for a corpus and a ``.npy`` to write, then encode (in the background)."""
        if self.current.tokenizer is None or self.is_encoding():
            return
        name = f"“{self.current.title}”"
        # The corpus encoded last, else the training corpus, else the last folder used.
        candidates = [str(self.qsettings.value("paths/encode_corpus", "") or ""), self.settings_panel.corpus()]
        start = next((c for c in candidates if c and os.path.isfile(c)), self._last_folder())
        corpus, _ = QFileDialog.getOpenFileName(self, f"Encode a corpus with {name}: choose the text file", start, CORPUS_FILTER)
        if not corpus:
            return
        npy = Path(corpus).stem + ".npy"
        folder = self.qsettings.value("paths/encode_folder", "") or str(Path(corpus).parent)
        out, _ = QFileDialog.getSaveFileName(
            self, f"Encode a corpus with {name}: save the token ids as", os.path.join(folder, npy), NPY_FILTER
        )
        if out:
            if not out.endswith(".npy"):
                out += ".npy"
            self.encode_corpus_to(corpus, out)

    def encode_corpus_to(self, corpus: str | os.PathLike[str], out: str | os.PathLike[str]) -> EncodeJob | None:
        """Start encoding ``corpus`` into ``out`` (a ``.npy``) with the current tokenizer.

        Returns the running job (its ``finished``/``stopped`` signals follow), or ``None`` when
        it could not start (the banner says why). The result goes to the banner too.
        """
        if self.is_encoding():
            self.banner.show_error("A corpus is being encoded already: wait for it or cancel it first.")
            return None
        if self.current.tokenizer is None:
            self.banner.show_error("Nothing to encode with yet: train a tokenizer or open one first.")
            return None
        if Path(out).resolve() == Path(corpus).resolve():
            self.banner.show_error(f"{Path(out).name} is the corpus itself: choose another name for the .npy.")
            return None
        self.banner.clear()
        self.qsettings.setValue("paths/encode_corpus", str(corpus))
        self.qsettings.setValue("paths/encode_folder", str(Path(out).parent))
        job = EncodeJob(corpus, self.current.tokenizer, out)
        self._encoding_with = self.current.title
        job.progress.connect(self._on_encode_progress)
        job.finished.connect(self._on_encode_finished)
        job.failed.connect(self._on_encode_failed)
        job.stopped.connect(self._on_encode_stopped)
        self.encode_job = job
        self.encode_strip.start(job.corpus, job.out, self.current.title)
        job.start()
        self._update_encode_action()
        return job

    def cancel_encoding(self) -> None:
        """Stop encoding; no ``.npy`` is written."""
        if self.is_encoding() and self.encode_job is not None:
            self.encode_job.cancel()
            self.statusBar().showMessage("Cancelling the encoding…")

    def _on_encode_progress(self, event: EncodeProgress) -> None:
        self.encode_strip.update_progress(event)
        self.statusBar().showMessage(f"Encoding: {self.encode_strip.text()}")

    def _on_encode_finished(self, f: EncodeFinished) -> None:
        self.banner.show_info(f"{f.summary()} — tokenizer “{self._encoding_with}”")

    def _on_encode_failed(self, message: str) -> None:
        self.banner.show_error(message)  # "Encoding failed: …", a user error or a bug alike

    def _on_encode_stopped(self, cancelled: bool) -> None:
        self.encode_strip.hide()
        self.statusBar().showMessage("Encoding cancelled: no .npy was written." if cancelled else "", 5000)
        if cancelled:
            self.banner.show_info("Encoding cancelled: no .npy was written.")
        self._update_encode_action()

    def _session_to_save(self) -> Session | None:
        """The current tokenizer's session, or None (the banner says why)."""
        current = self.current
        if current.session is not None:
            return current.session
        if current.tokenizer is not None:
            self.banner.show_error(
                f"“{current.title}” was opened from files, not trained here: a session holds a training "
                "result. Export (Ctrl+E) writes its files; train to make a session."
            )
        else:
            self.banner.show_error("Nothing to save yet: train a tokenizer first.")
        return None

    def save_session_dialog(self) -> None:
        session = self._session_to_save()
        if session is None:
            return
        name = Path(session.settings.corpus).stem or "tokenizer"
        start = os.path.join(self._last_folder("paths/session_folder"), name + SESSION_SUFFIX)
        path, _ = QFileDialog.getSaveFileName(self, "Save session", start, SESSION_FILTER)
        if path:
            self.save_session_to(path)

    def save_session_to(self, path: str | os.PathLike[str]) -> Path | None:
        """Save the current tokenizer's training result (the banner says why not, if it has none)."""
        session = self._session_to_save()
        if session is None:
            return None
        try:
            written = save_session(path, session)
        except (OSError, ValueError) as e:
            self.banner.show_error(f"The session could not be saved: {e}")
            return None
        self.qsettings.setValue("paths/session_folder", str(written.parent))
        self.banner.show_info(f"Session of “{self.current.title}” saved to {written}")
        return written

    def open_session_dialog(self) -> None:
        if self.is_training():
            return
        path, _ = QFileDialog.getOpenFileName(self, "Open session", self._last_folder("paths/session_folder"), SESSION_FILTER)
        if path:
            self.open_session(path)

    def open_session(self, path: str | os.PathLike[str]) -> bool:
        """Show a saved result without retraining; errors go to the banner."""
        if self.is_training():
            self.banner.show_error("Cancel the training before opening a session.")
            return False
        try:
            session = load_session(path)
        except (OSError, ValueError) as e:
            self.banner.show_error(f"The session could not be opened: {e}")
            return False
        self.banner.clear()
        self.qsettings.setValue("paths/session_folder", str(Path(path).parent))
        self.state.load(session)
        self.settings_panel.set_settings(session.settings)
        self._publish(session)
        return True

    def open_path(self, path: str) -> None:
        """Open a dropped or given file: a session, or else a corpus to train on."""
        if path.endswith(SESSION_SUFFIX):
            self.open_session(path)
        elif self.is_training():
            self.banner.show_error("Training is running: cancel it before choosing another corpus.")
        else:
            self.banner.clear()
            self.settings_panel.set_corpus(path)

    def _update_title(self, *_args: object) -> None:
        # "pydocs.txt — BPE Studio": the name last, as Qt puts the application's display
        # name after any title that does not already end with it.
        corpus = self.settings_panel.corpus()
        parts = [os.path.basename(corpus)] if corpus else []
        if self.state.session is not None and self.state.session.partial:
            parts = [" ".join(parts + ["(partial result)"])]
        self.setWindowTitle(" — ".join(parts + [APP_NAME]))

    # -- Qt events ---------------------------------------------------------------------------------

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if any(url.isLocalFile() for url in event.mimeData().urls()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:
        files = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if not files:
            event.ignore()
            return
        event.acceptProposedAction()
        if len(files) > 1 and not any(f.endswith(SESSION_SUFFIX) for f in files):
            self.open_path(join_sources(files))  # several files: one corpus
        else:
            self.open_path(files[0])

    def _background_jobs(self) -> list[LatestJob]:
        return self.findChildren(LatestJob)

    def _ready_to_close(self) -> bool:
        """Cancel every job; True once none runs. Until then the window stays up (and
        responsive), says what it waits for, and closes itself when the last one stops —
        waiting here for the training process to stop froze it for 0.6-1.1 s."""
        for job in (self.job, self.encode_job):
            if job is not None:
                job.cancel()
        background = self._background_jobs()
        for latest in background:
            latest.cancel()
        busy = self.is_training() or self.is_encoding() or any(latest.busy for latest in background)
        if busy and self._close_timer is None:
            what = "the training" if self.is_training() else "the encoding" if self.is_encoding() else "background work"
            self.banner.show_info(f"Closing: stopping {what} first…")
            self.statusBar().showMessage(f"Closing: stopping {what}…")
            self.centralWidget().setEnabled(False)
            self._close_timer = QTimer(self)
            self._close_timer.setInterval(CLOSE_POLL_MS)
            self._close_timer.timeout.connect(self._close_when_idle)
            self._close_timer.start()
        return not busy

    def _close_when_idle(self) -> None:
        if self.is_training() or self.is_encoding() or any(latest.busy for latest in self._background_jobs()):
            return
        assert self._close_timer is not None
        self._close_timer.stop()
        self.close()

    @property
    def closing(self) -> bool:
        """True from a close asked while work was running until the window closes."""
        return self._close_timer is not None

    def closeEvent(self, event: QCloseEvent) -> None:
        if not self._ready_to_close():
            event.ignore()
            return
        # Nothing runs any more; the waits below return at once: no thread or worker
        # process outlives the window.
        for job in (self.job, self.encode_job):
            if job is not None:
                job.shutdown()
        self.tokenizer_builder.shutdown()
        self.explore_panel.shutdown()
        self.evaluate_panel.shutdown()
        self.settings_panel.trainer_options.shutdown()
        self.settings_panel.save()
        self.qsettings.setValue("window/geometry", self.saveGeometry())
        self.qsettings.sync()
        super().closeEvent(event)
