"""Tokenizer files: GPT-2 ``vocab.json`` + ``merges.txt``, a settings sidecar, HF ``tokenizer.json``
and tiktoken's ``tokenizer.tiktoken``.

The one place to import them from. The formats live in `core.formats.gpt2_files` (GPT-2 files and
the ``tokenizer_config.json`` sidecar), `core.formats.hf_json` (``tokenizer.json``) and
`core.formats.tiktoken_file` (``.tiktoken`` rank files), on what they share in
`core.formats.base`; this module adds `save_tokenizer`, which writes all five files of a
tokenizer at once.

Every write is atomic: each file is written to a temporary file in the target directory
and renamed over the target only once all of them were written, so a failed export leaves
no partial file. A malformed file raises `FormatError` naming the file and the line or key.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from core.formats.bytes_unicode import bytes_to_unicode
from core.formats.atomic import check_output_dir, new_file_mode, write_atomically
from core.formats.base import (
    CONFIG_NAME,
    MERGES_NAME,
    TOKENIZER_JSON_NAME,
    UNUSED_IDS_ALLOWED,
    VOCAB_NAME,
    FormatError,
    check_writable_special_tokens,
    Merges,
    Vocab,
    find_special_ids,
    pattern_of,
)
from core.formats.gpt2_files import (
    MERGES_HEADER,
    config_text,
    load_gpt2_files,
    load_gpt2_merges,
    load_gpt2_vocab,
    load_tokenizer_config,
    merges_chunks,
    merges_text,
    save_gpt2_files,
    vocab_json_chunks,
    vocab_json_text,
)
from core.formats.hf_json import (
    load_tokenizer_json,
    oniguruma_source,
    save_tokenizer_json,
    tokenizer_json_chunks,
    tokenizer_json_dict,
    tokenizer_json_text,
)
from core.formats.tiktoken_file import KNOWN_ENCODINGS, TIKTOKEN_NAME, load_tiktoken_ranks, tiktoken_chunks, tiktoken_text
from core.pretokenize.patterns import Pattern

__all__ = [
    "CONFIG_NAME",
    "FormatError",
    "KNOWN_ENCODINGS",
    "MERGES_HEADER",
    "MERGES_NAME",
    "Merges",
    "TIKTOKEN_NAME",
    "TOKENIZER_JSON_NAME",
    "VOCAB_NAME",
    "Vocab",
    "bytes_to_unicode",
    "check_save_tokenizer",
    "find_special_ids",
    "load_gpt2_files",
    "load_gpt2_merges",
    "load_gpt2_vocab",
    "load_tiktoken_ranks",
    "load_tokenizer_config",
    "load_tokenizer_json",
    "new_file_mode",
    "oniguruma_source",
    "save_gpt2_files",
    "save_tokenizer",
    "save_tokenizer_json",
    "tiktoken_text",
    "tokenizer_json_dict",
]


def save_tokenizer(
    out_dir: str | os.PathLike[str],
    vocab: Vocab,
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Sequence[str] | None,
    pattern: str | Pattern,
) -> list[Path]:
    """Write every format into ``out_dir``: vocab.json, merges.txt, tokenizer_config.json,
    tokenizer.json, tokenizer.tiktoken.

    Nothing is replaced unless all five files could be written. Ids may have gaps (ids no
    token has): every file loads back to the same ids, within the loaders' bound
    (`core.formats.base.UNUSED_IDS_ALLOWED` unused ids); ids beyond it are refused here.

    Args:
        out_dir: the directory (created if missing).
        vocab: id -> token bytes (special tokens included).
        merges: the merges in rank order.
        special_tokens: the special tokens, each of which must be in ``vocab``.
        pattern: ``"gpt2"``, ``"gpt4"``, a regex string or a resolved `Pattern`.

    Returns:
        The five paths written.

    Raises:
        FormatError: the tokenizer cannot be written (a merge or special token that is not
            in the vocabulary, two tokens that would get the same text, ids the files could
            not be read back with).
        OSError: the directory cannot be written.
    """
    out = Path(out_dir)
    pat = pattern_of(pattern)
    specials = list(special_tokens or [])
    check_writable_special_tokens(specials)
    _check_ids_load_back(vocab)
    special_ids = find_special_ids(vocab, merges, specials)
    missing = [t for t in specials if t not in special_ids]
    if missing:
        raise FormatError(f"special token {missing[0]!r} is not in the vocabulary; add it before saving")
    texts = [
        (out / VOCAB_NAME, vocab_json_chunks(vocab, special_ids)),
        (out / MERGES_NAME, merges_chunks(vocab, merges)),
        (out / CONFIG_NAME, config_text(specials, pat, special_ids)),
        (out / TOKENIZER_JSON_NAME, tokenizer_json_chunks(vocab, merges, specials, pat)),
        (out / TIKTOKEN_NAME, tiktoken_chunks(vocab, special_ids)),
    ]
    return write_atomically(texts)


def _check_ids_load_back(vocab: Vocab) -> None:
    """Refuse ids no loader would read back: negative, or leaving more than
    `UNUSED_IDS_ALLOWED` ids unused (every loader's bound on a file's ids)."""
    if not vocab:
        return
    lowest, highest = min(vocab), max(vocab)
    limit = len(vocab) + UNUSED_IDS_ALLOWED
    if lowest < 0 or highest >= limit:
        bad = lowest if lowest < 0 else highest
        raise FormatError(
            f"vocab: the token {vocab[bad][:60]!r} has id {bad:,}, but a vocabulary of {len(vocab):,} tokens "
            f"needs ids from 0 to {limit - 1:,} (at most {UNUSED_IDS_ALLOWED:,} left unused) for its files to "
            "be read back; number the tokens closer together"
        )


def check_save_tokenizer(out_dir: str | os.PathLike[str], special_tokens: Sequence[str] | None) -> None:
    """Check what `save_tokenizer` needs that is known before training: that files can be
    created in ``out_dir`` and that the special tokens can be written. Call it before a
    long training run, so a mistake costs nothing.

    Raises:
        NotADirectoryError, PermissionError (OSError): ``out_dir`` cannot be written.
        InvalidSpecialTokensError: a special token cannot be written (it says why).
    """
    check_writable_special_tokens(list(special_tokens or []))
    check_output_dir(out_dir)
