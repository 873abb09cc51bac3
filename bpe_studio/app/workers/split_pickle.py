"""Pickling a large object in parts that unpickle one at a time, so the GIL is free between them.

`pickle.loads` is one C call: it holds the GIL until the whole object is built. For a
finished run's `core.Tokenizer` (a dozen tables, about a megabyte pickled) that is long
enough that the GUI thread of the same process cannot run a line of Python — a visible
stall even though the unpickling happens in another thread. `dumps_parts` pickles every large
container or object inside ``obj`` (more than `PART_ITEMS` items, or an object holding
such tables) as a part of its own, referred to from the others by `persistent_id`, so
shared objects stay shared and nothing is pickled twice; `loads_parts` unpickles the parts
in order and lets the other threads run between two parts (each takes a few ms).

    parts = dumps_parts(tokenizer)        # in the training process: a list of bytes
    tokenizer = loads_parts(parts)        # in a worker thread of the GUI process
"""

from __future__ import annotations

import io
import pickle
import time
from typing import Any

PART_ITEMS = 2000
"""A dict, list, set or tuple with more items than this is pickled in chunks of this many
items, each a part of its own, and joined again when loaded."""

PAUSE_SECONDS = 0.001
"""How long `loads_parts` sleeps between two parts (the GUI thread takes the GIL meanwhile)."""

Part = tuple  # ("pickle", data) or ("join", kind, [indices of the chunks])

_CONTAINERS = (dict, list, set, frozenset, tuple)


def _large(obj: object) -> bool:
    if isinstance(obj, _CONTAINERS):
        return len(obj) > PART_ITEMS
    state = getattr(obj, "__dict__", None)  # an object holding large tables: its own part
    return isinstance(state, dict) and any(_large(value) for value in state.values())


class _Splitter:
    def __init__(self) -> None:
        self.parts: list[Part] = []
        self._ids: dict[int, int] = {}
        self._keep: list[object] = []  # alive until the end: the ids above must not be reused

    def index(self, obj: object) -> int:
        """The part of ``obj`` (dumped, after its own parts, on first use)."""
        index = self._ids.get(id(obj))
        if index is None:
            self._keep.append(obj)
            if isinstance(obj, _CONTAINERS) and len(obj) > PART_ITEMS:
                index = self._chunked(obj)
            else:
                index = self._pickled(obj)
            self._ids[id(obj)] = index
        return index

    def _chunked(self, obj: Any) -> int:
        items = list(obj.items()) if isinstance(obj, dict) else list(obj)
        chunks = []
        for start in range(0, len(items), PART_ITEMS):
            chunk = items[start:start + PART_ITEMS]
            chunks.append(self._pickled(dict(chunk) if isinstance(obj, dict) else chunk))
        self.parts.append(("join", type(obj).__name__, chunks))
        return len(self.parts) - 1

    def _pickled(self, obj: object) -> int:
        buffer = io.BytesIO()
        _PartPickler(buffer, obj, self).dump(obj)
        self.parts.append(("pickle", buffer.getvalue()))
        return len(self.parts) - 1


class _PartPickler(pickle.Pickler):
    def __init__(self, buffer: io.BytesIO, root: object, splitter: _Splitter) -> None:
        super().__init__(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        self._root, self._splitter = root, splitter

    def persistent_id(self, obj: Any) -> int | None:
        if obj is self._root or isinstance(obj, (str, bytes, int, float, type)) or not _large(obj):
            return None
        return self._splitter.index(obj)


def dumps_parts(obj: object) -> list[Part]:
    """``obj`` pickled as a list of parts (the last one is ``obj`` itself); see `loads_parts`."""
    splitter = _Splitter()
    splitter.index(obj)
    return splitter.parts


class _PartUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes, loaded: list[object]) -> None:
        super().__init__(io.BytesIO(data))
        self._loaded = loaded

    def persistent_load(self, pid: Any) -> object:
        return self._loaded[pid]


def _join(kind: str, chunks: list[Any]) -> object:
    if kind == "dict":
        joined: dict[Any, Any] = {}
        for chunk in chunks:
            joined.update(chunk)
        return joined
    items = [item for chunk in chunks for item in chunk]
    return {"list": list, "set": set, "frozenset": frozenset, "tuple": tuple}[kind](items)


def load_part(part: Part, loaded: list[object]) -> None:
    """Load one part (after the ones before it) onto ``loaded``."""
    if part[0] == "join":
        loaded.append(_join(part[1], [loaded[i] for i in part[2]]))
    else:
        loaded.append(_PartUnpickler(part[1], loaded).load())


def loads_parts(parts: list[Part], pause: float = PAUSE_SECONDS) -> Any:
    """The object `dumps_parts` pickled, unpickled a part at a time with a short sleep
    between parts (the GIL is released there)."""
    loaded: list[object] = []
    for n, part in enumerate(parts):
        if n and pause > 0:
            time.sleep(pause)
        load_part(part, loaded)
    return loaded[-1]
