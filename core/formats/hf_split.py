r"""Hugging Face ``Split`` pre-tokenizers as patterns whose matches are the pre-tokens.

A ``Split`` cuts the text into the matches of its regex ``S`` and the stretches between
them (gaps), then, by its ``behavior`` (``invert`` swapping which pieces count as
matches), keeps every piece (``Isolated``), drops the matches (``Removed``), joins runs of
matches (``Contiguous``) or joins each match to the gap before (``MergedWithPrevious``)
or after it (``MergedWithNext``). Pre-tokenization here keeps a pattern's matches, so
each behaviour becomes one regex (`split_source`) built from ``(?>S)`` (the match a
search finds at a position) and the gap ``(?:(?!S)(?s:.))++`` (up to where ``S`` next
matches); ``Removed`` uses ``\G`` and ``\K`` to step over matches without keeping them.
Oniguruma's ``^`` and ``$`` are line anchors: they become ``(?m:^)``, ``(?m:$)`` here.

The regex starts with a comment naming the ``Split`` it came from, so that saving it as a
``tokenizer.json`` again writes that ``Split`` (`split_node`). A ``Split`` this cannot
follow exactly is refused with the reason (`SplitError`): a regex that matches the empty
string, or one that cannot be repeated inside a larger regex (back-references, recursion,
``\G``, ``\K``, verbose mode).
"""

from __future__ import annotations

from typing import Any

import regex

from core.errors import InvalidPatternError
from core.pretokenize.patterns import check_no_empty_match

__all__ = ["BEHAVIORS", "SplitError", "line_anchors", "split_node", "split_source"]

BEHAVIORS = ("Isolated", "Removed", "Contiguous", "MergedWithPrevious", "MergedWithNext")
"""``Split.behavior`` as ``tokenizer.json`` spells it."""

_S = "\0"  # stands for the Split's regex in the templates
_MATCH = f"(?>{_S})"
_GAP_CHAR = f"(?:(?!{_S})(?s:.))"
_GAP = f"{_GAP_CHAR}++"
_MATCH_THEN_GAP = f"{_MATCH}{_GAP_CHAR}*+|{_GAP}"  # a match takes the gap after it
_GAP_THEN_MATCH = f"{_GAP}{_MATCH}?+|{_MATCH}"  # a gap takes the match after it

# (behavior, invert) -> the template; with invert the gaps count as matches
_TEMPLATES = {
    ("Isolated", False): f"{_MATCH}|{_GAP}",
    ("Isolated", True): f"{_MATCH}|{_GAP}",
    ("Contiguous", False): f"(?>{_MATCH}+)|{_GAP}",
    ("Contiguous", True): f"(?>{_MATCH}+)|{_GAP}",
    ("Removed", False): rf"\G(?>{_MATCH}*)\K{_GAP}",
    ("Removed", True): _S,  # the matches themselves
    ("MergedWithPrevious", False): _GAP_THEN_MATCH,
    ("MergedWithPrevious", True): _MATCH_THEN_GAP,
    ("MergedWithNext", False): _MATCH_THEN_GAP,
    ("MergedWithNext", True): _GAP_THEN_MATCH,
}

_MARKER = regex.compile(r"\(\?#hf Split (\w+)( invert)?\)")

# Syntax that changes meaning when the regex is repeated inside a larger one.
_NOT_REPEATABLE = regex.compile(
    r"(?<!\\)(?:\\\\)*\\(?:[1-9]|g|k|G|K)|\(\?(?:P=|P>|R\)|[+-]?\d|&)"
)


class SplitError(ValueError):
    """A ``Split`` pre-tokenizer that cannot be followed exactly (the message says why)."""


def split_source(node: dict[str, Any]) -> str:
    """The regex whose matches are the pre-tokens of the ``Split`` ``node``:
    ``split_source({"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Removed", "invert": True}) -> "a"``.

    Raises:
        SplitError: an unknown behaviour, a pattern that is not ``{"Regex": str}`` or
            ``{"String": str}``, or a regex that cannot be followed exactly (the reason named).
    """
    behavior, invert = node.get("behavior"), node.get("invert", False)
    if behavior not in BEHAVIORS:
        raise SplitError(f"behavior {behavior!r} is not one of {', '.join(BEHAVIORS)}")
    if not isinstance(invert, bool):
        raise SplitError(f"invert {invert!r} is not true or false")
    pattern = node.get("pattern")
    if isinstance(pattern, dict) and isinstance(pattern.get("Regex"), str) and len(pattern) == 1:
        source = pattern["Regex"]
    elif isinstance(pattern, dict) and isinstance(pattern.get("String"), str) and len(pattern) == 1:
        source = regex.escape(pattern["String"], special_only=True)
    else:
        raise SplitError(f"pattern {pattern!r} is neither {{'Regex': str}} nor {{'String': str}}")
    if not source:
        raise SplitError("the pattern is empty, so it matches the empty string everywhere")
    source = line_anchors(source)
    try:
        compiled = regex.compile(source)
        check_no_empty_match(compiled, source)
    except regex.error as e:
        raise SplitError(f"the regex {source!r} does not compile here: {e}") from e
    except InvalidPatternError as e:
        raise SplitError(f"{e}; Hugging Face cuts at empty matches, which is not followed here") from e
    template = _TEMPLATES[(behavior, invert)]
    if template == _S:
        return source
    if (found := _NOT_REPEATABLE.search(source)) is not None or compiled.flags & regex.VERBOSE:
        what = found.group() if found is not None else "(?x)"
        raise SplitError(
            f"the regex {source!r} uses {what} (a back-reference, recursion, \\G, \\K or verbose mode), "
            f"which is not followed here with behavior {behavior!r}{' and invert' if invert else ''}"
        )
    marker = f"(?#hf Split {behavior}{' invert' if invert else ''})"
    return marker + template.replace(_S, source)


def line_anchors(source: str) -> str:
    """``source`` with each ``^``/``$`` outside a class made a line anchor (``(?m:^)``), as
    Hugging Face's Oniguruma reads them: ``line_anchors("^a$") -> "(?m:^)a(?m:$)"``."""
    out, depth, i = [], 0, 0
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            out.append(source[i:i + 2])
            i += 2
            continue
        if not depth and source.startswith(("(?m:^)", "(?m:$)"), i):  # already one (read back)
            out.append(source[i:i + 6])
            i += 6
            continue
        if ch == "[":
            depth += 1
            out.append(ch)
            i += 1
            if source.startswith("^", i):
                out.append("^")
                i += 1
            if source.startswith("]", i):  # a leading ] is a literal
                out.append("]")
                i += 1
            continue
        if depth and ch == "]":
            depth -= 1
        elif not depth and source.startswith("(?#", i):
            end = source.find(")", i)
            end = len(source) if end < 0 else end + 1
            out.append(source[i:end])
            i = end
            continue
        elif not depth and ch in "^$":
            ch = f"(?m:{ch})"
        out.append(ch)
        i += 1
    return "".join(out)


def split_node(source: str) -> dict[str, Any] | None:
    """The ``Split`` that `split_source` made ``source`` from, or None if it made no such regex."""
    found = _MARKER.match(source)
    if found is None or found.group(1) not in BEHAVIORS:
        return None
    behavior, invert = found.group(1), found.group(2) is not None
    template, body = _TEMPLATES[(behavior, invert)], source[found.end():]
    copies = template.count(_S)
    size, rest = divmod(len(body) - len(template) + copies, copies)
    if rest or size <= 0:
        return None
    start = template.index(_S)
    inner = body[start:start + size]
    if template.replace(_S, inner) != body:
        return None
    return {"type": "Split", "pattern": {"Regex": inner}, "behavior": behavior, "invert": invert}
