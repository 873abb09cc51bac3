"""The one check of a corpus file before any work, for training and encoding alike.

A corpus must be an existing, non-empty, readable file that is text rather than binary
(a sample of its start holding more than 1% NUL bytes). The check reads at most 1 MB, so
a mistake is reported at once, before any worker starts.
"""

from __future__ import annotations

import os
from pathlib import Path

from core.errors import CorpusError

BINARY_SAMPLE_BYTES = 1 << 20
"""How much of the file's start is checked for NUL bytes."""

BINARY_NUL_FRACTION = 0.01
"""More NUL bytes than this fraction of the sample means the file is binary, not text."""


def check_corpus(path: str | os.PathLike[str], *, purpose: str = "train on") -> tuple[Path, int]:
    """Check that ``path`` is a non-empty text file; return it and its size in bytes.

    Args:
        purpose: what the corpus is for, in the messages ("train on", "encode").

    Raises:
        FileNotFoundError, IsADirectoryError, PermissionError: the file cannot be read.
        CorpusError: the file is empty or looks binary.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"corpus file not found: {path}")
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory; choose a text file")
    size = path.stat().st_size
    with path.open("rb") as f:
        sample = f.read(BINARY_SAMPLE_BYTES)
    if size == 0 or not sample:
        raise CorpusError(f"{path} is empty; there is nothing to {purpose}")
    nuls = sample.count(0)
    if nuls > BINARY_NUL_FRACTION * len(sample):
        raise CorpusError(
            f"{path} looks like a binary file ({nuls} NUL bytes in its first "
            f"{len(sample)} bytes); choose a text file"
        )
    return path, size
