"""Encoding by replaying an event list (merges and splits, in order): Picky BPE's tokenizer.

As the authors' code does (VARIANTS.md section 1, "Encoding"): a pre-token whose bytes are a
live token (or one byte) is that token; otherwise its bytes go through every event in
order — a merge merges its pair left to right where present, a split replaces the token
by its pieces. Not rank-based BPE, so no ``tokenizer.json`` or ``.tiktoken`` can hold it:
it saves ``vocab.json``, ``picky_events.txt`` (`core.formats.picky_events`) and
``tokenizer_config.json``.

`core.encode.tokenizer.PickyTokenizer` is `Tokenizer` with `ReplayTokenizer` mixed in: the
behaviour lives here, below the tokenizer, so that `Tokenizer.load` can make one without
importing anything that builds on the tokenizer.
"""

from __future__ import annotations

import json
import os
from bisect import bisect_right
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from core.encode.engine import Engines
from core.encode.piece_encoder import PieceEncoder
from core.errors import FormatError
from core.formats import CONFIG_NAME, VOCAB_NAME, find_special_ids, load_gpt2_vocab, load_tokenizer_config
from core.formats.atomic import write_atomically
from core.formats.gpt2_files import config_text, vocab_json_chunks
from core.formats.picky_events import EVENTS_NAME, Event, events_text, read_events
from core.pretokenize.patterns import Pattern

if TYPE_CHECKING:
    from core.encode.tokenizer import Tokenizer as _Base
else:
    _Base = object

__all__ = ["Replay", "ReplayPieceEncoder", "ReplayTokenizer"]

_R = TypeVar("_R", bound="ReplayTokenizer")


class Replay:
    """A pre-token's bytes -> its tokens' bytes, by replaying the events; only those that
    can apply are looked at (the events indexed by the token they need: a merge its left,
    a split its token).

    ``Replay([("merge", b"a", b"b"), ("merge", b"ab", b"c"), ("split", b"ab", (b"a", b"b"))],
    {b"abc"}).tokens(b"abab") -> [b"a", b"b", b"a", b"b"]``
    """

    def __init__(self, events: Sequence[Event], live: set[bytes]) -> None:
        self.events = list(events)
        self.live = live
        by_token: dict[bytes, list[int]] = {}
        for i, (_kind, token, _rest) in enumerate(self.events):
            by_token.setdefault(token, []).append(i)
        self._by_token = by_token

    def tokens(self, data: bytes) -> list[bytes]:
        if len(data) <= 1 or data in self.live:
            return [data] if data else []
        word = [data[i : i + 1] for i in range(len(data))]
        position, end = -1, len(self.events)
        by_token = self._by_token
        while True:
            nearest = end
            for token in set(word):
                indexes = by_token.get(token)
                if indexes:
                    k = bisect_right(indexes, position)
                    if k < len(indexes) and indexes[k] < nearest:
                        nearest = indexes[k]
            if nearest == end:
                return word
            position = nearest
            kind, token, rest = self.events[nearest]
            if kind == "merge":
                word = _merge(word, token, rest)  # type: ignore[arg-type]
            else:
                out: list[bytes] = []
                for t in word:
                    if t == token:
                        out += rest  # type: ignore[arg-type]
                    else:
                        out.append(t)
                word = out


def _merge(word: list[bytes], left: bytes, right: bytes) -> list[bytes]:
    out: list[bytes] = []
    i, n = 0, len(word)
    while i < n:
        if i + 1 < n and word[i] == left and word[i + 1] == right:
            out.append(left + right)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


class ReplayPieceEncoder(PieceEncoder):
    """A `PieceEncoder` whose pre-tokens are encoded by `Replay`, in Python (no rank table)."""

    def __init__(self, byte_ids: list[int], replay: Replay, ids: dict[bytes, int], pattern: Pattern,
                 cache_entries: int) -> None:
        super().__init__(byte_ids, np.empty((0, 3), np.int64), [], pattern, cache_entries)
        self.replay, self.ids = replay, ids

    def _compiled(self) -> None:
        return None  # no rank table: the Python path, which calls bpe

    def with_cache(self, cache_entries: int) -> PieceEncoder:
        return ReplayPieceEncoder(self._byte_ids, self.replay, self.ids, self.pattern, cache_entries)

    def bpe(self, data: bytes) -> tuple[int, ...]:
        try:
            return tuple(map(self.ids.__getitem__, self.replay.tokens(data)))
        except KeyError as e:
            raise FormatError(f"the Picky event list leaves the token {e.args[0]!r}, which is not in the "
                              "vocabulary: the event list and vocab.json do not belong together") from None


class ReplayTokenizer(_Base):
    """What `PickyTokenizer` adds to `Tokenizer`: each pre-token encoded by replaying the
    event list.

    Args:
        vocab: the live vocabulary (id -> bytes; special tokens included or appended).
        events: ``("merge", left, right)`` and ``("split", token, pieces)`` in order
            (`core.variants.picky.picky_events`).
        threshold: the training's threshold, kept in the saved files.
    """

    variant_name = "picky"

    def __init__(self, vocab: dict[int, bytes], events: Sequence[Event], special_tokens: list[str] | None = None,
                 *, pattern: str | Pattern = "gpt2", threshold: float | None = None) -> None:
        super().__init__(vocab, [], special_tokens, pattern=pattern)
        self.events = list(events)
        self.threshold = threshold
        self.merges = [(e[1], e[2]) for e in self.events if e[0] == "merge"]  # type: ignore[misc]
        for rank, (left, right) in enumerate(self.merges):
            made = self._encoder.get(left + right)
            if made is not None:
                self._rank_of_id.setdefault(made, rank)  # the merge that first made it
        live = {t for i, t in self.vocab.items() if i not in self._special_id_set}
        self._pieces = ReplayPieceEncoder(self._byte_ids, Replay(self.events, live), self._encoder, self.pattern,
                                          self._pieces.cache_entries)
        self._engines = Engines(self._pieces, self.special_ids)

    @classmethod
    def load(cls: type[_R], path: str | os.PathLike[str], **_options: object) -> _R:
        """Load ``vocab.json``, ``picky_events.txt`` and ``tokenizer_config.json`` from a folder."""
        folder = Path(path)
        specials, pattern = load_tokenizer_config(folder / CONFIG_NAME)
        vocab = load_gpt2_vocab(folder / VOCAB_NAME, specials)
        config = json.loads((folder / CONFIG_NAME).read_text(encoding="utf-8"))
        threshold = (config.get("variant_parameters") or {}).get("threshold")
        return cls(vocab, read_events(folder / EVENTS_NAME), specials, pattern=pattern, threshold=threshold)

    def save(self, out_dir: str | os.PathLike[str]) -> list[Path]:
        """Write ``vocab.json``, ``picky_events.txt`` and ``tokenizer_config.json`` (the
        other formats cannot hold the splits)."""
        out = Path(out_dir)
        special_ids = find_special_ids(self.vocab, [], self.special_tokens)
        config = json.loads(config_text(self.special_tokens, self.pattern, special_ids))
        config["variant"] = "picky"
        config["variant_parameters"] = {"threshold": self.threshold}
        return write_atomically([
            (out / VOCAB_NAME, vocab_json_chunks(self.vocab, special_ids)),
            (out / EVENTS_NAME, events_text(self.events)),
            (out / CONFIG_NAME, json.dumps(config, ensure_ascii=False, indent=2) + "\n"),
        ])

    def __repr__(self) -> str:
        return "Picky" + super().__repr__()
