"""Checking a session file before it is trusted (`bpe_studio.app.models.session` reads it).

Every field's type is checked before it is used (`_check_fields`), then the merges against
the vocabulary (`_check_merges`) and the named sources against the provenance
(`_check_sources`): any damage is one `SessionError` naming the file and the field. No Qt.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from core.errors import BpeStudioError

if TYPE_CHECKING:
    from bpe_studio.app.models.session import TrainSettings


class SessionError(BpeStudioError, ValueError):
    """A session file cannot be read: not JSON, not a session, or inconsistent."""


def _check_sources(settings: TrainSettings, sources: tuple[str, ...], per_source: list[int], merges: int,
                   source: str) -> None:
    """The source names and provenance agree: a name per source, each once, and as many
    counts as merges times sources."""
    from core.corpus.named_counts import check_source_names

    try:
        _ = settings.named_sources  # raises unless there is one name per source
        for names in (settings.names, sources):
            if names:
                check_source_names(names)
                if len(set(names)) != len(names):
                    raise ValueError(f"a source name is there twice in {list(names)[:20]}")
    except ValueError as e:
        raise SessionError(f"{source} is damaged ({e}); save the session again") from e
    if per_source and len(per_source) != merges * len(sources):
        raise SessionError(f"{source} is damaged: per_source holds {len(per_source):,} counts, not one per "
                           f"merge and source ({merges:,} × {len(sources)}); save the session again")


def _check_merges(vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]], source: str,
                  removed: set[bytes] = frozenset()) -> None:  # type: ignore[assignment]
    """Each merge joins single bytes of the vocabulary's first 256 ids or earlier merges'
    tokens, and makes a token of the vocabulary (or one Picky BPE ``removed``): what the
    window rebuilds the ids from."""
    tokens = set(vocab.values()) | removed
    lowest = {token for _, token in sorted(vocab.items())[:256]}
    learned = {bytes([i]) for i in range(256)}  # what a merge can join: bytes, earlier merges
    for left, right in merges:
        if left + right not in tokens:
            raise SessionError(f"{source} is damaged: merge {left[:40]!r} + {right[:40]!r} has no token")
        if left not in learned or right not in learned:
            raise SessionError(
                f"{source} is damaged: merge {left[:40]!r} + {right[:40]!r} joins a token no earlier merge made"
            )
        for part in (left, right):
            if len(part) == 1 and part not in lowest:
                raise SessionError(f"{source} is damaged: the byte {part!r} is not among the first 256 tokens")
        learned.add(left + right)


_INT64 = 2**63
_INT32 = 2**31
_SETTINGS_JSON: dict[str, tuple[str, bool]] = {
    "corpus": ("str", True), "vocab_size": ("int", True), "special_tokens": ("tuple[str, ...]", True),
    "pattern": ("str", True), "workers": ("int | None", False), "max_token_length": ("int | None", False),
    "min_frequency": ("int", False), "initial": ("str | None", False), "inherited_merges": ("int", False),
    "field": ("str", False), "max_bytes": ("int | None", False), "sample": ("float | None", False),
    "seed": ("int", False), "doc_max_chars": ("int | None", False), "variant": ("variant", False),
    "source_names": ("tuple[str, ...]", False),
}
"""The settings as sessions store them (`settings_to_json`): flat, each key's JSON type and
whether it is required (keys added later are optional, for older sessions)."""
_SETTING_LIMITS = {"max_bytes": _INT32 * 1_000_000}  # shown in MB
_NUMERIC_STATS = ("elapsed", "distinct", "total", "corpus_bytes", "invalid_bytes", "documents", "input_bytes",
                  "stage1_merges")
_LIST_STATS = ("frequency_ranks", "frequency_counts")
_EXPECTED = {"str": "text", "int": "a whole number", "float": "a number", "bool": "true or false",
             "tuple[str, ...]": "a list of texts"}


def _short(value: Any, depth: int = 0) -> str:
    """A value from the file as JSON, cut short: it may be huge or nested thousands deep.

    ``[3, 12]`` -> ``"[3, 12]"``; ``[[[[[1]]]]]`` -> ``"[[[…]]]"``
    """
    if isinstance(value, dict):
        parts = [f"{_short(k)}: {_short(v, depth + 1)}" for k, v in list(value.items())[:5]]
        text = "{…}" if depth >= 2 else "{" + ", ".join(parts) + (", …" if len(value) > 5 else "") + "}"
    elif isinstance(value, list):
        parts = [_short(v, depth + 1) for v in value[:5]] if depth < 2 else []
        text = "[…]" if depth >= 2 else "[" + ", ".join(parts) + (", …" if len(value) > 5 else "") + "]"
    elif isinstance(value, str):
        text = json.dumps(value[:61], ensure_ascii=False)
    else:
        text = json.dumps(value) if isinstance(value, bool) or value is None else repr(value)
    return text if len(text) <= 60 else text[:60] + "…"


def _is_int(value: Any, limit: int = _INT64) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < limit


def _is_number(value: Any) -> bool:
    # json.loads gives no NaN or infinity here (load_session refuses them); a dict built otherwise might
    return (isinstance(value, float) and math.isfinite(value) and abs(value) < _INT64) or _is_int(value)


def _setting_fits(annotation: str, value: Any) -> bool:
    """Whether a JSON value fits a `TrainSettings` field's annotation (``"int | None"``, ...);
    an annotation not listed here is left to the field's own conversion."""
    optional = annotation.endswith(" | None")
    if optional and value is None:
        return True
    kind = annotation.removesuffix(" | None")
    if kind == "str":
        return isinstance(value, str)
    if kind == "int":
        return _is_int(value)
    if kind == "float":
        return _is_number(value)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "tuple[str, ...]":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return True


def _check_fields(data: dict[str, Any], source: str) -> None:
    """Check the type of every field of a session's JSON before anything is built from it.

    Raises:
        SessionError: ``{source} is damaged: vocab[3] should be [id, base64 text], not ...``.
    """

    def damaged(what: str, value: Any, expected: str) -> SessionError:
        return SessionError(f"{source} is damaged: {what} should be {expected}, not {_short(value)}; save the session again")

    raw = data.get("settings")
    if not isinstance(raw, dict):
        raise damaged("settings", raw, "a JSON object")
    for name, (annotation, required) in _SETTINGS_JSON.items():
        if name not in raw:
            if required:
                raise SessionError(f"{source} is damaged: settings.{name} is missing; save the session again")
            continue
        if not _setting_fits(annotation, raw[name]):
            kind = annotation.removesuffix(" | None")
            expected = _EXPECTED.get(kind, kind) + (" or null" if annotation != kind else "")
            raise damaged(f"settings.{name}", raw[name], expected)
        limit = _SETTING_LIMITS.get(name, _INT32)  # what the settings panel's spin boxes can show
        if annotation.startswith("int") and raw[name] is not None and raw[name] >= limit:
            raise damaged(f"settings.{name}", raw[name], f"below {limit:,}")
    for key in ("vocab", "merges"):
        if not isinstance(data.get(key), list):
            raise damaged(key, data.get(key), "a list")
    seen: set[int] = set()
    for n, item in enumerate(data["vocab"]):
        if not (isinstance(item, list) and len(item) == 2 and _is_int(item[0], _INT32) and isinstance(item[1], str)):
            raise damaged(f"vocab[{n}]", item, "[id, base64 text]")
        if item[0] in seen:
            raise SessionError(f"{source} is damaged: id {item[0]} is in the vocabulary twice; save the session again")
        seen.add(item[0])
    for n, item in enumerate(data["merges"]):
        if not (isinstance(item, list) and len(item) == 2 and all(isinstance(part, str) for part in item)):
            raise damaged(f"merges[{n}]", item, "[base64 text, base64 text]")
    sources = data.get("sources", [])
    if not isinstance(sources, list) or not all(isinstance(name, str) for name in sources):
        raise damaged("sources", sources, "a list of texts")
    for key in ("merge_counts", "corpus_tokens", "per_source", "source_bytes"):
        values = data.get(key, [])
        if not isinstance(values, list):
            raise damaged(key, values, "a list")
        bad = next((n for n, v in enumerate(values) if not _is_int(v)), None)
        if bad is not None:
            raise damaged(f"{key}[{bad}]", values[bad], "a count")
    chosen = data.get("chosen", [])
    if not isinstance(chosen, list) or not all(isinstance(c, int) and not isinstance(c, bool) for c in chosen):
        raise damaged("chosen", chosen, "a list of whole numbers")
    splits = data.get("splits", [])
    if not isinstance(splits, list):
        raise damaged("splits", splits, "a list")
    for n, item in enumerate(splits):
        if not (isinstance(item, list) and len(item) == 5 and _is_int(item[0]) and _is_int(item[1], _INT32)
                and isinstance(item[2], str) and isinstance(item[3], list)
                and all(isinstance(p, str) for p in item[3]) and _is_int(item[4])):
            raise damaged(f"splits[{n}]", item, "[rank, id, base64 token, [base64 pieces], occurrences]")
    if not isinstance(data.get("partial", False), bool):
        raise damaged("partial", data.get("partial"), "true or false")
    stats = data.get("stats", {})
    if not isinstance(stats, dict):
        raise damaged("stats", stats, "a JSON object")
    for key, value in stats.items():
        if key in _NUMERIC_STATS:
            if not _is_number(value):
                raise damaged(f"stats.{key}", value, "a number")
        elif key in _LIST_STATS:
            if not isinstance(value, list) or not all(_is_int(v) for v in value):
                raise damaged(f"stats.{key}", value, "a list of counts")
        elif not (value is None or isinstance(value, (str, bool)) or _is_number(value)):
            raise damaged(f"stats.{key}", value, "a number or text")
