"""A one-line progress display for the terminal, redrawn at most ten times a second, and
standard streams that never fail a command.

On a terminal the line is redrawn in place (``\\r``); when stderr is a file or a pipe
only stage changes and the final state are written, one line each, so logs stay short.

`guarded_streams` is the one place the CLI deals with odd standard streams: a closed
stream (``>&-``), a closed pipe (``| head -1``) or one that cannot show some characters
(``PYTHONIOENCODING=ascii``). Output then goes nowhere or is escaped; the command goes on
and exits as it would have (0 on success): its files are what the exit status reports.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import time
from collections.abc import Iterator
from typing import Any, TextIO


def bar(fraction: float, width: int = 24) -> str:
    """``bar(0.5, 8) -> "[####....]"``."""
    filled = int(round(max(0.0, min(1.0, fraction)) * width))
    return "[" + "#" * filled + "." * (width - filled) + "]"


class _Discard(io.StringIO):
    """Where progress goes when stderr is closed."""

    def write(self, text: str) -> int:
        return len(text)


class ProgressLine:
    """Shows the latest status of a stage; `update` is cheap to call very often."""

    def __init__(self, stream: TextIO | None = None, interval: float = 0.1) -> None:
        self.stream = stream or sys.stderr or _Discard()
        try:
            self.interactive = self.stream.isatty()
        except (OSError, ValueError):
            self.interactive = False
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
            self._write("\r" + line.ljust(self._width))
            self._width = len(line)
            self._last_draw = now

    def _finish_line(self) -> None:
        if self.interactive:
            self._write("\r" + f"{self._stage:<12} {self._text}".ljust(self._width) + "\n")
        else:
            self._write(f"{self._stage:<12} {self._text}\n")
        self._width = 0

    def _write(self, text: str) -> None:
        """Progress is a courtesy: a stream that fails (closed, not UTF-8) never stops the work."""
        try:
            self.stream.write(text)
            self.stream.flush()
        except UnicodeEncodeError:
            encoding = getattr(self.stream, "encoding", None) or "ascii"
            with contextlib.suppress(OSError, ValueError):
                self.stream.write(text.encode(encoding, "backslashreplace").decode(encoding, "replace"))
        except (OSError, ValueError):
            _silence(self.stream)
            self.stream = _Discard()

    def discard(self) -> None:
        """End after an error: on a terminal the line stays (a newline ends it); in a log the
        unfinished state is dropped, so the error is the one line the run leaves there."""
        if self._stage and self.interactive:
            self._write("\n")
        self._stage = ""

    def close(self) -> None:
        """Leave the last state on screen and move to a new line."""
        if self._stage:
            self._finish_line()
            self._stage = ""


def write_result(stream: TextIO | None, text: str) -> None:
    """Write a command's result (its summary) to ``stream``, never failing the command:
    the files are written by then, and the exit status must say so. A stream that cannot
    show some characters (``PYTHONIOENCODING=ascii``) gets them escaped; a closed stream
    (``>&-``) or a closed pipe (``| head -1``) gets nothing."""
    if stream is None:
        return
    try:
        try:
            stream.write(text)
        except UnicodeEncodeError:
            encoding = getattr(stream, "encoding", None) or "ascii"
            stream.write(text.encode(encoding, "backslashreplace").decode(encoding, "replace"))
        stream.flush()
    except (OSError, ValueError):
        _silence(stream)


def _silence(stream: TextIO) -> None:
    """Point a standard stream whose pipe is closed at /dev/null: Python would otherwise
    fail again (and print a traceback) when it flushes it at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass


class SafeStream:
    """A standard stream whose writes never raise: text it cannot encode is escaped
    (backslashreplace), and once it fails (closed pipe) it drops everything."""

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        if self.stream is not None:
            try:
                try:
                    self.stream.write(text)
                except UnicodeEncodeError:
                    encoding = getattr(self.stream, "encoding", None) or "ascii"
                    self.stream.write(text.encode(encoding, "backslashreplace").decode(encoding, "replace"))
            except (OSError, ValueError):
                self._drop()
        return len(text)

    def flush(self) -> None:
        if self.stream is not None:
            try:
                self.stream.flush()
            except (OSError, ValueError):
                self._drop()

    def isatty(self) -> bool:
        try:
            return self.stream is not None and self.stream.isatty()
        except (OSError, ValueError):
            return False

    def _drop(self) -> None:
        if self.stream is not None:
            _silence(self.stream)
        self.stream = None

    def __getattr__(self, name: str) -> Any:  # encoding, fileno, ...: those of the real stream
        return getattr(self.stream if self.stream is not None else _Discard(), name)


@contextlib.contextmanager
def guarded_streams() -> Iterator[None]:
    """Within the block, ``sys.stdout`` and ``sys.stderr`` are `SafeStream` s."""
    saved = sys.stdout, sys.stderr
    guards = SafeStream(sys.stdout), SafeStream(sys.stderr)
    sys.stdout, sys.stderr = guards  # type: ignore[assignment]
    try:
        yield
    finally:
        for guard in guards:
            guard.flush()
        sys.stdout, sys.stderr = saved
