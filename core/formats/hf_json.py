"""Hugging Face ``tokenizer.json`` for byte-level BPE: written so that
``tokenizers.Tokenizer.from_file`` encodes exactly as `core.Tokenizer` does, and read back.

Adds `tokenizer_json_dict`/`save_tokenizer_json`/`load_tokenizer_json`, and
`oniguruma_source` (a ``regex`` pattern as HF's Oniguruma must read it). GPT-2's pattern is
HF's own ``ByteLevel`` regex; any other travels as a ``Split`` before a ``ByteLevel``
(every ``Split`` behaviour, with or without ``invert``, is read: `core.formats.hf_split`);
special tokens are added tokens with all their fields.

A ``tokenizer.json`` is read only if this tokenizer encodes exactly as Hugging Face would
with it: a part it does not implement (a normalizer such as ``Lowercase``, a post-processor
that adds tokens, a model option such as ``dropout`` or ``byte_fallback``, truncation,
added tokens that strip spaces, a format ``version`` other than ``"1.0"``) is refused
with a `FormatError` naming the part (`check_supported`), never loaded approximately.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import regex

from core.formats.bytes_unicode import bytes_to_string
from core.formats.atomic import write_atomically
from core.formats.base import (
    TOKENIZER_JSON_NAME,
    FormatError,
    Merges,
    TokenIds,
    Vocab,
    check_distinct_texts,
    decode_token_text,
    find_special_ids,
    json_merges_at_once,
    json_string,
    json_token,
    line_pieces,
    load_json,
    pattern_of,
    vocab_at_once,
)
from core.formats.hf_split import SplitError, split_node, split_source
from core.pretokenize.patterns import BUILTIN_PATTERNS, Pattern, resolve_pattern

__all__ = ["SUPPORTED_VERSION", "check_supported", "is_tokenizer_json", "load_tokenizer_json", "oniguruma_source",
           "regex_only_syntax", "save_tokenizer_json", "tokenizer_from_json", "tokenizer_json_chunks",
           "tokenizer_json_dict", "tokenizer_json_text"]


# An atom followed by a possessive interval, e.g. ``\p{N}{1,3}+``. Oniguruma (which HF
# tokenizers uses) reads ``{1,3}+`` as "one or more of {1,3}", so it becomes an atomic group.
_ATOM = r"(?:\\[pP]\{[^}]*\}|\\[pP]\w|\[(?:\\.|[^\]\\])*\]|\\.|[^\\()\[\]{}|*+?])"
_POSSESSIVE_INTERVAL = regex.compile(rf"({_ATOM})(\{{\d+(?:,\d*)?\}})\+")


def oniguruma_source(source: str) -> str:
    r"""The pattern as HF ``tokenizers`` (Oniguruma) must read it to match as ``regex`` does.

    ``oniguruma_source(r"\p{N}{1,3}+") -> r"(?>\p{N}{1,3})"``
    """
    return _POSSESSIVE_INTERVAL.sub(r"(?>\1\2)", source)


# Syntax only the ``regex`` module reads: Oniguruma (HF) and fancy-regex (tiktoken) refuse
# it, or, for POSIX classes (ASCII there, Unicode here), match other text.
_REGEX_ONLY = [
    (regex.compile(r"\(\?[a-zA-Z]*V[01]"), "the version flag (?V0)/(?V1) (and with it set operations in classes)"),
    (regex.compile(r"(?<!\\)(?:\\\\)*\\X"), r"\X (a grapheme cluster)"),
    (regex.compile(r"\[:\^?[a-z]+:\]"), "a POSIX class such as [[:alpha:]]"),
    (regex.compile(r"(?<!\\)(?:\\\\)*\\L<"), r"a named list \L<...>"),
]


def regex_only_syntax(source: str) -> str | None:
    """What in the pattern ``source`` only the ``regex`` module reads (so a ``tokenizer.json``
    or ``.tiktoken`` export with it fails to load there, or gives other ids), or None."""
    for found, what in _REGEX_ONLY:
        if found.search(source):
            return what
    return None


SUPPORTED_VERSION = "1.0"
"""The ``tokenizer.json`` format version read and written (Hugging Face ``tokenizers`` 0.x)."""

_VOCAB_SLOT, _MERGES_SLOT = "\0vocab\0", "\0merges\0"


def _checked_skeleton(
    vocab: Vocab,
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Sequence[str],
    pattern: str | Pattern,
) -> tuple[dict[str, Any], dict[int, str]]:
    """The ``tokenizer.json`` structure with placeholders for ``model.vocab`` and
    ``model.merges``, after checking the tokens; and the special tokens by id."""
    pat = pattern_of(pattern)
    special_ids = find_special_ids(vocab, merges, special_tokens)
    missing = [t for t in special_tokens if t not in special_ids]
    if missing:
        raise FormatError(f"{TOKENIZER_JSON_NAME}: special token {missing[0]!r} is not in the vocabulary")
    by_id = {i: t for t, i in special_ids.items()}
    check_distinct_texts(sorted(vocab.items()), by_id, TOKENIZER_JSON_NAME)
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True}
    if pat.name == "gpt2":
        pre_tokenizer: dict[str, Any] = {**byte_level, "use_regex": True}
    else:
        # "Removed" + invert keeps exactly the matches, like findall (text no alternative
        # matches is dropped); for patterns that match everything it equals "Isolated". A
        # pattern read from a Split is written as that Split (`core.formats.hf_split`).
        split = split_node(pat.source) or {"type": "Split", "pattern": {"Regex": oniguruma_source(pat.source)},
                                           "behavior": "Removed", "invert": True}
        pre_tokenizer = {"type": "Sequence", "pretokenizers": [split, {**byte_level, "use_regex": False}]}
    added: list[dict[str, Any]] = [
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
    skeleton: dict[str, Any] = {
        "version": SUPPORTED_VERSION,
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
            "vocab": _VOCAB_SLOT,
            "merges": _MERGES_SLOT,
        },
    }
    return skeleton, by_id


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
    data, by_id = _checked_skeleton(vocab, merges, special_tokens, pattern)
    data["model"]["vocab"] = {by_id.get(i) or bytes_to_string(vocab[i]): i for i in sorted(vocab)}
    data["model"]["merges"] = [[bytes_to_string(a), bytes_to_string(b)] for a, b in merges]
    return data


def tokenizer_json_chunks(
    vocab: Vocab, merges: Sequence[tuple[bytes, bytes]], special_tokens: Sequence[str], pattern: str | Pattern
) -> Iterator[str]:
    """``tokenizer.json`` (indented by 2) as pieces of text, a token at a time: the file
    is never whole in memory (see `core.formats.atomic`). Checked before any text."""
    skeleton, by_id = _checked_skeleton(vocab, merges, special_tokens, pattern)
    return _tokenizer_json_pieces(skeleton, by_id, vocab, merges)


def _tokenizer_json_pieces(
    skeleton: dict[str, Any], by_id: dict[int, str], vocab: Vocab, merges: Sequence[tuple[bytes, bytes]]
) -> Iterator[str]:
    # exactly json.dumps(tokenizer_json_dict(...), ensure_ascii=False, indent=2)
    text = json.dumps(skeleton, ensure_ascii=False, indent=2)
    before_vocab, rest = text.split(json_string(_VOCAB_SLOT), 1)
    between, after_merges = rest.split(json_string(_MERGES_SLOT), 1)
    yield before_vocab
    if vocab:
        for n, token_id in enumerate(sorted(vocab)):
            special = by_id.get(token_id)
            text = json_string(special) if special is not None else json_token(vocab[token_id])
            yield from line_pieces("{\n      " if n == 0 else ",\n      ", text, f": {token_id}")
        yield "\n    }"
    else:
        yield "{}"
    yield between
    if merges:
        for n, (left, right) in enumerate(merges):
            first = "[\n      [\n        " if n == 0 else ",\n      [\n        "
            yield from line_pieces(f"{first}{json_token(left)},\n        ", json_token(right), "\n      ]")
        yield "\n    ]"
    else:
        yield "[]"
    yield after_merges
    yield "\n"


def tokenizer_json_text(
    vocab: Vocab, merges: Sequence[tuple[bytes, bytes]], special_tokens: Sequence[str], pattern: Pattern
) -> str:
    """The whole ``tokenizer.json`` (`tokenizer_json_chunks` joined)."""
    chunks = tokenizer_json_chunks(vocab, merges, special_tokens, pattern)
    return "".join(chunks)


def save_tokenizer_json(
    path: str | os.PathLike[str],
    vocab: Vocab,
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Sequence[str] = (),
    pattern: str | Pattern = "gpt2",
) -> Path:
    """Write a Hugging Face ``tokenizer.json`` (atomically) and return its path."""
    chunks = tokenizer_json_chunks(vocab, merges, special_tokens, pattern_of(pattern))
    return write_atomically([(Path(path), chunks)])[0]


# model key -> the values under which it changes nothing (HF's defaults for byte-level BPE)
_NEUTRAL_MODEL_KEYS: dict[str, tuple[Any, ...]] = {
    "dropout": (None, 0, 0.0),
    "unk_token": (None,),
    "continuing_subword_prefix": (None, ""),
    "end_of_word_suffix": (None, ""),
    "byte_fallback": (None, False),
    "ignore_merges": (None, False),
}


def _type_of(node: Any) -> str:
    return str(node.get("type")) if isinstance(node, dict) and "type" in node else type(node).__name__


def check_supported(data: dict[str, Any], where: str) -> None:
    """Refuse a ``tokenizer.json`` with parts this tokenizer does not implement.

    Raises:
        FormatError: naming the part (``key normalizer: Lowercase ...``) and saying why.
    """
    version = data.get("version", SUPPORTED_VERSION)
    if version != SUPPORTED_VERSION:
        raise FormatError(
            f"{where}: key version: {version!r} is not supported; this reads tokenizer.json "
            f"version {SUPPORTED_VERSION!r} (as Hugging Face tokenizers 0.x writes it)"
        )
    normalizer = data.get("normalizer")
    if normalizer is not None:
        raise FormatError(
            f"{where}: key normalizer: {_type_of(normalizer)} is not implemented here (it changes the text "
            "before tokenization, so the ids would differ from Hugging Face's); only tokenizers without "
            "a normalizer can be opened"
        )
    for key, allowed in (("post_processor", "adds or changes ids"), ("decoder", "changes decoded text")):
        node = data.get(key)
        if node is not None and _type_of(node) != "ByteLevel":
            raise FormatError(
                f"{where}: key {key}: {_type_of(node)} is not implemented here (it {allowed}); "
                "only none or ByteLevel is supported"
            )
    for key in ("truncation", "padding"):
        if data.get(key) is not None:
            raise FormatError(f"{where}: key {key}: is not supported (it changes the ids); set it to null")
    model = data.get("model")
    if isinstance(model, dict):
        for key, neutral in _NEUTRAL_MODEL_KEYS.items():
            value = model.get(key)
            if value not in neutral:
                raise FormatError(
                    f"{where}: key model.{key}: {value!r} is not implemented here (the ids would differ "
                    "from Hugging Face's); only byte-level BPE without it is supported"
                )
    for n, entry in enumerate(data.get("added_tokens") or []):
        if isinstance(entry, dict):
            for key in ("single_word", "lstrip", "rstrip"):
                if entry.get(key):
                    raise FormatError(
                        f"{where}: key added_tokens[{n}].{key}: true is not implemented here "
                        f"(the token {entry.get('content')!r} would take spaces or match differently); set it to false"
                    )


def _pattern_from_pre_tokenizer(pre: Any, where: str) -> Pattern:
    def byte_level(node: Any) -> bool:
        return isinstance(node, dict) and node.get("type") == "ByteLevel"

    if byte_level(pre) and pre.get("use_regex", True):
        if pre.get("add_prefix_space"):
            raise FormatError(f"{where}: key pre_tokenizer.add_prefix_space=true is not supported")
        return resolve_pattern("gpt2")
    steps = pre.get("pretokenizers") if isinstance(pre, dict) and pre.get("type") == "Sequence" else None
    if (
        isinstance(steps, list)
        and len(steps) == 2
        and isinstance(steps[0], dict)
        and steps[0].get("type") == "Split"
        and byte_level(steps[1])
        and not steps[1].get("use_regex", True)
    ):
        if steps[1].get("add_prefix_space"):
            raise FormatError(f"{where}: key pre_tokenizer.pretokenizers[1].add_prefix_space=true is not supported")
        split = steps[0]
        regex_node = split.get("pattern")
        # our own export (and HF's Isolated split of a pattern that leaves no gap) of a built-in pattern
        if isinstance(regex_node, dict) and isinstance(regex_node.get("Regex"), str) and (
            split.get("behavior"), split.get("invert", False)
        ) in (("Isolated", False), ("Isolated", True), ("Removed", True)):
            builtin = {oniguruma_source(s): name for name, s in BUILTIN_PATTERNS.items()}
            if regex_node["Regex"] in builtin:
                return resolve_pattern(builtin[regex_node["Regex"]])
        try:
            return resolve_pattern(split_source(split))
        except (SplitError, ValueError) as e:
            raise FormatError(f"{where}: key pre_tokenizer.pretokenizers[0]: this Split cannot be followed "
                              f"exactly, so the tokenizer is not opened: {e}") from e
    if isinstance(steps, list) and sum(isinstance(s, dict) and s.get("type") == "Split" for s in steps) > 1:
        raise FormatError(
            f"{where}: key pre_tokenizer: a Sequence of several Split pre-tokenizers is not supported "
            "(only one Split followed by ByteLevel without regex)"
        )
    raise FormatError(
        f"{where}: key pre_tokenizer: only byte-level tokenizers are supported "
        "(ByteLevel, or Split(Regex) followed by ByteLevel without regex)"
    )


def load_tokenizer_json(path: str | os.PathLike[str]) -> tuple[Vocab, Merges, list[str], Pattern]:
    """Read a Hugging Face byte-level BPE ``tokenizer.json``: ``-> (vocab, merges, special_tokens, pattern)``.

    Added tokens become special tokens (matched whole before pre-tokenization, as HF does).

    Raises:
        FormatError: not JSON, not a byte-level BPE model, a part not implemented here
            (`check_supported`), an id out of range or given to two tokens (`TokenIds`),
            or a malformed key (named).
    """
    p = Path(path)
    data, _ = load_json(p)
    return tokenizer_from_json(data, str(p))


def is_tokenizer_json(data: Any) -> bool:
    """Whether parsed JSON is meant as a ``tokenizer.json`` at all (an object with a ``model``),
    so that another JSON file is called "not a tokenizer file" rather than a broken one."""
    return isinstance(data, dict) and "model" in data


def tokenizer_from_json(data: Any, where: str) -> tuple[Vocab, Merges, list[str], Pattern]:
    """`load_tokenizer_json` of JSON already parsed; ``where`` names the file in errors."""
    if not isinstance(data, dict):
        raise FormatError(f"{where}:1: expected a JSON object")
    check_supported(data, where)
    model = data.get("model")
    if not isinstance(model, dict) or model.get("type", "BPE") != "BPE":
        raise FormatError(f"{where}: key model: expected a BPE model")
    added = data.get("added_tokens") or []
    if not isinstance(added, list):
        raise FormatError(f"{where}: key added_tokens: expected a list")
    specials: list[str] = []
    added_ids: dict[str, tuple[int, object]] = {}  # content -> (index in added_tokens, id as given)
    for n, entry in enumerate(added):
        if not (isinstance(entry, dict) and isinstance(entry.get("content"), str) and entry["content"]):
            raise FormatError(f"{where}: key added_tokens[{n}]: expected {{'id': int, 'content': str, ...}}")
        content = entry["content"]
        if content in added_ids:
            raise FormatError(
                f"{where}: key added_tokens[{n}]: the token {content!r} is added twice "
                f"(first as added_tokens[{added_ids[content][0]}])"
            )
        specials.append(content)
        added_ids[content] = (n, entry.get("id"))
    pattern = _pattern_from_pre_tokenizer(data.get("pre_tokenizer"), where)
    raw_vocab = model.get("vocab")
    if not isinstance(raw_vocab, dict):
        raise FormatError(f"{where}: key model.vocab: expected an object {{token: id}}")
    special_set = set(specials)
    # every distinct id: the model's, and the added tokens' that the model does not list with the same id
    count = len(raw_vocab) + sum(raw_vocab.get(tok, object()) != token_id for tok, (_, token_id) in added_ids.items())
    ids = TokenIds(count)
    at_once = vocab_at_once(raw_vocab, special_set, ids.limit)
    if at_once is not None:
        vocab: Vocab = at_once
        ids.owner = dict(zip(raw_vocab.values(), raw_vocab))  # (for the added tokens checked below)
    else:  # something is wrong, or a key is not byte-mapped: key by key, to say which
        vocab = {}
        for key, raw_id in raw_vocab.items():
            key_where = f"{where}: key model.vocab[{key!r}]"
            vocab[ids.add(key, raw_id, key_where)] = decode_token_text(key, special_set, key_where)
    model_ids = set(vocab)
    for tok, (n, raw_id) in added_ids.items():
        token_id = ids.check(tok, raw_id, f"{where}: key added_tokens[{n}]")
        if token_id in model_ids:
            if vocab[token_id] != tok.encode("utf-8"):
                raise FormatError(
                    f"{where}: key added_tokens[{n}]: {tok!r} has id {token_id}, which model.vocab gives "
                    f"another token ({bytes_to_string(vocab[token_id][:60])!r})"
                )
            continue
        ids.add(tok, token_id, f"{where}: key added_tokens[{n}]")
        vocab[token_id] = tok.encode("utf-8")
    raw_merges = model.get("merges", [])
    if not isinstance(raw_merges, list):
        raise FormatError(f"{where}: key model.merges: expected a list")
    known = set(vocab.values())
    merges = json_merges_at_once(raw_merges, known)
    if merges is not None:
        return vocab, merges, specials, pattern
    merges = []  # something is wrong: merge by merge, to say which
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
        left = decode_token_text(parts[0], set(), key_where)
        right = decode_token_text(parts[1], set(), key_where)
        for part in (left, right, left + right):
            if part not in known:
                raise FormatError(f"{key_where}: token {bytes_to_string(part)!r} is not in model.vocab")
        merges.append((left, right))
    return vocab, merges, specials, pattern
