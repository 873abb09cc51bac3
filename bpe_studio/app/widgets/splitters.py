"""One call to build the resizable splitters the panels are laid out with."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QWidget


def splitter(
    orientation: Qt.Orientation,
    widgets: Sequence[QWidget],
    *,
    stretch: Sequence[int] | None = None,
    sizes: Sequence[int] | None = None,
    collapsible: bool = True,
) -> QSplitter:
    """A `QSplitter` holding ``widgets`` in order, with stretch factors and initial sizes.

    ``splitter(Qt.Orientation.Vertical, [editor, view], stretch=[1, 2], sizes=[130, 600])``
    """
    split = QSplitter(orientation)
    for widget in widgets:
        split.addWidget(widget)
    for index, factor in enumerate(stretch or ()):
        split.setStretchFactor(index, factor)
    if sizes is not None:
        split.setSizes(list(sizes))
    split.setChildrenCollapsible(collapsible)
    return split
