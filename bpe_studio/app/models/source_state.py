"""A training run's named sources, as the window shows them: each source's pre-token bytes
(`SourceBytes`, sent by the training process), each source's tokens after each merge (its
bytes-per-token line), each merge's pair count per source and, trained parity-aware, the
language each merge was made for. `SourcesState` is the part of
`bpe_studio.app.models.training_state.TrainingState` that holds them. No Qt.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any

import numpy as np

from bpe_studio.app.models.provenance import source_tokens

PARITY = "parity"
"""The name of parity-aware BPE (`core.variants.ParityAware.name`), which trains on named sources."""


@dataclass(frozen=True)
class SourceBytes:
    """Each named source's pre-token bytes (special tokens left out, as in
    `core.CountingDone.corpus_bytes`), sent by the training process once the sources are
    counted: where each source's bytes-per-token line starts (1 byte per token).

    Attributes:
        names: the sources, in order.
        sizes: their pre-token bytes, in the same order.
    """

    names: tuple[str, ...]
    sizes: tuple[int, ...]


class SourcesState:
    """Named sources' figures of a run (`TrainingState` fills the columns it reads)."""

    sources: tuple[str, ...]
    source_bytes: list[int]
    source_tokens: array[float]
    per_source: array[int]
    chosen: array[int]
    counts: array[int]
    corpus_tokens: array[int]
    left_ids: array[int]
    right_ids: array[int]
    settings: Any
    _source_tokens_now: np.ndarray | None
    _tokens_now: int

    def _extend_source_tokens(self, first: int, corpus_bytes: int) -> None:
        """Each source's tokens after the merges from rank ``first`` on (whose columns are
        in already), when the sources' bytes are known; vectorised, a batch at a time."""
        n = len(self.sources)
        if not n or len(self.source_bytes) != n or not corpus_bytes:
            return
        merges = min(len(self.per_source) // n, len(self.counts), len(self.corpus_tokens))
        if first >= merges or len(self.source_tokens) != first * n:
            return
        if first == 0:
            self._source_tokens_now = np.asarray(self.source_bytes, dtype=np.float64)
            self._tokens_now = corpus_bytes
        assert self._source_tokens_now is not None
        columns = {name: np.frombuffer(getattr(self, name), dtype=np.int64)[first:merges]
                   for name in ("counts", "corpus_tokens", "left_ids", "right_ids")}
        per_source = np.frombuffer(self.per_source, dtype=np.int64)[first * n:merges * n].reshape(-1, n)
        tokens = source_tokens(self._source_tokens_now, self._tokens_now, per_source, columns["counts"],
                               columns["corpus_tokens"], columns["left_ids"] == columns["right_ids"])
        del columns, per_source  # numpy views: the arrays must grow again
        self.source_tokens.frombytes(tokens.tobytes())
        self._source_tokens_now = tokens[-1].copy()
        self._tokens_now = self.corpus_tokens[merges - 1]

    def source_bytes_per_token(self, rows: np.ndarray | None = None) -> np.ndarray | None:
        """Each source's bytes per token after each merge (or after the merges ``rows`` only:
        a chart's thinned points), a merges × sources array for the compression chart's
        per-source lines, beside `bytes_per_token`'s; None without them."""
        n = len(self.sources)
        if not n or not self.source_tokens:
            return None
        tokens = np.frombuffer(self.source_tokens, dtype=np.float64).reshape(-1, n)
        tokens = tokens[rows] if rows is not None else tokens.copy()  # a copy either way: no view outlives the call
        return np.asarray(self.source_bytes, dtype=np.float64)[None, :] / np.maximum(tokens, 1.0)

    @property
    def parity(self) -> bool:
        """Whether the run is parity-aware BPE's (each merge made for one language)."""
        variant = getattr(getattr(self.settings, "options", None), "variant", None)
        return getattr(variant, "name", None) == PARITY

    def chosen_source(self, rank: int) -> int | None:
        """The index of the source the merge at ``rank`` was made for (-1: a global merge), or
        None (not a parity-aware run, or not known)."""
        return self.chosen[rank] if 0 <= rank < len(self.chosen) else None

    def parity_stop(self, merges: int, planned: int) -> str:
        """Why a parity-aware run made fewer merges than planned, in words: ``"stopped after 4,379
        of 31,743 merges: the language whose turn it was had no pair left (the last merge was
        for hi)"``. The trainer does not say which language that was; the last merge's is a strong hint."""
        last = self.chosen[-1] if self.chosen else -1
        hint = f" (the last merge was for {self.sources[last]})" if 0 <= last < len(self.sources) else ""
        return (f"stopped after {merges:,} of {planned:,} merges: the language whose turn it was had no pair "
                f"left{hint}")

    def provenance(self, rank: int) -> tuple[int, ...] | None:
        """Each source's pair count at the merge of ``rank`` (None without named sources)."""
        n = len(self.sources)
        if not n or (rank + 1) * n > len(self.per_source):
            return None
        return tuple(self.per_source[rank * n:(rank + 1) * n])
