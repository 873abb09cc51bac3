"""The training settings panel: corpus, vocabulary size, special tokens, pattern, workers, variant, Train.

The corpus is chosen by typing a path, a file dialog, the recent-files menu or the embedded
sample corpus; its files or folders can each be given a name (`NamedSources`: training on
named sources, with each merge's provenance); the line under the path follows the files on
disk (`CorpusInfo`). The pattern is a `PatternField`. The Train button turns into Cancel
while a run is going; the panel makes it, its owner places it (the Train tab pins it below
the scrolling settings, in view at 1024×700). The panel saves and restores its values in
QSettings; it does not train anything itself, it emits `trainClicked` / `cancelClicked`.
"""

from __future__ import annotations

import json
import os

from PySide6.QtCore import QSettings, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

import core
from bpe_studio.app.file_dialogs import dialogs_for
from bpe_studio.app.train.corpus_info import CorpusInfo
from bpe_studio.app.train.corpus_picker import CorpusOptions, join_sources, sources_exist
from bpe_studio.app.train.named_sources import NamedSources
from bpe_studio.app.train.pattern_field import PatternField
from bpe_studio.app.train.recent_files import RecentFiles
from bpe_studio.app.train.separator_hint import SEPARATOR, find_separator, suggestion
from bpe_studio.app.train.trainer_options import InitialInfo, TrainerOptions
from bpe_studio.app.train.variant_options import VariantOptions
from bpe_studio.app.widgets.wrapped_hint import WrappedHint
from bpe_studio.app.models.sample_corpus import SAMPLE_CORPUS_PATH
from bpe_studio.app.models.session import TrainSettings, split_sources
from bpe_studio.app.widgets.wheel_guard import guard_wheel
from core.pretokenize.specials import validate_special_tokens

DEFAULT_VOCAB_SIZE = 2000
DEFAULT_SPECIAL_TOKENS: tuple[str, ...] = ()
"""None, as in `bpe-studio train` (each ``--special-token`` adds one): the same corpus and size
give the same tokenizer in the window and on the command line."""
CORPUS_FILTER = (
    "Corpora (*.txt *.text *.md *.jsonl *.ndjson *.parquet *.gz *.bz2 *.xz *.zst *.csv *.tsv);;All files (*)"
)


class SettingsPanel(QWidget):
    """Inputs for one training run.

    Signals:
        trainClicked(): the user pressed Train.
        cancelClicked(): the user pressed Cancel (the same button, while running).
        corpusChanged(str): the corpus path changed.
    """

    trainClicked = Signal()
    cancelClicked = Signal()
    corpusChanged = Signal(str)

    def __init__(self, qsettings: QSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._qsettings = qsettings
        self.recent = RecentFiles(qsettings)
        self._running = False

        # Corpus: path, Browse, Recent/Sample menu, and a line describing the file.
        self.corpus_edit = QLineEdit()
        self.corpus_edit.setPlaceholderText("a UTF-8 text file…")
        self.corpus_edit.setAcceptDrops(False)  # drops go to the window, which opens the file
        self.corpus_edit.textChanged.connect(self._on_corpus_text)
        self.browse_button = QPushButton("Browse…")
        self.browse_button.setToolTip("Choose a text file to train on (Ctrl+O)")
        self.browse_button.clicked.connect(self.browse)
        # A push button with a menu: it sizes itself for the text and the arrow (a tool
        # button's arrow was drawn over its text).
        self.recent_button = QPushButton("Recent")
        self.recent_button.setToolTip("Recent corpora and the sample corpus")
        self.recent_menu = QMenu(self.recent_button)
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        self.recent_button.setMenu(self.recent_menu)
        self.corpus_info = CorpusInfo()  # size and files, read again as they change on disk
        self.corpus_options = CorpusOptions()
        self.corpus_options.folderChosen.connect(self._on_folder)
        self.named_sources = NamedSources()
        self.named_sources.corpusRewritten.connect(self.set_corpus)

        self.vocab_spin = QSpinBox()
        # Any size can be typed: one below the minimum is shown as it is and refused (see
        # `vocab_error`), never silently replaced by the spin box.
        self.vocab_spin.setRange(1, 10_000_000)
        self.vocab_spin.setSingleStep(500)
        self.vocab_spin.setGroupSeparatorShown(True)
        self.vocab_spin.setValue(DEFAULT_VOCAB_SIZE)
        self.vocab_spin.setToolTip("256 byte tokens + special tokens + merges")
        self.vocab_spin.valueChanged.connect(self._update_merges_hint)
        self.merges_hint = WrappedHint()  # "too small: …" must not widen the column and shift the charts

        self.specials_edit = QPlainTextEdit("\n".join(DEFAULT_SPECIAL_TOKENS))
        self.specials_edit.setPlaceholderText("none (as on the command line) — e.g. <|endoftext|>, one per line")
        self.specials_edit.setToolTip("One special token per line; they split the text and are never merged. "
                                      "None by default, as with bpe-studio train.")
        self.specials_edit.setTabChangesFocus(True)
        self.specials_edit.setFixedHeight(self.fontMetrics().lineSpacing() * 3 + 14)
        self.specials_edit.textChanged.connect(self._update_merges_hint)
        self.specials_edit.textChanged.connect(self._on_specials_typed)
        self._specials_auto = False  # the field holds only what `_suggest_specials` filled in
        self.specials_hint = WrappedHint()  # three lines: a plain label was squeezed and cut
        self.specials_hint.hide()

        self.pattern_field = PatternField(self)
        field = self.pattern_field
        self.pattern_combo, self.regex_edit, self.regex_status = field.combo, field.regex_edit, field.regex_status

        self.workers_spin = QSpinBox()
        cores = os.cpu_count() or 1
        self.workers_spin.setRange(0, max(64, cores))
        self.workers_spin.setSpecialValueText(f"all cores ({cores})")
        self.workers_spin.setToolTip("Processes for pre-tokenization")

        self.train_button = QPushButton("Train", self)  # not in this layout: the owner places it
        self.train_button.setObjectName("trainButton")
        self.train_button.setToolTip("Start training (Ctrl+Enter)")
        self.train_button.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.train_button.clicked.connect(self._on_train_button)

        corpus_row = QHBoxLayout()
        corpus_row.addWidget(self.corpus_edit, 1)
        corpus_row.addWidget(self.browse_button)
        corpus_row.addWidget(self.recent_button)
        corpus_box = QGroupBox("Corpus")
        corpus_layout = QVBoxLayout(corpus_box)
        corpus_layout.addLayout(corpus_row)
        corpus_layout.addWidget(self.corpus_info)
        corpus_layout.addWidget(self.named_sources)
        corpus_layout.addWidget(self.corpus_options)

        form_box = QGroupBox("Tokenizer")
        form = QFormLayout(form_box)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.addRow("Vocabulary size", self.vocab_spin)
        form.addRow("", self.merges_hint)
        form.addRow("Special tokens", self.specials_edit)
        form.addRow("", self.specials_hint)
        self.pattern_field.add_rows(form)
        self.variant_options = VariantOptions(self)
        self.variant_options.add_rows(form)
        self.named_sources.changed.connect(self._update_variant_sources)
        form.addRow("Workers", self.workers_spin)
        self.trainer_options = TrainerOptions(self)
        self.trainer_options.initialRead.connect(self._on_initial_read)
        self.trainer_options.add_rows(form)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(corpus_box)
        layout.addWidget(form_box)

        self.pattern_field.on_choice()
        self._update_merges_hint()
        guard_wheel(self)  # scrolling the panel over a setting must not change it

    # -- values --------------------------------------------------------------------------

    def corpus(self) -> str:
        return self.corpus_edit.text().strip()

    def set_corpus(self, path: str) -> None:
        self.corpus_edit.setText(path)

    def use_sample_corpus(self) -> None:
        self.set_corpus(str(SAMPLE_CORPUS_PATH))

    def set_vocab_size(self, size: int) -> None:
        self.vocab_spin.setValue(size)

    def special_tokens(self) -> list[str]:
        """The special tokens, one per line (blank lines are ignored)."""
        return [line for line in self.specials_edit.toPlainText().split("\n") if line.strip()]

    def pattern(self) -> str:
        return self.pattern_field.pattern()

    def settings(self) -> TrainSettings:
        workers = self.workers_spin.value()
        specials = self.special_tokens()
        kept = self.trainer_options.info
        if kept is not None:  # a continued tokenizer's special tokens come first, whatever was edited
            specials = [*kept.special_tokens, *(t for t in specials if t not in kept.special_tokens)]
        variant = self.variant_options.variant()
        options = core.TrainOptions(
            self.vocab_spin.value(), tuple(specials), pattern=self.pattern(), workers=workers or None,
            max_token_length=self.trainer_options.max_token_length(),
            min_frequency=self.trainer_options.min_frequency(), initial=self.trainer_options.initial(),
            variant=variant,
        )
        read = core.ReadOptions(field=self.corpus_options.field(), max_bytes=self.corpus_options.max_bytes(),
                                sample=self.corpus_options.sample())
        return TrainSettings(self.corpus(), options, read,
                             inherited_merges=self.trainer_options.info.merges if self.trainer_options.info else 0,
                             names=self.named_sources.names())

    def set_settings(self, settings: TrainSettings) -> None:
        """Show ``settings`` (e.g. those of an opened session)."""
        self.set_corpus(settings.corpus)
        self.named_sources.set_names(settings.sources, settings.names)
        self._update_variant_sources()
        self.vocab_spin.setValue(settings.vocab_size)
        self.specials_edit.setPlainText("\n".join(settings.special_tokens))
        self._set_pattern(settings.pattern)
        self.workers_spin.setValue(settings.workers or 0)
        self.trainer_options.set_values(settings.options)
        self.variant_options.set_variant(getattr(settings.options, "variant", None))
        self.corpus_options.set_values(settings)

    def minimum_vocab_size(self) -> int:
        """The smallest vocabulary the settings allow: 256 bytes + the special tokens."""
        return 256 + len(self.special_tokens())

    def vocab_error(self) -> str | None:
        """Why the vocabulary size is refused (the trainer's own words), or ``None``."""
        size, minimum = self.vocab_spin.value(), self.minimum_vocab_size()
        if size >= minimum:
            return None
        specials = len(self.special_tokens())
        return (f"Vocabulary size {size:,} is too small: it needs at least 256 byte tokens + {specials} special "
                f"token{'' if specials == 1 else 's'} = {minimum:,}.")

    def validation_error(self) -> str | None:
        """What is wrong with the inputs before training starts, or ``None``.

        The trainer checks the corpus itself; this catches what the panel can tell at once
        (no corpus, a vocabulary below the minimum, a bad regex, bad special tokens).
        """
        if not self.corpus():
            return "Choose a corpus first: Browse… (Ctrl+O), drop a file on the window, or use the sample corpus."
        if self.trainer_options.pending:
            return "The tokenizer to continue is still being read; train again in a moment."
        if (naming := self.named_sources.problem()) is not None:
            return naming
        if (lacking := self.variant_options.problem()) is not None:  # parity-aware BPE: named sources, dev files
            return lacking
        try:
            validate_special_tokens(self.special_tokens())
            core.resolve_pattern(self.pattern())
            if (too_small := self.vocab_error()) is not None:
                return too_small
            self.settings()  # the options' own checks (a variant refuses a max token length, ...)
        except (TypeError, ValueError) as e:
            return str(e)
        return None

    # -- running state -----------------------------------------------------------------------

    def set_running(self, running: bool) -> None:
        """While running the button reads Cancel and the inputs are locked."""
        self._running = running
        self.train_button.setText("Cancel" if running else "Train")
        self.train_button.setToolTip("Stop training, keeping the merges so far (Esc)" if running else "Start training (Ctrl+Enter)")
        self.train_button.setProperty("running", running)
        self.train_button.style().unpolish(self.train_button)
        self.train_button.style().polish(self.train_button)
        for widget in (self.corpus_edit, self.browse_button, self.recent_button, self.vocab_spin,
                       self.specials_edit, self.workers_spin, self.corpus_options):
            widget.setEnabled(not running)
        self.pattern_field.set_running(running)
        self.named_sources.set_running(running)
        self.trainer_options.set_running(running)
        self.variant_options.set_running(running)
        self.corpus_info.set_watching(not running)  # a run reads the files: no need to look meanwhile

    def _on_train_button(self) -> None:
        if not self._running:
            self.corpus_info.refresh()  # what the run will read, not what was there a moment ago
        (self.cancelClicked if self._running else self.trainClicked).emit()

    # -- corpus ------------------------------------------------------------------------------

    def browse(self) -> None:
        """Choose the corpus with a file dialog, starting in the last folder used."""
        if self._running:
            return
        paths = dialogs_for(self).open_files("Open corpus (one or several files)", "paths/corpus_folder",
                                             CORPUS_FILTER, start=next(iter(split_sources(self.corpus())), ""))
        if paths:
            self.set_corpus(join_sources(paths))

    def _on_folder(self, folder: str) -> None:
        """A folder chosen with "Folder…": the corpus, or one more named source."""
        sources = split_sources(self.corpus())
        if self.named_sources.check.isChecked() and sources and folder not in sources:
            self.set_corpus(join_sources([*sources, folder]))
        else:
            self.set_corpus(folder)

    def use_counts_files(self, paths: list[str]) -> None:
        """Train from pre-token counts files (``bpe-studio count``): they become the corpus,
        and the pattern and special tokens they were counted with are set (the counts
        cannot be trained with others). Raises `core.FormatError` for a file that is not one."""
        infos = [core.PretokenCounts.read_info(path) for path in paths]  # headers only: quick
        self.set_corpus(join_sources(paths))
        pattern = core.resolve_pattern(str(infos[0]["pattern"]))  # a built-in one by its name
        self._set_pattern(pattern.name if pattern.name != "custom" else pattern.source)
        self.specials_edit.setPlainText("\n".join(str(t) for t in infos[0]["special_tokens"]))

    def _fill_recent_menu(self) -> None:
        self.recent.fill_menu(self.recent_menu, self.set_corpus)
        first = self.recent_menu.actions()[0]
        sample = QAction("Sample corpus (built in)", self.recent_menu)
        sample.triggered.connect(self.use_sample_corpus)
        self.recent_menu.insertAction(first, sample)
        self.recent_menu.insertSeparator(first)

    def _on_corpus_text(self, text: str) -> None:
        path = text.strip()
        self.corpus_edit.setToolTip(path)
        self.corpus_info.set_corpus(path)
        if path and os.path.isfile(path) and os.path.abspath(path) != str(SAMPLE_CORPUS_PATH):
            # (the sample's folder is inside the application: no dialog starts there)
            self._qsettings.setValue("paths/last_folder", os.path.dirname(os.path.abspath(path)))
        self.corpus_options.update_for(path)
        self.named_sources.set_paths(split_sources(path))
        self._update_variant_sources()
        self._suggest_specials(path)
        self.corpusChanged.emit(path)

    def _update_variant_sources(self) -> None:
        """Parity-aware BPE's ratio table and check follow the sources' names."""
        self.variant_options.set_sources(self.named_sources.names(), self.named_sources.check.isChecked())

    def _suggest_specials(self, corpus: str) -> None:
        """``<|endoftext|>`` between the corpus's documents: the field starts with it, and says why."""
        advice = suggestion(find_separator(corpus), self.special_tokens(), self._specials_auto)
        if advice.text is not None:
            self.specials_edit.blockSignals(True)  # not a user's edit
            self.specials_edit.setPlainText(advice.text)
            self.specials_edit.blockSignals(False)
            self._update_merges_hint()
        self._specials_auto = advice.auto
        self.specials_hint.setText(advice.hint)
        self.specials_hint.setVisible(bool(advice.hint))

    def _on_specials_typed(self) -> None:
        """Typed: the field is the user's; a hint about what was filled in (or to add) goes."""
        if self._specials_auto or SEPARATOR in self.special_tokens():
            self.specials_hint.hide()
        self._specials_auto = False

    def _set_pattern(self, pattern: str) -> None:
        self.pattern_field.set_pattern(pattern)

    def _update_merges_hint(self) -> None:
        minimum = self.minimum_vocab_size()
        merges = self.vocab_spin.value() - minimum
        self.variant_options.set_max_merges(merges)
        too_small = merges < 0
        if too_small:
            self.merges_hint.setText(f"too small: at least {minimum:,} (256 bytes + special tokens)")
        else:
            self.merges_hint.setText(f"{merges:,} merges · minimum {minimum:,}")
        self.vocab_spin.setToolTip(f"256 byte tokens + special tokens + merges: at least {minimum:,}")
        for widget in (self.vocab_spin, self.merges_hint):
            if widget.property("invalid") != too_small:
                widget.setProperty("invalid", too_small)
                widget.style().unpolish(widget)
                widget.style().polish(widget)

    # -- persistence ---------------------------------------------------------------------------

    def save(self) -> None:
        s = self._qsettings
        s.setValue("train/corpus", self.corpus())
        s.setValue("train/vocab_size", self.vocab_spin.value())
        s.setValue("train/special_tokens", json.dumps(self.special_tokens()))
        s.setValue("train/pattern", str(self.pattern_combo.currentData()))
        s.setValue("train/custom_pattern", self.regex_edit.text())
        s.setValue("train/workers", self.workers_spin.value())
        self.trainer_options.save(s)
        self.variant_options.save(s)
        self.corpus_options.save(s)
        self.named_sources.save(s)

    def restore(self) -> None:
        """Restore the last values; on first launch preselect the sample corpus."""
        s = self._qsettings
        corpus = str(s.value("train/corpus", "") or "")
        self.set_corpus(corpus if sources_exist(corpus) else str(SAMPLE_CORPUS_PATH))
        self.vocab_spin.setValue(_int(s.value("train/vocab_size"), DEFAULT_VOCAB_SIZE))
        try:
            specials = json.loads(str(s.value("train/special_tokens", "")))
            if isinstance(specials, list):
                self.specials_edit.setPlainText("\n".join(str(t) for t in specials))
        except json.JSONDecodeError:
            pass
        self.regex_edit.setText(str(s.value("train/custom_pattern", "") or ""))
        choice = str(s.value("train/pattern", "gpt2"))
        index = self.pattern_combo.findData(choice)
        self.pattern_combo.setCurrentIndex(max(index, 0))
        self.workers_spin.setValue(_int(s.value("train/workers"), 0))
        self.trainer_options.restore(s)
        self.variant_options.restore(s)
        self.corpus_options.restore(s)
        self.named_sources.restore(s)
        self._update_variant_sources()

    def _on_initial_read(self, info: InitialInfo | None) -> None:
        """A continued tokenizer's special tokens come first, and its pattern is the run's."""
        if info is None:
            return
        extra = [t for t in self.special_tokens() if t not in info.special_tokens]
        self.specials_edit.setPlainText("\n".join([*info.special_tokens, *extra]))
        self._set_pattern(info.pattern)


def _int(value: object, default: int) -> int:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default
