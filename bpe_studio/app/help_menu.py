"""The Help menu: About (with the installed version), the documentation, the keyboard shortcuts.

Adds `add_help_menu(window)`, `app_version` and `shortcut_rows`. The shortcuts list is read
from the window's own actions, so it cannot fall out of date.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtGui import QAction, QDesktopServices, QKeySequence
from PySide6.QtWidgets import QMainWindow, QMessageBox

DOCS = Path(__file__).resolve().parents[2] / "docs"
"""The documentation in a source checkout (a wheel carries none)."""
NO_DOCS = ("The documentation (README.md and docs/) is in the source repository; this installation "
           "carries none. For the command line: <code>bpe-studio --help</code>.")


def app_version() -> str:
    """The installed ``bpe-studio`` version ("unknown" when run from a checkout that is not installed)."""
    try:
        return version("bpe-studio")
    except PackageNotFoundError:
        return "unknown"


def open_docs(window: QMainWindow) -> None:
    """Open the checkout's docs/ folder, or say where the documentation is."""
    if DOCS.is_dir():
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(DOCS)))
    else:
        QMessageBox.information(window, "Documentation", NO_DOCS)


def shortcut_rows(window: QMainWindow) -> list[tuple[str, str]]:
    """(action, keys) for every action of ``window`` that has a shortcut, in menu order."""
    rows = []
    for action in window.actions():
        keys = [s.toString(QKeySequence.SequenceFormat.NativeText) for s in action.shortcuts()]
        if keys:
            rows.append((action.text().replace("&", "").rstrip("…").strip(), " or ".join(keys)))
    return rows


def about_text() -> str:
    return (f"<h3>BPE Studio {app_version()}</h3><p>Train, inspect and export byte-level BPE tokenizers, "
            "exactly (the same merges as the reference trainer, tiktoken-exact encoding).</p>"
            "<p>The command line: <code>bpe-studio --help</code>.</p>")


def shortcuts_text(window: QMainWindow) -> str:
    rows = "".join(f"<tr><td>{name}</td><td>&nbsp;&nbsp;<b>{keys}</b></td></tr>" for name, keys in shortcut_rows(window))
    return f"<table>{rows}</table>"


def add_help_menu(window: QMainWindow) -> dict[str, QAction]:
    """Add Help › About, Documentation and Keyboard shortcuts to ``window``; returns the actions."""
    menu = window.menuBar().addMenu("&Help")
    actions = {
        "about": QAction("&About BPE Studio", window),
        "docs": QAction("&Documentation", window),
        "shortcuts": QAction("&Keyboard shortcuts", window),
    }
    actions["about"].triggered.connect(lambda: QMessageBox.about(window, "About BPE Studio", about_text()))
    actions["docs"].triggered.connect(lambda: open_docs(window))
    actions["shortcuts"].triggered.connect(
        lambda: QMessageBox.information(window, "Keyboard shortcuts", shortcuts_text(window))
    )
    actions["shortcuts"].setShortcut(QKeySequence("F1"))
    for action in actions.values():
        menu.addAction(action)
        window.addAction(action)
    return actions
