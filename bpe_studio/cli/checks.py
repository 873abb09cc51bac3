"""Checks of command-line values that need no corpus, run before any long work.

- `check_text_option`: a value given as text (a special token, a pattern) must be text:
  bytes that are not UTF-8 reach Python as lone surrogates (``$'\\xff\\xfe'`` becomes
  ``'\\udcff\\udcfe'``), which no file can hold; the error names the option.
- `capped_workers`: ``--workers`` beyond what the machine can use
  (`core.corpus.processes.max_workers`) is lowered, and a note on stderr says so.
- `non_empty`: an argparse type refusing an empty value (``--out ''`` would write into
  the current folder, ``--pattern ''`` would quietly mean the default).
- `TOKENIZER_HELP`: every subcommand names its tokenizer the same way, a positional
  ``TOKENIZER`` first, with this help.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from core.corpus.processes import MAX_WORKERS_PER_CORE, max_workers, usable_cores

__all__ = ["TOKENIZER_HELP", "capped_workers", "check_text_option", "non_empty"]

TOKENIZER_HELP = ("a tokenizer: a folder (vocab.json + merges.txt, tokenizer.json or tokenizer.tiktoken) "
                  "or one of those files")


def non_empty(what: str) -> Callable[[str], str]:
    """An argparse ``type`` that refuses an empty (or blank) value, saying what to give."""

    def check(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"is empty; give {what}")
        return text

    check.__name__ = "non-empty value"
    return check


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
