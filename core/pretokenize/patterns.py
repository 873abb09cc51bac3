"""Pre-tokenization patterns: the built-in GPT-2 and GPT-4 regexes and their safe cut points.

A *safe cut point* is a position where the pattern is guaranteed to end one pre-token and
start the next, whatever text surrounds it. Text can be cut there cheaply (no regex) and
each piece pre-tokenized on its own with exactly the result of running the pattern over
the whole text. For GPT-2 every place where a non-whitespace character is followed by a
whitespace character is such a point (no GPT-2 pre-token contains non-whitespace followed
by whitespace). GPT-4's pattern lets punctuation swallow trailing ``\\r``/``\\n``, so there
only whitespace other than ``\\r``/``\\n`` may follow the cut. Custom patterns get no cut
points of their own: they are only cut at special tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import regex

from core.errors import InvalidPatternError

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
"""The GPT-2 pre-tokenization regex (as in OpenAI's encoder.py and tiktoken's ``gpt2``)."""

GPT4_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"""
    r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
"""The GPT-4 (tiktoken ``cl100k_base``) pre-tokenization regex."""

BUILTIN_PATTERNS = {"gpt2": GPT2_PATTERN, "gpt4": GPT4_PATTERN}


@dataclass(frozen=True)
class Pattern:
    """A resolved pre-tokenization pattern.

    Attributes:
        name: ``"gpt2"``, ``"gpt4"`` or ``"custom"``.
        source: the regex text.
        compiled: the compiled ``regex`` pattern.
        cut_before: a compiled regex that matches (zero-width) at every safe cut point, or
            ``None`` when the pattern has none (custom patterns).
    """

    name: str
    source: str
    compiled: regex.Pattern[str]
    cut_before: regex.Pattern[str] | None

    def findall(self, text: str) -> list[str]:
        """Pre-tokens of ``text``: ``resolve_pattern("gpt2").findall("Hi  there") -> ["Hi", " ", " there"]``."""
        if self.compiled.groups:  # findall would return the groups, not the matches
            return [m.group() for m in self.compiled.finditer(text) if m.end() > m.start()]
        return self.compiled.findall(text)


# Whitespace characters after which GPT-4 punctuation runs cannot continue.
_CUTS = {
    "gpt2": r"(?<=\S)(?=\s)",
    "gpt4": r"(?<=\S)(?=[^\S\r\n])",
}


@lru_cache(maxsize=32)
def resolve_pattern(pattern: str = "gpt2") -> Pattern:
    """Turn a built-in name (``"gpt2"``, ``"gpt4"``) or a regex string into a `Pattern`.

    Raises:
        InvalidPatternError: the regex does not compile, or matches the empty string
            (which would make pre-tokenization loop forever).
    """
    if pattern in BUILTIN_PATTERNS:
        source, name = BUILTIN_PATTERNS[pattern], pattern
    else:
        source, name = pattern, "custom"
        if source == GPT2_PATTERN:
            name = "gpt2"
        elif source == GPT4_PATTERN:
            name = "gpt4"
    if not source:
        raise InvalidPatternError("the pre-tokenization pattern is empty; use 'gpt2', 'gpt4' or a regex")
    try:
        compiled = regex.compile(source)
    except regex.error as e:
        raise InvalidPatternError(f"invalid pre-tokenization pattern {source!r}: {e}") from e
    if compiled.fullmatch("") is not None:
        raise InvalidPatternError(
            f"the pre-tokenization pattern {source!r} matches the empty string; "
            "every alternative must consume at least one character"
        )
    cut = regex.compile(_CUTS[name]) if name in _CUTS else None
    return Pattern(name=name, source=source, compiled=compiled, cut_before=cut)
