"""Training settings and sessions: a trained result saved to one JSON file and reopened later.

A *session* is everything the window needs to show a training result again without
retraining: the settings it was trained with (named sources with their names), the
vocabulary and merges, the pair count of each merge (and, with named sources, each
source's; trained parity-aware, the language each merge was made for), the compression
after each merge, summary figures, and whether the run was cancelled (``partial``). Token bytes are stored base64-encoded, so any byte sequence
survives. Writes are atomic (`core.formats.atomic`), with the same permissions as every
other file the application writes. No Qt.

    save_session(path, session); session = load_session(path)
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from core.corpus.sources import ReadOptions
from core.events import SplitEvent
from core.formats.atomic import atomic_output
from core.formats.base import FormatError, file_kind, read_bytes
from core.training.options import TrainOptions
from bpe_studio.app.models.session_checks import SessionError, _check_fields, _check_merges, _check_sources, _short

FORMAT_NAME = "bpe-studio-session"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class TrainSettings:
    """What the user chose in the settings panel: the library's two option objects and the corpus.

    Attributes:
        corpus: the corpus: a file, a folder or a glob, or several separated by ``;``
            (`sources`).
        options: what to train (`core.TrainOptions`, checked when made): vocabulary size,
            special tokens in id order (a continued tokenizer's first), pattern, workers,
            ``max_token_length``, ``min_frequency`` and ``initial`` (the path of the tokenizer
            continued, or ``None``).
        read: how the corpus is read (`core.ReadOptions`: field, max bytes, sample + seed).
        inherited_merges: how many of the merges are the initial tokenizer's.
        names: with named sources, one name per source of `sources` (trained as
            ``core.train({name: source, ...})``: each merge's provenance is kept); ``()``
            for one unnamed corpus.

    The options' fields read through as attributes (``settings.vocab_size``,
    ``settings.special_tokens``, ``settings.field``, ...).
    """

    corpus: str
    options: TrainOptions
    read: ReadOptions = ReadOptions()
    inherited_merges: int = 0
    names: tuple[str, ...] = ()

    def __getattr__(self, name: str) -> Any:
        # only called for names that are not attributes: the options' fields
        if name in _TRAIN_FIELDS:
            return getattr(self.options, name)
        if name in _READ_FIELDS:
            return getattr(self.read, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def sources(self) -> list[str]:
        """The corpus as a list of sources (`split_sources`)."""
        return split_sources(self.corpus)

    @property
    def named_sources(self) -> dict[str, str] | None:
        """``{name: source}`` when the sources are named (`names`), else ``None``.

        Raises:
            ValueError: not one name per source.
        """
        if not self.names:
            return None
        sources = self.sources
        if len(sources) != len(self.names):
            raise ValueError(f"{len(self.names)} source names for {len(sources)} sources: name each source once")
        return dict(zip(self.names, sources))

    @property
    def max_merges(self) -> int:
        """The number of merges a run makes if pairs do not run out first."""
        return max(0, self.options.vocab_size - 256 - len(self.options.special_tokens))


_TRAIN_FIELDS = frozenset(f.name for f in fields(TrainOptions) if f.name not in ("_", "variant"))
_READ_FIELDS = frozenset(f.name for f in fields(ReadOptions))


def settings_to_json(settings: TrainSettings) -> dict[str, Any]:
    """The settings as one flat JSON object (as sessions have always stored them)."""
    options = {name: getattr(settings.options, name) for name in sorted(_TRAIN_FIELDS)}
    options["special_tokens"] = list(settings.options.special_tokens)
    if options["initial"] is not None:
        options["initial"] = os.fspath(options["initial"])
    return {"corpus": settings.corpus, **options, **asdict(settings.read),
            "inherited_merges": settings.inherited_merges,
            "variant": variant_to_json(getattr(settings.options, "variant", None)),
            "source_names": list(settings.names)}


def variant_to_json(variant: Any) -> dict[str, Any] | None:
    """A training variant as JSON: ``{"name": "picky", "threshold": 0.9}``; None for plain BPE.

    Parity-aware BPE's development files are kept as paths (``"dev": {"en": "dev/en.txt"}``),
    not only their names (its `parameters`), so that the run can be made again."""
    if variant is None:
        return None
    parameters = variant.parameters()
    dev = getattr(variant, "dev", None)
    if variant.name == "parity" and dev is not None and all(isinstance(p, (str, os.PathLike)) for p in dev.values()):
        parameters["dev"] = {name: os.fspath(path) for name, path in dev.items()}
    return {"name": variant.name, **parameters}


def variant_from_json(raw: Any) -> Any:
    """The variant `variant_to_json` wrote (None: plain BPE).

    Raises:
        ValueError, TypeError: an unknown variant, or parameters it refuses.
    """
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise ValueError(f"a variant should be an object with its name, not {_short(raw)}")
    from core.variants import VARIANTS, ParityAware, Variant

    parameters = dict(raw)
    name = parameters.pop("name")
    if name == ParityAware.name and isinstance(parameters.get("dev"), list):
        raise ValueError("the parity-aware run's development files are not named in the session (only their "
                         "languages); train it again")
    known: tuple[type[Variant], ...] = (*VARIANTS, ParityAware)
    for cls in known:
        if cls.name == name:
            return cls(**parameters)
    raise ValueError(f"unknown training variant {name!r}")


def settings_from_json(raw: dict[str, Any]) -> TrainSettings:
    """The settings `settings_to_json` wrote (older sessions lack some keys: defaults).

    Raises:
        KeyError, TypeError, ValueError: a value is missing or wrong (the options' own checks).
    """
    def optional(name: str, kind: type) -> Any:
        value = raw.get(name)
        return None if value is None else kind(value)

    options = TrainOptions(
        int(raw["vocab_size"]), tuple(str(t) for t in raw["special_tokens"]), pattern=str(raw["pattern"]),
        workers=optional("workers", int), max_token_length=optional("max_token_length", int),
        min_frequency=int(raw.get("min_frequency", 1)), initial=optional("initial", str),
        variant=variant_from_json(raw.get("variant")),
    )
    read = ReadOptions(field=str(raw.get("field", "text")), max_bytes=optional("max_bytes", int),
                       sample=optional("sample", float), seed=int(raw.get("seed", 0)),
                       doc_max_chars=optional("doc_max_chars", int))
    names = tuple(str(name) for name in raw.get("source_names", ()))
    return TrainSettings(str(raw["corpus"]), options, read, int(raw.get("inherited_merges", 0)), names)


SOURCE_SEPARATOR = ";"
"""Several sources in one corpus text: ``"a.jsonl; shards/; more/*.txt"``."""


def split_sources(text: str) -> list[str]:
    """``"a.jsonl; b/"`` -> ``["a.jsonl", "b/"]`` (a path that exists as given, ``;`` and
    all, stays whole)."""
    text = text.strip()
    if os.path.exists(text) or SOURCE_SEPARATOR not in text:
        return [text] if text else []
    return [part.strip() for part in text.split(SOURCE_SEPARATOR) if part.strip()]


@dataclass
class Session:
    """A training result with its settings and figures.

    Attributes:
        settings: the settings of the run.
        vocab: id -> token bytes.
        merges: the merges in rank order.
        merge_counts: pair count of each merge at the time it was made.
        corpus_tokens: tokens of the corpus after each merge (for bytes per token).
        partial: the run was cancelled before it finished.
        stats: summary figures (``elapsed``, ``distinct``, ``total``, ``corpus_bytes``,
            ``invalid_bytes``, ``stage1_merges`` for SuperBPE, ...), free-form numbers and strings.
        splits: Picky BPE's removals (`core.SplitEvent`s), in order.
        sources: the names of the named sources trained on (`core.CountingDone.sources`),
            ``()`` for one unnamed corpus.
        per_source: with ``sources``, each merge's pair count per source, merge after merge
            (``len(sources)`` values a merge: `core.MergeBatch.per_source`).
        source_bytes: with ``sources``, each one's pre-token bytes (where its bytes-per-token
            line starts), or empty if unknown.
        chosen: parity-aware BPE's choices: for each merge, the index in ``sources`` of the
            language it was made for (-1: a global merge, chosen by all together);
            empty for other runs (`core.MergeBatch.chosen`).
    """

    settings: TrainSettings
    vocab: dict[int, bytes]
    merges: list[tuple[bytes, bytes]]
    merge_counts: list[int] = field(default_factory=list)
    corpus_tokens: list[int] = field(default_factory=list)
    partial: bool = False
    stats: dict[str, Any] = field(default_factory=dict)
    splits: list[SplitEvent] = field(default_factory=list)
    sources: tuple[str, ...] = ()
    per_source: Sequence[int] = field(default_factory=list)
    source_bytes: list[int] = field(default_factory=list)
    chosen: Sequence[int] = field(default_factory=list)

    def merge_counts_by_id(self) -> dict[int, int]:
        """Token id -> pair count at the merge that created it."""
        return {token_id: self.merge_counts[rank] for rank, token_id in self._merge_ids()
                if rank < len(self.merge_counts)}

    def provenance_by_id(self) -> dict[int, tuple[int, ...]]:
        """Token id -> each source's pair count at the merge that created it (``{}`` without
        named sources)."""
        n = len(self.sources)
        if not n or len(self.per_source) < n * len(self.merges):
            return {}
        per_source = self.per_source
        return {token_id: tuple(per_source[rank * n:(rank + 1) * n]) for rank, token_id in self._merge_ids()}

    def _merge_ids(self) -> list[tuple[int, int]]:
        """``(rank, token id)`` of each merge whose token is in the vocabulary."""
        first = len(self.vocab) - len(self.merges)
        if all(self.vocab.get(first + r) == left + right for r, (left, right) in enumerate(self.merges)):
            return [(rank, first + rank) for rank in range(len(self.merges))]
        # a continued tokenizer with ids of its own (GPT-2's bytes are not ids 0-255): by bytes
        ids: dict[bytes, int] = {}
        for token_id, token in sorted(self.vocab.items()):
            ids.setdefault(token, token_id)
        return [(rank, ids[left + right]) for rank, (left, right) in enumerate(self.merges) if left + right in ids]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


def session_to_json(session: Session) -> dict[str, Any]:
    """The JSON-ready dict of ``session``."""
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "settings": settings_to_json(session.settings),
        "partial": session.partial,
        "stats": session.stats,
        "vocab": [[token_id, _b64(token)] for token_id, token in sorted(session.vocab.items())],
        "merges": [[_b64(left), _b64(right)] for left, right in session.merges],
        "merge_counts": list(session.merge_counts),
        "corpus_tokens": list(session.corpus_tokens),
        "splits": [[s.rank, s.token_id, _b64(s.token), [_b64(p) for p in s.pieces], s.occurrences]
                   for s in session.splits],
        "sources": list(session.sources),
        "per_source": list(session.per_source),
        "source_bytes": list(session.source_bytes),
        **({"chosen": list(session.chosen)} if len(session.chosen) else {}),
    }


def session_from_json(data: Any, source: str = "session") -> Session:
    """Build a `Session` from the dict `session_to_json` made.

    Every field's type is checked before it is used (`_check_fields`), so a damaged file
    is a `SessionError`, never an ``AttributeError`` or a value the window cannot show.

    Raises:
        SessionError: a field is missing or malformed (the message names ``source``).
    """
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise SessionError(f"{source} is not a BPE Studio session file")
    if data.get("version") != FORMAT_VERSION or isinstance(data.get("version"), bool):
        raise SessionError(
            f"{source} is a session of version {_short(data.get('version'))}; "
            f"this BPE Studio reads version {FORMAT_VERSION}"
        )
    _check_fields(data, source)
    try:
        raw = data["settings"]
        settings = settings_from_json(raw)
        vocab = {int(token_id): _unb64(token) for token_id, token in data["vocab"]}
        merges = [(_unb64(left), _unb64(right)) for left, right in data["merges"]]
        merge_counts = [int(c) for c in data.get("merge_counts", [])]
        corpus_tokens = [int(c) for c in data.get("corpus_tokens", [])]
        stats = dict(data.get("stats", {}))
        partial = bool(data.get("partial", False))
        splits = [SplitEvent(int(rank), int(token_id), _unb64(token), tuple(map(_unb64, pieces)), int(occurrences))
                  for rank, token_id, token, pieces, occurrences in data.get("splits", [])]
        sources = tuple(str(name) for name in data.get("sources", []))
        per_source = [int(c) for c in data.get("per_source", [])]
        source_bytes = [int(c) for c in data.get("source_bytes", [])]
        chosen = [int(c) for c in data.get("chosen", [])]
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as e:
        raise SessionError(f"{source} is damaged ({type(e).__name__}: {str(e)[:200]}); save the session again") from e
    _check_merges(vocab, merges, source, removed={split.token for split in splits})
    _check_sources(settings, sources, per_source, len(merge_counts), source)
    if source_bytes and len(source_bytes) != len(sources):
        raise SessionError(f"{source} is damaged: source_bytes holds {len(source_bytes)} sizes for "
                           f"{len(sources)} sources; save the session again")
    if chosen and (len(chosen) != len(merges) or not all(-1 <= c < len(sources) for c in chosen)):
        raise SessionError(f"{source} is damaged: chosen should hold one source number (or -1) per merge; "
                           "save the session again")
    return Session(settings, vocab, merges, merge_counts, corpus_tokens, partial, stats, splits, sources, per_source,
                   source_bytes, chosen)


def save_session(path: str | os.PathLike[str], session: Session) -> Path:
    """Write ``session`` to ``path`` as JSON, atomically; returns the path."""
    path = Path(path)
    text = json.dumps(session_to_json(session), ensure_ascii=False, separators=(",", ":"))
    with atomic_output(path) as f:
        f.write(text.encode("utf-8"))
    return path


def load_session(path: str | os.PathLike[str]) -> Session:
    """Read a session file written by `save_session`.

    Raises:
        OSError: the file cannot be read.
        SessionError: the file is not a valid session (the message names the file).
    """
    path = Path(path)
    try:
        raw = read_bytes(path)  # a FIFO or a device is refused unread: it could hang the window
    except FormatError as e:  # the only one read_bytes raises: not a regular file
        kind = file_kind(os.stat(path).st_mode)
        raise SessionError(f"{path} is not a regular file ({kind}); choose a session file") from e
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except UnicodeDecodeError as e:
        raise SessionError(f"{path} is not a BPE Studio session file (not UTF-8 text)") from e
    except json.JSONDecodeError as e:
        raise SessionError(f"{path}, line {e.lineno}: not valid JSON ({e.msg})") from e
    except RecursionError as e:
        raise SessionError(f"{path} is damaged (JSON nested too deeply); it is not a session BPE Studio wrote") from e
    except ValueError as e:  # NaN or Infinity, or an integer of more than 4300 digits
        raise SessionError(f"{path} is damaged ({str(e)[:200]}); save the session again") from e
    return session_from_json(data, str(path))


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a session holds")
