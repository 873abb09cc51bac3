"""Parity-aware BPE's parameters in the settings panel: a development folder or target ratios, and the window.

`ParityOptions` holds the widgets `VariantOptions` shows when "Parity-aware BPE"
(`core.variants.ParityAware`) is chosen: how each merge's language is picked — by a
development folder of parallel files named by language (``en.txt``, ``hi.txt``: each
source's file is the one whose name before the first dot is the source's name, as
``bpe-studio train --dev FOLDER`` reads it; the folder may hold more languages than the
run) or by a target compression ratio per source (a small table, 1.0 each to begin with)
— the global merges, the moving window (off, or W merges) and its alpha. Parity-aware
BPE trains on named sources, one per language: `problem` says what is missing (naming
off, no folder, a source without its file) before any work, and a status line under the
parameters says it as the user types.

    options = ParityOptions(); options.add_rows(form); options.set_sources(("en", "el"))
    options.problem()   # -> None, or "The development folder dev/ has no file for el: …"
    options.variant()   # -> ParityAware(dev={"en": "dev/en.txt", "el": "dev/el.txt"})
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from PySide6.QtCore import QObject, QSettings, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from bpe_studio.app.file_dialogs import dialogs_for
from bpe_studio.app.widgets.wrapped_hint import WrappedHint
from core.variants import ParityAware

DEV, RATIO = "dev", "ratio"
MODES = ((DEV, "Development set"), (RATIO, "Target ratios"))
DEFAULT_ALPHA = 2.0
VISIBLE_ROWS = 5
REQUIREMENT = {
    DEV: "Trains on named sources (Corpus › Name each source), one per language; the dev folder holds the same "
         "sentences in each, a file per source named as it: en.txt, hi.txt, …",
    RATIO: "Trains on named sources (Corpus › Name each source), one per language; a ratio is the compression a "
           "language aims at relative to the first's (1.6: it may take 1.6 times the tokens)",
}
"""The hint line under the parameters: what parity-aware training needs, by mode."""


def language_files(folder: str) -> dict[str, str]:
    """The files directly in ``folder`` by language: ``{"en": "dev/en.txt", "hi": "dev/hi.txt.xz"}``
    (the name before the first dot, as ``bpe-studio train --dev FOLDER`` reads it; hidden
    files skipped; a missing folder gives ``{}``)."""
    try:
        with os.scandir(folder) as entries:
            files = sorted((e.name, e.path) for e in entries if not e.name.startswith(".") and e.is_file())
    except OSError:
        return {}
    found: dict[str, str] = {}
    for name, path in files:
        found.setdefault(name.split(".")[0], path)
    return found


def dev_folder_of(dev: Mapping[str, object]) -> str:
    """The one folder holding every development file of ``dev`` (``""`` if they are not paths in one folder)."""
    folders = {os.path.dirname(os.fspath(p)) for p in dev.values() if isinstance(p, (str, os.PathLike))}
    return folders.pop() if len(folders) == 1 and len(dev) else ""


class ParityOptions(QObject):
    """The parity-aware parameters, their check against the named sources, and their persistence.

    Signals:
        changed(): a parameter, the folder or the sources changed.
    """

    changed = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._sources: tuple[str, ...] = ()
        self._named = False
        self._ratios: dict[str, float] = {}  # name -> the ratio typed for it (kept while the name comes and goes)
        self._form: QFormLayout | None = None
        self._shown = False

        self.mode_combo = QComboBox()
        for mode, title in MODES:
            self.mode_combo.addItem(title, mode)
        self.mode_combo.setToolTip("How each merge's language is chosen: the one with the most tokens on its "
                                   "development text, or the one whose compression lags its target ratio most")
        self.dev_edit = QLineEdit()
        self.dev_edit.setPlaceholderText("a folder of en.txt, hi.txt, …")
        self.dev_button = QPushButton("Folder…")
        self.dev_button.setToolTip("Choose the folder of development files")
        self.dev_button.clicked.connect(self.browse)
        self.dev_row = QWidget()
        row = QHBoxLayout(self.dev_row)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.dev_edit, 1)
        row.addWidget(self.dev_button)

        self.ratio_table = QTableWidget(0, 2)
        self.ratio_table.setHorizontalHeaderLabels(["Source", "Ratio"])
        self.ratio_table.verticalHeader().hide()
        self.ratio_table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.ratio_table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.ratio_table.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        header = self.ratio_table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Fixed)
        self.ratio_table.setColumnWidth(1, self.ratio_table.fontMetrics().horizontalAdvance("99.999") + 40)
        self.ratio_table.verticalHeader().setDefaultSectionSize(self.ratio_table.fontMetrics().height() + 8)
        self.ratio_table.setToolTip("Each language's target compression relative to the first's: 1.6 lets it "
                                    "spend 1.6 times the first's tokens. Double-click to change.")
        self.ratio_table.itemChanged.connect(self._on_ratio_edited)

        self.global_spin = QSpinBox()
        self.global_spin.setRange(0, 10_000_000)
        self.global_spin.setGroupSeparatorShown(True)
        self.global_spin.setSingleStep(100)
        self.global_spin.setSpecialValueText("none")
        self.global_spin.setToolTip("The first merges are chosen by all languages together (plain BPE)")
        self.window_spin = QSpinBox()
        self.window_spin.setRange(0, 10_000_000)
        self.window_spin.setGroupSeparatorShown(True)
        self.window_spin.setSingleStep(10)
        self.window_spin.setSpecialValueText("off")
        self.window_spin.setToolTip("The moving window: a language chosen more than alpha / languages of the "
                                    "last W merges is passed over (spreads the merges; off: never)")
        self.alpha_spin = QDoubleSpinBox()
        self.alpha_spin.setRange(0.01, 1000.0)
        self.alpha_spin.setDecimals(2)
        self.alpha_spin.setSingleStep(0.5)
        self.alpha_spin.setValue(DEFAULT_ALPHA)
        self.alpha_spin.setToolTip("The window's allowance: each language may take alpha / languages of its merges")
        self.requirement = WrappedHint()
        self.requirement.setText(REQUIREMENT[DEV])
        self.status = WrappedHint()

        self.mode_combo.currentIndexChanged.connect(self._on_change)
        self.dev_edit.textChanged.connect(self._on_change)
        self.dev_edit.textChanged.connect(self.dev_edit.setToolTip)  # the whole path: the field shows its end
        for spin in (self.global_spin, self.window_spin, self.alpha_spin):
            spin.valueChanged.connect(self._on_change)
        self._fill_ratios()

    def add_rows(self, form: QFormLayout) -> None:
        """Add the parameters to the settings panel's form (hidden until `set_visible`)."""
        self._form = form
        form.addRow("Choose by", self.mode_combo)
        form.addRow("Dev folder", self.dev_row)
        form.addRow("Ratios", self.ratio_table)
        form.addRow("Global merges", self.global_spin)
        form.addRow("Window", self.window_spin)
        form.addRow("Alpha", self.alpha_spin)
        form.addRow("", self.requirement)
        form.addRow("", self.status)
        self._show_rows()

    # -- values ------------------------------------------------------------------------------

    def mode(self) -> str:
        """``"dev"`` (a development folder) or ``"ratio"`` (target ratios)."""
        return RATIO if self.mode_combo.currentData() == RATIO else DEV

    def dev_folder(self) -> str:
        return self.dev_edit.text().strip()

    def set_sources(self, names: tuple[str, ...], named: bool) -> None:
        """The corpus's source names (``named``: "Name each source" is on): the ratio table and
        the check follow them."""
        if (tuple(names), named) == (self._sources, self._named):
            return
        self._sources, self._named = tuple(names), named
        self._fill_ratios()
        self._on_change()

    def dev_paths(self) -> dict[str, str]:
        """Each source's development file (only the sources' own: the folder may hold more)."""
        found = language_files(self.dev_folder()) if self.dev_folder() else {}
        return {name: found[name] for name in self._sources if name in found}

    def ratios(self) -> dict[str, float]:
        return {name: self._ratios.get(name, 1.0) for name in self._sources}

    def problem(self) -> str | None:
        """What keeps parity-aware BPE from training on these sources (None: nothing)."""
        if not self._named or not self._sources:
            return ("Parity-aware BPE trains on named sources, one per language: check Corpus › "
                    "“Name each source” (e.g. en.txt; hi.txt)")
        if len(self._sources) < 2:
            return "Parity-aware BPE balances several languages: give it two sources or more, one per language"
        if self.mode() == RATIO:
            bad = [name for name, value in self.ratios().items() if not value > 0]
            return f"The ratio of {', '.join(bad)} must be above 0" if bad else None
        folder = self.dev_folder()
        if not folder:
            return ("Choose the development folder (Folder…): the same sentences in each language, "
                    f"one file per source ({', '.join(n + '.txt' for n in self._sources[:3])}, …)")
        if not os.path.isdir(folder):
            return f"The development folder {folder} does not exist: choose another (Folder…)"
        found = language_files(folder)
        missing = [name for name in self._sources if name not in found]
        if missing:
            there = ", ".join(sorted(found)[:8]) + (", …" if len(found) > 8 else "") if found else "no file"
            return (f"The development folder {folder} has no file for {', '.join(missing)}: add "
                    f"{missing[0]}.txt, or name the sources as its files ({there})")
        return None

    def variant(self) -> ParityAware:
        """The `ParityAware` of the parameters.

        Raises:
            ValueError: `problem` is not None (its message), or a parameter the variant refuses.
        """
        problem = self.problem()
        if problem is not None:
            raise ValueError(problem)
        dev, ratio = (None, self.ratios()) if self.mode() == RATIO else (self.dev_paths(), None)
        return ParityAware(dev=dev, ratio=ratio, global_merges=self.global_spin.value(),
                           window=self.window_spin.value() or None, alpha=round(self.alpha_spin.value(), 4))

    def set_variant(self, variant: ParityAware) -> None:
        """Show ``variant``'s parameters (an opened session's)."""
        self.mode_combo.setCurrentIndex(self.mode_combo.findData(RATIO if variant.ratio is not None else DEV))
        if variant.dev is not None:
            folder = dev_folder_of(variant.dev)
            if folder:
                self.dev_edit.setText(folder)
        if variant.ratio is not None:
            self._ratios.update({str(k): float(v) for k, v in variant.ratio.items()})
            self._fill_ratios()
        self.global_spin.setValue(variant.global_merges)
        self.window_spin.setValue(variant.window or 0)
        self.alpha_spin.setValue(float(variant.alpha))

    def set_running(self, running: bool) -> None:
        for widget in (self.mode_combo, self.dev_edit, self.dev_button, self.ratio_table, self.global_spin,
                       self.window_spin, self.alpha_spin):
            widget.setEnabled(not running)

    def set_visible(self, shown: bool) -> None:
        """Shown while "Parity-aware BPE" is the chosen variant."""
        self._shown = shown
        self._show_rows()

    def browse(self) -> None:
        folder = dialogs_for(self.dev_button).existing_folder("Development folder (one file per language)",
                                                              "paths/dev_folder", self.dev_folder())
        if folder:
            self.dev_edit.setText(folder)

    # -- persistence -----------------------------------------------------------------------------

    def save(self, s: QSettings) -> None:
        s.setValue("train/parity_mode", self.mode())
        s.setValue("train/parity_dev", self.dev_folder())
        s.setValue("train/parity_ratios", json.dumps(self._ratios))
        s.setValue("train/parity_global_merges", self.global_spin.value())
        s.setValue("train/parity_window", self.window_spin.value())
        s.setValue("train/parity_alpha", self.alpha_spin.value())

    def restore(self, s: QSettings) -> None:
        self.mode_combo.setCurrentIndex(max(self.mode_combo.findData(str(s.value("train/parity_mode", DEV))), 0))
        self.dev_edit.setText(str(s.value("train/parity_dev", "") or ""))
        try:
            ratios = json.loads(str(s.value("train/parity_ratios", "{}") or "{}"))
            if isinstance(ratios, dict):
                self._ratios.update({str(k): float(v) for k, v in ratios.items()})
        except (json.JSONDecodeError, TypeError, ValueError):
            pass
        self._fill_ratios()
        for spin, key, kind in ((self.global_spin, "train/parity_global_merges", int),
                                (self.window_spin, "train/parity_window", int),
                                (self.alpha_spin, "train/parity_alpha", float)):
            try:
                spin.setValue(kind(s.value(key, spin.value())))  # type: ignore[arg-type, call-overload]
            except (TypeError, ValueError):
                pass

    # -- showing ---------------------------------------------------------------------------------

    def _fill_ratios(self) -> None:
        table = self.ratio_table
        table.blockSignals(True)
        table.setRowCount(len(self._sources))
        for row, name in enumerate(self._sources):
            label = QTableWidgetItem(name)
            label.setFlags(label.flags() & ~Qt.ItemFlag.ItemIsEditable)
            value = QTableWidgetItem()
            value.setData(Qt.ItemDataRole.EditRole, float(self._ratios.get(name, 1.0)))  # a spin box to edit it
            value.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            table.setItem(row, 0, label)
            table.setItem(row, 1, value)
        table.blockSignals(False)
        rows = max(1, min(len(self._sources), VISIBLE_ROWS))
        table.setFixedHeight(table.horizontalHeader().sizeHint().height()
                             + rows * table.verticalHeader().defaultSectionSize() + 2 * table.frameWidth())

    def _on_ratio_edited(self, item: QTableWidgetItem) -> None:
        if item.column() != 1 or item.row() >= len(self._sources):
            return
        try:
            self._ratios[self._sources[item.row()]] = float(item.data(Qt.ItemDataRole.EditRole))
        except (TypeError, ValueError):
            return
        self._on_change()

    def _on_change(self, *_args: object) -> None:
        self._show_rows()
        self.changed.emit()

    def _show_rows(self, *_args: object) -> None:
        dev = self.mode() == DEV
        self.requirement.setText(REQUIREMENT[self.mode()])
        problem = self.problem() if self._shown else None
        if problem is None and self._shown:
            chosen = self.dev_paths() if dev else self.ratios()
            what = "development files" if dev else "ratios"
            self.status.setText(f"✓ {what} for {', '.join(chosen)}")
        else:
            self.status.setText(problem or "")
        if self.status.property("invalid") != (problem is not None):
            self.status.setProperty("invalid", problem is not None)
            self.status.setObjectName("" if problem else "hint")  # red, not a hint's grey, when something lacks
            self.status.style().unpolish(self.status)
            self.status.style().polish(self.status)
        if self._form is None:
            return
        shown = {self.mode_combo: True, self.dev_row: dev, self.ratio_table: not dev, self.global_spin: True,
                 self.window_spin: True, self.alpha_spin: bool(self.window_spin.value()), self.requirement: True,
                 self.status: True}
        for widget, visible in shown.items():
            self._form.setRowVisible(widget, self._shown and visible)
