"""What the command line does with a bug: an exception that is not a user mistake.

A user mistake is one of `core.errors`' types (or the CLI's own `UsageError`, or a file's
``OSError``) and gets one line and exit status 2. Anything else is our bug: its traceback
goes to a log file in the user's cache folder (`crash_log_dir`), one line on stderr names
the error and the log and asks to report it, and the exit status is 1.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence

__all__ = ["EXIT_BUG", "crash_log_dir", "report_bug", "write_crash_log"]

EXIT_BUG = 1


def crash_log_dir() -> str:
    """The folder crash logs go to: bpe-studio's folder in the user's cache
    (``$XDG_CACHE_HOME`` or ``~/.cache``; ``~/Library/Caches`` on macOS;
    ``%LOCALAPPDATA%`` on Windows)."""
    home = os.path.expanduser("~")
    if sys.platform == "win32":
        return os.path.join(os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local"),
                            "bpe-studio", "Cache")
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Caches", "bpe-studio")
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return os.path.join(xdg if os.path.isabs(xdg) else os.path.join(home, ".cache"), "bpe-studio")


def write_crash_log(error: BaseException, argv: Sequence[str], version: str) -> str | None:
    """Write ``error``'s traceback, with the command line and versions, to a new
    ``crash-YYYYmmdd-HHMMSS.log`` (the cache folder, else the temporary folder); its path,
    or ``None`` if neither folder takes it."""
    text = (f"bpe-studio {version}, Python {platform.python_version()}, {platform.platform()}\n"
            f"command: bpe-studio {' '.join(argv)}\n\n"
            + "".join(traceback.format_exception(type(error), error, error.__traceback__)))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for folder in (crash_log_dir(), tempfile.gettempdir()):
        for attempt in range(100):  # two crashes in one second get two logs
            path = os.path.join(folder, f"crash-{stamp}{f'-{attempt}' if attempt else ''}.log")
            try:
                os.makedirs(folder, exist_ok=True)
                with open(path, "x", encoding="utf-8", errors="backslashreplace") as f:
                    f.write(text)
                return path
            except FileExistsError:
                continue
            except OSError:
                break
    return None


def report_bug(error: BaseException, argv: Sequence[str], version: str) -> tuple[str, str | None]:
    """The one line that says ``error`` is a bug, and the log holding its traceback
    (``None``: none could be written, so the caller shows the traceback itself)."""
    detail = str(error).strip().splitlines()
    what = f"{type(error).__name__}: {detail[0]}" if detail else type(error).__name__
    path = write_crash_log(error, argv, version)
    where = f"the log at {path}" if path is not None else "the traceback above"
    return f"bpe-studio: internal error: {what} — this is a bug; please report it with {where}", path
