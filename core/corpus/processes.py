"""Starting worker processes safely from anywhere: a script, a GUI thread, a frozen app.

Workers use the ``spawn`` start method (safe with threads and Qt). Spawned children
normally import the parent's main script again, which re-runs a script that lacks an
``if __name__ == "__main__"`` guard and delays every worker by the script's own imports
(a benchmark's tiktoken, a GUI's Qt). Core's workers only need `core`, so the main
module's path is hidden while they start.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.pool
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def main_module_hidden() -> Iterator[None]:
    """Hide ``__main__``'s file and spec from ``spawn`` while processes start."""
    main = sys.modules.get("__main__")
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if main and k in main.__dict__}
    try:
        for key in saved:
            setattr(main, key, None) if key == "__spec__" else delattr(main, key)
        yield
    finally:
        for key, value in saved.items():
            setattr(main, key, value)


def spawn_pool(
    processes: int,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
) -> multiprocessing.pool.Pool:
    """A ``spawn`` pool of ``processes`` workers that does not re-import the caller's script."""
    context = multiprocessing.get_context("spawn")
    with main_module_hidden():
        return context.Pool(processes=processes, initializer=initializer, initargs=initargs)


def can_fork() -> bool:
    """Whether workers may be forked: on Linux, from the main thread of a process that runs
    no other thread — no Python thread, and no Qt, whose threads Python does not see. (Any
    other program with threads of its own should pass ``start_method="spawn"``.)"""
    return (
        sys.platform.startswith("linux")
        and threading.active_count() == 1
        and threading.current_thread() is threading.main_thread()
        and not any(name in sys.modules for name in ("PySide6.QtCore", "PyQt6.QtCore", "PyQt5.QtCore"))
    )
