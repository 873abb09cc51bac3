"""`core` is a plain library: importing it (and training with it) loads no Qt module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CHECK = """
import sys
import core, core.training.reference
{extra}
qt = sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "shiboken6", "pyqtgraph", "PyQt5", "PyQt6"))
print(",".join(qt))
"""


def _loaded_qt_modules(extra: str = "") -> str:
    result = subprocess.run(
        [sys.executable, "-c", CHECK.format(extra=extra)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_import_core_loads_no_qt() -> None:
    assert _loaded_qt_modules() == ""


def test_training_loads_no_qt(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world, hello core " * 20, encoding="utf-8")
    extra = f"core.train_bpe({str(corpus)!r}, 270, ['<|endoftext|>'], workers=1)"
    assert _loaded_qt_modules(extra) == ""
