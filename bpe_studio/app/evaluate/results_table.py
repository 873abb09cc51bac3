"""The Evaluate tab's table: one row per (tokenizer, source) with its measures.

The columns are `HEADERS`; `HEADER_TIPS` explain the fairness measures (docs/evaluate.md).
The source column shows a short label, with the full path in its tooltip.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from core.evaluate.measures import Row

HEADERS = ("tokenizer", "source", "vocab", "tokens", "bytes/tok", "chars/tok", "tok/word", "distinct",
           "vocab used", "vs base", "Rényi", "premium", "Gini")
HEADER_TIPS = {
    "Rényi": "Rényi efficiency (order 2.5): how evenly the row's tokens use the vocabulary, 0..1",
    "premium": "This row's tokens over the reference row's, for the same tokenizer: on parallel text, what the "
               "same content costs in this language (1: as much as the reference)",
    "Gini": "The tokenizer's Gini coefficient over its rows' token counts: 0 when every row (language) costs "
            "the same tokens, towards 1 when one pays for all",
}
PREMIUM, GINI = HEADERS.index("premium"), HEADERS.index("Gini")


def _figure(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def row_cells(row: Row, source: str) -> list[str]:
    """The texts of ``row``'s cells, its source shown as ``source``."""
    return [row.tokenizer, source, f"{row.vocab_size:,}", f"{row.tokens:,}", f"{row.bytes_per_token:.3f}",
            f"{row.chars_per_token:.3f}", f"{row.fertility:.3f}", f"{row.distinct:,}", f"{100 * row.vocab_used:.2f}%",
            _figure(row.vs_baseline), _figure(row.renyi_efficiency), _figure(row.premium), _figure(row.gini)]


class ResultsTable(QTableWidget):
    """The measures of an evaluation, read-only, in compact rows."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(HEADERS), parent)
        self.setHorizontalHeaderLabels(list(HEADERS))
        for column, header in enumerate(HEADERS):
            header_item = self.horizontalHeaderItem(column)
            if header in HEADER_TIPS and header_item is not None:
                header_item.setToolTip(HEADER_TIPS[header])
        self.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.verticalHeader().setVisible(False)
        rows = self.verticalHeader()  # compact rows: at 1024×700 sixteen languages still show several
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        rows.setDefaultSectionSize(self.fontMetrics().height() + 6)

    def show_rows(self, rows: list[Row], labels: dict[str, str]) -> None:
        """Fill the table with ``rows``, each source shown by its label in ``labels``."""
        self.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, text in enumerate(row_cells(row, labels[row.source])):
                item = QTableWidgetItem(text)
                if c >= 2:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if c == 1:
                    item.setToolTip(row.source)
                self.setItem(r, c, item)
        self.resizeColumnsToContents()
