"""The one tokenizer loader: every form the application and the CLI open, found from a path.

`load_tokenizer_files(path)` reads, into plain data (`TokenizerFiles`):

- a directory holding ``vocab.json`` + ``merges.txt`` (GPT-2 format; a BPE Studio export), or
  one prefixed pair such as ``gpt2_vocab.json`` + ``gpt2_merges.txt``, or ``tokenizer.json``;
- a ``vocab.json`` or ``merges.txt`` file (prefixed or not) with its partner beside it;
- a tiktoken ``.tiktoken`` rank file (or a file of another name whose first line is
  ``BASE64 RANK``, like Llama 3's ``tokenizer.model``), or a directory holding only ``tokenizer.tiktoken``
  (`core.formats.tiktoken_file`): its pattern and special tokens come from the
  ``encoding``/``pattern``/``special_tokens`` arguments, else from a
  ``tokenizer_config.json`` beside it, else from its name when that is a known tiktoken
  encoding (``cl100k_base.tiktoken``); with none of them it is refused, never guessed;
- a Hugging Face ``tokenizer.json`` (a file of another name is read as one if it is a JSON
  object with a ``model``; any other file "is not a tokenizer file").

Only regular files are read: a device or a FIFO is refused before it is opened. Every id
is checked as it is read (`core.formats.base.TokenIds`).

GPT-2 files take their pattern and special tokens from a ``tokenizer_config.json`` beside
them when there is one, whose ``special_token_ids`` must agree with ``vocab.json`` (or
``tokenizer.json``: `check_config_ids`). Without it the pattern is GPT-2's, and the special tokens are
the tokens no merge makes (other than single bytes) — GPT-2's own files give
``["<|endoftext|>"]``, as tiktoken's ``gpt2`` has; a ``vocab.json`` key that GPT-2's byte
map cannot spell (``<｜begin▁of▁sentence｜>``) is such a token's own text.
`core.Tokenizer.load` builds a tokenizer from what this returns.

The files are read under the folder's shared lock (`core.formats.atomic.folder_read_lock`),
so an export being written into the same folder at that moment cannot mix its
``vocab.json`` with the previous ``merges.txt``: the reader sees one export or the other.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from core.formats.atomic import folder_read_lock
from core.formats.base import CONFIG_NAME, MERGES_NAME, TOKENIZER_JSON_NAME, VOCAB_NAME, Merges, Vocab, pattern_of
from core.formats.base import FormatError, TokenIds, find_special_ids, load_json, not_regular_error
from core.formats.gpt2_files import load_gpt2_files, load_special_token_ids, load_tokenizer_config
from core.formats.hf_json import is_tokenizer_json, load_tokenizer_json, tokenizer_from_json
from core.formats.tiktoken_file import (
    KNOWN_ENCODINGS,
    TIKTOKEN_NAME,
    known_encoding,
    load_tiktoken_ranks,
    merges_from_ranks,
    place_special_tokens,
    resolve_tiktoken_pattern,
    vocab_from_ranks,
)
from core.pretokenize.patterns import Pattern

__all__ = [
    "TokenizerFiles", "check_config_ids", "find_gpt2_pair", "load_gpt2_tokenizer", "load_tiktoken_tokenizer",
    "load_tokenizer_files", "unreachable_tokens",
]


@dataclass(frozen=True)
class TokenizerFiles:
    """A tokenizer as read from files: what `core.Tokenizer` is built from."""

    vocab: Vocab
    merges: Merges
    special_tokens: list[str]
    pattern: Pattern


def unreachable_tokens(vocab: Vocab, merges: Merges) -> list[str]:
    """Tokens that only a special token can produce: not a single byte, made by no merge."""
    made = {left + right for left, right in merges}
    found = []
    for token_id in sorted(vocab):
        token = vocab[token_id]
        if len(token) > 1 and token not in made:
            try:
                found.append(token.decode("utf-8"))
            except UnicodeDecodeError:
                continue
    return list(dict.fromkeys(found))


def load_gpt2_tokenizer(
    vocab_path: str | os.PathLike[str],
    merges_path: str | os.PathLike[str],
    special_tokens: list[str] | None = None,
    pattern: str | Pattern | None = None,
) -> TokenizerFiles:
    """Read GPT-2 format files; special tokens and pattern not given come from a
    ``tokenizer_config.json`` beside ``vocab.json``, else as the module docstring says."""
    config = Path(vocab_path).with_name(CONFIG_NAME)
    config_read = (special_tokens is None or pattern is None) and config.is_file()
    if config_read:
        config_specials, config_pattern = load_tokenizer_config(config)
        special_tokens = config_specials if special_tokens is None else special_tokens
        pattern = config_pattern if pattern is None else pattern
    vocab, merges = load_gpt2_files(vocab_path, merges_path, special_tokens)
    if config_read:
        check_config_ids(config, vocab, merges, Path(vocab_path))
    specials = unreachable_tokens(vocab, merges) if special_tokens is None else list(special_tokens)
    return TokenizerFiles(vocab, merges, specials, pattern_of(pattern or "gpt2"))


def find_gpt2_pair(folder: Path) -> tuple[Path, Path] | None:
    """``vocab.json`` + ``merges.txt`` in ``folder``, else its one prefixed pair
    (``gpt2_vocab.json`` + ``gpt2_merges.txt``); ``None`` if there is none.

    Raises:
        FileNotFoundError: several prefixed pairs, so it is not clear which one is meant.
    """
    plain = (folder / VOCAB_NAME, folder / MERGES_NAME)
    if all(p.is_file() for p in plain):
        return plain
    pairs = []
    for vocab in sorted(folder.glob(f"*{VOCAB_NAME}")):
        merges = _partner(vocab, VOCAB_NAME, MERGES_NAME)
        if vocab.is_file() and merges.is_file():
            pairs.append((vocab, merges))
    if len(pairs) > 1:
        names = ", ".join(v.name for v, _ in pairs)
        raise FileNotFoundError(f"{folder} holds several tokenizers ({names}); open one of the vocab files")
    return pairs[0] if pairs else None


def _partner(path: Path, suffix: str, partner_suffix: str) -> Path:
    """``x_vocab.json`` -> ``x_merges.txt`` (``suffix`` -> ``partner_suffix``, same prefix)."""
    return path.with_name(path.name[: -len(suffix)] + partner_suffix)


def load_tokenizer_files(
    path: str | os.PathLike[str],
    *,
    encoding: str | None = None,
    pattern: str | Pattern | None = None,
    special_tokens: list[str] | dict[str, int] | None = None,
) -> TokenizerFiles:
    """Read the tokenizer at ``path`` (a folder or a file; see the module docstring).

    Args:
        encoding, pattern, special_tokens: for a ``.tiktoken`` file only, as
            `load_tiktoken_tokenizer` takes them (other formats carry their own).

    Raises:
        FileNotFoundError: nothing loadable is there (the message says what was expected).
        FormatError: a file is malformed (the message names the file and line or key).
    """
    p = Path(path)
    for _ in range(3):
        folder = p if p.is_dir() else p.parent
        with folder_read_lock(folder):
            if p.is_dir() != (folder == p):
                continue  # the path became (or stopped being) a folder: lock the right one
            # A path that was no folder may become one (a first export) while it is read,
            # then read without that folder's lock: such a read is done again under it.
            try:
                files = _load_files(p, encoding, pattern, special_tokens)
            except (OSError, FormatError):
                if p.is_dir() != (folder == p):
                    continue
                raise
            if p.is_dir() == (folder == p):
                return files
    return _load_files(p, encoding, pattern, special_tokens)


def _load_files(
    p: Path,
    encoding: str | None,
    pattern: str | Pattern | None,
    special_tokens: list[str] | dict[str, int] | None,
) -> TokenizerFiles:
    if p.is_dir():
        pair = find_gpt2_pair(p)
        if pair is not None:
            return load_gpt2_tokenizer(*pair)
        if (p / TOKENIZER_JSON_NAME).is_file():
            return _load_json(p / TOKENIZER_JSON_NAME)
        if (p / TIKTOKEN_NAME).is_file():
            return load_tiktoken_tokenizer(
                p / TIKTOKEN_NAME, encoding=encoding, pattern=pattern, special_tokens=special_tokens
            )
        raise FileNotFoundError(
            f"{p} holds no tokenizer: expected vocab.json and merges.txt (or a prefixed pair "
            "such as gpt2_vocab.json and gpt2_merges.txt), tokenizer.json or tokenizer.tiktoken"
        )
    try:
        mode = p.stat().st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"{p} does not exist; give a tokenizer folder or file") from None
    if not stat.S_ISREG(mode):
        raise not_regular_error(p, mode)  # never opened: /dev/zero has no end, a FIFO may never answer
    if p.name.endswith(MERGES_NAME):
        vocab = _partner(p, MERGES_NAME, VOCAB_NAME)
        if not vocab.is_file():
            raise FileNotFoundError(f"{vocab} is missing; a merges file needs its vocab.json beside it")
        return load_gpt2_tokenizer(vocab, p)
    if p.name.endswith(VOCAB_NAME):
        merges = _partner(p, VOCAB_NAME, MERGES_NAME)
        if not merges.is_file():
            raise FileNotFoundError(f"{merges} is missing; it must be beside {p.name}")
        return load_gpt2_tokenizer(p, merges)
    if p.suffix == ".tiktoken" or _looks_like_ranks(p):
        return load_tiktoken_tokenizer(p, encoding=encoding, pattern=pattern, special_tokens=special_tokens)
    if p.name.endswith(TOKENIZER_JSON_NAME):
        return _load_json(p)
    return _load_other(p)


def _looks_like_ranks(path: Path) -> bool:
    """A rank file under another name (Llama 3's ``tokenizer.model``): ``BASE64 RANK`` first."""
    with open(path, "rb") as f:
        head = f.read(512).split(b"\n", 1)[0]
    return re.fullmatch(rb"[A-Za-z0-9+/]+={0,2} [0-9]+\r?", head) is not None


def _load_other(path: Path) -> TokenizerFiles:
    """A file of another name, read as a ``tokenizer.json`` if it is one (an object with a
    ``model``); any other JSON or text is "not a tokenizer file", not a broken one."""
    try:
        data, _ = load_json(path)
    except FormatError as e:
        data = e
    if not is_tokenizer_json(data):
        raise FormatError(
            f"{path} is not a tokenizer file (expected vocab.json + merges.txt, tokenizer.json "
            "or a .tiktoken rank file)"
        ) from (data if isinstance(data, FormatError) else None)
    vocab, merges, specials, pattern = tokenizer_from_json(data, str(path))
    return TokenizerFiles(vocab, merges, specials, pattern)


def load_tiktoken_tokenizer(
    path: str | os.PathLike[str],
    *,
    encoding: str | None = None,
    pattern: str | Pattern | None = None,
    special_tokens: list[str] | dict[str, int] | None = None,
) -> TokenizerFiles:
    """Read a ``.tiktoken`` rank file as a byte-level BPE tokenizer.

    Args:
        path: the rank file.
        encoding: a known tiktoken encoding (``"cl100k_base"``, ``"o200k_base"``,
            ``"r50k_base"``, ``"p50k_base"``) whose pattern and special tokens to take.
        pattern: the pre-tokenization pattern (``"gpt2"``, ``"gpt4"``, a regex).
        special_tokens: the special tokens, with their ids (a dict) or in the order they
            fill the ids the ranks leave free, then follow them (a list).

    What is not given comes from ``encoding``, else from a ``tokenizer_config.json``
    beside the file, else from the file's name when it is a known encoding's
    (``cl100k_base.tiktoken``). Without a pattern from any of them the file is refused.

    Raises:
        FormatError: a malformed line (named), ranks given twice or (special tokens
            given without ids) with a gap they do not fill, a token
            that no two lower-ranked tokens make, or no pattern to be found.
    """
    p = Path(path)
    config = p.with_name(CONFIG_NAME)
    if encoding is not None and encoding not in KNOWN_ENCODINGS:
        raise FormatError(f"unknown tiktoken encoding {encoding!r}; known: {', '.join(KNOWN_ENCODINGS)}")
    known = KNOWN_ENCODINGS[encoding] if encoding is not None else None
    if known is None and not config.is_file():
        known = known_encoding(p)
    specials: list[str] | dict[str, int] | None = special_tokens
    if known is not None:
        pattern = known.pattern if pattern is None else pattern
        specials = dict(known.special_tokens) if specials is None else specials
    elif config.is_file() and (pattern is None or specials is None):
        config_specials, config_pattern = load_tokenizer_config(config)
        pattern = config_pattern if pattern is None else pattern
        if specials is None:
            config_ids = load_special_token_ids(config)  # {} when the export had none: ids known, none special
            specials = config_ids if config_ids is not None else config_specials
    if pattern is None:
        names = ", ".join(KNOWN_ENCODINGS)
        raise FormatError(
            f"{p}: a .tiktoken file holds no pre-tokenization pattern and there is no {CONFIG_NAME} beside it; "
            f"name its encoding ({names}): as the file's name (cl100k_base.tiktoken) or encoding=, or give "
            f"the pattern and special tokens: in a {CONFIG_NAME} beside it (as an export writes) or as "
            "pattern= and special_tokens="
        )
    ranks = load_tiktoken_ranks(p, spare_ids=len(specials or ()))
    if isinstance(specials, dict) and not (known is not None and special_tokens is None):
        # ids from a config or the caller are checked as a file's ids are; a known encoding's are constants
        ids = TokenIds(len(ranks) + len(specials))
        source = "the special_tokens argument" if special_tokens is not None else str(config)
        for token, token_id in specials.items():
            ids.check(token, token_id, source)
    special_ids = place_special_tokens(ranks, specials if specials is not None else [], str(p))
    merges = merges_from_ranks(ranks, str(p))
    vocab = vocab_from_ranks(ranks, special_ids)
    return TokenizerFiles(vocab, merges, list(special_ids), resolve_tiktoken_pattern(pattern))


def _load_json(path: Path) -> TokenizerFiles:
    vocab, merges, specials, pattern = load_tokenizer_json(path)
    config = path.with_name(CONFIG_NAME)
    if config.is_file():
        check_config_ids(config, vocab, merges, path)
    return TokenizerFiles(vocab, merges, specials, pattern)


def check_config_ids(config: Path, vocab: Vocab, merges: Merges, read_from: Path) -> None:
    """Refuse a ``tokenizer_config.json`` whose ``special_token_ids`` contradict the
    vocabulary read from ``read_from`` (``vocab.json`` or ``tokenizer.json``): the files
    do not belong together, and loading them would give ids that the other says otherwise.

    Raises:
        FormatError: naming both files, the token and both ids.
    """
    claimed = load_special_token_ids(config)
    if not claimed:
        return
    found = find_special_ids(vocab, merges, claimed)
    for token, token_id in claimed.items():
        actual = found.get(token)
        if actual == token_id:
            continue
        there = f"{read_from.name} gives it id {actual}" if actual is not None else f"{read_from.name} does not have it"
        raise FormatError(
            f"{config}: the special token {token!r} has id {token_id} there, but {there} ({read_from}); "
            "the files do not belong together: export the tokenizer again, or remove one of them"
        )
