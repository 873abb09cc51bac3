"""A pyqtgraph axis whose tick labels never run into each other.

pyqtgraph decides how many labels to draw from their total size, not from where each one
falls: in a chart a few hundred pixels wide "1.8 1.6 1.4 1.2" touched, and a second level of
labels could land on the first. `SpacedAxis` drops every label that would come closer than
`LABEL_GAP` pixels to one already placed (the coarser levels are placed first), so what is
left is thinned evenly and each label is whole and readable. The ticks and grid lines stay.
"""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QRectF

LABEL_GAP = 4
"""Pixels kept between two tick labels along the axis."""


def spaced(text_specs: list[tuple[QRectF, Any, str]], horizontal: bool,
           gap: float = LABEL_GAP) -> list[tuple[QRectF, Any, str]]:
    """The labels of ``text_specs`` (``(rect, flags, text)``, coarsest level first) that keep
    ``gap`` pixels from every label kept before them."""
    kept: list[tuple[QRectF, Any, str]] = []
    spans: list[tuple[float, float]] = []
    for spec in text_specs:
        rect = spec[0]
        low, high = (rect.left(), rect.right()) if horizontal else (rect.top(), rect.bottom())
        if all(high + gap <= a or low >= b + gap for a, b in spans):
            kept.append(spec)
            spans.append((low, high))
    return kept


class SpacedAxis(pg.AxisItem):
    """An `pg.AxisItem` that drops the tick labels that would overlap (see the module docstring)."""

    def generateDrawSpecs(self, p: Any) -> Any:
        specs = super().generateDrawSpecs(p)
        if specs is None:
            return None
        axis, ticks, texts = specs
        return axis, ticks, spaced(texts, self.orientation in ("top", "bottom"))
