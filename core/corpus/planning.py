"""Planning a corpus's tasks, in this process: files cut into ranges, streams read into blocks.

`plan_tasks` turns a checked `Corpus` into the lazy stream of tasks of
`core.corpus.documents`: small plain files gathered whole into one task (`Files`), a
larger uncompressed plain file cut into byte ranges at exact pre-token boundaries
(`core.corpus.chunks`), an uncompressed JSONL file at line ends, a
Parquet file by row group, a stream (compressed, or cut to ``doc_max_chars``) read once,
in order, into blocks cut the same way.

Reading is bounded whatever the input:

- under a cap (``max_bytes``) nothing is read beyond the plain text it needs: once the
  plain text planned reaches the cap (plus `cap_margin`, so the cut at the cap sees whole
  characters and special tokens), planning stops — a 2 GiB run of ``a`` compressed into
  2 MB, capped at 1 MB, reads about 1 MB;
- a stretch of text with no exact boundary (one pre-token, or a custom pattern's text
  with no special token) or a JSONL line longer than `MAX_UNCUT_BYTES` is refused with a
  `CorpusError` naming the file and where, instead of being held whole: counting it
  exactly would need all of it in memory at once (docs/corpora.md).
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator

from core.corpus.chunks import MAX_UNCUT_BYTES, find_cut_in_buffer, long_line_error, plan_chunks, uncut_error
from core.corpus.documents import (
    Block,
    FileRange,
    Files,
    RowGroup,
    Skipped,
    Task,
    cut_text,
    encode_text,
    kept,
    line_of,
)
from core.corpus.sources import Corpus, ReadOptions, SourceFile, require_pyarrow
from core.corpus.streams import STREAM_BLOCK, open_stream
from core.pretokenize.patterns import Pattern

__all__ = ["cap_margin", "plan_tasks"]

def cap_margin(specials: list[str]) -> int:
    """Bytes read past a cap, so that the cut there sees whole characters and special tokens."""
    return 4096 + 2 * max((len(t.encode("utf-8", "surrogatepass")) for t in specials), default=0)


class _Budget:
    """The plain text still to plan under a cap (``None``: no cap)."""

    def __init__(self, options: ReadOptions, specials: list[str]) -> None:
        self.left = options.max_bytes
        self.margin = cap_margin(specials)

    def spent(self) -> bool:
        return self.left is not None and self.left <= 0

    def stop_at(self) -> int | None:
        """Text bytes of the next plain file worth reading (``None``: all)."""
        return None if self.left is None else self.left + self.margin

    def take(self, text_bytes: int) -> None:
        if self.left is not None:
            self.left = 0 if text_bytes >= self.left + self.margin else self.left - text_bytes


GROUP_FILES = 4096
"""Small plain files in one `Files` task at most (and about ``chunk_size`` bytes)."""


def plan_tasks(corpus: Corpus, pattern: Pattern, specials: list[str], chunk_size: int) -> Iterator[Task]:
    """The corpus's tasks, in order, produced lazily (streams are read as tasks are taken)."""
    options = corpus.options
    budget = _Budget(options, specials)
    group: list[SourceFile] = []
    grouped = 0
    for file in corpus.files:
        if budget.spent():  # the cap is in the plain text planned: nothing after it is read
            break
        small = (file.kind == "text" and not file.streamed and file.size < chunk_size and options.max_bytes is None
                 and options.doc_max_chars is None)
        if small and kept(options, file.index, 0):  # whole small files: one task for many
            group.append(file)
            grouped += file.size
            if grouped >= chunk_size or len(group) >= GROUP_FILES:
                yield Files(tuple(group))
                group, grouped = [], 0
            continue
        if group:
            yield Files(tuple(group))
            group, grouped = [], 0
        if file.kind == "parquet":
            yield from _plan_parquet(file)
        elif file.kind == "text" and not kept(options, file.index, 0):
            yield Skipped(file.size)
        elif file.streamed or (file.kind == "text" and options.doc_max_chars is not None):
            yield from _plan_stream(file, pattern, specials, chunk_size, options, budget)
        elif file.kind == "text":
            stop = budget.stop_at()
            end = file.size if stop is None else min(file.size, stop)
            for start, stop_byte in plan_chunks(file.path, end, pattern, specials, chunk_size):
                yield FileRange(file, start, stop_byte)
            budget.take(end)
        else:
            yield from _plan_lines(file, chunk_size)
    if group:
        yield Files(tuple(group))


def _plan_lines(file: SourceFile, chunk_size: int) -> Iterator[FileRange]:
    """Byte ranges of about ``chunk_size`` ending at line ends."""
    start = 0
    with file.path.open("rb") as f:
        while start < file.size:
            at = min(start + chunk_size, file.size)
            f.seek(at)
            if f.tell() < file.size:
                line = f.readline(MAX_UNCUT_BYTES + 1)
                if len(line) > MAX_UNCUT_BYTES:  # named by its number and start, found again (rare)
                    f.seek(start)
                    line_start = start + f.read(at - start).rfind(b"\n") + 1
                    raise long_line_error(file.path, line_of(file, line_start), line_start)
            end = min(f.tell(), file.size) if f.tell() > start else file.size
            yield FileRange(file, start, end)
            start = end


def _plan_parquet(file: SourceFile) -> Iterator[RowGroup]:
    parquet = require_pyarrow(file.path).ParquetFile(file.path)
    meta = parquet.metadata
    groups = meta.num_row_groups
    sizes = [meta.row_group(g).total_byte_size for g in range(groups)]
    total = max(sum(sizes), 1)
    row = given = 0
    for g in range(groups):
        share = file.size - given if g == groups - 1 else file.size * sizes[g] // total
        given += share
        yield RowGroup(file, g, row, share)
        row += meta.row_group(g).num_rows


def _plan_stream(file: SourceFile, pattern: Pattern, specials: list[str], chunk_size: int,
                 options: ReadOptions, budget: _Budget) -> Iterator[Block]:
    """Read a stream once, cutting it into blocks: at line ends (JSONL) or at exact
    pre-token boundaries (plain text, cut to ``doc_max_chars`` characters, and read no
    further than a cap needs)."""
    stop_at = budget.stop_at() if file.kind == "text" else None
    with open_stream(file) as (stream, raw):
        buffer = bytearray()
        offset = 0
        line = 1
        given = 0
        threshold = 2 * chunk_size
        chars = _CharLimit(options.doc_max_chars, specials) if file.kind == "text" else None
        done = False
        while not done:
            data = stream.read(STREAM_BLOCK)
            done = not data
            if chars is not None and not done:
                data, done = chars.take(data)
            buffer += data
            if stop_at is not None and offset + len(buffer) >= stop_at:  # enough for the cap
                del buffer[stop_at - offset:]
                done = True
            while buffer and (done or len(buffer) >= threshold):
                if done:
                    cut: int | None = len(buffer)
                elif file.kind == "jsonl":
                    newline = buffer.rfind(b"\n", 0, chunk_size + 1)
                    cut = newline + 1 if newline >= 0 else buffer.find(b"\n", chunk_size) + 1 or None
                else:
                    cut = find_cut_in_buffer(buffer, chunk_size, pattern, specials)
                if cut is None:  # no boundary yet (a very long line or no cut point): read on, up to a limit
                    if len(buffer) >= MAX_UNCUT_BYTES:
                        raise uncut_error(file.path, offset, file.kind, pattern, line)
                    threshold = min(2 * len(buffer), MAX_UNCUT_BYTES)
                    break
                threshold = 2 * chunk_size
                block = bytes(buffer[:cut])
                del buffer[:cut]
                read = file.size if done and not buffer else min(raw.tell(), file.size)
                yield Block(file, block, offset, line, read - given, done and not buffer)
                given = read
                offset += len(block)
                line += block.count(b"\n")
        if given < file.size:
            yield Block(file, b"", offset, line, file.size - given, True)
    if file.kind == "text":
        budget.take(offset)


class _CharLimit:
    """Passes at most ``limit`` characters of a byte stream (never cutting a special token)."""

    def __init__(self, limit: int | None, specials: list[str]) -> None:
        self.limit = limit
        self.specials = specials
        self.seen = 0
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")
        self.tail = ""

    def take(self, data: bytes) -> tuple[bytes, bool]:
        if self.limit is None:
            return data, False
        text = self.decoder.decode(data)
        if self.seen + len(text) < self.limit:
            self.seen += len(text)
            self.tail = (self.tail + text)[-64:]
            return data, False
        # The limit falls in this block: cut there (with the previous tail as context for
        # a special token that began in the last block).
        context = self.tail + text
        kept_text = cut_text(context, len(self.tail) + self.limit - self.seen, self.specials)
        kept_here = kept_text[len(self.tail):] if len(kept_text) >= len(self.tail) else ""
        # ``text`` holds the block's complete characters (the decoder keeps back the bytes of
        # one cut by the block's end): the kept ones, encoded again, are the bytes to pass.
        return encode_text(kept_here), True
