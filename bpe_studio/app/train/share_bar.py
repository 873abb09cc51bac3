"""A stacked share bar in a table cell: where a merge's pairs came from, one colour per source.

`ShareBarDelegate` paints the cell's `SHARES_ROLE` data — each source's count of the merged
pair, in source order — as one bar split into segments whose widths are proportional to
the counts, each in its source's colour (`bpe_studio.app.models.provenance.source_colour`).
`share_tooltip` says the same in words: each source's count and share, largest first.
Trained parity-aware, a cell's `CHOSEN_ROLE` is the source the merge was made for: a dot
in its colour before the bar (a hollow grey ring for a global merge, chosen by all
sources together), and `chosen_tooltip` names it.

    table.setItemDelegateForColumn(SOURCES_COLUMN, ShareBarDelegate(table))
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget

from bpe_studio.app.models.provenance import SOURCE_COLOURS

SHARES_ROLE = Qt.ItemDataRole.UserRole + 3
"""A cell's per-source counts (a tuple of ints, in source order), or None."""
CHOSEN_ROLE = Qt.ItemDataRole.UserRole + 4
"""The index of the source the cell's merge was made for (parity-aware BPE; -1: a global
merge), or None."""
MARGIN = 3
DOT = 8
"""The chosen source's dot: its diameter; the bar starts after it and a gap."""
GLOBAL_RING = "#808080"


def chosen_tooltip(names: Sequence[str], chosen: int) -> str:
    """``"made for el: the language worst off at this merge"``, or a global merge's line."""
    if 0 <= chosen < len(names):
        return f"made for {names[chosen]} (●): the language worst off at this merge"
    return "a global merge (○): chosen by all sources together"


def share_tooltip(names: Sequence[str], counts: Sequence[int], rank: int | None = None) -> str:
    """``"merge #4: 1,250 pairs\\nen  1,000  80.0%\\nel  250  20.0%"``: each source with its
    count and share, largest first (sources without the pair left out)."""
    total = sum(counts)
    head = (f"merge #{rank:,}: " if rank is not None else "") + f"{total:,} pairs, by source"
    lines = [head]
    for count, name in sorted(zip(counts, names), key=lambda item: -item[0]):
        if count:
            lines.append(f"{name}: {count:,} ({100 * count / total:.1f}%)")
    return "\n".join(lines)


class ShareBarDelegate(QStyledItemDelegate):
    """Paints `SHARES_ROLE` as a stacked bar (the cell's background and selection as usual)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._colours = [QColor(c) for c in SOURCE_COLOURS]

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        widget = option.widget  # type: ignore[attr-defined]
        style = widget.style() if widget is not None else None
        if style is not None:  # the background, alternating colour and selection, no text
            item = QStyleOptionViewItem(option)
            self.initStyleOption(item, index)
            item.text = ""  # type: ignore[attr-defined]
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, item, painter, widget)
        counts = index.data(SHARES_ROLE)
        if not counts:
            return
        total = sum(counts)
        if total <= 0:
            return
        rect = QRectF(option.rect).adjusted(MARGIN, MARGIN + 1, -MARGIN, -MARGIN - 1)  # type: ignore[attr-defined]
        painter.save()
        chosen = index.data(CHOSEN_ROLE)
        if chosen is not None:
            self._paint_dot(painter, rect, chosen)
            rect.setLeft(rect.left() + DOT + MARGIN)
        painter.setPen(Qt.PenStyle.NoPen)
        x, width = rect.left(), rect.width()
        done = 0
        for k, count in enumerate(counts):
            if not count:
                continue
            # from cumulative counts: the segments end exactly at the bar's end, no rounding gap
            left = x + width * done / total
            done += count
            right = x + width * done / total
            painter.setBrush(self._colours[k % len(self._colours)])  # = source_colour(k)
            painter.drawRect(QRectF(left, rect.top(), max(right - left, 0.5), rect.height()))
        painter.restore()

    def _paint_dot(self, painter: QPainter, rect: QRectF, chosen: int) -> None:
        """The chosen source's dot at the left of ``rect`` (a ring for a global merge)."""
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        dot = QRectF(rect.left(), rect.center().y() - DOT / 2, DOT, DOT)
        if chosen >= 0:
            painter.setPen(QPen(QColor(40, 40, 40, 160), 1))  # an edge: light colours stay visible
            painter.setBrush(self._colours[chosen % len(self._colours)])
        else:
            painter.setPen(QPen(QColor(GLOBAL_RING), 1.5))
            painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawEllipse(dot.adjusted(0.5, 0.5, -0.5, -0.5))
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
