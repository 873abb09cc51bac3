"""The window starts and closes without a line on stderr: Qt's font and platform chatter goes
to a log, and a Qt warning that matters to the window's status bar (`QtMessages`)."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from PySide6.QtCore import QtMsgType

from bpe_studio.app.qt_messages import QtMessages

WARNING = "bpe-studio test: a warning that matters"

START_AND_CLOSE = textwrap.dedent(f"""
    import sys
    from PySide6.QtCore import QTimer, qWarning
    import bpe_studio.app.main_window as main_window

    shown = main_window.MainWindow.show

    def show(self):
        shown(self)
        # after the fonts of every script were drawn (they start 300 ms in, one per pass)
        QTimer.singleShot(2500, lambda: qWarning({WARNING!r}))
        QTimer.singleShot(2700, lambda: print("status:", self.statusBar().currentMessage(), flush=True))
        QTimer.singleShot(2800, self.close)

    main_window.MainWindow.show = show
    from bpe_studio.app.application import run_app
    sys.exit(run_app())
""")


def start_and_close(tmp_path, env_changes: dict[str, str], prefix: list[str] = ()) -> subprocess.CompletedProcess:
    script = tmp_path / "start_and_close.py"
    script.write_text(START_AND_CLOSE, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("QT_LOGGING_RULES", "QT_DEBUG_PLUGINS")}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"), **env_changes)
    return subprocess.run([*prefix, sys.executable, str(script)], env=env, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)


def check_quiet(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stderr.splitlines()
    assert lines == [], f"{len(lines)} lines on stderr, e.g. {lines[:5]}"
    assert f"status: Qt: {WARNING}" in proc.stdout


def test_offscreen_start_and_close_write_nothing_to_stderr(tmp_path):
    check_quiet(start_and_close(tmp_path, {"QT_QPA_PLATFORM": "offscreen"}))


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="needs xvfb-run (an X server)")
def test_start_and_close_under_an_x_server_write_nothing_to_stderr(tmp_path):
    check_quiet(start_and_close(tmp_path, {"QT_QPA_PLATFORM": "xcb"}, ["xvfb-run", "-a"]))


class Context:
    def __init__(self, category: str) -> None:
        self.category = category


def test_messages_are_logged_and_only_warnings_that_matter_are_shown(capfd, caplog):
    messages = QtMessages(environ={})
    shown: list[str] = []
    messages.warning.connect(shown.append)
    with caplog.at_level(logging.DEBUG, logger="bpe_studio.qt"):
        messages.handle(QtMsgType.QtInfoMsg, Context("qt.text.font.db"), 'OpenType support missing for "X", script 11')
        messages.handle(QtMsgType.QtWarningMsg, Context("default"), "This plugin does not support propagateSizeHints()")
        messages.handle(QtMsgType.QtWarningMsg, Context("qt.qpa.xcb"), "QXcbConnection: XCB error: 3 (BadWindow)")
    assert shown == ["Qt: QXcbConnection: XCB error: 3 (BadWindow)"]
    assert [r.levelno for r in caplog.records] == [logging.DEBUG, logging.DEBUG, logging.WARNING]
    assert len(messages.recent) == 3 and messages.recent[-1] == "qt.qpa.xcb: QXcbConnection: XCB error: 3 (BadWindow)"
    assert capfd.readouterr().err == ""
    # a critical message still reaches stderr; so does everything when the user asked Qt to talk
    messages.handle(QtMsgType.QtCriticalMsg, Context("default"), "something broke")
    assert capfd.readouterr().err == "something broke\n"
    talking = QtMessages(environ={"QT_LOGGING_RULES": "qt.text.font.db=true"})
    talking.handle(QtMsgType.QtInfoMsg, Context("qt.text.font.db"), "OpenType support missing")
    assert capfd.readouterr().err == "qt.text.font.db: OpenType support missing\n"
