"""A one-line progress display for the terminal, redrawn at most ten times a second.

On a terminal the line is redrawn in place (``\\r``); when stderr is a file or a pipe
only stage changes and the final state are written, one line each, so logs stay short.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def bar(fraction: float, width: int = 24) -> str:
    """``bar(0.5, 8) -> "[####....]"``."""
    filled = int(round(max(0.0, min(1.0, fraction)) * width))
    return "[" + "#" * filled + "." * (width - filled) + "]"


class ProgressLine:
    """Shows the latest status of a stage; `update` is cheap to call very often."""

    def __init__(self, stream: TextIO | None = None, interval: float = 0.1) -> None:
        self.stream = stream or sys.stderr
        self.interactive = self.stream.isatty()
        self.interval = interval
        self._last_draw = 0.0
        self._stage = ""
        self._text = ""
        self._width = 0

    def update(self, stage: str, text: str, *, force: bool = False) -> None:
        new_stage = stage != self._stage
        if new_stage and self._stage:
            self._finish_line()
        self._stage, self._text = stage, text
        now = time.monotonic()
        if self.interactive and (force or new_stage or now - self._last_draw >= self.interval):
            line = f"{stage:<12} {text}"
            self.stream.write("\r" + line.ljust(self._width))
            self.stream.flush()
            self._width = len(line)
            self._last_draw = now

    def _finish_line(self) -> None:
        if self.interactive:
            self.stream.write("\r" + f"{self._stage:<12} {self._text}".ljust(self._width) + "\n")
        else:
            self.stream.write(f"{self._stage:<12} {self._text}\n")
        self.stream.flush()
        self._width = 0

    def discard(self) -> None:
        """End after an error: on a terminal the line stays (a newline ends it); in a log the
        unfinished state is dropped, so the error is the one line the run leaves there."""
        if self._stage and self.interactive:
            self.stream.write("\n")
            self.stream.flush()
        self._stage = ""

    def close(self) -> None:
        """Leave the last state on screen and move to a new line."""
        if self._stage:
            self._finish_line()
            self._stage = ""
