"""`bpe-studio` tells the user which system libraries to install when Qt cannot open a window."""

from __future__ import annotations

import os
import subprocess
import sys


def test_a_platform_plugin_that_cannot_load_prints_the_install_hint(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update(QT_QPA_PLATFORM="xcb", XDG_CONFIG_HOME=str(tmp_path))  # no display: the plugin fails
    proc = subprocess.run([sys.executable, "-m", "bpe_studio"], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert proc.returncode != 0
    assert 'Could not load the Qt platform plugin "xcb"' in proc.stderr
    hint = proc.stderr[proc.stderr.index("bpe-studio: hint:"):]
    assert "sudo apt-get install" in hint
    for library in ("libxcb-cursor0", "libxkbcommon-x11-0", "libxcb-icccm4", "libxcb-render-util0"):
        assert library in hint


def test_without_a_display_it_says_what_to_do_and_exits_1(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["XDG_CONFIG_HOME"] = str(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "bpe_studio"], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert proc.returncode == 1  # not -6 (SIGABRT)
    assert "no display" in proc.stderr and "bpe-studio --help" in proc.stderr and "offscreen" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_platform_plugin_that_cannot_load_exits_1_not_sigabrt(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update(QT_QPA_PLATFORM="xcb", XDG_CONFIG_HOME=str(tmp_path))
    proc = subprocess.run([sys.executable, "-m", "bpe_studio"], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "bpe-studio: hint:" in proc.stderr
