"""How the corpus is read: a folder button, the text field of JSONL/Parquet, a size cap, a sample.

`CorpusOptions` sits under the corpus path in the settings panel. "Folder…" picks a folder
(all its files, recursively); for JSONL and Parquet sources the *Text field* chooser lists
the string fields of the first records (defaulting to ``text``); *Use at most* caps the
text read (MB) and *Sample* keeps a percentage of the documents (reproducible: seed 0).
`describe` says in one line what a corpus text names (files, size, formats). Reading the
first records takes a few milliseconds; walking a folder stops at its first JSONL/Parquet
file, so nothing here holds the GUI thread for long.
"""

from __future__ import annotations

import glob
import itertools
import os

from PySide6.QtCore import QSettings, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QWidget,
)

from bpe_studio.app.file_dialogs import dialogs_for
from bpe_studio.app.models.session import SOURCE_SEPARATOR, TrainSettings, split_sources
from core.corpus.sources import text_fields
from core.progress import format_bytes

STRUCTURED = (".jsonl", ".ndjson", ".parquet")
COMPRESSED = (".gz", ".bz2", ".xz", ".zst")
SCAN_LIMIT = 2000
"""At most this many files are looked at on the GUI thread (a folder typed as "/" must not
freeze the window): a bigger folder is described without its size, and the field chooser
looks for a JSONL/Parquet file among its first files only."""


def _structured(path: str) -> bool:
    name = path.lower()
    for suffix in COMPRESSED:
        name = name.removesuffix(suffix)
    return name.endswith(STRUCTURED)


def _files_under(folder: str, limit: int) -> tuple[list[str], bool]:
    """Up to ``limit`` files under ``folder`` (hidden ones skipped; in directory order, not
    sorted: sorting would need every name), and whether there are more."""
    found: list[str] = []
    stack = [folder]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.name.startswith("."):
                        continue
                    if entry.is_dir():
                        stack.append(entry.path)
                    elif len(found) >= limit:
                        return found, True
                    else:
                        found.append(entry.path)
        except OSError:
            continue
    return found, False


def _first_structured(sources: list[str]) -> str | None:
    """A JSONL/Parquet file the sources name, looking at no more than `SCAN_LIMIT` files."""
    for source in sources:
        if os.path.isfile(source):
            candidates = [source]
        elif os.path.isdir(source):
            candidates, more = _files_under(source, SCAN_LIMIT)
            if more:
                return None
        elif glob.has_magic(source):
            candidates = list(itertools.islice(glob.iglob(source, recursive=True), SCAN_LIMIT))
        else:
            continue
        for path in sorted(candidates):
            if _structured(path) and os.path.isfile(path):
                return path
    return None


def describe(text: str) -> str:
    """One line about the corpus ``text`` names: ``"3 files · 1.2 GB"``, ``"No such file."``."""
    sources = split_sources(text)
    if not sources:
        return "No corpus chosen."
    count = size = 0
    for source in sources:
        if os.path.isfile(source):
            paths = [source]
        elif os.path.isdir(source):
            paths, more = _files_under(source, SCAN_LIMIT)
            if more:
                return f"{source}: a folder of more than {SCAN_LIMIT:,} files"
            if not paths:
                return f"The folder {source} holds no files."
        elif glob.has_magic(source):
            paths = []
            for match in glob.iglob(source, recursive=True):
                if len(paths) > SCAN_LIMIT:
                    return f"{source}: more than {SCAN_LIMIT:,} files"
                paths.append(match)
            paths = [p for p in paths if os.path.isfile(p)]
            if not paths:
                return f"No file matches {source}."
        else:
            return f"No such file: {source}" if len(sources) > 1 else "No such file."
        count += len(paths)
        size += sum(os.path.getsize(p) for p in paths if os.path.isfile(p))
    if count == 1:
        return format_bytes(size)
    return f"{count:,} files · {format_bytes(size)}"


class CorpusOptions(QWidget):
    """The folder button and the reading options of the corpus.

    Signals:
        folderChosen(str): the user picked a folder with "Folder…".
    """

    folderChosen = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.folder_button = QPushButton("Folder…")
        self.folder_button.setToolTip("Train on every file of a folder (recursively; hidden files skipped)")
        self.folder_button.clicked.connect(self.choose_folder)
        self.field_label = QLabel("Text field")
        self.field_combo = QComboBox()
        self.field_combo.setEditable(True)
        self.field_combo.setToolTip("The JSONL field or Parquet column that holds the text")
        self.field_combo.addItem("text")
        self.max_mb_spin = QSpinBox()
        self.max_mb_spin.setRange(0, 100_000_000)
        self.max_mb_spin.setSingleStep(100)
        self.max_mb_spin.setSuffix(" MB")
        self.max_mb_spin.setSpecialValueText("all of it")
        self.max_mb_spin.setToolTip("Read at most this much text (the last document is cut there)")
        self.sample_spin = QDoubleSpinBox()
        self.sample_spin.setRange(0.1, 100.0)
        self.sample_spin.setDecimals(1)
        self.sample_spin.setSuffix(" %")
        self.sample_spin.setValue(100.0)
        self.sample_spin.setToolTip("Keep this share of the documents, chosen the same way every time")

        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.folder_button)
        top.addStretch(1)
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.addRow(top)
        form.addRow(self.field_label, self.field_combo)
        form.addRow("Use at most", self.max_mb_spin)
        form.addRow("Sample", self.sample_spin)
        self._set_field_visible(False)

    # -- values ----------------------------------------------------------------------------------

    def field(self) -> str:
        return self.field_combo.currentText().strip() or "text"

    def max_bytes(self) -> int | None:
        return self.max_mb_spin.value() * 1_000_000 or None

    def sample(self) -> float | None:
        value = self.sample_spin.value()
        return None if value >= 100.0 else value / 100.0

    def set_values(self, settings: TrainSettings) -> None:
        self.field_combo.setCurrentText(settings.field)
        self.max_mb_spin.setValue((settings.max_bytes or 0) // 1_000_000)
        self.sample_spin.setValue(100.0 * (settings.sample or 1.0))

    def update_for(self, corpus: str) -> None:
        """Show the field chooser when the corpus has JSONL/Parquet files, listing the
        string fields of the first one's first records."""
        first = _first_structured(split_sources(corpus))
        self._set_field_visible(first is not None)
        if first is None:
            return
        current = self.field()
        fields = text_fields(first)
        self.field_combo.blockSignals(True)
        self.field_combo.clear()
        self.field_combo.addItems(fields or ["text"])
        self.field_combo.setCurrentText(current if current in fields or not fields else
                                        ("text" if "text" in fields else fields[0]))
        self.field_combo.blockSignals(False)

    def _set_field_visible(self, visible: bool) -> None:
        self.field_label.setVisible(visible)
        self.field_combo.setVisible(visible)

    # -- folder ----------------------------------------------------------------------------------

    def choose_folder(self) -> None:
        folder = dialogs_for(self).existing_folder("Train on a folder", "paths/corpus_folder")
        if folder:
            self.folderChosen.emit(folder)

    # -- persistence -----------------------------------------------------------------------------

    def save(self, settings: QSettings) -> None:
        settings.setValue("train/field", self.field())
        settings.setValue("train/max_mb", self.max_mb_spin.value())
        settings.setValue("train/sample_percent", self.sample_spin.value())

    def restore(self, settings: QSettings) -> None:
        self.field_combo.setCurrentText(str(settings.value("train/field", "text") or "text"))
        try:
            self.max_mb_spin.setValue(int(settings.value("train/max_mb", 0) or 0))  # type: ignore[arg-type]
            self.sample_spin.setValue(float(settings.value("train/sample_percent", 100.0) or 100.0))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            pass


def join_sources(paths: list[str]) -> str:
    """Several chosen or dropped paths as one corpus text (`split_sources` splits it)."""
    return f"{SOURCE_SEPARATOR} ".join(paths)


def sources_exist(text: str) -> bool:
    """Whether every source of ``text`` names an existing file or folder, or a glob."""
    sources = split_sources(text)
    return bool(sources) and all(os.path.exists(s) or glob.has_magic(s) for s in sources)


__all__ = ["CorpusOptions", "describe", "join_sources", "sources_exist"]
