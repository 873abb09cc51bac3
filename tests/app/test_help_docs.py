"""Help › Documentation renders the documentation this copy carries, and Help › About says
the version and where the files are (issue 38, item 2; the installed wheel: tests/packaging)."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from importlib.metadata import version
from pathlib import Path

import bpe_studio
from PySide6.QtCore import QUrl

from bpe_studio.app.help_menu import DocsWindow

REPO = Path(__file__).resolve().parents[2]


def test_documentation_opens_a_window_with_every_page(qtbot, make_window):
    window = make_window()
    window.help_actions["docs"].trigger()
    docs = window.findChild(DocsWindow)
    assert docs is not None and docs.isVisible()
    titles = [docs.page_list.item(i).text() for i in range(docs.page_list.count())]
    assert titles[0] == "BPE Studio" and "Files" in titles and len(titles) == 1 + len(list((REPO / "docs").glob("*.md")))
    assert docs.current_path() == REPO / "README.md"
    shown = docs.browser.toPlainText()
    assert "pip install" in shown and "##" not in shown  # rendered, not the Markdown source

    docs.page_list.setCurrentRow(titles.index("Files"))
    assert docs.current_path() == REPO / "docs" / "formats.md"
    assert "tokenizer.json" in docs.browser.toPlainText()

    window.help_actions["docs"].trigger()  # again: the same window, raised
    assert window.findChildren(DocsWindow) == [docs]


def test_links_between_pages_open_here_and_other_files_are_said(qtbot, make_window):
    window = make_window()
    window.help_actions["docs"].trigger()
    docs = window.findChild(DocsWindow)
    docs.follow(QUrl("docs/semantics.md#trainer-options"))  # as the README links it
    assert docs.current_path() == REPO / "docs" / "semantics.md"
    assert docs.page_list.currentItem().text() == "Training and encoding semantics"
    docs.follow(QUrl("formats.md"))  # from one docs page to another
    assert docs.current_path() == REPO / "docs" / "formats.md"
    docs.follow(QUrl("../core/no_such_module.py"))
    assert docs.current_path() == REPO / "docs" / "formats.md"
    assert "not part of the documentation" in docs.status.text()


def test_about_shows_the_version_and_where_the_files_are(qtbot, make_window, settings_file, message_box_text):
    window = make_window()
    text = message_box_text(window.help_actions["about"])
    assert version("bpe-studio") in text
    assert str(Path(bpe_studio.__file__).resolve().parent) in text
    assert window.qsettings.fileName() in text and Path(window.qsettings.fileName()).name.endswith(".ini")
    assert str(REPO / "README.md") in text and str(REPO / "docs") in text
