"""One test helper: each source's count of each merged pair, recomputed from scratch.

The plain recomputation merge provenance is checked against (plain BPE on named sources,
parity-aware BPE): each source's pre-tokens as tuples of bytes, the merges made in rank
order, and at each merge the pair's adjacent occurrences counted (overlaps too) per source.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence


def per_source_counts(
    pretokens: Mapping[str, Mapping[bytes, int]], merges: Sequence[tuple[bytes, bytes]]
) -> list[dict[str, int]]:
    """For each merge in order, each source's count of its pair at that moment."""
    words = {name: Counter({tuple(bytes([b]) for b in word): n for word, n in counts.items()})
             for name, counts in pretokens.items()}
    out = []
    for pair in merges:
        row = {}
        for name, counter in words.items():
            row[name] = sum(n * sum(1 for i in range(len(w) - 1) if (w[i], w[i + 1]) == pair)
                            for w, n in counter.items())
            merged: Counter[tuple[bytes, ...]] = Counter()
            for w, n in counter.items():
                new, i = [], 0
                while i < len(w):
                    if i + 1 < len(w) and (w[i], w[i + 1]) == pair:
                        new.append(w[i] + w[i + 1])
                        i += 2
                    else:
                        new.append(w[i])
                        i += 1
                merged[tuple(new)] += n
            words[name] = merged
        out.append(row)
    return out
