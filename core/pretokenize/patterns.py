"""Pre-tokenization patterns: the built-in GPT-2 and GPT-4 regexes and their safe cut points.

A *safe cut point* is a position where the pattern is guaranteed to end one pre-token and
start the next, whatever text surrounds it. Text can be cut there cheaply (no regex) and
each piece pre-tokenized on its own with exactly the result of running the pattern over
the whole text. For GPT-2 every place where a non-whitespace character is followed by a
whitespace character is such a point (no GPT-2 pre-token contains non-whitespace followed
by whitespace). GPT-4's pattern lets punctuation swallow trailing ``\\r``/``\\n``, so there
only whitespace other than ``\\r``/``\\n`` may follow the cut. Custom patterns get no cut
points of their own: they are only cut at special tokens.

A custom pattern comes from the user or from a file (``tokenizer_config.json``,
``tokenizer.json``) and may backtrack catastrophically (``(a|a)+$`` takes exponential time
on ``aaaa…ab``): its regex work is bounded by a timeout that grows with the text
(`PATTERN_TIMEOUT_SECONDS` plus `PATTERN_SECONDS_PER_CHAR` a character, far beyond what
any reasonable pattern needs), and running past it raises `PatternTimeoutError` instead
of hanging. The built-in patterns run without one.

`resolve_pattern` is the one check every entry point uses: a name in any case is the
built-in pattern, a plain word that names none is refused (`pattern_name`), and so is a
regex that matches the empty string on the empty text or anywhere in `EMPTY_MATCH_PROBE`
(`check_no_empty_match`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import regex

from core.errors import InvalidPatternError, PatternTimeoutError

PATTERN_TIMEOUT_SECONDS = 2.0
PATTERN_SECONDS_PER_CHAR = 10e-6
"""A custom pattern may spend ``2 s + 10 µs per character`` on one text: far more than an
ordinary pattern needs, so only a runaway one (catastrophic backtracking) is stopped."""

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
"""The GPT-2 pre-tokenization regex (as in OpenAI's encoder.py and tiktoken's ``gpt2``)."""

GPT4_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"""
    r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
"""The GPT-4 (tiktoken ``cl100k_base``) pre-tokenization regex."""

BUILTIN_PATTERNS = {"gpt2": GPT2_PATTERN, "gpt4": GPT4_PATTERN}

_SUPERBPE_SPLIT = r"""\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r/]*\n?| +(?!\S)"""
SUPERBPE_PATTERN = rf"""{_SUPERBPE_SPLIT}|(?:(?!{_SUPERBPE_SPLIT})[^\n])+\n?|\n"""
r"""SuperBPE's stage-2 cut (VARIANTS.md section 2) as one regex whose matches are the pre-tokens.

The text is cut after every ``\n``, then each line is split by
``\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)`` in Hugging Face's "isolated" mode
(every match a pre-token, and every stretch between matches). Here: the split regex with
``[\r\n/]*`` read as a line reads it (``[\r/]*\n?``: a line holds one ``\n``, at its end),
else a stretch up to where it matches next or to the line's end, else a lone ``\n``. Every
``\n`` ends a pre-token, so a cut after it is safe. (`core.variants.superbpe`; the oracle
cuts line by line, literally, and the tests compare the two.)"""


@dataclass(frozen=True)
class Pattern:
    """A resolved pre-tokenization pattern.

    Attributes:
        name: ``"gpt2"``, ``"gpt4"``, ``"superbpe"`` (SuperBPE's stage 2, by its source
            only: it is no pattern to train plain BPE with) or ``"custom"``.
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
        """Pre-tokens of ``text``: ``resolve_pattern("gpt2").findall("Hi  there") -> ["Hi", " ", " there"]``.

        Raises:
            PatternTimeoutError: a custom pattern took too long on ``text``.
        """
        timeout = self._timeout(len(text))
        try:
            if self.compiled.groups:  # findall would return the groups, not the matches
                return [m.group() for m in self.compiled.finditer(text, timeout=timeout) if m.end() > m.start()]
            return self.compiled.findall(text, timeout=timeout)
        except TimeoutError as e:
            raise self._too_long(len(text), timeout) from e

    def finditer(self, text: str, pos: int = 0, endpos: int | None = None) -> Iterator[regex.Match[str]]:
        """The matches in ``text[pos:endpos]``, with the same bound on a custom pattern's work."""
        end = len(text) if endpos is None else endpos
        timeout = self._timeout(end - pos)
        try:
            yield from self.compiled.finditer(text, pos, end, timeout=timeout)
        except TimeoutError as e:
            raise self._too_long(end - pos, timeout) from e

    def _timeout(self, chars: int) -> float | None:
        if self.name != "custom":
            return None
        return PATTERN_TIMEOUT_SECONDS + chars * PATTERN_SECONDS_PER_CHAR

    def _too_long(self, chars: int, timeout: float | None) -> PatternTimeoutError:
        return PatternTimeoutError(
            f"the pre-tokenization pattern {self.source!r} takes too long on this text (more than "
            f"{timeout or 0:.0f} s on {chars:,} characters); it backtracks catastrophically — "
            "simplify it (avoid nested or overlapping repeats such as (a|a)+)"
        )


# Whitespace characters after which GPT-4 punctuation runs cannot continue.
_CUTS = {
    "gpt2": r"(?<=\S)(?=\s)",
    "gpt4": r"(?<=\S)(?=[^\S\r\n])",
    "superbpe": r"(?<=\n)",
}


_NAME_LIKE = regex.compile(r"[A-Za-z0-9_-]+")

EMPTY_MATCH_PROBE = (
    "Hello, World! It's 3.14 — don't we'll I'M\tfine;\n\r\n  x__y-z 123456 ¿Qué? naïve "
    "Ünïcödé ΑΒΓ αβγ Привет 日本語テキスト 한국어 ٣٤ e\u0301 😀👍🏽 "
    "<|tag|> a\x00b\u2028 \u00a0end.  "
)
"""The text on which a pattern must never match the empty string (`resolve_pattern`):
letters of several scripts and cases, digits, spaces, tabs, line breaks, punctuation,
contractions, marks and symbols, so that each kind of boundary occurs."""


def pattern_name(pattern: str) -> str | None:
    """The built-in name ``pattern`` spells (any case, surrounding spaces ignored), or None:
    ``pattern_name(" GPT4 ") -> "gpt4"``.

    Raises:
        InvalidPatternError: ``pattern`` is a plain word (letters, digits, ``-``, ``_``) that
            names no built-in pattern (``"gpt3"``, ``"cl100k"``): taken as a regex it would
            keep only that word and drop the rest of the text.
    """
    word = pattern.strip()
    if word.lower() in BUILTIN_PATTERNS:
        return word.lower()
    if _NAME_LIKE.fullmatch(word):
        names = ", ".join(repr(n) for n in BUILTIN_PATTERNS)
        raise InvalidPatternError(
            f"pattern={pattern!r} is not a known pattern name; the names are {names} (any case). "
            "A regex made only of letters, digits, '-' and '_' would keep just that word and drop "
            "the rest of the text, so it is refused"
        )
    return None


def check_no_empty_match(compiled: regex.Pattern[str], source: str) -> None:
    """Refuse a pattern that matches the empty string: on the empty text, or at any position
    of `EMPTY_MATCH_PROBE` (``(?=a)``, ``\\b``, ``x*``). An empty pre-token carries no text
    and makes the search loop on the spot, so every match must consume a character.

    Raises:
        InvalidPatternError: with the position and what follows it.
    """
    try:
        if compiled.fullmatch("", timeout=PATTERN_TIMEOUT_SECONDS) is not None:
            where = "on the empty text"
        else:
            where = ""
            for pos in range(len(EMPTY_MATCH_PROBE) + 1):
                m = compiled.match(EMPTY_MATCH_PROBE, pos, timeout=PATTERN_TIMEOUT_SECONDS)
                if m is not None and m.end() == m.start():
                    where = f"before {EMPTY_MATCH_PROBE[pos:pos + 12]!r}" if pos < len(EMPTY_MATCH_PROBE) \
                        else "at the end of a text"
                    break
    except TimeoutError as e:
        raise InvalidPatternError(
            f"the pre-tokenization pattern {source!r} takes too long on a short test text; it "
            "backtracks catastrophically: simplify it (avoid nested or overlapping repeats such as (a|a)+)"
        ) from e
    if where:
        raise InvalidPatternError(
            f"the pre-tokenization pattern {source!r} matches the empty string ({where}); "
            "every match must consume at least one character (a lookaround, \\b or a repeat such as "
            "x* alone matches nothing)"
        )


@lru_cache(maxsize=32)
def resolve_pattern(pattern: str = "gpt2") -> Pattern:
    """Turn a built-in name (``"gpt2"``, ``"gpt4"``, any case) or a regex string into a `Pattern`.

    Raises:
        InvalidPatternError: a plain word that is no built-in name (`pattern_name`), a regex
            that does not compile, or one that matches the empty string (`check_no_empty_match`).
    """
    name = pattern_name(pattern) if isinstance(pattern, str) else None
    if name is not None:
        source = BUILTIN_PATTERNS[name]
    else:
        source, name = pattern, "custom"
        if source == GPT2_PATTERN:
            name = "gpt2"
        elif source == GPT4_PATTERN:
            name = "gpt4"
        elif source == SUPERBPE_PATTERN:
            name = "superbpe"
    if not source:
        raise InvalidPatternError("the pre-tokenization pattern is empty; use 'gpt2', 'gpt4' or a regex")
    try:
        compiled = regex.compile(source)
    except regex.error as e:
        raise InvalidPatternError(f"invalid pre-tokenization pattern {source!r}: {e}") from e
    if name == "custom":
        check_no_empty_match(compiled, source)
    cut = regex.compile(_CUTS[name]) if name in _CUTS else None
    return Pattern(name=name, source=source, compiled=compiled, cut_before=cut)
