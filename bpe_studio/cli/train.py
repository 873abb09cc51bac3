"""``bpe-studio train``: headless training with terminal progress and a summary.

    bpe-studio train corpus.txt --vocab-size 10000 --special-token '<|endoftext|>' --out tok/

Writes vocab.json + merges.txt (GPT-2 format), tokenizer_config.json and tokenizer.json
into the output directory, only once training has finished. Everything that can be
checked without the corpus (the output folder can be written, the special tokens and
pattern can be stored) is checked before the corpus is read. Follows the batched stream
(`core.train_bpe_batches`): the progress line moves once per batch of merges.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, TextIO

import core
from core.errors import InvalidSpecialTokensError
from core.events import CountingDone, Finished, MergeBatch, PretokenizeProgress
from core.formats import check_save_tokenizer, save_tokenizer
from bpe_studio.cli.checks import capped_workers, check_text_option
from bpe_studio.cli.terminal import ProgressLine, bar, write_result
from core.progress import bytes_progress, merges_progress, training_summary


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
    out = stream if stream is not None else sys.stdout
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise NotADirectoryError(f"--out {args.out} exists and is not a directory")
    _check_before_reading(args)
    workers = capped_workers(args.workers)
    started = time.monotonic()
    events = core.train_bpe_batches(
        args.corpus, args.vocab_size, args.special_tokens, pattern=args.pattern, workers=workers
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
                figures = bytes_progress(event.done, event.total, now - started)
                progress.update(
                    "reading", f"{bar(event.done / max(event.total, 1))} {figures}", force=event.done == event.total
                )
            elif isinstance(event, CountingDone):
                counting, merge_start = event, now
            elif isinstance(event, MergeBatch):
                last_merge = event
                done = event.first_rank + len(event)
                figures = merges_progress(done, planned, done / max(now - merge_start, 1e-9))
                progress.update("merging", f"{bar(done / max(planned, 1))} {figures}")
            elif isinstance(event, Finished):
                finished = event
    finally:
        events.close()
        progress.close()
    assert finished is not None and counting is not None
    paths = save_tokenizer(args.out, finished.vocab, finished.merges, args.special_tokens, args.pattern)
    _print_summary(out, time.monotonic() - started, counting, finished, last_merge, paths)
    return 0


def _check_before_reading(args: argparse.Namespace) -> None:
    """What can go wrong without the corpus, checked before it is read (a mistake found
    after an hour of training costs the hour): the options are text, the pattern is
    valid, the output folder can be written and the special tokens can be stored."""
    for token in args.special_tokens:
        check_text_option("--special-token", token)
    check_text_option("--pattern", args.pattern)
    core.resolve_pattern(args.pattern)
    try:
        check_save_tokenizer(args.out, args.special_tokens)
    except InvalidSpecialTokensError as e:
        raise InvalidSpecialTokensError(f"--special-token: {e}") from e


def _print_summary(
    out: TextIO | None,
    wall: float,
    counting: CountingDone,
    finished: Finished,
    last_merge: MergeBatch | None,
    paths: list[Any],
) -> None:
    rows = training_summary(
        seconds=wall,
        vocab_size=len(finished.vocab),
        merges=finished.merges,
        distinct=counting.distinct,
        total=counting.total,
        corpus_bytes=counting.corpus_bytes,
        corpus_tokens=last_merge.corpus_tokens[-1] if last_merge else counting.corpus_bytes,
        invalid_bytes=counting.invalid_bytes,
    )
    rows.append(("Wrote", ", ".join(str(p) for p in paths)))
    write_result(out, "".join(f"{label.lower()}: {value}\n" for label, value in rows))
