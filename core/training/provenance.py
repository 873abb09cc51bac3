"""Merge provenance: which named source each merge's pairs came from.

Training on named sources (``core.train({"en": ..., "hi": ...}, options)``) gives, with each
merge, every source's count of the merged pair at the moment of the merge (the merge loop
adds them up as it visits the words holding the pair: `MergeBatch.per_source`). They add
up to the merge's count. `TrainRun.provenance` gathers them into one `Provenance` per merge;
`provenance_tsv` writes them as ``provenance.tsv`` beside a tokenizer:

    rank    token   count   en      hi
    0       Ġt      41234   40012   1222
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Provenance", "provenance_records", "provenance_tsv"]


@dataclass(frozen=True, slots=True)
class Provenance:
    """One merge's provenance.

    Attributes:
        rank: the merge's rank (0-based).
        token: the token it made.
        count: the pair's count at the merge.
        counts: each source's count of the pair then, by name (they add up to ``count``).
        chosen: the source whose counts chose the merge (parity-aware BPE), ``None`` when all
            the sources together did.
    """

    rank: int
    token: bytes
    count: int
    counts: dict[str, int]
    chosen: str | None = None


def provenance_records(
    sources: Sequence[str], tokens: Sequence[bytes], counts: Sequence[int], per_source: Sequence[int],
    chosen: Sequence[int] = (),
) -> list[Provenance]:
    """One `Provenance` per merge from the run's columns: its new tokens, counts, counts per
    source (``len(sources)`` values a merge, merge after merge) and, when a source chose
    merges, each one's chooser (its index; -1: all sources together)."""
    n = len(sources)
    values = list(per_source)  # (slicing a list is cheaper than slicing an array)
    by = [sources[c] if c >= 0 else None for c in chosen] + [None] * (len(tokens) - len(chosen))
    return [Provenance(rank, token, count, dict(zip(sources, values[rank * n:rank * n + n])), by[rank])
            for rank, (token, count) in enumerate(zip(tokens, counts))]


def provenance_tsv(records: Sequence[Provenance], sources: Sequence[str]) -> str:
    """``provenance.tsv``: a header, then a line per merge — rank, token (in GPT-2's printable
    byte form, as ``merges.txt``), count, each source's count (and the chosen source, when
    a source chose any merge)."""
    from core.formats.bytes_unicode import bytes_to_string

    chosen = any(record.chosen is not None for record in records)
    lines = ["\t".join(["rank", "token", "count", *sources, *(["chosen"] if chosen else [])])]
    for record in records:
        fields = [str(record.rank), bytes_to_string(record.token), str(record.count),
                  *(str(record.counts.get(name, 0)) for name in sources)]
        if chosen:
            fields.append(record.chosen or "")
        lines.append("\t".join(fields))
    return "\n".join(lines) + "\n"
