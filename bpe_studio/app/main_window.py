"""BPE Studio's main window: assembles the panels, menus and shortcuts, and connects them to the controllers.

The Train tab holds the settings and result panels on the left, and progress, the live
merges table and the charts on the right; Explore and Evaluate are tabs of their own. The
work is done by the controllers (`bpe_studio.app.controllers`): `TrainingController` runs
training into the one `TrainingState` every panel reads, `ExportController` and
`SessionController` write files off the GUI thread, `EncodingController` encodes a corpus.
The window turns menu actions into their calls and their signals into banners, status
lines and enabled actions.

    window = MainWindow(corpus="corpus.txt", vocab_size=5000); window.show()
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent, QIcon
from PySide6.QtWidgets import QMainWindow, QTabWidget, QVBoxLayout, QWidget

from bpe_studio.app.compare.compare_view import CompareView
from bpe_studio.app.controllers.closing import CloseGuard, window_work
from bpe_studio.app.controllers.current import CurrentController
from bpe_studio.app.controllers.encoding import EncodingController
from bpe_studio.app.controllers.export import ExportController
from bpe_studio.app.controllers.sessions import SESSION_SUFFIX, SessionController
from bpe_studio.app.controllers.training import TrainingController
from bpe_studio.app import questions
from bpe_studio.app.encode.encode_dialog import EncodeDialog
from bpe_studio.app.encode.encode_strip import EncodeStrip
from bpe_studio.app.evaluate.evaluate_panel import EvaluatePanel
from bpe_studio.app.explore.explore_panel import ExplorePanel
from bpe_studio.app.file_dialogs import FileDialogs, default_qsettings
from bpe_studio.app.help_menu import add_help_menu
from bpe_studio.app.menus import build_menus
from bpe_studio.app.models.current_tokenizer import CurrentTokenizer, trained_title
from bpe_studio.app.models.session import Session
from bpe_studio.app.models.run_progress import Stage
from bpe_studio.app.resources import resource, style_sheet
from bpe_studio.app.train.corpus_picker import join_sources
from bpe_studio.app.train.train_tab import TrainTab
from bpe_studio.app.widgets.error_banner import ErrorBanner
from bpe_studio.app.widgets.screen_fit import place_window
from bpe_studio.app.widgets.font_warmup import warm_fonts
from bpe_studio.app.widgets.wheel_guard import guard_wheel
from bpe_studio.app.workers.heap import freeze_long_lived_objects
from bpe_studio.app.workers.thread_job import LatestJob, ThreadJob
from core.errors import FormatError

SESSION_FILTER = f"BPE Studio sessions (*{SESSION_SUFFIX});;All files (*)"
DEFAULT_SIZE = (1360, 860)
APP_NAME = "BPE Studio"


class MainWindow(QMainWindow):
    """The application window.

    Args:
        corpus: a corpus path to preselect (else the last one used, or the sample corpus).
        vocab_size: a vocabulary size to preselect (else the last one used).
        settings: where to keep persistent settings (default: `default_qsettings()`).
    """

    ask_before_quitting = True
    """Closing while training runs asks first (tests of other things turn it off)."""

    def __init__(self, corpus: str | None = None, vocab_size: int | None = None, *,
                 settings: QSettings | None = None) -> None:
        super().__init__()
        self.qsettings = settings if settings is not None else default_qsettings()
        self.dialogs = FileDialogs(self, self.qsettings)
        self.training = TrainingController(parent=self)
        self.state = self.training.state  # the one state every panel reads
        self.exports = ExportController(self)
        self.sessions = SessionController(self)
        self.encoding = EncodingController(self)
        self.close_guard = CloseGuard(window_work(self.training, self.encoding, self.exports, self.sessions,
                                                  lambda: self.findChildren(LatestJob)), self)
        self.close_guard.idle.connect(self.close)
        self.current_tokenizer = CurrentController(self)  # what Export, Save session and Encode act on

        self.banner = ErrorBanner()
        self.encode_strip = EncodeStrip()
        tab = self.train_tab = TrainTab(self.state, self.qsettings)
        self.settings_panel, self.summary_panel, self.progress_panel = tab.settings_panel, tab.summary_panel, tab.progress_panel
        self.merges_table, self.charts, self.left_scroll = tab.merges_table, tab.charts, tab.left_scroll
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(tab, "Train")
        self.explore_panel = ExplorePanel(compare=CompareView(), dialogs=self.dialogs)  # vocabulary, inspector, compare
        self.tabs.addTab(self.explore_panel, "Explore")
        self.evaluate_panel = EvaluatePanel()  # held-out evaluation of tokenizers
        self.tabs.addTab(self.evaluate_panel, "Evaluate")

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
        build_menus(self)
        self.help_actions = add_help_menu(self)
        self._connect()

        self.settings_panel.restore()
        if corpus:
            self.settings_panel.set_corpus(str(corpus))
        if vocab_size is not None:
            self.settings_panel.set_vocab_size(int(vocab_size))
        place_window(self, self.qsettings.value("window/geometry", b""), DEFAULT_SIZE)  # inside the screen
        guard_wheel(self)  # the wheel changes a setting only when it has focus
        warm_fonts(self)  # the scripts' fonts load while idle, not in the middle of a training
        self._update_title()
        freeze_long_lived_objects()  # so no full collection of the whole heap stalls a run

    # -- assembly -------------------------------------------------------------------------------

    def _connect(self) -> None:
        training, panel = self.training, self.settings_panel
        panel.trainClicked.connect(self.start_training)
        panel.cancelClicked.connect(self.cancel_training)
        panel.corpusChanged.connect(self._update_title)
        panel.corpusChanged.connect(self.summary_panel.set_chosen_corpus)
        # The Result panel's buttons act on the result it shows, even with another tokenizer current.
        self.summary_panel.exportClicked.connect(lambda: self.export_dialog(self.current_tokenizer.trained))
        self.summary_panel.saveClicked.connect(lambda: self.save_session_dialog(self.current_tokenizer.trained))
        self.progress_panel.statusChanged.connect(self.statusBar().showMessage)
        training.started.connect(self._on_started)
        training.ended.connect(self._show_end)
        training.failed.connect(self.banner.show_error)
        training.restored.connect(self._on_restored)
        training.stopped.connect(lambda _cancelled: panel.set_running(self.state.stage.running))
        current = self.current_tokenizer
        training.result.connect(current.publish)
        training.result.connect(self._update_title)
        current.changed.connect(self._on_current)
        current.ready.connect(lambda tok, counts, title: self.explore_panel.set_tokenizer(
            tok, merge_counts=counts, origins=current.origins, title=title))
        current.failed.connect(self.banner.show_error)
        self.explore_panel.tokenizer_changed.connect(
            lambda title: current.show_opened(self.explore_panel.tokenizer, title))
        self.evaluate_panel.error.connect(self.banner.show_error)
        for controller in (self.exports, self.sessions, self.encoding):
            controller.failed.connect(self.banner.show_error)
        for done in (self.exports.finished, self.sessions.saved):
            done.connect(lambda message, _paths: (self.banner.show_info(message), self.statusBar().clearMessage()))
        self.encode_strip.follow(self.encoding)
        self.encode_strip.statusChanged.connect(self.statusBar().showMessage)
        self.encoding.started.connect(self._update_encode_action)
        self.encoding.finished.connect(self.banner.show_info)
        self.encoding.stopped.connect(self._on_encode_stopped)

    # -- training -------------------------------------------------------------------------------

    def is_training(self) -> bool:
        return self.training.running

    def start_training(self) -> None:
        """Start a run with the panel's settings (errors go to the banner)."""
        if self.state.stage.running:
            return
        self.banner.clear()
        problem = self.settings_panel.validation_error()
        if problem:
            self.banner.show_error(problem)
            return
        settings = self.settings_panel.settings()
        if os.path.isfile(settings.corpus):
            self.settings_panel.recent.add(settings.corpus)
        self.training.start(settings)  # `started` follows (at once, or when the last job has wound down)

    def _on_started(self) -> None:
        self.settings_panel.set_running(True)
        self.train_tab.show_now()  # drop the previous run's rows now

    def cancel_running(self) -> None:
        """Esc: stop the training if one runs, else the encoding of a corpus."""
        if self.state.stage.running:
            self.cancel_training()
        else:
            self.cancel_encoding()

    def cancel_training(self) -> None:
        """Stop the run; the merges learned so far stay as a partial result."""
        if self.state.stage.running and self.training.cancel():
            self.statusBar().showMessage("Cancelling…")

    def _show_end(self, _stage: Stage) -> None:
        """The state says the run ended: every view says so now (the job's thread may still be winding down)."""
        self.train_tab.show_end()
        self._update_title()

    def _on_restored(self, previous: Session) -> None:
        self.train_tab.show_now()
        self._update_title()
        self.banner.show_info(
            f"Training cancelled before its first merge: the previous result ({trained_title(previous)}) is kept.")

    @property
    def current(self) -> CurrentTokenizer:
        return self.current_tokenizer.current

    @property
    def tokenizer(self) -> object | None:
        """The latest trained tokenizer (None until one is built)."""
        return self.current_tokenizer.tokenizer

    @property
    def merge_counts(self) -> dict[int, int] | None:
        return self.current_tokenizer.merge_counts

    def _on_current(self, current: CurrentTokenizer) -> None:
        """Export, Save session and Encode act on ``current``, named in the menus, the dialogs,
        the encode strip and every result message."""
        name = f"“{current.title}”"
        self.export_action.setText(f"&Export {name}…")
        self.encode_action.setText(f"Encode a &corpus to .npy with {name}…")
        self.save_session_action.setText(f"Sa&ve session of {name}…" if current.session else "Sa&ve session…")
        trained = self.current_tokenizer.trained
        if trained.exists:
            self.summary_panel.export_button.setToolTip(f"Write “{trained.title}”'s vocab.json, merges.txt and tokenizer.json")
        self._update_encode_action()
        # The trained tokenizer: its training corpus's bytes per token as the vocabulary grew.
        sizes, bpt = self.state.bytes_per_token() if current.session is not None else ((), ())
        self.evaluate_panel.set_current_tokenizer(current.tokenizer, (sizes, bpt) if len(sizes) else None)

    # -- opening --------------------------------------------------------------------------------

    def open_counts_dialog(self) -> None:
        """Choose pre-token counts files to train from (Train then merges from their sum)."""
        if not self.training.running:
            paths = self.dialogs.open_files("Open pre-token counts", "paths/counts_folder",
                                            "Pre-token counts (*.bpc);;All files (*)")
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

    def open_session_dialog(self) -> None:
        if not self.training.running:
            path = self.dialogs.open_file("Open session", "paths/session_folder", SESSION_FILTER)
            if path:
                self.open_session(path)

    def open_session(self, path: str | os.PathLike[str]) -> bool:
        """Show a saved result without retraining; errors go to the banner."""
        if self.training.running:
            self.banner.show_error("Cancel the training before opening a session.")
            return False
        session = self.sessions.open(path)
        if session is None:
            return False
        self.banner.clear()
        self.dialogs.remember(path, "paths/session_folder")
        self.state.load(session)
        self.settings_panel.set_settings(session.settings)
        self.train_tab.show_now()
        self._update_title()
        self.current_tokenizer.publish(session)
        return True

    def open_path(self, path: str) -> None:
        """Open a dropped or given file: a session, or else a corpus to train on."""
        if path.endswith(SESSION_SUFFIX):
            self.open_session(path)
        elif self.training.running:
            self.banner.show_error("Training is running: cancel it before choosing another corpus.")
        else:
            self.banner.clear()
            self.settings_panel.set_corpus(path)

    # -- writing: export, session, encoding (the controllers run them off the GUI thread) --------

    def export_dialog(self, current: CurrentTokenizer | None = None) -> None:
        """Ask for a folder and export ``current`` (default: the current tokenizer) into it."""
        current = self.current if current is None else current
        problem = self.exports.refusal(current, allow_empty=True)
        if problem:
            self.banner.show_error(problem)
            return
        if current.empty_partial and not questions.export_empty_result(self):
            return
        folder = self.dialogs.choose_folder(f"Export “{current.title}” to folder", "paths/export_folder")
        if folder:
            self.export_to(folder, allow_empty=current.empty_partial, current=current)

    def export_to(self, folder: str | os.PathLike[str], *, allow_empty: bool = False,
                  current: CurrentTokenizer | None = None) -> ThreadJob | None:
        """Write ``current``'s files (default: the current tokenizer's) into ``folder`` in the
        background; the banner shows the result. Returns the job (None if refused: the banner says why)."""
        current = self.current if current is None else current
        self.banner.clear()
        job = self.exports.export(folder, current, allow_empty=allow_empty)
        if job is not None:
            self.statusBar().showMessage(f"Exporting “{current.title}” to {folder}…")
        return job

    def save_session_dialog(self, current: CurrentTokenizer | None = None) -> None:
        """Ask for a file and save ``current``'s session (default: the current tokenizer's)."""
        current = self.current if current is None else current
        session = current.session
        if session is None:
            self.save_session_to("", current=current)  # the banner says why there is none
            return
        name = (Path(session.settings.corpus).stem or "tokenizer") + SESSION_SUFFIX
        path = self.dialogs.save_file("Save session", "paths/session_folder", name, SESSION_FILTER)
        if path:
            self.save_session_to(path, current=current)

    def save_session_to(self, path: str | os.PathLike[str], *,
                        current: CurrentTokenizer | None = None) -> ThreadJob | None:
        """Save ``current``'s training result (default: the current tokenizer's) in the background
        (the banner shows the result, or why there is none). Returns the job, or None."""
        job = self.sessions.save(path, self.current if current is None else current)
        if job is not None:
            self.statusBar().showMessage(f"Saving the session to {path}…")
        return job

    def is_encoding(self) -> bool:
        return self.encoding.running

    def _update_encode_action(self, *_args: object) -> None:
        self.encode_action.setEnabled(self.current.tokenizer is not None and not self.encoding.running)

    def encode_corpus_dialog(self) -> None:
        """Ask for a corpus, a ``.npy`` and the separator, then encode (in the background)."""
        if self.current.tokenizer is None or self.encoding.running:
            return
        last = str(self.qsettings.value("paths/encode_corpus", "") or "")
        corpus = next((c for c in (last, self.settings_panel.corpus()) if c and os.path.isfile(c)), "")
        dialog = EncodeDialog(self, self.current.tokenizer, self.current.title, self.dialogs, corpus)
        if dialog.exec():
            self.encode_corpus_to(dialog.corpus(), dialog.out(), doc_separator=dialog.doc_separator())

    def encode_corpus_to(self, corpus: str | os.PathLike[str], out: str | os.PathLike[str], *,
                         doc_separator: str | bool | None = True):
        """Start encoding ``corpus`` into ``out`` with the current tokenizer (``doc_separator`` as
        ``bpe-studio encode``'s). Returns the job, or None (the banner says why)."""
        self.banner.clear()
        job = self.encoding.start(corpus, out, self.current, doc_separator=doc_separator)
        if job is not None:
            self.qsettings.setValue("paths/encode_corpus", str(corpus))
            self.dialogs.remember(out, "paths/encode_folder")
        return job

    def cancel_encoding(self) -> None:
        """Stop encoding; no ``.npy`` is written."""
        if self.encoding.cancel():
            self.statusBar().showMessage("Cancelling the encoding…")

    def _on_encode_stopped(self, cancelled: bool) -> None:
        if cancelled:
            self.banner.show_info("Encoding cancelled: no .npy was written.")
        self._update_encode_action()

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

    @property
    def closing(self) -> bool:
        """True from a close asked while work was running until the window closes."""
        return self.close_guard.waiting

    def closeEvent(self, event: QCloseEvent) -> None:
        asking = self.ask_before_quitting and self.state.stage.running and not self.closing
        if asking and not questions.quit_during_training(self):
            event.ignore()
            return
        what = self.close_guard.request()
        if what:  # the window stays up (and responsive) and closes itself when all is idle
            self.banner.show_info(f"Closing: stopping {what} first…")
            self.statusBar().showMessage(f"Closing: stopping {what}…")
            self.centralWidget().setEnabled(False)
            event.ignore()
            return
        # Nothing runs any more; the waits below return at once: no thread or worker
        # process outlives the window.
        for controller in (self.training, self.encoding, self.exports, self.sessions):
            controller.shutdown()
        self.current_tokenizer.shutdown()
        self.explore_panel.shutdown()
        self.evaluate_panel.shutdown()
        self.settings_panel.trainer_options.shutdown()
        self.settings_panel.save()
        self.qsettings.setValue("window/geometry", self.saveGeometry())
        self.qsettings.sync()
        super().closeEvent(event)
