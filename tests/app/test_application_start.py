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
