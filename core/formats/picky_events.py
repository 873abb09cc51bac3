"""Picky BPE's event list as a file, ``picky_events.txt``: its merges and splits in order.

One event a line, each token in GPT-2's printable byte form (as ``merges.txt``)::

    #picky-bpe events v1
    merge Ġ t
    merge h e
    merge Ġt he
    split Ġt Ġ t

`core.variants.picky` makes the events; `core.encode.replay` encodes by replaying them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from core.errors import FormatError
from core.formats.bytes_unicode import bytes_to_string, string_to_bytes

__all__ = ["EVENTS_NAME", "Event", "events_text", "read_events"]

EVENTS_NAME = "picky_events.txt"
_EVENTS_HEADER = "#picky-bpe events v1"

Event = tuple[str, bytes, bytes] | tuple[str, bytes, tuple[bytes, ...]]
"""``("merge", left, right)`` or ``("split", token, pieces)``."""


def events_text(events: Sequence[Event]) -> str:
    """The event list as text: ``merge L R`` and ``split T P1 P2 ...`` lines, each token
    in GPT-2's printable byte form (as ``merges.txt``)."""
    lines = [_EVENTS_HEADER]
    for kind, token, rest in events:
        if kind == "merge":
            lines.append(f"merge {bytes_to_string(token)} {bytes_to_string(rest)}")  # type: ignore[arg-type]
        else:
            lines.append("split " + " ".join(map(bytes_to_string, (token, *rest))))
    return "\n".join(lines) + "\n"


def read_events(path: str | os.PathLike[str]) -> list[Event]:
    """Read ``picky_events.txt``.

    Raises:
        FormatError: a line that is not an event, naming the file and the line.
    """
    p = Path(path)
    events: list[Event] = []
    with open(p, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if number == 1 and line == _EVENTS_HEADER or not line:
                continue
            parts = line.split(" ")
            try:
                tokens = [string_to_bytes(part) for part in parts[1:]]
            except KeyError:
                raise FormatError(f"{p}: line {number}: a token is not in GPT-2's byte form: {line[:80]!r}") from None
            if parts[0] == "merge" and len(tokens) == 2:
                events.append(("merge", tokens[0], tokens[1]))
            elif parts[0] == "split" and len(tokens) >= 3:
                events.append(("split", tokens[0], tuple(tokens[1:])))
            else:
                raise FormatError(f"{p}: line {number}: expected 'merge LEFT RIGHT' or 'split TOKEN PIECE PIECE...', "
                                  f"got {line[:80]!r}")
    return events
