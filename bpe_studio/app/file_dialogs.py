"""File dialogs that start in the last folder used, remembered across runs (QSettings).

Adds `FileDialogs`: one object per window; each kind of file keeps its own folder
(``paths/session_folder``, ``paths/export_folder``, ...), falling back to the last folder
used for anything (``paths/last_folder``), then the home folder. `choose_folder` is the
Export dialog: a folder dialog with its "Create New Folder" button.
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QFileDialog, QWidget

LAST = "paths/last_folder"


class FileDialogs:
    """Open, save and folder dialogs for ``parent`` that remember their folders in ``qsettings``."""

    def __init__(self, parent: QWidget, qsettings: QSettings) -> None:
        self._parent = parent
        self._qsettings = qsettings

    def remembered(self, key: str) -> str:
        """The folder last chosen in a dialog of kind ``key`` ("" if none, or if it is gone)."""
        value = str(self._qsettings.value(key, "") or "")
        return value if value and os.path.isdir(value) else ""

    def folder(self, key: str = LAST) -> str:
        """Where a dialog of kind ``key`` starts: its last folder, else the last one used, else home."""
        return self.remembered(key) or self.remembered(LAST) or str(Path.home())

    def remember(self, path: str | os.PathLike[str], key: str = LAST, *, is_folder: bool = False) -> None:
        """``path`` was chosen in a dialog of kind ``key``: the next ones start in its folder."""
        folder = str(Path(path) if is_folder else Path(path).parent)
        self._qsettings.setValue(key, folder)
        self._qsettings.setValue(LAST, folder)

    def open_file(self, title: str, key: str, filter_: str, start: str = "") -> str:
        path, _ = QFileDialog.getOpenFileName(self._parent, title, start or self.folder(key), filter_)
        if path:
            self.remember(path, key)
        return path

    def open_files(self, title: str, key: str, filter_: str) -> list[str]:
        paths, _ = QFileDialog.getOpenFileNames(self._parent, title, self.folder(key), filter_)
        if paths:
            self.remember(paths[0], key)
        return list(paths)

    def save_file(self, title: str, key: str, name: str, filter_: str) -> str:
        path, _ = QFileDialog.getSaveFileName(self._parent, title, os.path.join(self.folder(key), name), filter_)
        if path:
            self.remember(path, key)
        return path

    def choose_folder(self, title: str, key: str) -> str:
        """A folder, which the dialog can create ("Create New Folder"; not read-only); "" if cancelled."""
        folder = QFileDialog.getExistingDirectory(self._parent, title, self.folder(key),
                                                  QFileDialog.Option.ShowDirsOnly)
        if folder:
            self.remember(folder, key, is_folder=True)
        return folder
