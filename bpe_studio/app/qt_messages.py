"""Qt's own messages, routed: a log and the window's status bar, not stderr.

Adds `QtMessages`, the application's Qt message handler once the window is up. Qt writes
its diagnostics to stderr: on a normal start, one line per font without OpenType tables
("qt.text.font.db: OpenType support missing …") and, offscreen, a line per window shown
("This plugin does not support propagateSizeHints()"). None of them is the user's concern.
Here every message goes to the ``bpe_studio.qt`` logger (silent unless the embedding
program configures logging) and to `recent`; a warning that is not known noise is also
sent as `warning`, which the window shows in its status bar. A critical or fatal message
still reaches stderr (Qt stops the process after a fatal one), and so does everything when
the user asked Qt to talk (``QT_LOGGING_RULES`` or ``QT_DEBUG_PLUGINS`` set).

    messages = QtMessages(); messages.install()
    messages.warning.connect(lambda text: window.statusBar().showMessage(text, 10_000))
"""

from __future__ import annotations

import logging
import os
import sys
from collections import deque
from typing import Any

from PySide6.QtCore import QObject, QtMsgType, Signal, qInstallMessageHandler

log = logging.getLogger("bpe_studio.qt")
log.addHandler(logging.NullHandler())  # not Python's last-resort handler (stderr)

KEPT = 200
"""How many of the latest messages `recent` keeps."""
NOISE_CATEGORIES = ("qt.text.font", "qt.qpa.fonts")
"""Font database chatter: a font without OpenType tables, a fallback chosen."""
NOISE_MESSAGES = ("This plugin does not support propagateSizeHints()", "This plugin does not support raise()",
                  "This plugin does not support grabbing the keyboard")
"""What a platform plugin without a window manager (offscreen) says on each window shown."""
_LEVELS = {
    QtMsgType.QtDebugMsg: logging.DEBUG,
    QtMsgType.QtInfoMsg: logging.INFO,
    QtMsgType.QtWarningMsg: logging.WARNING,
    QtMsgType.QtCriticalMsg: logging.ERROR,
    QtMsgType.QtFatalMsg: logging.CRITICAL,
}


def is_noise(category: str, message: str) -> bool:
    """True for Qt's messages that say nothing the user can or should act on."""
    return category.startswith(NOISE_CATEGORIES) or message.startswith(NOISE_MESSAGES)


class QtMessages(QObject):
    """Qt's message handler for the running application.

    Args:
        environ: the environment (``QT_LOGGING_RULES``/``QT_DEBUG_PLUGINS`` there: echo to stderr).

    Signals:
        warning(str): a Qt warning worth showing ("Qt: …"), for the status bar.
    """

    warning = Signal(str)

    def __init__(self, environ: dict[str, str] | os._Environ[str] = os.environ, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.recent: deque[str] = deque(maxlen=KEPT)
        self.echo = bool(environ.get("QT_LOGGING_RULES") or environ.get("QT_DEBUG_PLUGINS"))
        self._inside = False  # a message raised while handling one is only logged

    def install(self) -> None:
        """Make this the process's Qt message handler."""
        qInstallMessageHandler(self.handle)

    def uninstall(self) -> None:
        qInstallMessageHandler(None)

    def handle(self, mode: QtMsgType, context: Any, message: str) -> None:
        category = str(getattr(context, "category", "") or "")
        line = f"{category}: {message}" if category and category != "default" else message
        level = _LEVELS.get(mode, logging.WARNING)
        self.recent.append(line)
        log.log(logging.DEBUG if is_noise(category, message) else level, "%s", line)
        if self.echo or level >= logging.ERROR:
            print(line, file=sys.stderr, flush=True)
        if level == logging.WARNING and not is_noise(category, message) and not self._inside:
            self._inside = True
            try:
                self.warning.emit(f"Qt: {message}")
            finally:
                self._inside = False
