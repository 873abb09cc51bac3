"""The vocabulary browser: every token in a table, filtered as you type, sorted by any column.

A filter line (substring by default; toggles for regex and match case; a scope choosing
the readable form, the GPT-2 form or the hex bytes; "Spans spaces" for the tokens that
cross a word boundary, as SuperBPE's do), a "Show:" choice (all tokens, a health list,
or — trained on named sources — the tokens mostly from one source: that source held the
largest share of the pairs of the merge that made them), a "shown of total" count, an inline
error for an invalid regex, and the table. The filter field is never narrower than
`MIN_FILTER_WIDTH`: where the bar has no room for it on one line (a 1024-pixel window) the
options go to a second line. Typing is debounced (150 ms) and the work is
done by `VocabData` inside the model, so it stays fast at 200k tokens.
"""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import QItemSelection, QModelIndex, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QSizePolicy,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from bpe_studio.app.models.vocab_data import COL_HEX, COL_ID, COL_PARTS, COL_READABLE, VocabData
from bpe_studio.app.explore.vocab_model import TOKEN_ID_ROLE, VocabTableModel
from bpe_studio.app.workers.thread_job import LatestJob
from core.evaluate.health import Health, health

DEBOUNCE_MS = 150
MIN_FILTER_WIDTH = 160
"""Room to type a filter in; below `ONE_LINE_FILTER_WIDTH` the options take a line of their own."""
ONE_LINE_FILTER_WIDTH = 260
_SCOPES = (("Readable", "readable"), ("GPT-2 form", "gpt2"), ("Hex bytes", "hex"))
# The "Show:" choices: a `core.evaluate.health.Health` list each (None: every token).
HEALTH_FILTERS = (("All tokens", None), ("Unreachable", "unreachable"),
                  ("Not whole UTF-8", "partial"), ("Long repetitive", "repetitive"))
SOURCE_FILTER = "source:"
"""The "Show:" data of "Mostly from <name>": ``"source:3"`` for the fourth source."""
SHOW_TIP = ("Unreachable: no text encodes to the token alone · Not whole UTF-8: a piece of a "
            "character · Long repetitive: 5+ bytes of one 1-3 byte unit repeated")
SOURCES_TIP = ("\nMostly from a source (trained on named sources): the source held the largest share "
               "of the pairs of the merge that made the token (a tie counts for each tied source)")


class VocabBrowser(QWidget):
    """The table of tokens with its filter bar. Emits `token_selected(id)` (-1: none)."""

    token_selected = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = VocabTableModel()
        self.last_filter_ms = 0.0

        self.filter_edit = QLineEdit()
        self.filter_edit.setPlaceholderText("Filter tokens…  (e.g. \" the\" or ·the, ing↵, E2 80; regex \\sthe)")
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.setMinimumWidth(MIN_FILTER_WIDTH)
        self.regex_box = QCheckBox("Regex")
        self.case_box = QCheckBox("Match case")
        self.scope_combo = QComboBox()
        for label, scope in _SCOPES:
            self.scope_combo.addItem(label, scope)
        self.scope_combo.setToolTip("Which form of each token the filter searches")
        self.show_combo = QComboBox()
        for label, kind in HEALTH_FILTERS:
            self.show_combo.addItem(label, kind)
        self.show_combo.setToolTip(SHOW_TIP)
        self._source_names: tuple[str, ...] = ()
        self.spans_box = QCheckBox("Spans spaces")
        self.spans_box.setToolTip("Only tokens that cross a word boundary (a space after another "
                                  "character, as in \"of·the\"): what SuperBPE learns in stage 2")
        self.count_label = QLabel()
        self.error_label = QLabel()
        self.error_label.setStyleSheet("color: #c62828;")
        self.error_label.setWordWrap(True)
        self.error_label.hide()

        self._bar = QHBoxLayout()  # the filter, and the options when they fit beside it
        self._bar.addWidget(self.filter_edit, 1)
        self._bar.addWidget(QLabel("in"))
        self._bar.addWidget(self.scope_combo)
        self._options = QWidget()
        self._options.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        options = QHBoxLayout(self._options)
        options.setContentsMargins(0, 0, 0, 0)
        for widget in (self.regex_box, self.case_box, self.spans_box, QLabel("Show:"), self.show_combo):
            options.addWidget(widget)
        self._second_line = QHBoxLayout()  # the options, when the filter needs the whole first line
        self._second_line.addStretch(1)
        self._bar.addWidget(self._options)

        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(COL_ID, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        vheader = self.table.verticalHeader()
        vheader.hide()
        # Fixed row heights: Qt never measures 200k rows.
        vheader.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        vheader.setDefaultSectionSize(self.fontMetrics().height() + 6)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        widths = {COL_ID: 60, COL_READABLE: 130, 2: 120, COL_HEX: 130, 4: 56, 5: 84, COL_PARTS: 140}
        # Never narrower than the title plus the sort arrow ("Length ▲" was cut).
        style, metrics = header.style(), header.fontMetrics()
        arrow = style.pixelMetric(style.PixelMetric.PM_HeaderMarkSize, None, header)
        margin = style.pixelMetric(style.PixelMetric.PM_HeaderMargin, None, header)
        for column, width in widths.items():
            title = str(self.model.headerData(column, Qt.Orientation.Horizontal))
            self.table.setColumnWidth(column, max(width, metrics.horizontalAdvance(title) + arrow + 4 * margin + 8))

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self._bar)
        layout.addLayout(self._second_line)
        # The minimum is the two-line bar's (`minimumSizeHint`), wherever the options are now:
        # on one line they must not hold the window wider than a 1024-pixel screen.
        layout.setSizeConstraint(QVBoxLayout.SizeConstraint.SetNoConstraint)
        layout.addWidget(self.error_label)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.count_label)

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self.apply_filter)
        self.filter_edit.textChanged.connect(self._debounce.start)
        self.regex_box.toggled.connect(self.apply_filter)
        self.case_box.toggled.connect(self.apply_filter)
        self.spans_box.toggled.connect(self.apply_filter)
        self.scope_combo.currentIndexChanged.connect(self.apply_filter)
        self.show_combo.currentIndexChanged.connect(self.apply_filter)
        # The health lists take seconds on a 200k vocabulary: computed once per tokenizer,
        # in a worker, when a health filter is first chosen.
        self._tokenizer: Any = None
        self._health: Health | None = None
        self._checking = LatestJob("checking the vocabulary", name="bpe-studio-vocab-health", parent=self)
        self._checking.returned.connect(self._on_health)
        self._checking.failed.connect(self._on_health_failed)
        self.model.modelReset.connect(self._reselect)
        self.table.selectionModel().selectionChanged.connect(self._on_selection)
        self._selected_id: int | None = None
        self._update_count()

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        if self._bar.indexOf(self._options) < 0:
            return hint
        options = self._options.minimumSizeHint()
        width = max(hint.width() - options.width() - self._bar.spacing(), options.width())
        return QSize(width, hint.height() + options.height() + self.layout().spacing())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._place_options(event.size().width())

    def _place_options(self, width: int) -> None:
        """The options beside the filter when it keeps `ONE_LINE_FILTER_WIDTH` there, else below it."""
        bar = self._bar
        beside = sum(bar.itemAt(k).sizeHint().width() for k in range(1, bar.count()) if bar.itemAt(k).widget()
                     is not self._options)
        needed = ONE_LINE_FILTER_WIDTH + beside + self._options.sizeHint().width() + bar.count() * bar.spacing()
        one_line = width >= needed
        if one_line == (bar.indexOf(self._options) >= 0):
            return
        (self._second_line if one_line else bar).removeWidget(self._options)
        if one_line:
            bar.addWidget(self._options)
        else:
            self._second_line.insertWidget(0, self._options)

    def set_vocab(self, data: VocabData | None, tokenizer: Any = None) -> None:
        """Show ``data`` (None empties the table); the current filter applies to it.

        ``tokenizer`` (its `core.Tokenizer`) is what the "Show:" health filters check.
        """
        self._selected_id = None
        self._checking.cancel()
        self._tokenizer, self._health = tokenizer, None
        self._set_source_choices(data.source_names if data is not None else ())
        self.model.set_vocab(data)
        if data is not None:
            self.apply_filter()
        self._update_count()

    def apply_filter(self) -> None:
        """Apply the filter bar now (the debounce timer calls this after typing stops)."""
        self._debounce.stop()
        data = self.model.vocab
        kind = self.show_combo.currentData()
        if data is not None:
            data.only_spanning = self.spans_box.isChecked()
            data.only_source = None
            if isinstance(kind, str) and kind.startswith(SOURCE_FILTER):
                data.allow_ids(None)
                data.only_source = int(kind.removeprefix(SOURCE_FILTER))
            elif kind is None or self._tokenizer is None:
                data.allow_ids(None)
            elif self._health is None:
                if not self._checking.running:
                    self._checking.start(health, self._tokenizer)
                data.allow_ids([])  # nothing is known to be unhealthy yet
            else:
                data.allow_ids(getattr(self._health, kind))
        t0 = time.perf_counter()
        error = self.model.set_filter(
            self.filter_edit.text(),
            use_regex=self.regex_box.isChecked(),
            scope=self.scope_combo.currentData(),
            case_sensitive=self.case_box.isChecked(),
        )
        self.last_filter_ms = (time.perf_counter() - t0) * 1000
        self.error_label.setVisible(error is not None)
        self.error_label.setText(error or "")
        self.filter_edit.setStyleSheet("border: 1px solid #c62828;" if error else "")
        self._update_count()

    def _set_source_choices(self, names: tuple[str, ...]) -> None:
        """"Mostly from <name>" for each named source in "Show:" (none without); the choice
        stays on the same source's name if the new vocabulary has it."""
        if names == self._source_names:
            return
        combo = self.show_combo
        current = combo.currentData()
        chosen = (self._source_names[int(current.removeprefix(SOURCE_FILTER))]
                  if isinstance(current, str) and current.startswith(SOURCE_FILTER) else None)
        combo.blockSignals(True)
        while combo.count() > len(HEALTH_FILTERS):
            combo.removeItem(combo.count() - 1)
        if names:
            combo.insertSeparator(combo.count())
            for k, name in enumerate(names):
                combo.addItem(f"Mostly from {name}", f"{SOURCE_FILTER}{k}")
        if chosen is not None:
            combo.setCurrentIndex(max(0, combo.findData(f"{SOURCE_FILTER}{names.index(chosen)}")
                                      if chosen in names else 0))
        combo.setToolTip(SHOW_TIP + (SOURCES_TIP if names else ""))
        combo.blockSignals(False)
        self._source_names = names

    def show_mostly_from(self, name: str) -> bool:
        """Show only the tokens mostly from source ``name``; False if there is no such source."""
        if name not in self._source_names:
            return False
        self.show_combo.setCurrentIndex(self.show_combo.findData(f"{SOURCE_FILTER}{self._source_names.index(name)}"))
        return True

    @property
    def checking_health(self) -> bool:
        """True while the health lists are being computed."""
        return self._checking.running

    def _on_health(self, result: Health) -> None:
        self._health = result
        self.apply_filter()

    def _on_health_failed(self, message: str) -> None:
        self.show_combo.setCurrentIndex(0)
        self.error_label.setText(f"Cannot check the vocabulary: {message}")
        self.error_label.show()

    def shutdown(self, timeout_ms: int = 30_000) -> bool:
        """Stop the health check (the window is closing)."""
        return self._checking.shutdown(timeout_ms)

    def select_token(self, token_id: int) -> bool:
        """Select and scroll to ``token_id``; False when the filter hides it."""
        row = self.model.row_of_token(token_id)
        if row is None:
            return False
        index = self.model.index(row, COL_READABLE)
        self.table.selectRow(row)
        self.table.scrollTo(index, QAbstractItemView.ScrollHint.PositionAtCenter)
        return True

    @property
    def selected_id(self) -> int | None:
        return self._selected_id

    def _update_count(self) -> None:
        data = self.model.vocab
        if data is None:
            self.count_label.setText("No tokenizer loaded — train one or open one.")
        else:
            shown = len(data.view)
            checking = " · checking the vocabulary's health…" if self._checking.running else ""
            self.count_label.setText(
                f"{shown:,} of {len(data):,} tokens shown · filter {self.last_filter_ms:.0f} ms{checking}")

    def _reselect(self) -> None:
        # Rows are rebuilt on each filter/sort: keep the same token selected if visible.
        if self._selected_id is not None:
            QTimer.singleShot(0, lambda tid=self._selected_id: self._restore(tid))

    def _restore(self, token_id: int) -> None:
        if self._selected_id == token_id and not self.select_token(token_id):
            # The filter hides it now: nothing is selected any more, and the views that
            # followed the selection (merge tree, inspector highlight) are told so.
            self.table.clearSelection()
            self._selected_id = None
            self.token_selected.emit(-1)

    def _on_selection(self, selected: QItemSelection, _deselected: QItemSelection) -> None:
        indexes = self.table.selectionModel().selectedRows(COL_ID)
        token_id = int(self.model.data(indexes[0], TOKEN_ID_ROLE)) if indexes else None
        # An empty selection after a model reset is transient (the row is reselected),
        # so only a newly selected token is announced.
        if token_id is not None and token_id != self._selected_id:
            self._selected_id = token_id
            self.token_selected.emit(token_id)

    def current_index(self) -> QModelIndex:
        return self.table.currentIndex()
