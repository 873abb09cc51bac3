"""Noticing the document separator in a corpus: ``<|endoftext|>`` between documents.

The built-in sample (and many corpora: TinyStories, OpenWebText dumps) separates its
documents with ``<|endoftext|>``. Trained with no special tokens, that text is ordinary
text and becomes merges (``<|``, ``endoftext``, ``|>``). `find_separator` reads at most
the first MB of the corpus's first file (decompressing ``.gz``, ``.bz2``, ``.xz`` and,
when zstandard is installed, ``.zst``) — a bounded read of a few milliseconds, done on
the GUI thread — and `suggestion` says what the special-tokens field should then hold.
No Qt here.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

SEPARATOR = "<|endoftext|>"
PROBE_BYTES = 1 << 20
"""How much of the corpus is read to look for the separator (decompressed bytes)."""
SKIPPED_SUFFIXES = (".parquet", ".bpc")


def _first_file(corpus: str) -> str | None:
    """The corpus's first file: the path itself, the first file of a folder (by name), or
    of several sources the first that exists."""
    from bpe_studio.app.models.session import split_sources

    for path in split_sources(corpus):
        if os.path.isfile(path):
            return path
        if os.path.isdir(path):
            for folder, dirs, files in os.walk(path):
                dirs.sort()
                for name in sorted(files):
                    if not name.startswith("."):
                        return os.path.join(folder, name)
    return None


def _opener(path: str) -> Callable[[str], IO[bytes]] | None:
    lower = path.lower()
    if lower.endswith(SKIPPED_SUFFIXES):
        return None
    if lower.endswith(".gz"):
        return lambda p: gzip.open(p, "rb")  # type: ignore[return-value]
    if lower.endswith(".bz2"):
        return lambda p: bz2.open(p, "rb")  # type: ignore[return-value]
    if lower.endswith(".xz"):
        return lambda p: lzma.open(p, "rb")  # type: ignore[return-value]
    if lower.endswith(".zst"):
        try:
            import zstandard
        except ImportError:
            return None

        def open_zst(p: str) -> Any:
            return zstandard.ZstdDecompressor().stream_reader(open(p, "rb"), closefd=True)
        return open_zst
    return lambda p: open(p, "rb")


def find_separator(corpus: str, limit: int = PROBE_BYTES) -> str | None:
    """``SEPARATOR`` if it occurs in the first ``limit`` bytes of ``corpus`` (a file, a
    folder, or several sources as the corpus field holds them), else None; None too when
    the corpus cannot be read."""
    path = _first_file(corpus)
    opener = _opener(path) if path else None
    if path is None or opener is None:
        return None
    try:
        with opener(path) as f:
            head = f.read(limit)
    except (OSError, EOFError, ValueError, lzma.LZMAError):
        return None
    return SEPARATOR if SEPARATOR.encode() in head else None


@dataclass(frozen=True)
class Suggestion:
    """What the special-tokens field should show for a corpus.

    Attributes:
        text: the field's new text, or None to leave it as it is.
        hint: the line under the field ("" for none).
        auto: whether the field then holds only what was filled in automatically.
    """

    text: str | None
    hint: str
    auto: bool


def suggestion(found: str | None, current: list[str], auto: bool) -> Suggestion:
    """The field's text and hint for a corpus in which ``found`` occurs (None: no separator).

    ``current``: the special tokens in the field; ``auto``: whether they were filled in
    here (not typed): then they are replaced freely, otherwise only a hint is given.
    """
    if found is not None and (not current or (auto and current == [found])):
        return Suggestion(found, f"Found between this corpus's documents: a special token is never merged "
                                 "(delete it to learn it as text).", True)
    if found is not None and found not in current:
        return Suggestion(None, f"This corpus holds {found} between documents: add it here, or it is learned "
                                "as text (merges like “<|” and “endoftext”).", auto)
    if found is None and auto and current:
        return Suggestion("", "", False)  # filled in for another corpus: not this one's
    return Suggestion(None, "", auto)
