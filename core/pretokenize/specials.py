"""Special tokens: validating them and splitting text at them (longest match first).

Special tokens such as ``<|endoftext|>`` split the text: nothing is pre-tokenized, counted
or merged across them. Where two special tokens overlap at one position the longest wins:
with ``["<|a|>", "<|a|><|b|>"]`` the text ``"<|a|><|b|>"`` is one special token.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from typing import AnyStr, Generic

from core.errors import InvalidSpecialTokensError


def validate_special_tokens(special_tokens: Iterable[str] | None) -> list[str]:
    """Check the special tokens and return them as a list, in the order given.

    Raises:
        InvalidSpecialTokensError: a single string instead of a list, or a token that is
            empty, not a string, given twice, or not valid text (lone surrogates cannot be
            stored in any file).
    """
    if isinstance(special_tokens, (str, bytes)):  # list("<|endoftext|>") would be its characters
        raise InvalidSpecialTokensError(
            f"special_tokens must be a list of strings, not a {type(special_tokens).__name__}; "
            f"did you mean [{special_tokens!r}]?"
        )
    tokens = list(special_tokens or [])
    seen: set[str] = set()
    for token in tokens:
        if not isinstance(token, str):
            raise InvalidSpecialTokensError(f"special tokens must be strings, got {token!r}")
        if token == "":
            raise InvalidSpecialTokensError("a special token is empty; remove it or give it text")
        if token in seen:
            raise InvalidSpecialTokensError(f"the special token {token!r} is given twice")
        try:
            token.encode("utf-8")
        except UnicodeEncodeError as e:
            raise InvalidSpecialTokensError(
                f"the special token {token!r} is not valid text (lone surrogates, as undecodable "
                "bytes become); give special tokens as UTF-8 text"
            ) from e
        seen.add(token)
    return tokens


NATIVE_MAX_SPECIALS = 16
"""The native code (``BPE_MAX_SPECIALS`` in ``core/pretokenize/_scanner.h``) finds up to this
many special tokens itself, in the call that scans the text; with more, `SpecialMatcher`
cuts the text in Python and each stretch between them goes to C."""

LONG_SPECIAL = 64
"""Special tokens longer than this are found with substring searches, not a regex (compiling
a regex of a million-character literal takes seconds)."""


class SpecialMatch(Generic[AnyStr]):
    """One occurrence of a special token (the part of a regex match object that is used)."""

    __slots__ = ("_start", "_token")

    def __init__(self, start: int, token: AnyStr) -> None:
        self._start: int = start
        self._token: AnyStr = token

    def start(self) -> int:
        return self._start

    def end(self) -> int:
        return self._start + len(self._token)

    def group(self) -> AnyStr:
        return self._token


class SpecialMatcher(Generic[AnyStr]):
    """Finds special tokens in text (`str`) or bytes, leftmost first, the longest where two start
    at one place — as the regex ``"|".join(longest first)`` does, in time linear in the text
    and the tokens' length: short tokens through that regex, long ones by substring search.
    """

    def __init__(self, tokens: Sequence[AnyStr]) -> None:
        self.tokens: list[AnyStr] = sorted(tokens, key=len, reverse=True)
        self._long = bool(self.tokens) and len(self.tokens[0]) > LONG_SPECIAL
        self._regex: re.Pattern[AnyStr] | None = None
        if self.tokens and not self._long:
            escaped = [re.escape(t) for t in self.tokens]
            self._regex = re.compile("|".join(escaped) if isinstance(self.tokens[0], str) else b"|".join(escaped))

    def finditer(self, text: AnyStr, pos: int = 0, endpos: int | None = None) -> Iterator[SpecialMatch[AnyStr]]:
        """The occurrences in ``text[pos:endpos]``, left to right, not overlapping."""
        end = len(text) if endpos is None else min(endpos, len(text))
        if self._regex is not None:
            for m in self._regex.finditer(text, pos, end):
                yield SpecialMatch(m.start(), m.group())
            return
        # next[k]: where token k occurs next at or after pos (-1: nowhere before end)
        tokens = self.tokens
        nexts = [text.find(t, pos, end) for t in tokens]
        while True:
            best = -1
            for k, at in enumerate(nexts):  # tokens longest first: the first of the leftmost wins
                if at >= 0 and (best < 0 or at < nexts[best]):
                    best = k
            if best < 0:
                return
            start = nexts[best]
            yield SpecialMatch(start, tokens[best])
            pos = start + len(tokens[best])
            for k, at in enumerate(nexts):
                if 0 <= at < pos:
                    nexts[k] = text.find(tokens[k], pos, end)

    def search(self, text: AnyStr) -> SpecialMatch[AnyStr] | None:
        """The first occurrence in ``text``, or ``None``."""
        return next(self.finditer(text), None)


@lru_cache(maxsize=32)
def _matcher(tokens: tuple[str, ...]) -> SpecialMatcher[str]:
    return SpecialMatcher(list(tokens))


def special_token_regex(special_tokens: Sequence[str]) -> SpecialMatcher[str] | None:
    """A matcher of ``special_tokens`` (longest first at one place; `SpecialMatcher`), or
    ``None`` if there are none."""
    if not special_tokens:
        return None
    return _matcher(tuple(special_tokens))


@lru_cache(maxsize=32)
def special_bytes_regex(special_tokens: tuple[str, ...]) -> SpecialMatcher[bytes] | None:
    """`special_token_regex` for UTF-8 bytes (``None`` if there are none).

    A special token's first byte never continues a character, so its bytes match in a
    corpus's bytes exactly where its text matches the text decoded with ``surrogateescape``.
    """
    if not special_tokens:
        return None
    return SpecialMatcher([t.encode("utf-8") for t in special_tokens])


def split_on_specials(
    text: str, special_tokens: Sequence[str]
) -> Iterator[tuple[str, bool]]:
    """Cut ``text`` into ``(piece, is_special)`` pairs; ordinary pieces are never empty.

    ``split_on_specials("a<|e|>b", ["<|e|>"]) -> ("a", False), ("<|e|>", True), ("b", False)``
    """
    return split_with(text, special_token_regex(special_tokens))


def split_with(text: str, splitter: SpecialMatcher[str] | None) -> Iterator[tuple[str, bool]]:
    """`split_on_specials` with the regex of `special_token_regex` already compiled."""
    if splitter is None:
        if text:
            yield text, False
        return
    pos = 0
    for m in splitter.finditer(text):
        if m.start() > pos:
            yield text[pos : m.start()], False
        yield m.group(), True
        pos = m.end()
    if pos < len(text):
        yield text[pos:], False
