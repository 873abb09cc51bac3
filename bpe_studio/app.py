"""Starting the application: the QApplication, its name (for QSettings), icon, window; resources.

``bpe-studio [CORPUS] [--vocab-size N]`` (bpe_studio.cli) calls `run_app`.
"""

from __future__ import annotations

import multiprocessing
import sys
from pathlib import Path

RESOURCES = Path(__file__).resolve().parent.parent / "resources"
ORGANIZATION = "BPE Studio"
APPLICATION = "BPE Studio"


def resource(name: str) -> Path:
    """The path of a file in ``resources/``."""
    return RESOURCES / name


def style_sheet() -> str:
    """The application's style sheet ("" if the file is missing)."""
    try:
        return resource("style.qss").read_text(encoding="utf-8")
    except OSError:
        return ""


def run_app(corpus: str | None = None, vocab_size: int | None = None) -> int:
    """Open the main window (with ``corpus`` and ``vocab_size`` preselected) and run until it closes.

    Returns:
        The process exit code.
    """
    multiprocessing.freeze_support()  # harmless normally; needed if frozen into an executable
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    from bpe_studio.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)
    app.setApplicationDisplayName(APPLICATION)
    app.setWindowIcon(QIcon(str(resource("icon.svg"))))
    window = MainWindow(corpus=corpus, vocab_size=vocab_size)
    window.show()
    return app.exec()
