"""File dialogs that start in the last folder used, remembered across runs (QSettings).

Adds `FileDialogs`: one object per window; each kind of file keeps its own folder
(``paths/session_folder``, ``paths/export_folder``, ...), falling back to the last folder
used for anything (``paths/last_folder``), then the home folder — never the process's
current folder (Qt's default) nor a folder inside the installed application (where the
sample corpus lives). `dialogs_for` finds the window's `FileDialogs` from any widget in it.
`choose_folder` is the Export dialog: a folder dialog with its "Create New Folder" button,
which also takes the name of a folder that does not exist yet and creates it.
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QSettings
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from bpe_studio.app.resources import resources_dir

LAST = "paths/last_folder"
_APPLICATION = Path(__file__).resolve().parents[1]  # .../bpe_studio


def default_qsettings() -> QSettings:
    """The application's QSettings (INI file under the user's config folder)."""
    org = QCoreApplication.organizationName() or "BPE Studio"
    app = QCoreApplication.applicationName() or "BPE Studio"
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, org, app)


def _inside_the_application(folder: str) -> bool:
    """True for the installed package's folders and the application's own files (the sample corpus's)."""
    path = Path(folder).resolve()
    return any(path == root or root in path.parents for root in (_APPLICATION, resources_dir().resolve()))


def usable_folder(folder: str | os.PathLike[str]) -> str:
    """``folder`` if a dialog may start there (an existing folder outside the application), else ""."""
    folder = str(folder or "")
    return folder if folder and os.path.isdir(folder) and not _inside_the_application(folder) else ""


class NewFolderDialog(QFileDialog):
    """A folder dialog (Qt's own, with "Create New Folder") that also accepts a typed name of a
    folder that does not exist yet: it creates it (and its parents), or says why it cannot."""

    def __init__(self, parent: QWidget | None, title: str, start: str) -> None:
        super().__init__(parent, title, start)
        self.setFileMode(QFileDialog.FileMode.Directory)
        self.setOption(QFileDialog.Option.ShowDirsOnly, True)
        self.setOption(QFileDialog.Option.DontUseNativeDialog, True)  # a native dialog would skip `accept`

    def accept(self) -> None:
        chosen = self.selectedFiles()
        target = Path(chosen[0]) if chosen else None
        if target is not None and not target.exists():
            try:
                target.mkdir(parents=True)
            except OSError as e:
                QMessageBox.warning(self, self.windowTitle(),
                                    f"Cannot create the folder {target}: {e.strerror or e}. Choose another name or place.")
                return
        elif target is not None and not target.is_dir():
            QMessageBox.warning(self, self.windowTitle(), f"{target} is a file, not a folder: choose or name a folder.")
            return
        super().accept()

    def folder(self) -> str:
        """The folder chosen ("" if cancelled)."""
        chosen = self.selectedFiles()
        return chosen[0] if chosen and self.result() == QFileDialog.DialogCode.Accepted else ""


def ask_folder(parent: QWidget | None, title: str, start: str) -> str:
    """Show a `NewFolderDialog`; the folder chosen (created if new), or "" if cancelled."""
    dialog = NewFolderDialog(parent, title, start)
    try:
        dialog.exec()
        return dialog.folder()
    finally:
        dialog.deleteLater()


class FileDialogs:
    """Open, save and folder dialogs for ``parent`` that remember their folders in ``qsettings``."""

    def __init__(self, parent: QWidget, qsettings: QSettings) -> None:
        self._parent = parent
        self._qsettings = qsettings

    def remembered(self, key: str) -> str:
        """The folder last chosen in a dialog of kind ``key`` ("" if none, or if it is gone)."""
        return usable_folder(str(self._qsettings.value(key, "") or ""))

    def folder(self, key: str = LAST, start: str | os.PathLike[str] = "") -> str:
        """Where a dialog of kind ``key`` starts: ``start`` (a folder, or a file's folder) if
        given and usable, else its last folder, else the last one used, else home."""
        given = str(start or "")
        if given and not os.path.isdir(given):
            given = os.path.dirname(given)
        return usable_folder(given) or self.remembered(key) or self.remembered(LAST) or str(Path.home())

    def remember(self, path: str | os.PathLike[str], key: str = LAST, *, is_folder: bool = False) -> None:
        """``path`` was chosen in a dialog of kind ``key``: the next ones start in its folder."""
        folder = str(Path(path) if is_folder else Path(path).parent)
        self._qsettings.setValue(key, folder)
        self._qsettings.setValue(LAST, folder)

    def open_file(self, title: str, key: str, filter_: str = "", start: str = "") -> str:
        path, _ = QFileDialog.getOpenFileName(self._parent, title, self.folder(key, start), filter_)
        if path:
            self.remember(path, key)
        return path

    def open_files(self, title: str, key: str, filter_: str = "", start: str = "") -> list[str]:
        paths, _ = QFileDialog.getOpenFileNames(self._parent, title, self.folder(key, start), filter_)
        if paths:
            self.remember(paths[0], key)
        return list(paths)

    def save_file(self, title: str, key: str, name: str, filter_: str) -> str:
        path, _ = QFileDialog.getSaveFileName(self._parent, title, os.path.join(self.folder(key), name), filter_)
        if path:
            self.remember(path, key)
        return path

    def existing_folder(self, title: str, key: str, start: str = "") -> str:
        """An existing folder (to read from); "" if cancelled."""
        folder = QFileDialog.getExistingDirectory(self._parent, title, self.folder(key, start),
                                                  QFileDialog.Option.ShowDirsOnly)
        if folder:
            self.remember(folder, key, is_folder=True)
        return folder

    def choose_folder(self, title: str, key: str) -> str:
        """A folder to write into: an existing one, or a new one (made by "Create New Folder" or
        by typing its name); "" if cancelled."""
        folder = ask_folder(self._parent, title, self.folder(key))
        if folder:
            self.remember(folder, key, is_folder=True)
        return folder


def dialogs_for(widget: QWidget) -> FileDialogs:
    """The `FileDialogs` of ``widget``'s window (one on the application's settings if it has none)."""
    dialogs = getattr(widget.window(), "dialogs", None)
    return dialogs if isinstance(dialogs, FileDialogs) else FileDialogs(widget, default_qsettings())
