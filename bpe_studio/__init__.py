"""BPE Studio's Qt application (the core library is the Qt-free `core` package).

    from bpe_studio import MainWindow
    window = MainWindow(corpus=None, vocab_size=None)

`MainWindow` is imported on first use, so importing `bpe_studio` (e.g. for the command
line) does not load Qt.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

# The application does no linear algebra worth a thread, but numpy's OpenBLAS starts one
# that spins for a while when numpy is imported (and after each BLAS call): on
# the core a second worker thread needs just then. Set before anything imports numpy; a
# value the user set is kept. (The `core` library leaves its users' BLAS alone.)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

if TYPE_CHECKING:
    from bpe_studio.app.main_window import MainWindow

__all__ = ["MainWindow"]


def __getattr__(name: str) -> Any:
    if name == "MainWindow":
        from bpe_studio.app.main_window import MainWindow

        return MainWindow
    raise AttributeError(f"module 'bpe_studio' has no attribute {name!r}")
