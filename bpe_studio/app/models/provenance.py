"""Merge provenance in the window: source names, their colours, per-source compression, "mostly from". No Qt.

Training on named sources (``core.train({"en": ..., "el": ...}, options)``) gives each
merge's pair count per source (`core.MergeBatch.per_source`). This module holds what the
views make of them:

- `SOURCE_COLOURS`: one fixed qualitative colour per source (Tableau 20: its ten strong
  colours, then six of their light partners), so that up to 16 sources stay apart and a
  source keeps its colour from run to run;
- `default_names`: a name per chosen file or folder, its stem made unique
  (``["a/en.txt.xz", "b/en.txt"] -> ["en", "en-2"]``);
- `source_tokens`: each source's token count after each merge, for its bytes-per-token
  line;
- `mostly_from`: which sources hold the largest share of the merge that made a token.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from core.corpus.named_counts import MAX_NAME

SOURCE_COLOURS = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#9d7660", "#499894", "#d37295",
    "#b6992d", "#79706e", "#a0cbe8", "#ffbe7d", "#8cd17d", "#ff9d9a", "#d4a6c8", "#86bcb6",
)
"""Tableau 20's strong colours, then light partners of the first six (a 17th source
starts the list again)."""

_COMPRESSED = (".gz", ".bz2", ".xz", ".zst")
_FORMATS = (".txt", ".text", ".md", ".jsonl", ".ndjson", ".parquet", ".csv", ".tsv", ".bpc")


def source_colour(index: int) -> str:
    """The colour of source number ``index`` (``"#4e79a7"`` for the first)."""
    return SOURCE_COLOURS[index % len(SOURCE_COLOURS)]


def stem(path: str) -> str:
    """What a source is called by default: ``"data/en.txt.xz" -> "en"``, a folder ``"data/hi/" ->
    "hi"``, a glob ``"data/fr/*.txt" -> "fr"``."""
    path = path.rstrip("/\\") or path
    name = os.path.basename(path)
    if glob.has_magic(name):  # the folder the glob looks in
        name = os.path.basename(os.path.dirname(path)) or name
    lower = name.lower()
    for suffix in _COMPRESSED:
        if lower.endswith(suffix):
            name, lower = name[: -len(suffix)], lower[: -len(suffix)]
            break
    for suffix in _FORMATS:
        if lower.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    return clean_name(name) or "source"


def clean_name(name: str) -> str:
    """``name`` as a source may be called: no tabs or line breaks (they would break
    ``provenance.tsv``'s columns), trimmed, at most 64 characters."""
    return " ".join(name.replace("\t", " ").splitlines()).strip()[:MAX_NAME]


def default_names(paths: Sequence[str], taken: Sequence[str] = ()) -> list[str]:
    """A distinct name for each path: its `stem`, with ``-2``, ``-3``, … for a stem seen
    before (in ``paths`` or among ``taken``).

    Example: ``default_names(["x/en.txt", "y/en.txt.gz", "hi/"]) == ["en", "en-2", "hi"]``.
    """
    used = set(taken)
    names = []
    for path in paths:
        base = stem(path)
        name, n = base, 1
        while name in used:
            n += 1
            suffix = f"-{n}"
            name = base[: MAX_NAME - len(suffix)] + suffix
        used.add(name)
        names.append(name)
    return names


def names_problem(names: Sequence[str]) -> str | None:
    """Why ``names`` cannot name the sources (empty, too long, twice), or ``None``."""
    seen: set[str] = set()
    for name in names:
        if not name.strip():
            return "Give every source a name (the name column of Corpus › Name each source)."
        if name != clean_name(name):
            return f"The source name “{name[:40]}” has a tab, a line break, spaces around it or more than {MAX_NAME} characters."
        if name in seen:
            return f"Two sources are named “{name}”: give each source its own name."
        seen.add(name)
    return None


def source_tokens(
    start: np.ndarray,
    start_total: int,
    per_source: np.ndarray,
    counts: np.ndarray,
    corpus_tokens: np.ndarray,
    same_pair: np.ndarray,
) -> np.ndarray:
    """Each source's tokens after each merge of a batch (a merges × sources array of floats).

    A merge of two different tokens takes one token away per occurrence of its pair, so a
    source loses exactly its pair count. A pair of two equal tokens (``a a``) counts its
    overlapping occurrences (``a a a`` holds it twice) but is merged only once in them, so
    the merge removes fewer tokens than its count: the exact total it removed (from the
    corpus's token counts) is then shared among the sources in proportion to their pair
    counts — exact when one source holds the pair, an estimate when several do.

    Args:
        start: each source's tokens before the batch (its pre-token bytes before any merge).
        start_total: the corpus's tokens before the batch.
        per_source: the batch's `MergeBatch.per_source`, as a merges × sources array.
        counts, corpus_tokens: the batch's columns of those names.
        same_pair: for each merge, whether it joins a token with itself.

    Example: sources with 10 and 6 bytes, a merge ``a + a`` counted 3 in the first only
    (``aaaa``) that removed 2 tokens: ``[[8, 6]]``.
    """
    shares = per_source.astype(np.float64)
    totals = np.concatenate(([float(start_total)], corpus_tokens.astype(np.float64)))
    removed = totals[:-1] - totals[1:]
    count = counts.astype(np.float64)
    deficit = np.where(same_pair, np.maximum(count - removed, 0.0), 0.0)
    fraction = np.divide(shares, count[:, None], out=np.zeros_like(shares), where=count[:, None] > 0)
    taken = shares - deficit[:, None] * fraction
    return start[None, :] - np.cumsum(taken, axis=0)


def mostly_from(per_source: np.ndarray) -> np.ndarray:
    """For each merge (row), which sources hold its largest share (a bool array; every
    source tied for the largest is marked; a merge no source counted marks none)."""
    if not per_source.size:
        return np.zeros(per_source.shape, dtype=bool)
    top = per_source.max(axis=1, keepdims=True)
    return (per_source == top) & (top > 0)


@dataclass(frozen=True)
class SourceOrigins:
    """The provenance of a vocabulary's merged tokens, for the vocabulary browser.

    Attributes:
        names: the sources, in order.
        counts_by_id: token id -> each source's pair count at the merge that made it.
    """

    names: tuple[str, ...]
    counts_by_id: Mapping[int, Sequence[int]] = field(default_factory=dict)


__all__ = ["SOURCE_COLOURS", "SourceOrigins", "clean_name", "default_names", "mostly_from", "names_problem",
           "source_colour", "source_tokens", "stem"]
