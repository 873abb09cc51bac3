"""Starting the application: the QApplication, its name (for QSettings), icon and window.

``bpe-studio [CORPUS] [--vocab-size N]`` (bpe_studio.cli) calls `run_app`. Without a
display, or when Qt's platform plugin cannot load, it prints what to do and exits with
status 1 — Qt itself would abort the process (SIGABRT, a core dump) after one line. Once
the application runs, Qt's messages go to a log and the status bar (`QtMessages`), not stderr.
"""

from __future__ import annotations

import multiprocessing
import os
import sys

from bpe_studio.app.resources import resource

ORGANIZATION = "BPE Studio"
APPLICATION = "BPE Studio"
XCB_LIBRARIES = (
    "libgl1 libegl1 libfontconfig1 libglib2.0-0 libdbus-1-3 libxkbcommon0 libxkbcommon-x11-0 "
    "libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libxcb-image0 libxcb-render-util0"
)
PLATFORM_HINT = (
    "bpe-studio: hint: Qt could not open a window. On Debian or Ubuntu, install the libraries its X11 "
    f"plugin needs:\n    sudo apt-get install {XCB_LIBRARIES}\n"
    "  QT_DEBUG_PLUGINS=1 bpe-studio names the missing one; without a display (no DISPLAY or "
    "WAYLAND_DISPLAY), use bpe-studio train/encode, or QT_QPA_PLATFORM=offscreen."
)


NO_DISPLAY_HINT = (
    "bpe-studio: no display to open the window on (neither DISPLAY nor WAYLAND_DISPLAY is set).\n"
    "  Use the command line instead (bpe-studio train, encode, count: bpe-studio --help), run it in a "
    "desktop session or with ssh -X, or set QT_QPA_PLATFORM=offscreen to run it without showing anything."
)


def missing_display(environ: dict[str, str] | os._Environ[str] = os.environ, platform: str = sys.platform) -> bool:
    """True when Qt would look for an X11 or Wayland display and there is none to find (Linux
    and the BSDs; a QT_QPA_PLATFORM chosen by the user is left to Qt)."""
    if not platform.startswith(("linux", "freebsd", "openbsd", "netbsd")) or environ.get("QT_QPA_PLATFORM"):
        return False
    return not (environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"))


def _hint_when_the_platform_fails(mode: object, _context: object, message: str) -> None:
    """Qt's messages while the QApplication starts, plus the hint when its platform plugin fails
    (Qt names only the first missing library). Qt would then abort; the process exits with
    status 1 instead, here, before Qt gets to it."""
    from PySide6.QtCore import QtMsgType

    print(message, file=sys.stderr, flush=True)
    about_the_plugin = "platform plugin" in message.lower()
    if about_the_plugin and "could not" in message.lower():
        print(PLATFORM_HINT, file=sys.stderr, flush=True)
    if about_the_plugin and mode == QtMsgType.QtFatalMsg:
        os._exit(1)  # nothing to clean up yet: no window, no thread, no file


def run_app(corpus: str | None = None, vocab_size: int | None = None) -> int:
    """Open the main window (with ``corpus`` and ``vocab_size`` preselected) and run until it closes.

    Returns:
        The process exit code.
    """
    multiprocessing.freeze_support()  # harmless normally; needed if frozen into an executable
    if missing_display():
        print(NO_DISPLAY_HINT, file=sys.stderr, flush=True)
        return 1
    from PySide6.QtCore import qInstallMessageHandler
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    from bpe_studio.app.main_window import MainWindow
    from bpe_studio.app.qt_messages import QtMessages

    previous = qInstallMessageHandler(_hint_when_the_platform_fails)
    try:
        app = QApplication.instance() or QApplication(sys.argv[:1])
    finally:
        qInstallMessageHandler(previous)
    messages = QtMessages()  # no parent: Qt may still speak while the application is torn down
    messages.install()
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)
    app.setApplicationDisplayName(APPLICATION)
    app.setWindowIcon(QIcon(str(resource("icon.svg"))))
    window = MainWindow(corpus=corpus, vocab_size=vocab_size)
    messages.warning.connect(window.statusBar().showMessage)
    window.show()
    return app.exec()
