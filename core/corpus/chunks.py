"""Cutting a corpus file into chunks that end at exact pre-token boundaries.

Chunks let worker processes pre-tokenize a file in parallel and in bounded memory. A
chunk boundary is only placed where the pre-tokenization of the whole file would have a
boundary anyway — at the start of a special token, or at a pattern's safe cut point (see
`core.pretokenize.patterns`) — and never inside an occurrence of a special token, so the counts are
identical whatever the chunk size or number of workers.

A stretch of more than `MAX_UNCUT_BYTES` with no boundary (one pre-token of 64 MiB, or a
custom pattern's text with no special token) is refused (`uncut_error`) rather than read
whole: counting it exactly would need all of it in memory at once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from core.errors import CorpusError
from core.pretokenize.patterns import Pattern
from core.pretokenize.specials import SpecialMatcher, special_token_regex

FIRST_WINDOW = 4096
"""Bytes read after the position where a cut is looked for (4 times more each time none is
found): a cut point is most often a few bytes away, and the window is decoded and searched
whole, so a larger one would make planning every chunk slower."""


MAX_UNCUT_BYTES = 64 << 20
"""Text with no exact boundary (or a JSONL line) longer than this is refused, not held whole."""


def uncut_error(path: str | os.PathLike[str], offset: int, kind: str, pattern: Pattern,
                line: int | None = None) -> CorpusError:
    """The error for `MAX_UNCUT_BYTES` of text without a boundary from ``offset`` of ``path``
    (for JSONL: the line ``line``, which starts there)."""
    size = f"{MAX_UNCUT_BYTES >> 20} MiB"
    if kind == "jsonl":
        return long_line_error(path, line, offset)
    why = ("the custom pattern can only be cut at special tokens, and there is none"
           if pattern.cut_before is None else "one pre-token runs on")
    return CorpusError(f"{os.fspath(path)}: from byte {offset:,} of its text, {size} hold no pre-token boundary "
                       f"({why}); such text cannot be counted in bounded memory: leave the file out, cap it with "
                       "max_bytes=, or split the text")


def long_line_error(path: str | os.PathLike[str], line: int | None, offset: int) -> CorpusError:
    """The error for a JSONL line longer than `MAX_UNCUT_BYTES`: line ``line``, from byte
    ``offset`` of the (decompressed) text."""
    where = f"line {line:,} (from byte {offset:,} of its text)" if line is not None else f"the line at byte {offset:,}"
    return CorpusError(f"{os.fspath(path)}, {where}: longer than {MAX_UNCUT_BYTES >> 20} MiB; split the record, "
                       "or leave the file out")


def _char_start(data: bytes | bytearray, i: int) -> int:
    """The first index >= i that is not a UTF-8 continuation byte (at most 3 steps)."""
    for _ in range(3):
        if i < len(data) and 0x80 <= data[i] < 0xC0:
            i += 1
    return i


def _straddles(text: str, i: int, special_tokens: list[str]) -> bool:
    """Whether an occurrence of a special token covers both ``text[i - 1]`` and ``text[i]``."""
    for token in special_tokens:
        lo = max(0, i - len(token) + 1)
        j = text.find(token, lo, i + len(token) - 1)
        if j != -1 and j < i:
            return True
    return False


def find_cut(
    f: BinaryIO, pos: int, size: int, pattern: Pattern, special_tokens: list[str]
) -> int:
    """The first exact chunk boundary at or after byte ``pos`` (``size`` if there is none).

    Reads a window around ``pos`` (growing it until a boundary is found) and looks for
    the start of a special token or a safe cut point of ``pattern`` there.

    Raises:
        CorpusError: `MAX_UNCUT_BYTES` after ``pos`` hold no boundary (`uncut_error`).
    """
    specials_re = special_token_regex(special_tokens)
    lookback = max((len(t.encode("utf-8")) for t in special_tokens), default=0)
    window = FIRST_WINDOW
    while True:
        base = max(0, pos - lookback)
        f.seek(base)
        want = pos - base + window
        data = f.read(want)
        # a short read is the end too: a file that shrank since its size was taken would
        # otherwise grow the window for ever (the run then fails as "changed while read")
        at_eof = base + len(data) >= size or len(data) < want
        cut = _cut_in(data, pos - base, at_eof, pattern, special_tokens, specials_re, lookback)
        if cut is not None:
            return base + cut
        if at_eof:
            return size
        if window >= MAX_UNCUT_BYTES:
            raise uncut_error(getattr(f, "name", "the corpus"), pos, "text", pattern)
        window = min(4 * window, MAX_UNCUT_BYTES)


def find_cut_in_buffer(data: bytes | bytearray, pos: int, pattern: Pattern, special_tokens: list[str]) -> int | None:
    """The first exact chunk boundary at or after ``pos`` in ``data``, a stretch of a
    longer text (a decompressed stream) that goes on after it; ``None`` if none can be
    told from ``data`` alone (the last few characters are not trusted)."""
    lookback = max((len(t.encode("utf-8")) for t in special_tokens), default=0)
    base = max(0, pos - lookback)
    cut = _cut_in(data[base:], pos - base, False, pattern, special_tokens,
                  special_token_regex(special_tokens), lookback)
    return None if cut is None else base + cut


def _cut_in(
    data: bytes | bytearray,
    pos: int,
    at_eof: bool,
    pattern: Pattern,
    special_tokens: list[str],
    specials_re: SpecialMatcher[str] | None,
    lookback: int,
) -> int | None:
    """`find_cut` within one window ``data``: the first boundary at or after ``pos``, or None."""
    start = _char_start(data, 0)
    text = data[start:].decode("utf-8", errors="surrogateescape")
    head = data[start : max(start, _char_start(data, pos))]
    first = len(head.decode("utf-8", errors="surrogateescape"))
    # Do not trust the last few characters: a multi-byte character may be cut off.
    limit = len(text) if at_eof else max(first, len(text) - max(lookback, 4))
    candidates = []
    if specials_re is not None:
        candidates += [m.start() for m in specials_re.finditer(text, first, limit)]
    if pattern.cut_before is not None:
        m = pattern.cut_before.search(text, max(first, 1), limit)
        if m is not None:
            candidates.append(m.start())
    for i in sorted(candidates):
        if 0 < i < len(text) and not _straddles(text, i, special_tokens):
            return start + len(text[:i].encode("utf-8", errors="surrogateescape"))
    return None


def plan_chunks(
    path: Path, size: int, pattern: Pattern, special_tokens: list[str], chunk_size: int
) -> list[tuple[int, int]]:
    """Cut the file into ``(start, end)`` byte ranges of about ``chunk_size`` at exact boundaries.

    A custom pattern in a file without special tokens has no safe cut point: one chunk.
    """
    if size <= chunk_size:  # one chunk: nothing to open (a folder of many small files)
        return [(0, size)]
    bounds = [0]
    with path.open("rb") as f:
        while bounds[-1] + chunk_size < size:
            cut = find_cut(f, bounds[-1] + chunk_size, size, pattern, special_tokens)
            if cut >= size:
                break
            bounds.append(cut)
    bounds.append(size)
    return list(zip(bounds, bounds[1:]))
