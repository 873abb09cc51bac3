"""Checks of command-line values that need no corpus, run before any long work.

- `check_text_option`: a value given as text (a special token, a pattern) must be text:
  bytes that are not UTF-8 reach Python as lone surrogates (``$'\\xff\\xfe'`` becomes
  ``'\\udcff\\udcfe'``), which no file can hold; the error names the option.
- `capped_workers`: ``--workers`` beyond what the machine can use
  (`core.corpus.processes.max_workers`) is lowered, and a note on stderr says so.
"""

from __future__ import annotations

import sys

from core.corpus.processes import MAX_WORKERS_PER_CORE, max_workers, usable_cores

__all__ = ["capped_workers", "check_text_option"]


def check_text_option(option: str, value: str) -> None:
    """``ValueError`` naming ``option`` if ``value`` holds bytes that are not UTF-8."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raw = value.encode("utf-8", "surrogateescape")
        raise ValueError(
            f"{option} {raw!r} is not valid UTF-8 text (the shell passed undecodable bytes); "
            "give it as UTF-8 text"
        ) from e


def capped_workers(workers: int | None) -> int | None:
    """``workers``, lowered to `max_workers` (with a note on stderr) when above it."""
    if workers is not None and workers < 1:
        raise ValueError(f"--workers must be at least 1, got {workers}")
    limit = max_workers()
    if workers is None or workers <= limit:
        return workers
    if sys.stderr is not None:
        cores = usable_cores()
        print(
            f"bpe-studio: note: --workers {workers} is more than this machine can use; using {limit} "
            f"({MAX_WORKERS_PER_CORE} per core, {cores} core{'s' if cores != 1 else ''}; "
            "never more than one per chunk of the corpus)",
            file=sys.stderr,
        )
    return limit
