"""Starting the application: the QApplication, its name (for QSettings), icon and window.

``bpe-studio [CORPUS] [--vocab-size N]`` (bpe_studio.cli) calls `run_app`.
"""

from __future__ import annotations

import multiprocessing
import sys

from bpe_studio.app.resources import resource

ORGANIZATION = "BPE Studio"
APPLICATION = "BPE Studio"


def run_app(corpus: str | None = None, vocab_size: int | None = None) -> int:
    """Open the main window (with ``corpus`` and ``vocab_size`` preselected) and run until it closes.

    Returns:
        The process exit code.
    """
    multiprocessing.freeze_support()  # harmless normally; needed if frozen into an executable
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    from bpe_studio.app.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)
    app.setApplicationDisplayName(APPLICATION)
    app.setWindowIcon(QIcon(str(resource("icon.svg"))))
    window = MainWindow(corpus=corpus, vocab_size=vocab_size)
    window.show()
    return app.exec()
