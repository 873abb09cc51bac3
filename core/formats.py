"""Tokenizer files: GPT-2 ``vocab.json`` + ``merges.txt``, a settings sidecar, and HF ``tokenizer.json``.

Adds reading and writing of the three formats a trained tokenizer travels in:
- GPT-2 format: ``vocab.json`` (``{token_text: id}``, token bytes written through GPT-2's
  bytes-to-unicode map) and ``merges.txt`` (a ``#version: 0.2`` line, then ``left right``
  a line, in rank order).
- ``tokenizer_config.json``: the pre-tokenization pattern and special tokens, so reopening
  the GPT-2 files needs no remembered settings.
- ``tokenizer.json`` in the Hugging Face ``tokenizers`` format (byte-level BPE).

Every write is atomic: each file is written to a temporary file in the target directory
and renamed over the target only once all of them were written, so a failed export leaves
no partial file. A malformed file raises `FormatError` naming the file and the line or key.
Special tokens are stored as their own text (like GPT-2's ``<|endoftext|>``), not mapped.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import regex

from core.bytes_unicode import bytes_to_string, bytes_to_unicode, string_to_bytes, unicode_to_bytes
from core.patterns import BUILTIN_PATTERNS, GPT2_PATTERN, Pattern, resolve_pattern

__all__ = [
    "CONFIG_NAME",
    "FormatError",
    "MERGES_NAME",
    "TOKENIZER_JSON_NAME",
    "VOCAB_NAME",
    "bytes_to_unicode",
    "find_special_ids",
    "load_gpt2_files",
    "load_tokenizer_config",
    "load_tokenizer_json",
    "save_gpt2_files",
    "save_tokenizer",
    "save_tokenizer_json",
    "tokenizer_json_dict",
]

VOCAB_NAME = "vocab.json"
MERGES_NAME = "merges.txt"
CONFIG_NAME = "tokenizer_config.json"
TOKENIZER_JSON_NAME = "tokenizer.json"
MERGES_HEADER = "#version: 0.2"

Vocab = dict[int, bytes]
Merges = list[tuple[bytes, bytes]]


class FormatError(ValueError):
    """A tokenizer file is malformed, or a tokenizer cannot be written in a format.

    The message starts with the file (and line or key) it is about.
    """


# --------------------------------------------------------------------------- helpers


def _pattern_of(pattern: str | Pattern) -> Pattern:
    return pattern if isinstance(pattern, Pattern) else resolve_pattern(pattern)


def find_special_ids(
    vocab: Vocab, merges: Sequence[tuple[bytes, bytes]], special_tokens: Iterable[str]
) -> dict[str, int]:
    """The id of each special token that is in ``vocab`` (tokens not in it are left out).

    A special token's text can coincide with an ordinary token's bytes (a one-character
    special token equals a single byte), so among the ids holding its bytes the one no
    merge produced and that is not the single byte wins; ties go to the lowest id.
    """
    wanted = {tok.encode("utf-8"): tok for tok in special_tokens}
    if not wanted:
        return {}
    merged = {left + right for left, right in merges}
    found: dict[str, list[int]] = {}
    for token_id, token in vocab.items():
        if token in wanted:
            found.setdefault(wanted[token], []).append(token_id)
    result: dict[str, int] = {}
    for tok, ids in found.items():
        raw = tok.encode("utf-8")

        def made_otherwise(i: int, raw: bytes = raw) -> bool:
            return raw in merged or (len(raw) == 1 and i == raw[0])

        ids.sort(key=lambda i: (made_otherwise(i), i))
        result[tok] = ids[0]
    return result


def new_file_mode() -> int:
    """The permissions a newly created file gets (``0o666`` less the umask).

    Temporary files are created ``0o600``; they get these before being renamed into place.
    The umask is read from ``/proc`` where possible: setting it to read it is process-wide.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o644


def _write_atomically(files: Sequence[tuple[Path, str]]) -> list[Path]:
    """Write every ``(path, text)`` to a temporary file, then rename them all into place."""
    for path, _ in files:
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a directory; choose another output directory")
    temps: list[tuple[Path, Path]] = []
    try:
        for path, text in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            temps.append((Path(tmp), path))
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
        mode = new_file_mode()
        for tmp, path in temps:
            os.chmod(tmp, mode)
        for tmp, path in temps:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)
        raise
    return [path for path, _ in files]


def _line_of(text: str, needle: str) -> int | None:
    at = text.find(needle)
    return None if at < 0 else text.count("\n", 0, at) + 1


def _where(path: Path, line: int | None) -> str:
    return f"{path}:{line}" if line is not None else str(path)


# --------------------------------------------------------------------------- GPT-2 files


def _vocab_json_text(vocab: Vocab, special_ids: dict[str, int]) -> str:
    by_id = {i: tok for tok, i in special_ids.items()}
    single_order = {bytes([b]): n for n, b in enumerate(bytes_to_unicode())}

    # Single bytes first, in GPT-2's order, then everything else by id.
    def order(item: tuple[int, bytes]) -> tuple[int, int]:
        token_id, token = item
        if token_id not in by_id and token in single_order:
            return (0, single_order[token])
        return (1, token_id)

    entries: dict[str, int] = {}
    for token_id, token in sorted(vocab.items(), key=order):
        key = by_id.get(token_id) or bytes_to_string(token)
        if key in entries:
            raise FormatError(
                f"{VOCAB_NAME}: ids {entries[key]} and {token_id} would both be written as "
                f"{key!r}; a special token must not have the same text as another token"
            )
        entries[key] = token_id
    return json.dumps(entries, ensure_ascii=False, indent=0) + "\n"


def _merges_text(vocab: Vocab, merges: Sequence[tuple[bytes, bytes]]) -> str:
    known = set(vocab.values())
    lines = [MERGES_HEADER]
    for rank, (left, right) in enumerate(merges):
        for part in (left, right, left + right):
            if part not in known:
                raise FormatError(
                    f"{MERGES_NAME}: merge {rank} ({left!r}, {right!r}) uses {part!r}, "
                    "which is not in the vocabulary"
                )
        lines.append(f"{bytes_to_string(left)} {bytes_to_string(right)}")
    return "\n".join(lines) + "\n"


def save_gpt2_files(
    out_dir: str | os.PathLike[str],
    vocab: Vocab,
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Sequence[str] = (),
) -> list[Path]:
    """Write ``vocab.json`` and ``merges.txt`` into ``out_dir`` (created if missing).

    Args:
        out_dir: the directory to write into.
        vocab: id -> token bytes.
        merges: the merges in rank order.
        special_tokens: tokens written as their own text instead of through the byte map.

    Returns:
        The paths written.
    """
    out = Path(out_dir)
    special_ids = find_special_ids(vocab, merges, special_tokens)
    texts = [
        (out / VOCAB_NAME, _vocab_json_text(vocab, special_ids)),
        (out / MERGES_NAME, _merges_text(vocab, merges)),
    ]
    return _write_atomically(texts)


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise FormatError(f"{path}:{line}: not valid UTF-8 (byte offset {e.start}); is this the right file?") from e


def _load_json(path: Path) -> tuple[Any, str]:
    text = _read_text(path)
    try:
        return json.loads(text), text
    except json.JSONDecodeError as e:
        raise FormatError(f"{path}:{e.lineno}: not valid JSON ({e.msg} at column {e.colno})") from e


def _decode_token_text(key: str, specials: set[str], where: str) -> bytes:
    if key in specials:
        return key.encode("utf-8")
    try:
        return string_to_bytes(key)
    except KeyError as e:
        table = unicode_to_bytes()
        bad = next(c for c in key if c not in table)
        raise FormatError(
            f"{where}: token {key!r} has the character {bad!r}, which is not in GPT-2's byte map; "
            "if it is a special token, pass it as a special token"
        ) from e


def load_gpt2_vocab(vocab_path: str | os.PathLike[str], special_tokens: Iterable[str] = ()) -> Vocab:
    """Read a GPT-2 ``vocab.json`` into ``{id: token_bytes}``.

    Raises:
        FormatError: not JSON, not an object of non-negative integer ids, an id given twice,
            or a key with a character outside GPT-2's byte map that is not a special token.
    """
    path = Path(vocab_path)
    data, text = _load_json(path)
    if not isinstance(data, dict):
        raise FormatError(f"{path}:1: expected a JSON object {{token: id}}, got {type(data).__name__}")
    specials = set(special_tokens)
    vocab: Vocab = {}
    seen: dict[int, str] = {}
    table = unicode_to_bytes()
    for key, token_id in data.items():
        if isinstance(token_id, bool) or not isinstance(token_id, int) or token_id < 0:
            where = _key_where(path, text, key)
            raise FormatError(f"{where}: token {key!r} has id {token_id!r}; ids must be non-negative integers")
        if token_id in seen:
            where = _key_where(path, text, key)
            raise FormatError(f"{where}: tokens {seen[token_id]!r} and {key!r} both have id {token_id}")
        seen[token_id] = key
        if key in specials:
            vocab[token_id] = key.encode("utf-8")
        else:
            try:
                vocab[token_id] = bytes([table[c] for c in key])
            except KeyError:
                vocab[token_id] = _decode_token_text(key, specials, _key_where(path, text, key))
    return vocab


def _key_where(path: Path, text: str, key: str) -> str:
    """``file:line`` of ``key`` in a JSON text (looked up only when reporting an error)."""
    line = _line_of(text, json.dumps(key, ensure_ascii=False) + ":") or _line_of(text, json.dumps(key) + ":")
    return _where(path, line)


def load_gpt2_merges(merges_path: str | os.PathLike[str], vocab: Vocab | None = None) -> Merges:
    """Read a GPT-2 ``merges.txt`` (an optional ``#version`` first line, then ``left right`` lines).

    With ``vocab``, every merge's parts and result must be tokens of it.

    Raises:
        FormatError: a line that is not two tokens separated by one space, a character
            outside GPT-2's byte map, or a merge whose parts or result are not in ``vocab``.
    """
    path = Path(merges_path)
    text = _read_text(path)
    known = set(vocab.values()) if vocab is not None else None
    merges: Merges = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if lineno == 1 and line.startswith("#version"):
            continue
        if not line:
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise FormatError(f"{path}:{lineno}: expected two tokens separated by one space, got {line!r}")
        where = f"{path}:{lineno}"
        left = _decode_token_text(parts[0], set(), where)
        right = _decode_token_text(parts[1], set(), where)
        if known is not None:
            for part in (left, right, left + right):
                if part not in known:
                    raise FormatError(
                        f"{where}: the merge {line!r} needs the token {bytes_to_string(part)!r}, "
                        "which is not in the vocabulary; do vocab.json and merges.txt belong together?"
                    )
        merges.append((left, right))
    return merges


def load_gpt2_files(
    vocab_path: str | os.PathLike[str],
    merges_path: str | os.PathLike[str],
    special_tokens: Iterable[str] = (),
) -> tuple[Vocab, Merges]:
    """Read GPT-2 format ``vocab.json`` + ``merges.txt``: ``-> (vocab, merges)``.

    Args:
        vocab_path: the ``vocab.json``.
        merges_path: the ``merges.txt``.
        special_tokens: keys of ``vocab.json`` to take as their own text (not byte-mapped).

    Raises:
        FormatError: either file is malformed (the message names the file and line).
        OSError: a file cannot be read.
    """
    vocab = load_gpt2_vocab(vocab_path, special_tokens)
    return vocab, load_gpt2_merges(merges_path, vocab)


# --------------------------------------------------------------------------- sidecar


def _config_text(special_tokens: Sequence[str], pattern: Pattern) -> str:
    config = {
        "tokenizer_type": "byte_level_bpe",
        "created_by": "bpe-studio",
        "pattern_name": pattern.name,
        "pattern": pattern.source,
        "special_tokens": list(special_tokens),
    }
    return json.dumps(config, ensure_ascii=False, indent=2) + "\n"


def load_tokenizer_config(path: str | os.PathLike[str]) -> tuple[list[str], Pattern]:
    """Read the ``tokenizer_config.json`` sidecar: ``-> (special_tokens, pattern)``.

    A missing ``pattern`` means GPT-2's; missing ``special_tokens`` means none.

    Raises:
        FormatError: not JSON, or a key of the wrong type or an invalid pattern.
    """
    p = Path(path)
    data, _ = _load_json(p)
    if not isinstance(data, dict):
        raise FormatError(f"{p}:1: expected a JSON object")
    specials = data.get("special_tokens", [])
    if not isinstance(specials, list) or not all(isinstance(t, str) and t for t in specials):
        raise FormatError(f"{p}: key 'special_tokens' must be a list of non-empty strings")
    name = data.get("pattern_name")
    source = data.get("pattern", GPT2_PATTERN)
    if not isinstance(source, str):
        raise FormatError(f"{p}: key 'pattern' must be a regex string")
    try:
        pattern = resolve_pattern(name if name in BUILTIN_PATTERNS and BUILTIN_PATTERNS[name] == source else source)
    except ValueError as e:
        raise FormatError(f"{p}: key 'pattern': {e}") from e
    return list(specials), pattern


# --------------------------------------------------------------------------- tokenizer.json


# An atom followed by a possessive interval, e.g. ``\p{N}{1,3}+``. Oniguruma (which HF
# tokenizers uses) reads ``{1,3}+`` as "one or more of {1,3}", so it becomes an atomic group.
_ATOM = r"(?:\\[pP]\{[^}]*\}|\\[pP]\w|\[(?:\\.|[^\]\\])*\]|\\.|[^\\()\[\]{}|*+?])"
_POSSESSIVE_INTERVAL = regex.compile(rf"({_ATOM})(\{{\d+(?:,\d*)?\}})\+")


def oniguruma_source(source: str) -> str:
    r"""The pattern as HF ``tokenizers`` (Oniguruma) must read it to match as ``regex`` does.

    ``oniguruma_source(r"\p{N}{1,3}+") -> r"(?>\p{N}{1,3})"``
    """
    return _POSSESSIVE_INTERVAL.sub(r"(?>\1\2)", source)


def tokenizer_json_dict(
    vocab: Vocab,
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Sequence[str] = (),
    pattern: str | Pattern = "gpt2",
) -> dict[str, Any]:
    """The Hugging Face ``tokenizer.json`` structure for a byte-level BPE tokenizer.

    GPT-2's pattern is HF's own ``ByteLevel`` regex; any other pattern becomes a ``Split``
    (isolated matches) followed by a ``ByteLevel`` without its regex.
    """
    pat = _pattern_of(pattern)
    special_ids = find_special_ids(vocab, merges, special_tokens)
    missing = [t for t in special_tokens if t not in special_ids]
    if missing:
        raise FormatError(f"{TOKENIZER_JSON_NAME}: special token {missing[0]!r} is not in the vocabulary")
    by_id = {i: t for t, i in special_ids.items()}
    model_vocab: dict[str, int] = {}
    for token_id in sorted(vocab):
        key = by_id.get(token_id) or bytes_to_string(vocab[token_id])
        if key in model_vocab:
            raise FormatError(
                f"{TOKENIZER_JSON_NAME}: ids {model_vocab[key]} and {token_id} would both be written as {key!r}"
            )
        model_vocab[key] = token_id
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True}
    if pat.name == "gpt2":
        pre_tokenizer: dict[str, Any] = {**byte_level, "use_regex": True}
    else:
        # "Removed" + invert keeps exactly the matches, like findall (text no alternative
        # matches is dropped); for patterns that match everything it equals "Isolated".
        split = {"type": "Split", "pattern": {"Regex": oniguruma_source(pat.source)},
                 "behavior": "Removed", "invert": True}
        pre_tokenizer = {"type": "Sequence", "pretokenizers": [split, {**byte_level, "use_regex": False}]}
    added = [
        {
            "id": special_ids[tok],
            "content": tok,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for tok in special_tokens
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": sorted(added, key=lambda a: a["id"]),
        "normalizer": None,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": None,
        "decoder": {**byte_level, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": model_vocab,
            "merges": [[bytes_to_string(a), bytes_to_string(b)] for a, b in merges],
        },
    }


def _tokenizer_json_text(
    vocab: Vocab, merges: Sequence[tuple[bytes, bytes]], special_tokens: Sequence[str], pattern: Pattern
) -> str:
    return json.dumps(tokenizer_json_dict(vocab, merges, special_tokens, pattern), ensure_ascii=False, indent=2) + "\n"


def save_tokenizer_json(
    path: str | os.PathLike[str],
    vocab: Vocab,
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Sequence[str] = (),
    pattern: str | Pattern = "gpt2",
) -> Path:
    """Write a Hugging Face ``tokenizer.json`` (atomically) and return its path."""
    text = _tokenizer_json_text(vocab, merges, special_tokens, _pattern_of(pattern))
    return _write_atomically([(Path(path), text)])[0]


def save_tokenizer(
    out_dir: str | os.PathLike[str],
    vocab: Vocab,
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Sequence[str] | None,
    pattern: str | Pattern,
) -> list[Path]:
    """Write every format into ``out_dir``: vocab.json, merges.txt, tokenizer_config.json, tokenizer.json.

    Nothing is replaced unless all four files could be written.

    Args:
        out_dir: the directory (created if missing).
        vocab: id -> token bytes (special tokens included).
        merges: the merges in rank order.
        special_tokens: the special tokens, each of which must be in ``vocab``.
        pattern: ``"gpt2"``, ``"gpt4"``, a regex string or a resolved `Pattern`.

    Returns:
        The four paths written.

    Raises:
        FormatError: the tokenizer cannot be written (a merge or special token that is not
            in the vocabulary, two tokens that would get the same text).
        OSError: the directory cannot be written.
    """
    out = Path(out_dir)
    pat = _pattern_of(pattern)
    specials = list(special_tokens or [])
    special_ids = find_special_ids(vocab, merges, specials)
    missing = [t for t in specials if t not in special_ids]
    if missing:
        raise FormatError(f"special token {missing[0]!r} is not in the vocabulary; add it before saving")
    texts = [
        (out / VOCAB_NAME, _vocab_json_text(vocab, special_ids)),
        (out / MERGES_NAME, _merges_text(vocab, merges)),
        (out / CONFIG_NAME, _config_text(specials, pat)),
        (out / TOKENIZER_JSON_NAME, _tokenizer_json_text(vocab, merges, specials, pat)),
    ]
    return _write_atomically(texts)


def _pattern_from_pre_tokenizer(pre: Any, where: str) -> Pattern:
    def byte_level(node: Any) -> bool:
        return isinstance(node, dict) and node.get("type") == "ByteLevel"

    if byte_level(pre) and pre.get("use_regex", True):
        if pre.get("add_prefix_space"):
            raise FormatError(f"{where}: key pre_tokenizer.add_prefix_space=true is not supported")
        return resolve_pattern("gpt2")
    if isinstance(pre, dict) and pre.get("type") == "Sequence":
        steps = pre.get("pretokenizers")
        if (
            isinstance(steps, list)
            and len(steps) == 2
            and isinstance(steps[0], dict)
            and steps[0].get("type") == "Split"
            and (steps[0].get("behavior"), steps[0].get("invert", False)) in (("Isolated", False), ("Removed", True))
            and byte_level(steps[1])
            and not steps[1].get("use_regex", True)
        ):
            regex_node = steps[0].get("pattern")
            if isinstance(regex_node, dict) and isinstance(regex_node.get("Regex"), str):
                source = regex_node["Regex"]
                builtin = {oniguruma_source(s): name for name, s in BUILTIN_PATTERNS.items()}
                try:
                    return resolve_pattern(builtin.get(source, source))
                except ValueError as e:
                    raise FormatError(f"{where}: key pre_tokenizer.pretokenizers[0].pattern: {e}") from e
    raise FormatError(
        f"{where}: key pre_tokenizer: only byte-level tokenizers are supported "
        "(ByteLevel, or Split(Regex) followed by ByteLevel without regex)"
    )


def load_tokenizer_json(path: str | os.PathLike[str]) -> tuple[Vocab, Merges, list[str], Pattern]:
    """Read a Hugging Face byte-level BPE ``tokenizer.json``: ``-> (vocab, merges, special_tokens, pattern)``.

    Added tokens become special tokens (matched whole before pre-tokenization, as HF does).

    Raises:
        FormatError: not JSON, not a byte-level BPE model, or a malformed key (named).
    """
    p = Path(path)
    data, _ = _load_json(p)
    where = str(p)
    if not isinstance(data, dict):
        raise FormatError(f"{p}:1: expected a JSON object")
    model = data.get("model")
    if not isinstance(model, dict) or model.get("type", "BPE") != "BPE":
        raise FormatError(f"{where}: key model: expected a BPE model")
    added = data.get("added_tokens") or []
    if not isinstance(added, list):
        raise FormatError(f"{where}: key added_tokens: expected a list")
    specials: list[str] = []
    added_ids: dict[str, int] = {}
    for n, entry in enumerate(added):
        if not (isinstance(entry, dict) and isinstance(entry.get("content"), str) and entry["content"]
                and isinstance(entry.get("id"), int)):
            raise FormatError(f"{where}: key added_tokens[{n}]: expected {{'id': int, 'content': str, ...}}")
        specials.append(entry["content"])
        added_ids[entry["content"]] = entry["id"]
    pattern = _pattern_from_pre_tokenizer(data.get("pre_tokenizer"), where)
    raw_vocab = model.get("vocab")
    if not isinstance(raw_vocab, dict):
        raise FormatError(f"{where}: key model.vocab: expected an object {{token: id}}")
    special_set = set(specials)
    vocab: Vocab = {}
    for key, token_id in raw_vocab.items():
        key_where = f"{where}: key model.vocab[{key!r}]"
        if isinstance(token_id, bool) or not isinstance(token_id, int) or token_id < 0:
            raise FormatError(f"{key_where}: id {token_id!r} is not a non-negative integer")
        if token_id in vocab:
            raise FormatError(f"{key_where}: id {token_id} is used twice")
        vocab[token_id] = _decode_token_text(key, special_set, key_where)
    for tok, token_id in added_ids.items():
        if token_id in vocab and vocab[token_id] != tok.encode("utf-8"):
            raise FormatError(f"{where}: key added_tokens: {tok!r} has id {token_id}, which model.vocab gives another token")
        vocab[token_id] = tok.encode("utf-8")
    raw_merges = model.get("merges", [])
    if not isinstance(raw_merges, list):
        raise FormatError(f"{where}: key model.merges: expected a list")
    known = set(vocab.values())
    merges: Merges = []
    for n, item in enumerate(raw_merges):
        key_where = f"{where}: key model.merges[{n}]"
        if isinstance(item, str):
            parts = item.split(" ")
        elif isinstance(item, list):
            parts = item
        else:
            parts = []
        if len(parts) != 2 or not all(isinstance(s, str) and s for s in parts):
            raise FormatError(f"{key_where}: expected 'left right' or [left, right], got {item!r}")
        left = _decode_token_text(parts[0], set(), key_where)
        right = _decode_token_text(parts[1], set(), key_where)
        for part in (left, right, left + right):
            if part not in known:
                raise FormatError(f"{key_where}: token {bytes_to_string(part)!r} is not in model.vocab")
        merges.append((left, right))
    return vocab, merges, specials, pattern
