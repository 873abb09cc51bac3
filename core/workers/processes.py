"""Starting worker processes safely from anywhere: a script, a GUI thread, a frozen app.

Workers use the ``spawn`` start method (safe with threads and Qt). Spawned children
normally import the parent's main script again, which re-runs a script that lacks an
``if __name__ == "__main__"`` guard and delays every worker by the script's own imports
(a benchmark's tiktoken, a GUI's Qt). Core's workers only need `core`, so the main
module's path is hidden while they start.

Workers never outlive the run that started them: `prepare_worker` (run first in every
worker of `core.workers.scheduler.WorkerPool`) leaves Ctrl+C to the parent, lets SIGTERM
and SIGHUP (the parent's way of stopping them) end them silently, and ends a worker whose
parent has died (killed outright, so it could not stop them) instead of letting it work
on and fail writing to a closed pipe. `max_workers` caps how many are started.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.pool
import os
import signal
import sys
import threading
import time
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


MAX_WORKERS_PER_CORE = 2
"""Worker processes started per usable core at most: more only adds start-up time and memory."""
PARENT_CHECK_SECONDS = 0.2


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where known)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def max_workers() -> int:
    """The most worker processes a run starts: `MAX_WORKERS_PER_CORE` per usable core."""
    return MAX_WORKERS_PER_CORE * usable_cores()


def _exit_when_orphaned(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(1)  # the parent is gone: nobody will read this worker's results


def prepare_worker() -> None:
    """Set up a worker process's signals and watch its parent (see the module docstring)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the workers, and says so once
    for name in ("SIGTERM", "SIGHUP", "SIGPIPE"):
        if hasattr(signal, name):  # a forked worker may have inherited a Python handler
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    threading.Thread(
        target=_exit_when_orphaned, args=(os.getppid(),), name="bpe-studio-parent-watch", daemon=True
    ).start()
