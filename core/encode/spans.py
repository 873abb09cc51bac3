"""Where each token of an encoded text lies in that text: `TokenSpan`, `TokenSpans` and
`token_spans`.

`Tokenizer.encode_with_spans` gives them; the application draws tokens from them. The text
is cut as encoding cuts it (special tokens, pieces, pre-tokens), and each pre-token's ids
come from the tokenizer's pre-token cache, so the spans' ids are the ids of `encode`.
The spans of a text are kept as columns (`TokenSpans`), one `TokenSpan` made when asked
for: as objects, the spans of a long text take several times the memory, and freeing them
held the GUI thread each time a new encoding replaced the shown one.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import overload

from core.encode.piece_encoder import TEXT_ERRORS, PieceEncoder
from core.pretokenize.pieces import split_pieces
from core.pretokenize.specials import SpecialMatcher, split_with

__all__ = ["TokenSpan", "TokenSpans", "token_spans"]


@dataclass(frozen=True, slots=True)
class TokenSpan:
    """Where one token of an encoded text lies in that text.

    Attributes:
        token_id: the token.
        byte_start, byte_end: the token's bytes in the UTF-8 encoding of the text.
        char_start, char_end: the characters the token touches. A token holding only part
            of a multi-byte character covers that whole character, so the tokens covering
            one character all include it (their character ranges overlap).
        partial: the token starts or ends inside a character.
        special: the token is a special token.
    """

    token_id: int
    byte_start: int
    byte_end: int
    char_start: int
    char_end: int
    partial: bool
    special: bool


_PARTIAL, _SPECIAL = 1, 2  # bits of TokenSpans.flags


def _span(token_id: int, byte_start: int, byte_end: int, char_start: int, char_end: int, flags: int) -> TokenSpan:
    """The `TokenSpan` of one row of `TokenSpans`' columns."""
    return TokenSpan(token_id, byte_start, byte_end, char_start, char_end, bool(flags & _PARTIAL),
                     bool(flags & _SPECIAL))


class TokenSpans(Sequence[TokenSpan]):
    """The spans of one encoding, in order, kept as columns: ``spans[k]`` is a `TokenSpan`,
    ``spans[a:b]`` a `TokenSpans`, ``spans.token_ids`` the ids (an ``array``). Equal to any
    sequence of the same `TokenSpan`s. Made empty and filled by `append` (its maker's job).

    Example: ``s = TokenSpans(); s.append(104, 0, 1, 0, 1, False, False)`` ->
    ``s[0] == TokenSpan(104, 0, 1, 0, 1, False, False)``, ``list(s.token_ids) == [104]``.
    """

    __slots__ = ("token_ids", "byte_starts", "byte_ends", "char_starts", "char_ends", "flags")

    def __init__(self) -> None:
        self.token_ids = array("q")
        self.byte_starts = array("q")
        self.byte_ends = array("q")
        self.char_starts = array("q")
        self.char_ends = array("q")
        self.flags = array("B")  # _PARTIAL | _SPECIAL

    def append(self, token_id: int, byte_start: int, byte_end: int, char_start: int, char_end: int,
               partial: bool, special: bool) -> None:
        self.token_ids.append(token_id)
        self.byte_starts.append(byte_start)
        self.byte_ends.append(byte_end)
        self.char_starts.append(char_start)
        self.char_ends.append(char_end)
        self.flags.append((_PARTIAL if partial else 0) | (_SPECIAL if special else 0))

    def __len__(self) -> int:
        return len(self.token_ids)

    @overload
    def __getitem__(self, index: int) -> TokenSpan: ...

    @overload
    def __getitem__(self, index: slice) -> TokenSpans: ...

    def __getitem__(self, index: int | slice) -> TokenSpan | TokenSpans:
        if isinstance(index, slice):
            part = TokenSpans()
            for name in self.__slots__:
                setattr(part, name, getattr(self, name)[index])
            return part
        return _span(self.token_ids[index], self.byte_starts[index], self.byte_ends[index],
                     self.char_starts[index], self.char_ends[index], self.flags[index])

    def __iter__(self) -> Iterator[TokenSpan]:
        return map(_span, self.token_ids, self.byte_starts, self.byte_ends, self.char_starts, self.char_ends,
                   self.flags)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TokenSpans):
            return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which are unhashable

    def __repr__(self) -> str:
        shown = ", ".join(repr(s) for s in self[:3])
        return f"TokenSpans([{shown}{', ...' if len(self) > 3 else ''}], {len(self)} spans)"

    @classmethod
    def of(cls, spans: Iterable[TokenSpan]) -> TokenSpans:
        """``spans`` (TokenSpan objects, in order) as columns."""
        made = cls()
        for s in spans:
            made.append(s.token_id, s.byte_start, s.byte_end, s.char_start, s.char_end, s.partial, s.special)
        return made


def _char_byte_len(ch: str) -> int:
    cp = ord(ch)
    if cp < 0x80:
        return 1
    if cp < 0x800:
        return 2
    if 0xD800 <= cp < 0xE000:
        return 1 if 0xDC80 <= cp <= 0xDCFF else 3
    return 3 if cp < 0x10000 else 4


def token_spans(text: str, pieces: PieceEncoder, special_re: SpecialMatcher[str] | None,
                special_ids: dict[str, int], vocab: dict[int, bytes]) -> TokenSpans:
    """The spans of ``text``'s tokens (see `Tokenizer.encode_with_spans`)."""
    spans = TokenSpans()
    byte_pos = char_pos = 0
    for segment, is_special in split_with(text, special_re):
        if is_special:
            size = len(segment.encode("utf-8", TEXT_ERRORS))
            spans.append(special_ids[segment], byte_pos, byte_pos + size, char_pos, char_pos + len(segment), False, True)
            byte_pos += size
            char_pos += len(segment)
            continue
        for piece in split_pieces(segment, pieces.pattern):
            _add_piece_spans(spans, piece, byte_pos, char_pos, pieces, vocab)
            byte_pos += len(piece.encode("utf-8", TEXT_ERRORS))
            char_pos += len(piece)
    return spans


def _add_piece_spans(spans: TokenSpans, piece: str, byte_pos: int, char_pos: int, pieces: PieceEncoder,
                     vocab: dict[int, bytes]) -> None:
    """Append one piece's tokens' spans, pre-token by pre-token (a custom pattern may skip text)."""
    if piece.isascii():
        starts: Sequence[int] = range(len(piece) + 1)
    else:
        starts = [0]  # byte offset of each character of the piece, then the end
        for ch in piece:
            starts.append(starts[-1] + _char_byte_len(ch))
    for m in pieces.pattern.finditer(piece):
        offset = starts[m.start()]
        for token_id in pieces.encode_pretoken(m.group()):
            size = len(vocab[token_id])
            first = bisect.bisect_right(starts, offset) - 1
            last = bisect.bisect_left(starts, offset + size)
            partial = starts[first] != offset or starts[last] != offset + size
            spans.append(token_id, byte_pos + offset, byte_pos + offset + size,
                         char_pos + first, char_pos + last, partial, False)
            offset += size
