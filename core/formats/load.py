"""The one tokenizer loader: every form the application and the CLI open, found from a path.

`load_tokenizer_files(path)` reads, into plain data (`TokenizerFiles`):

- a directory holding ``vocab.json`` + ``merges.txt`` (GPT-2 format; a BPE Studio export), or
  one prefixed pair such as ``gpt2_vocab.json`` + ``gpt2_merges.txt``, or ``tokenizer.json``;
- a ``vocab.json`` or ``merges.txt`` file (prefixed or not) with its partner beside it;
- a Hugging Face ``tokenizer.json`` (any other file name: it is read as one).

GPT-2 files take their pattern and special tokens from a ``tokenizer_config.json`` beside
them when there is one. Without it the pattern is GPT-2's, and the special tokens are
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
from dataclasses import dataclass
from pathlib import Path

from core.formats.atomic import folder_read_lock
from core.formats.base import CONFIG_NAME, MERGES_NAME, TOKENIZER_JSON_NAME, VOCAB_NAME, Merges, Vocab, pattern_of
from core.formats.gpt2_files import load_gpt2_files, load_tokenizer_config
from core.formats.hf_json import load_tokenizer_json
from core.pretokenize.patterns import Pattern

__all__ = ["TokenizerFiles", "find_gpt2_pair", "load_gpt2_tokenizer", "load_tokenizer_files", "unreachable_tokens"]


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
    if (special_tokens is None or pattern is None) and config.is_file():
        config_specials, config_pattern = load_tokenizer_config(config)
        special_tokens = config_specials if special_tokens is None else special_tokens
        pattern = config_pattern if pattern is None else pattern
    vocab, merges = load_gpt2_files(vocab_path, merges_path, special_tokens)
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


def load_tokenizer_files(path: str | os.PathLike[str]) -> TokenizerFiles:
    """Read the tokenizer at ``path`` (a folder or a file; see the module docstring).

    Raises:
        FileNotFoundError: nothing loadable is there (the message says what was expected).
        FormatError: a file is malformed (the message names the file and line or key).
    """
    p = Path(path)
    for _ in range(3):
        folder = p if p.is_dir() else p.parent
        with folder_read_lock(folder):
            if p.is_dir() == (folder == p):  # the folder locked is still the one to read
                return _load_files(p)
    return _load_files(p)


def _load_files(p: Path) -> TokenizerFiles:
    if p.is_dir():
        pair = find_gpt2_pair(p)
        if pair is not None:
            return load_gpt2_tokenizer(*pair)
        if (p / TOKENIZER_JSON_NAME).is_file():
            return _load_json(p / TOKENIZER_JSON_NAME)
        raise FileNotFoundError(
            f"{p} holds no tokenizer: expected vocab.json and merges.txt (or a prefixed pair "
            "such as gpt2_vocab.json and gpt2_merges.txt), or tokenizer.json"
        )
    if not p.is_file():
        raise FileNotFoundError(f"{p} does not exist; give a tokenizer folder or file")
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
    return _load_json(p)


def _load_json(path: Path) -> TokenizerFiles:
    vocab, merges, specials, pattern = load_tokenizer_json(path)
    return TokenizerFiles(vocab, merges, specials, pattern)
