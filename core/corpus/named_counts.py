"""Counts of named sources: the sum of several corpora's pre-token counts that remembers each one's.

    counts = core.count_pretokens({"en": "data/en/", "hi": "data/hi.jsonl.zst"}, ["<|endoftext|>"])
    counts.sources          # ("en", "hi")
    counts.source("hi")     # hi's counts alone (a PretokenCounts)
    counts[b" the"]         # the sum: a NamedCounts is a PretokenCounts
    (a + b).save("counts.bpc")   # added source by source; saved one table per source

Training from them makes exactly the merges of training on all the sources together; the
merge loop also tells, per merge, each source's count of the merged pair (provenance).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict
from typing import Any

from core.corpus import bpc_file
from core.corpus.pretoken_counts import PretokenCounts
from core.corpus.sources import ReadOptions
from core.errors import FormatError, OptionsError, OptionsTypeError
from core.pretokenize.counting import ChunkCounts

__all__ = ["NamedCounts", "check_source_names"]

MAX_NAME = 64


def check_source_names(names: Iterable[object]) -> tuple[str, ...]:
    """The names of named sources, checked: at least one, each a non-empty string of at most
    64 characters without tabs or line breaks (a name is a column of ``provenance.tsv``).

    Raises:
        TypeError: a name that is not a string.
        ValueError: no name, an empty or too long one, or one with a tab or line break.
    """
    checked: list[str] = []
    for name in names:
        if not isinstance(name, str):
            raise OptionsTypeError(f"a source's name must be a string, got {name!r}")
        if not name or len(name) > MAX_NAME or any(c in name for c in "\t\r\n"):
            raise OptionsError(f"a source's name must be 1 to {MAX_NAME} characters without tabs or line breaks, "
                               f"got {name!r}")
        checked.append(name)
    if not checked:
        raise OptionsError("named sources need at least one name and source, e.g. {'en': 'data/en.txt'}")
    return tuple(checked)


class NamedCounts(PretokenCounts):
    """The pre-token counts of named sources: their sum, each source's counts kept.

    Attributes:
        sources: the names, in order (the order of the mapping counted).
    """

    def __init__(self, shares: Mapping[str, PretokenCounts]) -> None:
        self.sources = check_source_names(shares)
        parts = list(shares.values())
        if not all(isinstance(part, PretokenCounts) and not isinstance(part, NamedCounts) for part in parts):
            raise OptionsTypeError("each named source's counts must be PretokenCounts of one source")
        total = PretokenCounts.add_all(parts)
        super().__init__(pattern=total.pattern, special_tokens=total.special_tokens,
                         documents=total.documents, input_bytes=total.input_bytes, read=total.read)
        # the sum's forms taken over as they are (a native table stays one: no packed copy)
        self._chunk, self._table, self._columns, self._arrays = total._chunk, total._table, total._columns, total._arrays
        self.invalid_bytes = total.invalid_bytes
        self._shares = dict(zip(self.sources, parts))

    def source(self, name: str) -> PretokenCounts:
        """The counts of source ``name`` alone (`KeyError` naming the sources there are)."""
        try:
            return self._shares[name]
        except KeyError:
            raise KeyError(f"no source named {name!r}; the sources are {', '.join(self.sources)}") from None

    def shares(self) -> list[PretokenCounts]:
        """Each source's counts, in the order of `sources`."""
        return [self._shares[name] for name in self.sources]

    # -- adding ---------------------------------------------------------------------------------

    @staticmethod
    def add_named(parts: list[PretokenCounts]) -> NamedCounts:
        """The sum of named counts, source by source (a name in several parts adds up; the
        names in the order they first come)."""
        if not all(isinstance(part, NamedCounts) for part in parts):
            raise OptionsError("cannot add counts of named sources to counts of one unnamed corpus; "
                               "count every part with the same source names")
        by_name: dict[str, list[PretokenCounts]] = {}
        for part in parts:
            assert isinstance(part, NamedCounts)
            for name in part.sources:
                by_name.setdefault(name, []).append(part.source(name))
        return NamedCounts({name: PretokenCounts.add_all(shares) for name, shares in by_name.items()})

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NamedCounts):
            return self.sources == other.sources and all(a == b for a, b in zip(self.shares(), other.shares()))
        return super().__eq__(other)

    def __repr__(self) -> str:
        return f"NamedCounts({', '.join(self.sources)}: {super().__repr__()})"

    # -- the file (version 2: one table per source) ---------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[object]:
        with contextlib.ExitStack() as stack:
            for part in (self, *self.shares()):
                stack.enter_context(part._lock)
            yield self

    def _file_parts(self) -> tuple[int, list[bpc_file.Body], dict[str, Any]]:
        total, corpus_bytes = self._totals()
        self._check_fits(corpus_bytes)
        bodies, sources = [], []
        for name, share in zip(self.sources, self.shares()):
            share_total, _ = share._totals()
            body, distinct = share._body()
            bodies.append(body)
            sources.append({"name": name, "documents": share.documents, "input_bytes": share.input_bytes,
                            "distinct": distinct, "total": share_total,
                            **({"read": asdict(share.read)} if share.read is not None else {})})
        return bpc_file.NAMED_VERSION, bodies, {
            "pattern": self.pattern, "special_tokens": list(self.special_tokens), "documents": self.documents,
            "input_bytes": self.input_bytes, "invalid_bytes": self.invalid_bytes, "distinct": len(self),
            "total": total, "sources": sources,
        }

    @classmethod
    def from_file(cls, chunks: list[ChunkCounts], meta: dict[str, Any], name: str) -> NamedCounts:
        """The counts of a version-2 file (`PretokenCounts.load` reads them)."""
        try:
            shares = {}
            for chunk, source in zip(chunks, meta["sources"]):
                read = ReadOptions(**source["read"]) if source.get("read") is not None else None
                shares[source["name"]] = PretokenCounts(
                    chunk, pattern=meta["pattern"], special_tokens=meta["special_tokens"],
                    documents=int(source["documents"]), input_bytes=int(source["input_bytes"]), read=read)
            return cls(shares)
        except (KeyError, TypeError, ValueError) as e:
            raise FormatError(f"{name} is not a readable pre-token counts file (its metadata is damaged: {e})") from None


PretokenCounts._read_named = NamedCounts.from_file  # PretokenCounts.load reads named files with it
