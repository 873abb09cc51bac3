"""Special tokens: validating them and splitting text at them (longest match first).

Special tokens such as ``<|endoftext|>`` split the text: nothing is pre-tokenized, counted
or merged across them. Where two special tokens overlap at one position the longest wins:
with ``["<|a|>", "<|a|><|b|>"]`` the text ``"<|a|><|b|>"`` is one special token.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import regex

from core.errors import InvalidSpecialTokensError


def validate_special_tokens(special_tokens: Iterable[str] | None) -> list[str]:
    """Check the special tokens and return them as a list, in the order given.

    Raises:
        InvalidSpecialTokensError: a token is empty, not a string, given twice, or not
            valid text (lone surrogates cannot be stored in any file).
    """
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


def special_token_regex(special_tokens: Sequence[str]) -> regex.Pattern[str] | None:
    """A regex matching any of ``special_tokens``, longest first; ``None`` if there are none."""
    if not special_tokens:
        return None
    ordered = sorted(special_tokens, key=len, reverse=True)
    return regex.compile("|".join(regex.escape(t) for t in ordered))


def split_on_specials(
    text: str, special_tokens: Sequence[str]
) -> Iterator[tuple[str, bool]]:
    """Cut ``text`` into ``(piece, is_special)`` pairs; ordinary pieces are never empty.

    ``split_on_specials("a<|e|>b", ["<|e|>"]) -> ("a", False), ("<|e|>", True), ("b", False)``
    """
    return split_with(text, special_token_regex(special_tokens))


def split_with(text: str, splitter: regex.Pattern[str] | None) -> Iterator[tuple[str, bool]]:
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
