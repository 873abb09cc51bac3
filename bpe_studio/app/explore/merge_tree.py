"""How a token was built: its merge tree, from the token down to single bytes.

Each node is a token (id, readable form, the rank of the merge that made it, the pair
count at that time when known); its two children are the parts that merge joined.
Leaves are single bytes (or special tokens, which are never merged).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QHeaderView, QTreeWidget, QTreeWidgetItem, QWidget

from bpe_studio.app.models.vocab_data import VocabData

# A token of n bytes has at most 2n-1 nodes; this guards against malformed merge lists.
_MAX_DEPTH = 512


class MergeTreeView(QTreeWidget):
    """Shows the merge tree of one token of a `VocabData`."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setColumnCount(4)
        self.setHeaderLabels(["Token", "Id", "Rank", "Count"])  # short headers: the token column gets the room
        self.headerItem().setToolTip(2, "merge rank")
        self.setUniformRowHeights(True)
        self.setIndentation(12)  # deep trees (long tokens) stay readable in a narrow pane
        self.setAlternatingRowColors(True)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        # The token column takes what is left, so Id, Merge rank and Count stay in view in a
        # narrow pane (a long token elides; its bytes are in the tooltip).
        header = self.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column in (1, 2, 3):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self._data: VocabData | None = None
        self.token_id: int | None = None

    def set_vocab(self, data: VocabData | None) -> None:
        self._data = data
        self.show_token(None)

    def show_token(self, token_id: int | None) -> None:
        """Show the tree of ``token_id`` (None clears the view)."""
        self.clear()
        self.token_id = token_id
        if self._data is None or token_id is None or token_id not in self._data.row_of_id:
            return
        root = self._item(token_id, 0)
        self.addTopLevelItem(root)
        self.expandAll()
        self.setColumnHidden(3, int(self._data.counts[self._data.row_of_id[token_id]]) < 0)  # no counts: no column

    def _item(self, token_id: int, depth: int) -> QTreeWidgetItem:
        assert self._data is not None
        row = self._data.row_of_id[token_id]
        rank = int(self._data.ranks[row])
        count = int(self._data.counts[row])
        label = f"“{self._data.readable[row]}”"
        if self._data.is_special[row]:
            label += "  (special token)"
        item = QTreeWidgetItem([label, str(token_id), "" if rank < 0 else f"{rank:,}", "" if count < 0 else f"{count:,}"])
        for column in (1, 2, 3):
            item.setTextAlignment(column, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        item.setToolTip(0, f"bytes {self._data.hex[row]} · GPT-2 form {self._data.gpt2[row]}")
        item.setData(0, Qt.ItemDataRole.UserRole, token_id)
        children = self._data.children(token_id)
        if children is not None and depth < _MAX_DEPTH:
            for child in children:
                item.addChild(self._item(child, depth + 1))
        return item

    def leaves(self) -> list[int]:
        """The ids at the leaves, left to right (tests compare them to the token bytes)."""
        out: list[int] = []

        def walk(item: QTreeWidgetItem) -> None:
            if item.childCount() == 0:
                out.append(int(item.data(0, Qt.ItemDataRole.UserRole)))
            for i in range(item.childCount()):
                walk(item.child(i))

        for i in range(self.topLevelItemCount()):
            walk(self.topLevelItem(i))
        return out
