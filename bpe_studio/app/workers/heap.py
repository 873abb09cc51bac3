"""Keeping Python's cyclic garbage collector from pausing the window during a run.

A full collection walks every tracked object in the process: with Qt, pyqtgraph and numpy
loaded that is tens of thousands of objects, and one falls due at some point of nearly every
run (most often while the result's 20k merges arrive), stalling the GUI thread, or the
worker thread while it holds the GIL. Objects that are alive when the window is built, or
when a run starts, live long anyway, so they are collected once and then frozen out of
later collections (`gc.freeze`); a collection during the run then only walks what the run
created, a few milliseconds.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator


def freeze_long_lived_objects() -> None:
    """Collect garbage now, then leave every surviving object out of future collections.

    Frozen objects are still freed by reference counting; only a reference cycle among
    them, formed later, would stay in memory. Cheap after the first call (only objects
    created since the last freeze are collected).
    """
    gc.collect()
    gc.freeze()


_pause_lock = threading.Lock()
_pauses = 0


@contextlib.contextmanager
def collections_paused() -> Iterator[None]:
    """No cyclic collection while the block runs (in any thread); what it created is then
    frozen out of later collections.

    For background work that builds hundreds of thousands of small objects (the spans of a
    300k-character text): a full collection falling due in the middle walked them all with
    the GIL held, while the GUI thread could not run a line of Python.
    Its results are plain data without reference cycles, freed by reference counting.
    Nested and concurrent blocks are counted: collection resumes when the last one ends.
    """
    global _pauses
    with _pause_lock:
        _pauses += 1
        gc.disable()
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            gc.freeze()
            if _pauses == 0:
                gc.enable()
