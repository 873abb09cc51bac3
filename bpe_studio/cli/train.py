"""``bpe-studio train``: headless training with terminal progress and a summary.

    bpe-studio train corpus.txt --vocab-size 10000 --special-token '<|endoftext|>' --out tok/

Writes vocab.json + merges.txt (GPT-2 format), tokenizer_config.json and tokenizer.json
into the output directory, only once training has finished. Follows the batched stream
(`core.train_bpe_batches`): the progress line moves once per batch of merges.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, TextIO

import core
from core.events import CountingDone, Finished, MergeBatch, PretokenizeProgress
from core.formats import save_tokenizer
from bpe_studio.cli.terminal import ProgressLine, bar, format_duration
from core.readable import readable


def add_train_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "train",
        help="train a tokenizer on a text file",
        description="Train a byte-level BPE tokenizer on CORPUS and write it into DIR.",
    )
    parser.add_argument("corpus", help="a UTF-8 text file")
    parser.add_argument("--vocab-size", type=int, required=True, metavar="N",
                        help="vocabulary size: 256 bytes + special tokens + merges")
    parser.add_argument("--special-token", action="append", default=[], metavar="TOK", dest="special_tokens",
                        help="a special token (repeat for several), e.g. '<|endoftext|>'")
    parser.add_argument("--out", required=True, metavar="DIR", help="directory to write the tokenizer files into")
    parser.add_argument("--workers", type=int, metavar="K", help="pre-tokenization processes (default: all cores)")
    parser.add_argument("--pattern", default="gpt2", metavar="gpt2|gpt4|REGEX",
                        help="pre-tokenization pattern (default: gpt2)")
    parser.set_defaults(run=run_train)


def run_train(args: argparse.Namespace, stream: TextIO | None = None) -> int:
    out = stream or sys.stdout
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise NotADirectoryError(f"--out {args.out} exists and is not a directory")
    started = time.monotonic()
    events = core.train_bpe_batches(
        args.corpus, args.vocab_size, args.special_tokens, pattern=args.pattern, workers=args.workers
    )
    progress = ProgressLine()
    counting: CountingDone | None = None
    finished: Finished | None = None
    last_merge: MergeBatch | None = None
    merge_start = 0.0
    planned = args.vocab_size - 256 - len(args.special_tokens)
    try:
        for event in events:
            now = time.monotonic()
            if isinstance(event, PretokenizeProgress):
                elapsed = max(now - started, 1e-9)
                progress.update(
                    "reading",
                    f"{bar(event.done / max(event.total, 1))} {event.done / 1e6:,.1f} of "
                    f"{event.total / 1e6:,.1f} MB  {event.done / 1e6 / elapsed:,.1f} MB/s",
                    force=event.done == event.total,
                )
            elif isinstance(event, CountingDone):
                counting, merge_start = event, now
            elif isinstance(event, MergeBatch):
                last_merge = event
                done = event.first_rank + len(event)
                rate = done / max(now - merge_start, 1e-9)
                eta = (planned - done) / rate
                progress.update(
                    "merging",
                    f"{bar(done / planned)} {done:,} of {planned:,}  "
                    f"{rate:,.0f} merges/s  ETA {format_duration(eta)}",
                )
            elif isinstance(event, Finished):
                finished = event
    finally:
        events.close()
        progress.close()
    assert finished is not None and counting is not None
    paths = save_tokenizer(args.out, finished.vocab, finished.merges, args.special_tokens, args.pattern)
    _print_summary(out, time.monotonic() - started, counting, finished, last_merge, paths)
    return 0


def _print_summary(
    out: TextIO,
    wall: float,
    counting: CountingDone,
    finished: Finished,
    last_merge: MergeBatch | None,
    paths: list[Any],
) -> None:
    learned = [left + right for left, right in finished.merges]
    longest = max(learned, key=len, default=b"")
    tokens = last_merge.corpus_tokens[-1] if last_merge else counting.corpus_bytes
    lines = [
        f"trained in {format_duration(wall)} ({wall:.2f} s)",
        f"pre-tokens: {counting.distinct:,} distinct, {counting.total:,} in all"
        + (f"; {counting.invalid_bytes:,} bytes were not valid UTF-8 (kept as bytes)" if counting.invalid_bytes else ""),
        f"vocabulary: {len(finished.vocab):,} tokens ({len(finished.merges):,} merges)",
        f"longest token: {readable(longest)} ({len(longest)} bytes)" if learned else "longest token: (no merges)",
        f"bytes per token on the corpus: {counting.corpus_bytes / max(tokens, 1):.3f}",
        "wrote: " + ", ".join(str(p) for p in paths),
    ]
    out.write("\n".join(lines) + "\n")
