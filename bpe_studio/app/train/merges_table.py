"""The live merges table: rank, left, right, result and pair count, growing as merges arrive.

`MergesModel` is a table model over the `TrainingState`'s growing columns (token ids, looked
up in its ``token_bytes``); a timer appends the new rows in one ``beginInsertRows`` batch
(never one per merge). Tokens are shown readably (visible whitespace, escapes, hex chips
for partial characters; `core.readable`), with the exact bytes in the tooltip. The view
follows the newest row unless the user has scrolled up. When training continues a
tokenizer, its inherited merges come first, greyed and in italics, "kept" in their tooltips.

Training variants show too. SuperBPE's stage-2 merges (tokens across spaces) have a tinted
rank and say their stage in its tooltip. Each of Picky BPE's removals is a row of its own
right after the merge that caused it, struck through: the removed token, "after #57" and
"→ ·t · h" (the pieces its occurrences became), their number in the Count column. Rows map to merges and removals
through the removals' row numbers (a bisection, only when there are removals).

Trained on named sources, a From column shows each merge's provenance: a stacked bar,
one colour per source, its segments as wide as each source's count of the pair
(`bpe_studio.app.train.share_bar`), each count and share in its tooltip. The column is
hidden for one unnamed corpus. Trained parity-aware, a dot in the chosen language's colour
before each bar says which language the merge was made for (a grey ring: a global merge),
and the tooltip names it.
"""

from __future__ import annotations

from bisect import bisect_left

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, QTimer
from PySide6.QtGui import QBrush, QColor, QFont, QFontDatabase, QFontMetrics, QPalette
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QWidget

from core.readable import gpt2_form, hex_form, readable
from bpe_studio.app.models.training_state import TrainingState
from bpe_studio.app.train.share_bar import (
    CHOSEN_ROLE, DOT, SHARES_ROLE, ShareBarDelegate, chosen_tooltip, share_tooltip,
)
from core.events import SplitEvent

REFRESH_MS = 100
READABLE_CHARACTERS = 8
"""The token columns never get narrower than this many (monospace) characters."""
COLUMNS = ("Rank", "Left", "Right", "Result", "Count", "From")
SOURCES_COLUMN = 5
SOURCES_WIDTH = 46
"""The share bar's column ("From"): a 5% segment still two pixels wide, and narrow, as the
token columns make room for it."""
PARITY_WIDTH = SOURCES_WIDTH + DOT + 3
"""The From column of a parity-aware run: the chosen language's dot, then the same bar."""
RAW_BYTES_ROLE = Qt.ItemDataRole.UserRole
TOKEN_ID_ROLE = Qt.ItemDataRole.UserRole + 1
KIND_ROLE = Qt.ItemDataRole.UserRole + 2
"""``("merge", stage)`` for a merge's row (stage 0, or SuperBPE's 1 or 2); ``("split", rank)`` for a removal's."""
STAGE_TWO_TINT = QColor(47, 126, 216, 48)
"""The rank cell of a SuperBPE stage-2 merge (the charts' accent, faint)."""
PIECE_SEPARATOR = " · "
_TOKEN_COLUMNS = (1, 2, 3)
# `data` runs ~700 times a repaint while the table scrolls: roles as plain ints, the
# alignment built once (enum lookups and ``|`` were a third of its time).
_DISPLAY = int(Qt.ItemDataRole.DisplayRole)
_FONT = int(Qt.ItemDataRole.FontRole)
_ALIGNMENT = int(Qt.ItemDataRole.TextAlignmentRole)
_TOOLTIP = int(Qt.ItemDataRole.ToolTipRole)
_FOREGROUND = int(Qt.ItemDataRole.ForegroundRole)
_RAW = int(RAW_BYTES_ROLE)
_TOKEN_ID = int(TOKEN_ID_ROLE)
_KIND = int(KIND_ROLE)
_BACKGROUND = int(Qt.ItemDataRole.BackgroundRole)
_SHARES = int(SHARES_ROLE)
_CHOSEN = int(CHOSEN_ROLE)
_RIGHT_ALIGNED = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

Index = QModelIndex | QPersistentModelIndex


class MergesModel(QAbstractTableModel):
    """Rows are the merges in ``state`` (rank order), each followed by the removals it caused;
    call `sync` to pick up new ones."""

    def __init__(self, state: TrainingState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._state = state
        self._take_columns()
        self._rows = 0
        self._mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self._kept_brush = QBrush(QPalette().color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text))
        self._kept_mono = QFont(self._mono)
        self._kept_mono.setItalic(True)
        self._kept_font = QFont()
        self._kept_font.setItalic(True)
        self._struck_mono = QFont(self._mono)
        self._struck_mono.setStrikeOut(True)
        self._struck_font = QFont()
        self._struck_font.setStrikeOut(True)
        self._stage_brush = QBrush(STAGE_TWO_TINT)
        self._split_rows: list[int] = []  # the row of each removal, ascending

    def _take_columns(self) -> None:
        state = self._state
        self._token_ids, self._left_ids, self._right_ids = state.token_ids, state.left_ids, state.right_ids
        self._counts, self._tokens = state.counts, state.token_bytes
        self._splits = state.splits
        self.sources: tuple[str, ...] = state.sources
        """The named sources of the run (``()``: one unnamed corpus, no From column)."""
        self._per_source = state.per_source
        self._chosen = state.chosen
        self.parity = state.parity
        """Whether the merges were each made for one language (parity-aware BPE)."""
        self.inherited = state.settings.inherited_merges if state.settings else 0
        """Rows before this are the continued tokenizer's own merges."""

    def sync(self) -> int:
        """Show merges that arrived since the last call; returns how many rows were added."""
        state = self._state
        if state.token_ids is not self._token_ids:  # a new run (or an opened session) replaced the columns
            self.beginResetModel()
            self._rows = 0
            self._split_rows = []
            self.endResetModel()
        # Rows read these columns, so a reset of the state is only seen here, never mid-paint.
        self._take_columns()
        merges, splits = len(self._token_ids), self._splits
        known = len(self._split_rows)
        # a removal's row: its merge's row + 1, after the removals before it
        self._split_rows += [split.rank + n + 1 for n, split in enumerate(splits[known:], known)]
        available = merges + len(self._split_rows)
        added = available - self._rows
        if added > 0:
            self.beginInsertRows(QModelIndex(), self._rows, available - 1)
            self._rows = available
            self.endInsertRows()
        return max(added, 0)

    def locate(self, row: int) -> tuple[int, int]:
        """``(rank, -1)`` for a merge's row, ``(rank, n)`` for the row of removal ``n`` (after the merge at ``rank``)."""
        split_rows = self._split_rows
        if not split_rows:
            return row, -1
        before = bisect_left(split_rows, row)
        if before < len(split_rows) and split_rows[before] == row:
            return self._splits[before].rank, before
        return row - before, -1

    def merge(self, row: int) -> tuple[bytes, bytes]:
        """The merge shown in ``row`` (a removal's row: the merge that caused it)."""
        rank, _ = self.locate(row)
        return self._tokens[self._left_ids[rank]], self._tokens[self._right_ids[rank]]

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else self._rows

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.ToolTipRole and section == SOURCES_COLUMN:
            tip = "Which sources the merged pair came from: each source's share of its count, in the legend's colours"
            return tip + ("; the dot: the language the merge was made for" if self.parity else "")
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole):
        row = index.row()
        if row >= self._rows or row < 0:
            return None
        column = index.column()
        if self._split_rows:
            row, split = self.locate(row)
            if split >= 0:
                return self._split_data(self._splits[split], column, role)
        if column == SOURCES_COLUMN:
            return self._sources_data(row, role)
        if role == _DISPLAY:
            if column == 0:
                return f"{row:,}"
            if column == 4:
                return f"{self._counts[row]:,}"
            return readable(self._token(row, column))
        if role == _FOREGROUND:
            return self._kept_brush if row < self.inherited else None
        if role == _FONT:
            if row < self.inherited:
                return self._kept_mono if column in _TOKEN_COLUMNS else self._kept_font
            return self._mono if column in _TOKEN_COLUMNS else None
        if role == _ALIGNMENT:
            return _RIGHT_ALIGNED if column in (0, 4) else None
        if role == _RAW:
            if column in _TOKEN_COLUMNS:
                return self._token(row, column)
            return (row, None, None, None, self._counts[row])[column]
        if role == _TOKEN_ID:
            return self._token_ids[row]
        if role == _BACKGROUND:
            return self._stage_brush if column == 0 and self._state.stage_of(row) == 2 else None
        if role == _KIND:
            return ("merge", self._state.stage_of(row))
        if role == _TOOLTIP and column == 0 and self._state.stage_two:
            stage = self._state.stage_of(row)
            return f"stage {stage}: " + ("tokens may cross spaces" if stage == 2 else "plain BPE within words")
        if role == _TOOLTIP and column not in _TOKEN_COLUMNS:
            return "kept from the tokenizer being continued" if row < self.inherited else None
        if role == _TOOLTIP:
            token = self._token(row, column)
            tip = f"{len(token)} bytes: {hex_form(token)}\nGPT-2 form: {gpt2_form(token)}"
            tip += f"\nnew token id {self._token_ids[row]}" if column == 3 else ""
            return tip + ("\nkept from the tokenizer being continued" if row < self.inherited else "")
        return None

    def _sources_data(self, rank: int, role: int) -> object:
        """The From cell of the merge at ``rank``: its counts per source (the bar), their tooltip."""
        if role in (_SHARES, _RAW):
            return self._shares(rank)
        if role == _CHOSEN:
            return self.chosen(rank)
        if role == _TOOLTIP:
            counts, chosen = self._shares(rank), self.chosen(rank)
            tip = share_tooltip(self.sources, counts, rank) if counts else None
            return tip + "\n" + chosen_tooltip(self.sources, chosen) if tip and chosen is not None else tip
        if role == _KIND:
            return ("merge", self._state.stage_of(rank))
        if role == _TOKEN_ID:
            return self._token_ids[rank]
        return None

    def chosen(self, rank: int) -> int | None:
        """The index of the source the merge at ``rank`` was made for (-1: a global merge);
        None unless the run is parity-aware."""
        return self._chosen[rank] if 0 <= rank < len(self._chosen) and self.sources else None

    def chosen_name(self, rank: int) -> str | None:
        """The name of the source the merge at ``rank`` was made for (None: a global merge, or not parity-aware)."""
        chosen = self.chosen(rank)
        return self.sources[chosen] if chosen is not None and 0 <= chosen < len(self.sources) else None

    def _shares(self, rank: int) -> tuple[int, ...] | None:
        """Each source's pair count at the merge of ``rank`` (None without named sources)."""
        n = len(self.sources)
        if not n or (rank + 1) * n > len(self._per_source):
            return None
        return tuple(self._per_source[rank * n:(rank + 1) * n])

    def _split_data(self, split: SplitEvent, column: int, role: int) -> object:
        """A removal's row: the token struck through, the merge that removed it, its pieces."""
        if role == _DISPLAY:
            if column == 1:
                return readable(split.token)
            if column == 2:
                return f"after #{split.rank:,}"
            if column == 3:
                return "→ " + PIECE_SEPARATOR.join(map(readable, split.pieces))
            return f"{split.occurrences:,}" if column == 4 else "✕"
        if role == _FONT:  # the token and its removal struck through; the pieces left legible
            return self._struck_mono if column == 1 else self._mono if column == 3 else self._struck_font
        if role == _FOREGROUND:
            return self._kept_brush
        if role == _ALIGNMENT:
            return _RIGHT_ALIGNED if column in (0, 4) else None
        if role == _TOKEN_ID:
            return split.token_id
        if role == _KIND:
            return ("split", split.rank)
        if role == _RAW:
            return (None, split.token, None, b"".join(split.pieces), split.occurrences, None)[column]
        if role == _TOOLTIP:
            pieces = PIECE_SEPARATOR.join(map(readable, split.pieces))
            return (f"{readable(split.token)} (id {split.token_id}) removed from the vocabulary after merge "
                    f"#{split.rank:,}: its {split.occurrences:,} occurrences became {pieces}")
        return None

    def _token(self, row: int, column: int) -> bytes:
        ids = self._left_ids if column == 1 else self._right_ids if column == 2 else self._token_ids
        return self._tokens[ids[row]]


class MergesTable(QTableView):
    """The merges table view; follows new rows unless the user scrolled away from the end."""

    def __init__(self, state: TrainingState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.merges_model = MergesModel(state, self)
        self.setModel(self.merges_model)
        self.setAlternatingRowColors(True)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setWordWrap(False)
        self.verticalHeader().hide()
        rows = self.verticalHeader()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)  # uniform rows: fast at 100k rows
        rows.setDefaultSectionSize(self.fontMetrics().height() + 6)
        header = self.horizontalHeader()
        header.setHighlightSections(False)
        # Rank and Count fixed to fit their figures; the three token columns share the rest, so
        # Result and Count stay in view however narrow the table gets (long tokens elide).
        metrics = self.fontMetrics()
        for column, widest in ((0, "99,999 "), (4, "9,999,999 ")):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Fixed)
            self.setColumnWidth(column, max(metrics.horizontalAdvance(widest), metrics.horizontalAdvance(COLUMNS[column])) + 16)
        for column in _TOKEN_COLUMNS:
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(SOURCES_COLUMN, QHeaderView.ResizeMode.Fixed)
        self.setItemDelegateForColumn(SOURCES_COLUMN, ShareBarDelegate(self))
        self.setColumnHidden(SOURCES_COLUMN, True)
        # Each token column keeps room for READABLE_CHARACTERS characters: at 1024 px the
        # table showed "·pr…"; the charts beside it give way instead.
        self._readable_width = QFontMetrics(self.merges_model._mono).horizontalAdvance("m" * READABLE_CHARACTERS) + 12
        header.setMinimumSectionSize(40)
        self._fit_columns()
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh)
        self._timer.start()

    def _fit_columns(self) -> None:
        """The From column shown with named sources only (wider by the chosen language's dot
        for a parity-aware run). The minimum width stays: the token columns give the bar its
        room, so a named run never widens the window."""
        self.setColumnHidden(SOURCES_COLUMN, not self.merges_model.sources)
        metrics = self.fontMetrics()
        width = PARITY_WIDTH if self.merges_model.parity else SOURCES_WIDTH
        self.setColumnWidth(SOURCES_COLUMN, max(width, metrics.horizontalAdvance(COLUMNS[SOURCES_COLUMN]) + 16))
        self.setMinimumWidth(sum(self.columnWidth(c) for c in (0, 4)) + 3 * self._readable_width + 24)

    def refresh(self) -> None:
        bar = self.verticalScrollBar()
        following = bar.value() >= bar.maximum() - 2
        shown = (bool(self.merges_model.sources), self.merges_model.parity)
        added = self.merges_model.sync()
        if (bool(self.merges_model.sources), self.merges_model.parity) != shown:
            self._fit_columns()
        if added and following:
            self.scrollToBottom()
