"""Where each token of an encoded text lies in that text: `TokenSpan` and `token_spans`.

`Tokenizer.encode_with_spans` gives them; the application draws tokens from them. The text
is cut as encoding cuts it (special tokens, pieces, pre-tokens), and each pre-token's ids
come from the tokenizer's pre-token cache, so the spans' ids are the ids of `encode`.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from core.encode.piece_encoder import TEXT_ERRORS, PieceEncoder
from core.pretokenize.pieces import split_pieces
from core.pretokenize.specials import SpecialMatcher, split_with

__all__ = ["TokenSpan", "token_spans"]


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
                special_ids: dict[str, int], vocab: dict[int, bytes]) -> list[TokenSpan]:
    """The spans of ``text``'s tokens (see `Tokenizer.encode_with_spans`)."""
    spans: list[TokenSpan] = []
    byte_pos = char_pos = 0
    for segment, is_special in split_with(text, special_re):
        if is_special:
            size = len(segment.encode("utf-8", TEXT_ERRORS))
            spans.append(TokenSpan(special_ids[segment], byte_pos, byte_pos + size,
                                   char_pos, char_pos + len(segment), False, True))
            byte_pos += size
            char_pos += len(segment)
            continue
        for piece in split_pieces(segment, pieces.pattern):
            spans.extend(_piece_spans(piece, byte_pos, char_pos, pieces, vocab))
            byte_pos += len(piece.encode("utf-8", TEXT_ERRORS))
            char_pos += len(piece)
    return spans


def _piece_spans(piece: str, byte_pos: int, char_pos: int, pieces: PieceEncoder,
                 vocab: dict[int, bytes]) -> Iterator[TokenSpan]:
    """Spans of one piece's tokens, pre-token by pre-token (a custom pattern may skip text)."""
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
            yield TokenSpan(token_id, byte_pos + offset, byte_pos + offset + size,
                            char_pos + first, char_pos + last, partial, False)
            offset += size
