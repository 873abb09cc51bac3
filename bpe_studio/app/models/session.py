"""Training settings and sessions: a trained result saved to one JSON file and reopened later.

A *session* is everything the window needs to show a training result again without
retraining: the settings it was trained with, the vocabulary and merges, the pair count of
each merge, the compression after each merge, summary figures, and whether the run was
cancelled (``partial``). Token bytes are stored base64-encoded, so any byte sequence
survives. Writes are atomic (`core.formats.atomic`), with the same permissions as every
other file the application writes. No Qt.

    save_session(path, session); session = load_session(path)
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from core.corpus.sources import ReadOptions
from core.formats.atomic import atomic_output
from core.train.options import TrainOptions

FORMAT_NAME = "bpe-studio-session"
FORMAT_VERSION = 1


class SessionError(ValueError):
    """A session file cannot be read: not JSON, not a session, or inconsistent."""


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

    The options' fields read through as attributes (``settings.vocab_size``,
    ``settings.special_tokens``, ``settings.field``, ...).
    """

    corpus: str
    options: TrainOptions
    read: ReadOptions = ReadOptions()
    inherited_merges: int = 0

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
    def max_merges(self) -> int:
        """The number of merges a run makes if pairs do not run out first."""
        return max(0, self.options.vocab_size - 256 - len(self.options.special_tokens))


_TRAIN_FIELDS = frozenset(f.name for f in fields(TrainOptions) if f.name != "_")
_READ_FIELDS = frozenset(f.name for f in fields(ReadOptions))


def settings_to_json(settings: TrainSettings) -> dict[str, Any]:
    """The settings as one flat JSON object (as sessions have always stored them)."""
    options = {name: getattr(settings.options, name) for name in sorted(_TRAIN_FIELDS)}
    options["special_tokens"] = list(settings.options.special_tokens)
    if options["initial"] is not None:
        options["initial"] = os.fspath(options["initial"])
    return {"corpus": settings.corpus, **options, **asdict(settings.read),
            "inherited_merges": settings.inherited_merges}


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
    )
    read = ReadOptions(field=str(raw.get("field", "text")), max_bytes=optional("max_bytes", int),
                       sample=optional("sample", float), seed=int(raw.get("seed", 0)),
                       doc_max_chars=optional("doc_max_chars", int))
    return TrainSettings(str(raw["corpus"]), options, read, int(raw.get("inherited_merges", 0)))


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
            ``invalid_bytes``, ...), free-form numbers and strings.
    """

    settings: TrainSettings
    vocab: dict[int, bytes]
    merges: list[tuple[bytes, bytes]]
    merge_counts: list[int] = field(default_factory=list)
    corpus_tokens: list[int] = field(default_factory=list)
    partial: bool = False
    stats: dict[str, Any] = field(default_factory=dict)

    def merge_counts_by_id(self) -> dict[int, int]:
        """Token id -> pair count at the merge that created it."""
        first = len(self.vocab) - len(self.merges)
        by_rank = {first + rank: count for rank, count in enumerate(self.merge_counts)}
        if all(self.vocab.get(first + r) == left + right for r, (left, right) in enumerate(self.merges)):
            return by_rank
        # a continued tokenizer with ids of its own (GPT-2's bytes are not ids 0-255): by bytes
        ids: dict[bytes, int] = {}
        for token_id, token in sorted(self.vocab.items()):
            ids.setdefault(token, token_id)
        return {ids[left + right]: count for (left, right), count in zip(self.merges, self.merge_counts)
                if left + right in ids}


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
    }


def session_from_json(data: Any, source: str = "session") -> Session:
    """Build a `Session` from the dict `session_to_json` made.

    Raises:
        SessionError: a field is missing or malformed (the message names ``source``).
    """
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise SessionError(f"{source} is not a BPE Studio session file")
    if data.get("version") != FORMAT_VERSION:
        raise SessionError(
            f"{source} is a session of version {data.get('version')!r}; "
            f"this BPE Studio reads version {FORMAT_VERSION}"
        )
    try:
        raw = data["settings"]
        settings = settings_from_json(raw)
        vocab = {int(token_id): _unb64(token) for token_id, token in data["vocab"]}
        merges = [(_unb64(left), _unb64(right)) for left, right in data["merges"]]
        merge_counts = [int(c) for c in data.get("merge_counts", [])]
        corpus_tokens = [int(c) for c in data.get("corpus_tokens", [])]
        stats = dict(data.get("stats", {}))
        partial = bool(data.get("partial", False))
    except (KeyError, TypeError, ValueError) as e:
        raise SessionError(f"{source} is damaged ({type(e).__name__}: {e}); save the session again") from e
    tokens = set(vocab.values())
    learned = {bytes([i]) for i in range(256)}  # what a merge can join: bytes, earlier merges
    for left, right in merges:
        if left + right not in tokens:
            raise SessionError(f"{source} is damaged: merge {left!r} + {right!r} has no token")
        if left not in learned or right not in learned:
            raise SessionError(f"{source} is damaged: merge {left!r} + {right!r} joins a token no earlier merge made")
        learned.add(left + right)
    return Session(settings, vocab, merges, merge_counts, corpus_tokens, partial, stats)


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
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise SessionError(f"{path} is not a BPE Studio session file (not UTF-8 text)") from e
    except json.JSONDecodeError as e:
        raise SessionError(f"{path}, line {e.lineno}: not valid JSON ({e.msg})") from e
    return session_from_json(data, str(path))
