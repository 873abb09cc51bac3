"""GPT-2 format tokenizer files: ``vocab.json`` + ``merges.txt``, and their settings sidecar.

Adds reading and writing of:
- ``vocab.json`` (``{token_text: id}``, token bytes written through GPT-2's bytes-to-unicode
  map, single bytes first in GPT-2's order so other loaders accept them) and ``merges.txt``
  (a ``#version: 0.2`` line, accepted or absent on read, then ``left right`` a line, in
  rank order);
- ``tokenizer_config.json``: the pre-tokenization pattern and special tokens, so reopening
  the GPT-2 files needs no remembered settings.

Special tokens are stored as their own text (like GPT-2's ``<|endoftext|>``), not mapped.
"""

from __future__ import annotations

import json
import os
from functools import partial
from itertools import repeat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from core.formats.bytes_unicode import bytes_to_string, bytes_to_unicode, string_to_bytes
from core.formats.atomic import write_atomically
from core.formats.base import (
    MERGES_NAME,
    VOCAB_NAME,
    FormatError,
    Merges,
    TokenIds,
    Vocab,
    check_distinct_texts,
    decode_token_text,
    find_special_ids,
    json_string,
    json_token,
    key_where,
    line_pieces,
    load_json,
    merges_of_parts,
    read_text,
    vocab_at_once,
)
from core.pretokenize.patterns import BUILTIN_PATTERNS, GPT2_PATTERN, Pattern, resolve_pattern

__all__ = [
    "MERGES_HEADER", "config_text", "load_gpt2_files", "load_gpt2_merges", "load_gpt2_vocab",
    "load_special_token_ids", "load_tokenizer_config", "merges_chunks", "merges_text", "save_gpt2_files",
    "vocab_json_chunks", "vocab_json_text",
]

MERGES_HEADER = "#version: 0.2"


def vocab_json_chunks(vocab: Vocab, special_ids: dict[str, int]) -> Iterator[str]:
    """``vocab.json`` as pieces of text, one token at a time (see `core.formats.atomic`):
    the file is never whole in memory. The tokens are checked first, so an error comes
    before any text.

    Raises:
        FormatError: two tokens would be written as the same text.
    """
    by_id = {i: tok for tok, i in special_ids.items()}
    single_order = {bytes([b]): n for n, b in enumerate(bytes_to_unicode())}

    # Single bytes first, in GPT-2's order, then everything else by id.
    def order(item: tuple[int, bytes]) -> tuple[int, int]:
        token_id, token = item
        if token_id not in by_id and token in single_order:
            return (0, single_order[token])
        return (1, token_id)

    items = sorted(vocab.items(), key=order)
    check_distinct_texts(items, by_id, VOCAB_NAME)
    return _vocab_json_lines(items, by_id)


def _vocab_json_lines(items: list[tuple[int, bytes]], by_id: dict[int, str]) -> Iterator[str]:
    # exactly json.dumps(entries, ensure_ascii=False, indent=0)
    yield "{"
    for n, (token_id, token) in enumerate(items):
        special = by_id.get(token_id)
        text = json_string(special) if special is not None else json_token(token)
        yield from line_pieces(",\n" if n else "\n", text, f": {token_id}")
    yield "\n}\n" if items else "}\n"


def vocab_json_text(vocab: Vocab, special_ids: dict[str, int]) -> str:
    """The whole ``vocab.json`` (`vocab_json_chunks` joined)."""
    return "".join(vocab_json_chunks(vocab, special_ids))


def merges_chunks(vocab: Vocab, merges: Sequence[tuple[bytes, bytes]]) -> Iterator[str]:
    """``merges.txt`` as pieces of text, one merge at a time; checked first.

    Raises:
        FormatError: a merge uses a token that is not in the vocabulary.
    """
    known = set(vocab.values())
    for rank, (left, right) in enumerate(merges):
        for part in (left, right, left + right):
            if part not in known:
                raise FormatError(
                    f"{MERGES_NAME}: merge {rank} ({left[:60]!r}, {right[:60]!r}) uses {part[:60]!r}, "
                    "which is not in the vocabulary"
                )
    return _merges_lines(merges)


def _merges_lines(merges: Sequence[tuple[bytes, bytes]]) -> Iterator[str]:
    yield MERGES_HEADER + "\n"
    for left, right in merges:
        yield from line_pieces(f"{bytes_to_string(left)} ", bytes_to_string(right), "\n")


def merges_text(vocab: Vocab, merges: Sequence[tuple[bytes, bytes]]) -> str:
    """The whole ``merges.txt`` (`merges_chunks` joined)."""
    return "".join(merges_chunks(vocab, merges))


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
        (out / VOCAB_NAME, vocab_json_chunks(vocab, special_ids)),
        (out / MERGES_NAME, merges_chunks(vocab, merges)),
    ]
    return write_atomically(texts)


def load_gpt2_vocab(vocab_path: str | os.PathLike[str], special_tokens: Iterable[str] | None = ()) -> Vocab:
    """Read a GPT-2 ``vocab.json`` into ``{id: token_bytes}``.

    Args:
        special_tokens: keys taken as their own text (not through the byte map); ``None``:
            the special tokens are not known, so a key the byte map cannot spell is taken
            as a special token's own text.

    Raises:
        FormatError: not JSON, not an object of integer ids in range (`TokenIds`), an id
            given twice, or a key with a character outside GPT-2's byte map that is not a special token.
    """
    path = Path(vocab_path)
    data, text = load_json(path)
    if not isinstance(data, dict):
        raise FormatError(f"{path}:1: expected a JSON object {{token: id}}, got {type(data).__name__}")
    specials = set(special_tokens or ())
    vocab = vocab_at_once(data, specials, TokenIds(len(data)).limit)
    if vocab is not None:
        return vocab
    vocab = {}  # something is wrong, or a key is not byte-mapped: key by key, to say which
    ids = TokenIds(len(data))
    for key, raw_id in data.items():
        token_id = ids.add(key, raw_id, partial(key_where, path, text, key))
        if key in specials:
            vocab[token_id] = key.encode("utf-8")
        else:
            try:
                vocab[token_id] = string_to_bytes(key)  # at C speed: a huge token is slow a character at a time
            except KeyError:
                if special_tokens is None:
                    vocab[token_id] = key.encode("utf-8")
                else:
                    vocab[token_id] = decode_token_text(key, specials, key_where(path, text, key))
    return vocab


def load_gpt2_merges(merges_path: str | os.PathLike[str], vocab: Vocab | None = None) -> Merges:
    """Read a GPT-2 ``merges.txt`` (an optional ``#version`` first line, then ``left right`` lines).

    With ``vocab``, every merge's parts and result must be tokens of it.

    Raises:
        FormatError: a line that is not two tokens separated by one space, a character
            outside GPT-2's byte map, or a merge whose parts or result are not in ``vocab``.
    """
    path = Path(merges_path)
    text = read_text(path)
    known = set(vocab.values()) if vocab is not None else None
    merges = _merges_at_once(text, known)
    if merges is not None:
        return merges
    merges = []  # something is wrong: line by line, to say where
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
        left = decode_token_text(parts[0], set(), where)
        right = decode_token_text(parts[1], set(), where)
        if known is not None:
            for part in (left, right, left + right):
                if part not in known:
                    raise FormatError(
                        f"{where}: the merge {line!r} needs the token {bytes_to_string(part)!r}, "
                        "which is not in the vocabulary; do vocab.json and merges.txt belong together?"
                    )
        merges.append((left, right))
    return merges


def _merges_at_once(text: str, known: set[bytes] | None) -> Merges | None:
    """A well-formed merges file's merges, its tokens mapped to bytes in one pass (50,000
    lines in milliseconds, not a call per token); ``None`` at anything else, for the line
    by line reading to report."""
    if "\r" in text:  # (CRLF lines: line by line)
        return None
    lines = text.split("\n")
    if lines[0].startswith("#version"):
        lines[0] = ""
    lines = list(filter(None, lines))
    if list(map(str.count, lines, repeat(" "))).count(1) != len(lines):  # one space a line: two tokens
        return None
    return merges_of_parts(" ".join(lines).split(" "), known)  # (split at C speed; an empty part: None)


def load_gpt2_files(
    vocab_path: str | os.PathLike[str],
    merges_path: str | os.PathLike[str],
    special_tokens: Iterable[str] | None = (),
) -> tuple[Vocab, Merges]:
    """Read GPT-2 format ``vocab.json`` + ``merges.txt``: ``-> (vocab, merges)``.

    Args:
        vocab_path: the ``vocab.json``.
        merges_path: the ``merges.txt``.
        special_tokens: keys of ``vocab.json`` to take as their own text (not byte-mapped);
            ``None``: see `load_gpt2_vocab`.

    Raises:
        FormatError: either file is malformed (the message names the file and line).
        OSError: a file cannot be read.
    """
    vocab = load_gpt2_vocab(vocab_path, special_tokens)
    return vocab, load_gpt2_merges(merges_path, vocab)


def config_text(special_tokens: Sequence[str], pattern: Pattern, special_ids: Mapping[str, int] | None = None) -> str:
    config: dict[str, object] = {
        "tokenizer_type": "byte_level_bpe",
        "created_by": "bpe-studio",
        "pattern_name": pattern.name,
        "pattern": pattern.source,
        "special_tokens": list(special_tokens),
    }
    if special_ids is not None:
        # tokenizer.tiktoken holds no special tokens: an Encoding takes them with these ids
        config["special_token_ids"] = {t: special_ids[t] for t in special_tokens}
    return json.dumps(config, ensure_ascii=False, indent=2) + "\n"


def load_special_token_ids(path: str | os.PathLike[str]) -> dict[str, int] | None:
    """The ``special_token_ids`` of a ``tokenizer_config.json`` (``None`` when it has none).

    Raises:
        FormatError: not an object of special token -> non-negative integer id, or a token
            that is not in ``special_tokens``.
    """
    p = Path(path)
    data, _ = load_json(p)
    ids = data.get("special_token_ids") if isinstance(data, dict) else None
    if ids is None:
        return None
    if not isinstance(ids, dict):
        raise FormatError(f"{p}: key 'special_token_ids' must map each special token to a non-negative integer id")
    for token, token_id in ids.items():
        if isinstance(token_id, bool) or not isinstance(token_id, int) or token_id < 0:
            shown = repr(token_id) if len(repr(token_id)) <= 40 else repr(token_id)[:40] + "…"
            raise FormatError(
                f"{p}: key 'special_token_ids': token {token[:60]!r} has id {shown}; "
                "each special token needs a non-negative integer id"
            )
    specials, _ = load_tokenizer_config(p)
    if set(ids) != set(specials):
        raise FormatError(f"{p}: 'special_token_ids' and 'special_tokens' list different tokens")
    return {t: ids[t] for t in specials}


def load_tokenizer_config(path: str | os.PathLike[str]) -> tuple[list[str], Pattern]:
    """Read the ``tokenizer_config.json`` sidecar: ``-> (special_tokens, pattern)``.

    A missing ``pattern`` means GPT-2's; missing ``special_tokens`` means none.

    Raises:
        FormatError: not JSON, or a key of the wrong type or an invalid pattern.
    """
    p = Path(path)
    data, _ = load_json(p)
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
