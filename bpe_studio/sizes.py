"""Vocabulary sizes as the user writes them, ``"1k,2k,4096"``: the command line's ``--sizes``
and the Evaluate tab's size ladder read them the same way."""

from __future__ import annotations

from bpe_studio.cli.usage import UsageError

__all__ = ["parse_sizes"]


def parse_sizes(text: str) -> list[int]:
    """``"1k,2k,4096"`` -> ``[1000, 2000, 4096]``; `UsageError` for anything else."""
    sizes = []
    for part in text.split(","):
        part = part.strip().lower()
        scale = 1
        if part.endswith("k"):
            part, scale = part[:-1], 1000
        try:
            sizes.append(int(float(part) * scale))
        except ValueError:
            raise UsageError(f"--sizes: {part!r} is not a size; give sizes such as 1k,2k,4096") from None
    return sizes
