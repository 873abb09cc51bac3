"""The Help menu: About (version and where the files are), the documentation, the keyboard shortcuts.

Adds `add_help_menu(window)`, `app_version`, `shortcut_rows` and `DocsWindow`. The
documentation is the README and docs/*.md that come with this copy (`bpe_studio.manual`:
shipped in the package, or the checkout's), rendered as Markdown in a window of its own, so
an installed copy explains itself offline. The shortcuts list is read from the window's own
actions, so it cannot fall out of date.
"""

from __future__ import annotations

import html
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QAction, QDesktopServices, QGuiApplication, QImage, QKeySequence, QTextDocument
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QMainWindow,
    QMessageBox,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from bpe_studio.manual import Page, docs_root, expected_root, pages


def app_version() -> str:
    """The installed ``bpe-studio`` version ("unknown" when run from a checkout that is not installed)."""
    try:
        return version("bpe-studio")
    except PackageNotFoundError:
        return "unknown"


class _PageBrowser(QTextBrowser):
    """A text browser whose images (the README's screenshot) fit the width of the page."""

    def loadResource(self, kind: int, url: QUrl | str) -> object:
        resource = super().loadResource(kind, url)
        if kind == QTextDocument.ResourceType.ImageResource.value:
            image = resource if isinstance(resource, QImage) else QImage.fromData(resource) if resource else None
            width = max(320, self.viewport().width() - 24)
            if image is not None and not image.isNull() and image.width() > width:
                return image.scaledToWidth(width, Qt.TransformationMode.SmoothTransformation)
        return resource


class DocsWindow(QWidget):
    """The documentation: the list of pages on the left, the selected page rendered on the right.

    Links between pages open here; web links open in the browser; a link to a file this copy
    does not carry (a source file of the repository) is said in the line at the bottom.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setWindowTitle("BPE Studio documentation")
        self.pages: list[Page] = pages()
        self.page_list = QListWidget()
        self.page_list.addItems([page.title for page in self.pages])
        for i, page in enumerate(self.pages):
            self.page_list.item(i).setToolTip(f"{page.title}\n{page.path}")
        self.page_list.setWordWrap(True)  # long titles wrap, never a sideways scroll
        self.page_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.page_list.setMaximumWidth(260)
        self.browser = _PageBrowser()
        self.browser.setOpenLinks(False)  # followed here: a missing file is said, not a Qt warning
        self.browser.anchorClicked.connect(self.follow)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        row = QHBoxLayout()
        row.addWidget(self.page_list)
        row.addWidget(self.browser, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(row, 1)
        layout.addWidget(self.status)
        self.page_list.currentRowChanged.connect(self._show_row)
        self.resize(1000, 700)
        if self.pages:
            self.page_list.setCurrentRow(0)
        else:
            self.browser.setPlainText(f"No documentation found in this installation (looked in {expected_root()}).\n"
                                      "The command line: bpe-studio --help.")

    def current_path(self) -> Path | None:
        """The file of the page shown (None when there is none)."""
        url = self.browser.source()
        return Path(url.toLocalFile()) if url.isLocalFile() else None

    def show_page(self, path: Path) -> None:
        """Show one page (a README or docs/*.md file) and select it in the list."""
        self.browser.setSource(QUrl.fromLocalFile(str(path)))
        self.status.setText(str(path))
        row = next((i for i, page in enumerate(self.pages) if page.path == path), -1)
        if row >= 0 and row != self.page_list.currentRow():
            self.page_list.blockSignals(True)
            self.page_list.setCurrentRow(row)
            self.page_list.blockSignals(False)

    def follow(self, url: QUrl) -> None:
        """Follow a link: a page here, a web address in the browser, anything else said."""
        if url.scheme() in ("http", "https", "mailto"):
            QDesktopServices.openUrl(url)
            return
        target = self.browser.source().resolved(url)
        path = Path(target.toLocalFile()) if target.isLocalFile() else None
        if path is not None and path == self.current_path() and url.hasFragment():
            self.browser.scrollToAnchor(url.fragment())
        elif path is not None and path.suffix == ".md" and path.is_file():
            self.show_page(path)
        else:
            self.status.setText(f"{url.toString()} is not part of the documentation in this installation; "
                                "it is in the source repository.")

    def _show_row(self, row: int) -> None:
        if 0 <= row < len(self.pages):
            self.show_page(self.pages[row].path)


def open_docs(window: QMainWindow) -> DocsWindow:
    """Show the documentation window (one per main window, raised if already open)."""
    docs = window.findChild(DocsWindow)
    if docs is None:
        docs = DocsWindow(window)
    docs.show()
    if QGuiApplication.platformName() != "offscreen":  # which cannot raise a window, and warns
        docs.raise_()
    docs.activateWindow()
    return docs


def shortcut_rows(window: QMainWindow) -> list[tuple[str, str]]:
    """(action, keys) for every action of ``window`` that has a shortcut, in menu order."""
    rows = []
    for action in window.actions():
        keys = [s.toString(QKeySequence.SequenceFormat.NativeText) for s in action.shortcuts()]
        if keys:
            rows.append((action.text().replace("&", "").rstrip("…").strip(), " or ".join(keys)))
    return rows


def about_text(window: QMainWindow) -> str:
    """The version and where this copy's files are: the package, the settings, the documentation."""
    settings = getattr(window, "qsettings", None)
    root = docs_root()
    places = [
        ("Installed in", str(Path(__file__).resolve().parents[1])),  # the bpe_studio package
        ("Settings", settings.fileName() if settings is not None else "(none)"),
        ("Documentation", f"{root / 'README.md'} and {root / 'docs'}" if root else f"not found (looked in {expected_root()})"),
    ]
    rows = "".join(f"<tr><td>{name}:&nbsp;</td><td>{html.escape(where)}</td></tr>" for name, where in places)
    return (f"<h3>BPE Studio {app_version()}</h3><p>Train, inspect and export byte-level BPE tokenizers, "
            "exactly (the same merges as the reference trainer, tiktoken-exact encoding).</p>"
            f"<table>{rows}</table>"
            "<p>Help › Documentation shows the pages; the command line: <code>bpe-studio --help</code>, "
            "<code>bpe-studio docs</code>.</p>")


def show_about(window: QMainWindow) -> None:
    box = QMessageBox(QMessageBox.Icon.NoIcon, "About BPE Studio", about_text(window),
                      QMessageBox.StandardButton.Ok, window)
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)  # the paths can be copied
    box.exec()


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
    actions["about"].triggered.connect(lambda: show_about(window))
    actions["docs"].triggered.connect(lambda: open_docs(window))
    actions["shortcuts"].triggered.connect(
        lambda: QMessageBox.information(window, "Keyboard shortcuts", shortcuts_text(window))
    )
    actions["shortcuts"].setShortcut(QKeySequence("F1"))
    for action in actions.values():
        menu.addAction(action)
        window.addAction(action)
    return actions
