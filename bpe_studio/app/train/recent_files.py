"""The recent-corpora list, kept in QSettings (newest first, existing files only).

Stored as a JSON string: QSettings' INI backend turns a one-element list into a plain
string on the way back, JSON keeps the type.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMenu

RECENT_LIMIT = 8


class RecentFiles:
    """Recently used files under one QSettings key."""

    def __init__(self, settings: QSettings, key: str = "recent/corpora", limit: int = RECENT_LIMIT) -> None:
        self._settings = settings
        self._key = key
        self._limit = limit

    def paths(self) -> list[str]:
        """Recent files that still exist, newest first."""
        raw = self._settings.value(self._key, "[]")
        try:
            paths = json.loads(raw) if isinstance(raw, str) else []
        except json.JSONDecodeError:
            paths = []
        return [p for p in paths if isinstance(p, str) and os.path.isfile(p)]

    def add(self, path: str) -> None:
        path = os.path.abspath(path)
        paths = [path] + [p for p in self.paths() if p != path]
        self._settings.setValue(self._key, json.dumps(paths[: self._limit]))

    def clear(self) -> None:
        self._settings.setValue(self._key, "[]")

    def fill_menu(self, menu: QMenu, choose: Callable[[str], None]) -> None:
        """Replace ``menu``'s entries with the recent files; choosing one calls ``choose(path)``."""
        menu.clear()
        paths = self.paths()
        for i, path in enumerate(paths):
            label = f"&{i + 1}  {os.path.basename(path)}" if i < 9 else os.path.basename(path)
            action = menu.addAction(label)
            action.setToolTip(path)
            action.setStatusTip(path)
            action.triggered.connect(lambda _checked=False, p=path: choose(p))
        if not paths:
            menu.addAction("No recent files").setEnabled(False)
        else:
            menu.addSeparator()
            menu.addAction("Clear recent files").triggered.connect(self.clear)
