"""Special tokens: validating them and splitting text at them (longest match first).

Special tokens such as ``<|endoftext|>`` split the text: nothing is pre-tokenized, counted
or merged across them. Where two special tokens overlap at one position the longest wins:
with ``["<|a|>", "<|a|><|b|>"]`` the text ``"<|a|><|b|>"`` is one special token.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from typing import AnyStr, Generic, cast

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
    and the tokens' length, whatever their number.

    Short tokens are found by one regex shaped as their trie (`trie_pattern`: at each
    character one branch at most can go on, so a position costs the same for 20,000 tokens
    as for one); tokens longer than `LONG_SPECIAL` by substring search. The regex is compiled
    on first use (for thousands of tokens that takes seconds, and a tokenizer often needs
    only one of its str and bytes matchers).
    """

    def __init__(self, tokens: Sequence[AnyStr]) -> None:
        self.tokens: list[AnyStr] = sorted(tokens, key=len, reverse=True)
        self._long: list[AnyStr] = [t for t in self.tokens if len(t) > LONG_SPECIAL]
        self._regex: re.Pattern[AnyStr] | None = None

    def _short_regex(self) -> re.Pattern[AnyStr] | None:
        """The regex of the tokens up to `LONG_SPECIAL` long (``None``: there are none)."""
        if self._regex is None and len(self.tokens) > len(self._long):
            self._regex = _trie_regex(self.tokens[len(self._long) :])  # two threads: the same regex
        return self._regex

    def finditer(self, text: AnyStr, pos: int = 0, endpos: int | None = None) -> Iterator[SpecialMatch[AnyStr]]:
        """The occurrences in ``text[pos:endpos]``, left to right, not overlapping."""
        end = len(text) if endpos is None else min(endpos, len(text))
        regex = self._short_regex()
        if not self._long:
            if regex is not None:
                for m in regex.finditer(text, pos, end):
                    yield SpecialMatch(m.start(), m.group())
            return
        # The next short match, and where each long token occurs next (-1: nowhere before
        # end); a long token is longer than any short one, so it wins where both start.
        longs = self._long
        short = regex.search(text, pos, end) if regex is not None else None
        nexts = [text.find(t, pos, end) for t in longs]
        while True:
            best = -1
            for k, at in enumerate(nexts):  # longest first: the first of the leftmost wins
                if at >= 0 and (best < 0 or at < nexts[best]):
                    best = k
            if best >= 0 and (short is None or nexts[best] <= short.start()):
                match = SpecialMatch(nexts[best], longs[best])
            elif short is not None:
                match = SpecialMatch(short.start(), short.group())
            else:
                return
            yield match
            pos = match.end()
            for k, at in enumerate(nexts):
                if 0 <= at < pos:
                    nexts[k] = text.find(longs[k], pos, end)
            if short is not None and short.start() < pos:
                assert regex is not None
                short = regex.search(text, pos, end)

    def split(self, text: AnyStr) -> list[AnyStr]:
        """``[stretch, token, stretch, ..., token, stretch]``: the stretches between the
        occurrences (maybe empty) and the occurrences, alternately, as ``re.split`` with a
        group gives them (in one C call when no token is long)."""
        regex = self._short_regex()
        if not self._long:
            return regex.split(text) if regex is not None else [text]
        parts, pos = [], 0
        for m in self.finditer(text):
            parts += [text[pos : m.start()], m.group()]
            pos = m.end()
        parts.append(text[pos:])
        return parts

    def search(self, text: AnyStr) -> SpecialMatch[AnyStr] | None:
        """The first occurrence in ``text``, or ``None``."""
        return next(self.finditer(text), None)


_Trie = dict[str, "_Trie"]
"""A trie node: character -> child; the key ``""`` marks the end of a token."""


def trie_pattern(tokens: Iterable[str]) -> str:
    """A regex matching exactly ``tokens``, the longest where several match, shaped as their trie.

    ``["ab", "abc", "ad", "xd"] -> "a(?:b(?:c|)|d)|xd"``: the branches at each point start
    with different characters (the regex engine skips a branch on its first one), a token
    that another one extends gets an empty last branch (the longer is tried first), a chain
    of single children is one literal, and branches that differ only in their first
    character share one (``["a1", "b1"] -> "[ab]1"``). ``tokens`` must be non-empty strings.
    """
    root: _Trie = {}
    for token in tokens:
        node = root
        for ch in token:
            node = node.setdefault(ch, {})
        node[""] = {}
    return "|".join(_branches(root))


def _branches(node: _Trie) -> list[str]:
    """The alternatives below ``node``, one per first character (or class of them)."""
    firsts: dict[str, list[str]] = {}  # what follows the first character -> those characters
    for ch in sorted(node):
        if not ch:
            continue
        run, child = [], node[ch]
        while len(child) == 1 and "" not in child:  # a chain: one literal
            (nxt, child), = child.items()
            run.append(nxt)
        rest = re.escape("".join(run))
        if len(child) > ("" in child):
            inner = _branches(child)
            if "" in child:
                rest += f"(?:{'|'.join(inner)}|)"
            else:
                rest += f"(?:{'|'.join(inner)})" if len(inner) > 1 else inner[0]
        firsts.setdefault(rest, []).append(ch)
    return [
        (re.escape(chars[0]) if len(chars) == 1 else "[" + "".join(map(re.escape, chars)) + "]") + rest
        for rest, chars in firsts.items()
    ]


def _trie_regex(tokens: Sequence[AnyStr]) -> re.Pattern[AnyStr]:
    """`trie_pattern` of ``tokens`` compiled, as one group (for ``split``); bytes as Latin-1
    characters (one per byte)."""
    if isinstance(tokens[0], bytes):
        pattern = trie_pattern(bytes(t).decode("latin-1") for t in tokens)
        return cast("re.Pattern[AnyStr]", re.compile(f"({pattern})".encode("latin-1")))
    return cast("re.Pattern[AnyStr]", re.compile(f"({trie_pattern(str(t) for t in tokens)})"))


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
