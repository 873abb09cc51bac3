"""What the tokenizer file formats share: names, errors, atomic writes and careful reading.

Adds `FormatError` (a malformed file, named with its line or key), `write_atomically` (all
files of an export renamed into place only once every one was written), the readers that
turn bad bytes or JSON into a `FormatError` saying where, and `find_special_ids`. The
formats themselves are in `core.formats.gpt2_files` and `core.formats.hf_json`; `core.formats` gathers them.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from core.formats.bytes_unicode import string_to_bytes, unicode_to_bytes
from core.pretokenize.patterns import Pattern, resolve_pattern

__all__ = [
    "CONFIG_NAME", "FormatError", "MERGES_NAME", "Merges", "TOKENIZER_JSON_NAME", "VOCAB_NAME", "Vocab",
    "decode_token_text", "find_special_ids", "key_where", "line_of", "load_json", "new_file_mode",
    "pattern_of", "read_text", "where", "write_atomically",
]

VOCAB_NAME = "vocab.json"
MERGES_NAME = "merges.txt"
CONFIG_NAME = "tokenizer_config.json"
TOKENIZER_JSON_NAME = "tokenizer.json"

Vocab = dict[int, bytes]
Merges = list[tuple[bytes, bytes]]


class FormatError(ValueError):
    """A tokenizer file is malformed, or a tokenizer cannot be written in a format.

    The message starts with the file (and line or key) it is about.
    """


def pattern_of(pattern: str | Pattern) -> Pattern:
    """``"gpt2"``, ``"gpt4"``, a regex string or a `Pattern`, as a `Pattern`."""
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


def write_atomically(files: Sequence[tuple[Path, str]]) -> list[Path]:
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


def line_of(text: str, needle: str) -> int | None:
    at = text.find(needle)
    return None if at < 0 else text.count("\n", 0, at) + 1


def where(path: Path, line: int | None) -> str:
    return f"{path}:{line}" if line is not None else str(path)


def read_text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise FormatError(f"{path}:{line}: not valid UTF-8 (byte offset {e.start}); is this the right file?") from e


def load_json(path: Path) -> tuple[Any, str]:
    text = read_text(path)
    try:
        return json.loads(text), text
    except json.JSONDecodeError as e:
        raise FormatError(f"{path}:{e.lineno}: not valid JSON ({e.msg} at column {e.colno})") from e


def decode_token_text(key: str, specials: set[str], where: str) -> bytes:
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


def key_where(path: Path, text: str, key: str) -> str:
    """``file:line`` of ``key`` in a JSON text (looked up only when reporting an error)."""
    line = line_of(text, json.dumps(key, ensure_ascii=False) + ":") or line_of(text, json.dumps(key) + ":")
    return where(path, line)
