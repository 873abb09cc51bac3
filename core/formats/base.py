"""What the tokenizer file formats share: file names, careful reading, checked ids, special-token ids.

Adds the file names, the readers that turn bad bytes or JSON into a `FormatError`
(`core.errors`) saying where, `TokenIds` (the one check every loader puts each id
through: an integer, in range for the file's size, given once) and `find_special_ids`.
The formats themselves are in
`core.formats.gpt2_files` and `core.formats.hf_json`; `core.formats` gathers them.
"""

from __future__ import annotations

import itertools
import json
import operator
import os
import stat
from collections.abc import Callable, Iterable, Sequence
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any, cast

from core.errors import FormatError, InvalidSpecialTokensError
from core.formats.bytes_unicode import bytes_to_string, string_to_bytes, strings_to_bytes, unicode_to_bytes
from core.pretokenize.patterns import Pattern, resolve_pattern

__all__ = [
    "CONFIG_NAME", "FormatError", "MERGES_NAME", "Merges", "TOKENIZER_JSON_NAME", "TokenIds", "UNUSED_IDS_ALLOWED",
    "VOCAB_NAME", "Vocab",
    "check_distinct_texts", "check_writable_special_tokens", "decode_token_text", "file_kind", "json_string", "json_token", "line_pieces",
    "not_regular_error", "read_bytes",
    "find_special_ids", "key_where", "line_of", "load_json",
    "json_merges_at_once", "merges_of_parts", "pattern_of", "read_text", "vocab_at_once", "where",
]

VOCAB_NAME = "vocab.json"
MERGES_NAME = "merges.txt"
CONFIG_NAME = "tokenizer_config.json"
TOKENIZER_JSON_NAME = "tokenizer.json"

Vocab = dict[int, bytes]
Merges = list[tuple[bytes, bytes]]


UNUSED_IDS_ALLOWED = 1 << 17
"""How many ids a tokenizer file may leave unused: a file of ``n`` tokens has ids
``0 <= id < n + 131072``. Room for real gaps — tiktoken's ``cl100k_base`` leaves 16 ids
unused (100256, 100261-100275), a special token may be placed at 70,000 — while a hostile
id (``-1``, ``10**20``) can neither wrap in a ``uint16`` array nor size memory: whatever
is sized by the largest id (a rank table, a count per id) stays within about 1 MB of
int64 more than the file's own tokens need."""


class TokenIds:
    """The ids of one tokenizer file, checked as they are read: each an integer in
    ``0 .. count + UNUSED_IDS_ALLOWED - 1`` and given to one token only. The one check
    every loader puts each id through.

    ``ids = TokenIds(count=3)``; ``ids.add("a", 0, "vocab.json:2")`` -> ``0``;
    ``ids.add("b", 0, ...)`` -> ``FormatError: ...: tokens 'a' and 'b' both have id 0``.

    Args:
        count: how many tokens the file has (special tokens included).
    """

    def __init__(self, count: int) -> None:
        self.count = count
        self.limit = count + UNUSED_IDS_ALLOWED
        self.owner: dict[int, str | bytes] = {}

    def check(self, token: str | bytes, token_id: object, where: str | Callable[[], str]) -> int:
        """``token_id`` if it is an integer in range (given twice or not).

        Raises:
            FormatError: ``{where}: token '<s>' has id -1; ids must be integers from 0 to 131328 (...)``.
        """
        if isinstance(token_id, bool) or not isinstance(token_id, int) or not 0 <= token_id < self.limit:
            place = where() if callable(where) else where
            raise FormatError(
                f"{place}: token {_short(token)} has id {_short(token_id)}; ids must be integers from 0 to "
                f"{self.limit - 1:,} (the file has {self.count:,} tokens, and may leave at most "
                f"{UNUSED_IDS_ALLOWED:,} ids unused)"
            )
        return token_id

    def add(self, token: str | bytes, token_id: object, where: str | Callable[[], str]) -> int:
        """`check` ``token_id``, and that no other token has it.

        Raises:
            FormatError: out of range, not an integer, or ``tokens 'a' and 'b' both have id 0``.
        """
        checked = self.check(token, token_id, where)
        if checked in self.owner:
            place = where() if callable(where) else where
            raise FormatError(f"{place}: tokens {_short(self.owner[checked])} and {_short(token)} both have id {checked}")
        self.owner[checked] = token
        return checked


def _short(value: object) -> str:
    """``repr(value)``, cut to about 60 characters (a hostile id or token can be huge)."""
    if isinstance(value, (str, bytes)) and len(value) > 60:
        return repr(value[:60]) + "…"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"(a number of about {int(value.bit_length() * 0.30103) + 1} digits)"
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "…"


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
    found: dict[str, list[int]] = {}
    for token_id, token in vocab.items():
        if token in wanted:
            found.setdefault(wanted[token], []).append(token_id)
    result: dict[str, int] = {}
    merged: set[bytes] | None = None  # the merges' results, made only when a choice needs them
    for tok, ids in found.items():
        if len(ids) > 1:
            raw = tok.encode("utf-8")
            if merged is None:
                merged = {left + right for left, right in merges}

            def made_otherwise(i: int, raw: bytes = raw, merged: set[bytes] = merged) -> bool:
                return raw in merged or (len(raw) == 1 and i == raw[0])

            ids.sort(key=lambda i: (made_otherwise(i), i))
        result[tok] = ids[0]
    return result


def check_writable_special_tokens(special_tokens: Iterable[str]) -> None:
    """Check, before any training, that the special tokens can be written to the files.

    A special token is stored as its own text, every other token in GPT-2's byte map. A
    special token whose text is also the spelling of a single byte (``"a"``, or ``"Ġ"``
    which spells the space) could not be told apart from that byte's token, whatever is
    learned; text with lone surrogates (undecodable bytes given as a string) cannot be
    written as UTF-8 at all.

    Raises:
        InvalidSpecialTokensError: naming the token and saying what to do.
    """
    table = unicode_to_bytes()
    for token in special_tokens:
        try:
            token.encode("utf-8")
        except UnicodeEncodeError as e:
            raise InvalidSpecialTokensError(
                f"the special token {token!r} is not valid text (it holds undecodable bytes, "
                f"position {e.start}); give special tokens as UTF-8 text"
            ) from e
        if len(token) == 1 and token in table:
            byte = table[token]
            raise InvalidSpecialTokensError(
                f"the special token {token!r} has the same text as the single byte {byte} "
                f"({bytes([byte])!r}) in vocab.json, so the two could not be told apart; "
                "choose a longer special token, such as '<|" + token + "|>'"
            )


def json_string(text: str) -> str:
    """``text`` as a JSON string literal (UTF-8 kept, not ``\\u`` escaped), as
    ``json.dumps(text, ensure_ascii=False)`` writes it (its C function, without the call's
    set-up)."""
    return encode_basestring(text)


def json_token(token: bytes) -> str:
    """A token's GPT-2 text as a JSON string literal."""
    return encode_basestring(bytes_to_string(token))


HUGE_TEXT = 1 << 16
"""A token's text of this many characters or more is written as a piece of its own, not
copied into its line (see `line_pieces`)."""


def line_pieces(before: str, text: str, after: str) -> tuple[str, ...]:
    """``before + text + after`` as pieces to write: one string, or three when ``text`` is
    huge (a 20 MB token is not copied again to make its line)."""
    return (before + text + after,) if len(text) < HUGE_TEXT else (before, text, after)


def check_distinct_texts(
    items: Iterable[tuple[int, bytes]], special_by_id: dict[int, str], file_name: str
) -> None:
    """Check that no two tokens would be written as the same text: special tokens as their
    own text, the others through GPT-2's byte map (so ``"a"`` as a special token would
    be written like the byte ``a``). Works on the token bytes already in memory: no text
    is built for an ordinary token, so a vocabulary of huge tokens costs nothing more.

    Args:
        items: ``(id, token)`` in the order the file lists them (the first wins).

    Raises:
        FormatError: ``{file_name}: ids 97 and 256 would both be written as 'a'; ...``
    """
    ordinary: dict[bytes, int] = {}
    special_spelling: dict[bytes, int] = {}  # what a special token's text means in the byte map
    for token_id, token in items:
        text = special_by_id.get(token_id)
        if text is not None:
            try:
                spelled = string_to_bytes(text)
            except KeyError:
                continue  # a character outside the map: no ordinary token is written so
            other = ordinary.get(spelled)
            special_spelling.setdefault(spelled, token_id)
        else:
            other = ordinary.get(token, special_spelling.get(token))
            ordinary.setdefault(token, token_id)
            if other is None:
                continue
            text = bytes_to_string(token[:60]) + ("…" if len(token) > 60 else "")
        if other is not None:
            raise FormatError(
                f"{file_name}: ids {other} and {token_id} would both be written as {text!r}; "
                "a special token must not have the same text as another token"
            )


def line_of(text: str, needle: str) -> int | None:
    at = text.find(needle)
    return None if at < 0 else text.count("\n", 0, at) + 1


def where(path: Path, line: int | None) -> str:
    return f"{path}:{line}" if line is not None else str(path)


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def file_kind(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is, for messages: ``"a FIFO"``, ``"a character device"``, ..."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def not_regular_error(path: Path, mode: int) -> FormatError:
    """``/dev/zero is not a regular file (a character device); give a tokenizer folder or file``."""
    return FormatError(f"{path} is not a regular file ({file_kind(mode)}); give a tokenizer folder or file")


def read_bytes(path: Path) -> bytes:
    """The bytes of ``path``, which must be a regular file: a FIFO or a device is refused
    before a byte is read (opened without blocking, so a FIFO with no writer cannot hang it).

    Raises:
        FormatError: not a regular file.
        OSError: it cannot be opened or read.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise not_regular_error(path, mode)
        return f.read()


def read_text(path: Path) -> str:
    data = read_bytes(path)
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
    except RecursionError as e:
        raise FormatError(f"{path}: not a tokenizer file (JSON nested too deeply)") from e
    except ValueError as e:  # an integer of more than 4300 digits
        raise FormatError(f"{path}: not a tokenizer file ({e})") from e


def vocab_at_once(data: dict[str, object], specials: set[str], limit: int) -> Vocab | None:
    """A well-formed ``{token text: id}`` object's vocabulary (``vocab.json``, a
    ``tokenizer.json``'s ``model.vocab``), its keys mapped to bytes in one pass; ``None`` at
    anything else (an id not below ``limit`` or given twice, a key outside the byte map),
    for the key by key reading to report or take as its rules say."""
    values = list(data.values())
    if not values or set(map(type, values)) != {int}:
        return None
    ids = cast(list[int], values)
    if min(ids) < 0 or max(ids) >= limit or len(set(ids)) != len(ids):
        return None
    keys = list(data)
    special_at = {keys.index(key): key for key in specials if key in data}
    for at in special_at:
        keys[at] = ""  # (taken as its own text below, not through the map)
    tokens = strings_to_bytes(keys)
    if tokens is None:
        return None
    for at, key in special_at.items():
        tokens[at] = key.encode("utf-8")
    return dict(zip(ids, tokens))  # (in the file's order, as key by key)


def merges_of_parts(parts: list[str], known: set[bytes] | None) -> Merges | None:
    """The merges of ``[left, right, left, right, ...]`` token texts, mapped to bytes in one
    pass; ``None`` if a text is empty or outside the byte map, or (with ``known``) a part or
    a result is not a known token, for the merge by merge reading to report."""
    if "" in parts:
        return None
    tokens = strings_to_bytes(parts)
    if tokens is None:
        return None
    lefts, rights = tokens[0::2], tokens[1::2]
    if known is not None and not (known.issuperset(tokens) and known.issuperset(map(operator.add, lefts, rights))):
        return None
    return list(zip(lefts, rights))


def json_merges_at_once(raw_merges: list[object], known: set[bytes]) -> Merges | None:
    """Well-formed ``tokenizer.json`` ``model.merges`` (all ``[left, right]`` lists, or all
    ``"left right"`` strings) mapped to bytes in one pass; ``None`` at anything else."""
    kinds = set(map(type, raw_merges))
    if kinds == {list}:
        items = cast(list[list[object]], raw_merges)
        if set(map(len, items)) != {2}:
            return None
        parts = list(itertools.chain.from_iterable(items))
        if set(map(type, parts)) != {str}:
            return None
        return merges_of_parts(cast(list[str], parts), known)
    if kinds == {str}:
        lines = cast(list[str], raw_merges)
        if list(map(str.count, lines, itertools.repeat(" "))).count(1) != len(lines):  # one space: two tokens
            return None
        return merges_of_parts(" ".join(lines).split(" "), known)
    return None


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
