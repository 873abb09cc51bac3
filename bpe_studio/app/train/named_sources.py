"""Named sources in the Corpus box: a name for each file or folder of the corpus, or none.

`NamedSources` sits under the corpus path. Unchecked (the default), the corpus is one
unnamed corpus, as before. Checked ("Name each source"), it lists the corpus's sources (the
paths of the corpus field, ``;``-separated) in a small table, each with an editable name —
by default its stem, made unique (`bpe_studio.app.models.provenance.default_names`) — and
training runs on them as ``core.train({name: source, ...})``: each merge then says which
sources its pairs came from. A name typed for a path is kept while the path stays in the
corpus. "One source per file" turns a folder into its files (and subfolders), one source
each. The panel saves the choice and the names in QSettings.
"""

from __future__ import annotations

import json
import os

from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtGui import QColor, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from bpe_studio.app.models.provenance import clean_name, default_names, names_problem, source_colour
from bpe_studio.app.train.corpus_picker import join_sources

VISIBLE_ROWS = 5
"""The table shows this many sources at most and scrolls for more (16 languages fit in
three turns of the wheel, and the settings below stay in view at 1024×700)."""
MAX_SPLIT = 64
"""A folder of more files than this is not split into one source per file."""


def folder_entries(folder: str) -> list[str]:
    """The files and subfolders directly in ``folder`` (hidden ones skipped), sorted."""
    try:
        with os.scandir(folder) as entries:
            return sorted(e.path for e in entries if not e.name.startswith(".") and (e.is_file() or e.is_dir()))
    except OSError:
        return []


class NamedSources(QWidget):
    """The "Name each source" check box and the table of names.

    Signals:
        changed(): checked, unchecked or a name edited.
        corpusRewritten(str): "One source per file" made a new corpus text (the panel sets it).
    """

    changed = Signal()
    corpusRewritten = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._paths: list[str] = []
        self._chosen: dict[str, str] = {}  # path -> the name the user typed (or a session held)

        self.check = QCheckBox("Name each source")
        self.check.setToolTip("Train on each file or folder as a source with a name: each merge then shows "
                              "which sources its pairs came from, and the compression chart draws a line per source")
        self.check.toggled.connect(self._on_toggled)
        self.split_button = QPushButton("One source per file")
        self.split_button.setToolTip("Make each file (and subfolder) of the chosen folder a source of its own")
        self.split_button.clicked.connect(self.split_folders)
        self.table = QTableWidget(0, 2)
        self.table.setHorizontalHeaderLabels(["Name", "File or folder"])
        self.table.verticalHeader().hide()
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.DoubleClicked
                                   | QAbstractItemView.EditTrigger.EditKeyPressed
                                   | QAbstractItemView.EditTrigger.SelectedClicked
                                   | QAbstractItemView.EditTrigger.AnyKeyPressed)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.table.setWordWrap(False)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.setColumnWidth(0, self.fontMetrics().horizontalAdvance("m" * 8) + 24)
        rows = self.table.verticalHeader()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        rows.setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.table.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.table.setToolTip("Double-click a name to change it")
        self.table.itemChanged.connect(self._on_item_changed)
        self.problem_label = QLabel()
        self.problem_label.setObjectName("hint")
        self.problem_label.setProperty("invalid", True)
        self.problem_label.setWordWrap(True)

        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.check)
        top.addStretch(1)
        top.addWidget(self.split_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.table)
        layout.addWidget(self.problem_label)
        self._show()

    # -- values ----------------------------------------------------------------------------------

    def names(self) -> tuple[str, ...]:
        """A name per source when checked, else ``()`` (one unnamed corpus)."""
        return self._table_names() if self.check.isChecked() and self._paths else ()

    def _table_names(self) -> tuple[str, ...]:
        return tuple(self._name_item(row).text() for row in range(self.table.rowCount()))

    def problem(self) -> str | None:
        """Why the names cannot be trained with (empty, twice, a tab), or ``None``."""
        names = self.names()
        return names_problem(names) if names else None

    def set_paths(self, paths: list[str]) -> None:
        """The corpus's sources changed: one row each, with the names typed for them kept."""
        self._paths = list(paths)
        self._fill()

    def set_names(self, paths: list[str], names: tuple[str, ...]) -> None:
        """Show ``names`` for ``paths`` (an opened session's); no names: unchecked."""
        if names and len(names) == len(paths):
            self._chosen.update(zip(paths, names))
        self._paths = list(paths)
        self.check.setChecked(bool(names))
        self._fill()

    def set_running(self, running: bool) -> None:
        for widget in (self.check, self.table, self.split_button):
            widget.setEnabled(not running)

    # -- the table ---------------------------------------------------------------------------------

    def _fill(self) -> None:
        paths = self._paths
        kept = {p: self._chosen[p] for p in paths if p in self._chosen}
        defaults = iter(default_names([p for p in paths if p not in kept], taken=list(kept.values())))
        self.table.blockSignals(True)
        self.table.setRowCount(len(paths))
        for row, path in enumerate(paths):
            name = QTableWidgetItem(kept[path] if path in kept else next(defaults))
            name.setData(Qt.ItemDataRole.DecorationRole, _swatch(row))
            where = QTableWidgetItem(path)
            where.setFlags(where.flags() & ~Qt.ItemFlag.ItemIsEditable)
            where.setToolTip(path)
            self.table.setItem(row, 0, name)
            self.table.setItem(row, 1, where)
        self.table.blockSignals(False)
        self._show()

    def _name_item(self, row: int) -> QTableWidgetItem:
        item = self.table.item(row, 0)
        assert item is not None
        return item

    def _on_item_changed(self, item: QTableWidgetItem) -> None:
        if item.column() != 0 or item.row() >= len(self._paths):
            return
        name = clean_name(item.text())
        if name != item.text():
            self.table.blockSignals(True)
            item.setText(name)
            self.table.blockSignals(False)
        self._chosen[self._paths[item.row()]] = name
        self._show()
        self.changed.emit()

    def _on_toggled(self, _checked: bool) -> None:
        self._show()
        self.changed.emit()

    def _show(self) -> None:
        on = self.check.isChecked()
        self.table.setVisible(on)
        self.split_button.setVisible(on and any(os.path.isdir(p) for p in self._paths))
        rows = max(1, min(len(self._paths), VISIBLE_ROWS))
        frame = 2 * self.table.frameWidth()
        self.table.setFixedHeight(self.table.horizontalHeader().sizeHint().height()
                                  + rows * self.table.verticalHeader().defaultSectionSize() + frame)
        problem = self.problem() if on else None
        if on and not self._paths:
            problem = "Choose the files or folders to name: Browse… picks several files."
        self.problem_label.setText(problem or "")
        self.problem_label.setVisible(bool(problem))

    def split_folders(self) -> None:
        """Each folder among the sources becomes its files and subfolders, one source each."""
        paths: list[str] = []
        for path in self._paths:
            entries = folder_entries(path) if os.path.isdir(path) else []
            paths += entries if 0 < len(entries) <= MAX_SPLIT else [path]
        if paths != self._paths:
            self.corpusRewritten.emit(join_sources(paths))

    # -- persistence ---------------------------------------------------------------------------------

    def save(self, settings: QSettings) -> None:
        settings.setValue("train/named_sources", self.check.isChecked())
        settings.setValue("train/source_names", json.dumps(dict(zip(self._paths, self._table_names()))))

    def restore(self, settings: QSettings) -> None:
        try:
            names = json.loads(str(settings.value("train/source_names", "{}") or "{}"))
        except json.JSONDecodeError:
            names = {}
        if isinstance(names, dict):
            self._chosen.update({str(p): clean_name(str(n)) for p, n in names.items() if clean_name(str(n))})
        self.check.setChecked(str(settings.value("train/named_sources", "false")).lower() == "true")
        self._fill()


def _swatch(index: int) -> QPixmap:
    """A small square of source ``index``'s colour (the merges' share bars and the chart's lines use it too)."""
    pixmap = QPixmap(10, 10)
    pixmap.fill(QColor(source_colour(index)))
    return pixmap
