"""`bpe_studio.app.models` is Qt-free: importing every module of it loads no Qt module.

The models hold the state the views read; keeping Qt out of them keeps them testable
and reusable without a display (napari's import contract, done as a test).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

CHECK = """
import importlib, pkgutil, sys
import bpe_studio.app.models as models
names = sorted(m.name for m in pkgutil.walk_packages(models.__path__, models.__name__ + "."))
for name in names:
    importlib.import_module(name)
qt = sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "shiboken6", "pyqtgraph", "PyQt5", "PyQt6"))
print(len(names))
print(",".join(qt))
"""


def test_every_model_module_imports_without_qt() -> None:
    result = subprocess.run(
        [sys.executable, "-c", CHECK], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    imported, qt = (result.stdout.splitlines() + ["", ""])[:2]
    assert int(imported) >= 5  # session, training_state, vocab_data, token_render, sample_corpus, …
    assert qt == ""
