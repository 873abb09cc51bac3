"""A Qt table model over `VocabData`: every token, filtered and sorted without a proxy.

Qt asks only for the visible cells, so a 200,000-row vocabulary costs nothing to show;
filtering and sorting happen in `VocabData` over numpy arrays and the model just resets.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor, QFontDatabase

from bpe_studio.app.models.vocab_data import (
    COL_COUNT,
    COL_GPT2,
    COL_HEX,
    COL_ID,
    COL_LENGTH,
    COL_RANK,
    COL_READABLE,
    COLUMN_TITLES,
    Scope,
    VocabData,
)

_RIGHT = {COL_ID, COL_LENGTH, COL_RANK, COL_COUNT}
_MONO = {COL_READABLE, COL_GPT2, COL_HEX}
AnyIndex = QModelIndex | QPersistentModelIndex

TOKEN_ID_ROLE = Qt.ItemDataRole.UserRole + 1


class VocabTableModel(QAbstractTableModel):
    """Rows are ``data.view`` (the filtered, sorted token rows); columns as COLUMN_TITLES."""

    def __init__(self, data: VocabData | None = None, parent: Any = None) -> None:
        super().__init__(parent)
        self._data = data
        self._mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self._special_color = QColor("#8e44ad")

    @property
    def vocab(self) -> VocabData | None:
        return self._data

    def set_vocab(self, data: VocabData | None) -> None:
        self.beginResetModel()
        self._data = data
        self.endResetModel()

    def rowCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008
        if parent.isValid() or self._data is None:
            return 0
        return len(self._data.view)

    def columnCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMN_TITLES)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMN_TITLES[section]
        return None

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if self._data is None or not index.isValid():
            return None
        row = int(self._data.view[index.row()])
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._data.cell_text(row, column)
        if role == Qt.ItemDataRole.TextAlignmentRole and column in _RIGHT:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.FontRole and column in _MONO:
            return self._mono
        if role == Qt.ItemDataRole.ForegroundRole and self._data.is_special[row]:
            return self._special_color
        if role == Qt.ItemDataRole.ToolTipRole and column in _MONO:
            return self._data.cell_text(row, column)
        if role == TOKEN_ID_ROLE:
            return int(self._data.ids[row])
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        if self._data is None:
            return
        # A reset (not layoutChanged) because rows move wholesale; the browser reselects
        # the current token afterwards.
        self.beginResetModel()
        self._data.sort(column, descending=order == Qt.SortOrder.DescendingOrder)
        self.endResetModel()

    def set_filter(
        self, text: str, *, use_regex: bool = False, scope: Scope = "readable", case_sensitive: bool = False
    ) -> str | None:
        """Filter rows (see `VocabData.set_filter`); returns an error message or None."""
        if self._data is None:
            return None
        self.beginResetModel()
        try:
            error = self._data.set_filter(text, use_regex=use_regex, scope=scope, case_sensitive=case_sensitive)
        finally:
            self.endResetModel()
        return error

    def row_of_token(self, token_id: int) -> int | None:
        """The model row showing ``token_id``, or None when filtered out."""
        if self._data is None:
            return None
        data_row = self._data.row_of_id.get(token_id)
        if data_row is None:
            return None
        hits = (self._data.view == data_row).nonzero()[0]
        return int(hits[0]) if len(hits) else None
