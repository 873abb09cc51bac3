"""``bpe-studio encode``: a corpus to a ``.npy`` of token ids, in parallel, with progress.

    bpe-studio encode tok/ corpus.txt --out ids.npy [--workers K]
    bpe-studio encode tok/ shards/ 'more/*.jsonl.zst' --field text --out ids.npy

(The tokenizer comes first, as in every subcommand; the older ``SOURCE ... --tokenizer DIR``
is still understood.)

Documents (plain files, JSONL records, Parquet rows) are encoded in order, each followed by
the id of ``--doc-separator`` (default ``<|endoftext|>`` when the tokenizer has it).

Progress (MB/s) goes to stderr; a one-line summary (tokens, bytes per token, MB/s) to stdout.
The ``.npy`` appears only when encoding has finished (``uint16`` ids when the vocabulary
fits, else ``uint32``).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from bpe_studio.cli.checks import (
    TOKENIZER_HELP,
    add_field_option,
    add_skip_unreadable_option,
    capped_workers,
    corpus_files,
    field_of,
    non_empty,
)
from bpe_studio.cli.terminal import ProgressLine, bar, write_result
from core.progress import encode_progress
from core.corpus.sources import ReadOptions, open_corpus


def add_encode_parser(commands: Any) -> None:
    """Register the ``encode`` subcommand on an argparse subparsers object."""
    parser = commands.add_parser(
        "encode",
        help="encode a corpus into a .npy of token ids",
        description="Encode SOURCE(s) with TOKENIZER into a .npy of token ids. A source is a file, "
        "a folder or a glob; plain text (invalid UTF-8 bytes are encoded as bytes), JSONL or Parquet, "
        "optionally compressed (.gz, .bz2, .xz, .zst). Documents are encoded in order, each followed by "
        "the separator's id.",
    )
    parser.add_argument("tokenizer", metavar="TOKENIZER", help=TOKENIZER_HELP)
    parser.add_argument("corpus", nargs="*", metavar="SOURCE", help="files, folders or glob patterns")
    # the older spelling, kept working but not shown: SOURCE ... --tokenizer DIR
    parser.add_argument("--tokenizer", dest="tokenizer_option", help=argparse.SUPPRESS)
    parser.add_argument("--out", required=True, type=non_empty("the .npy file to write"), metavar="IDS.npy",
                        help="the .npy file to write")
    parser.add_argument("--workers", type=int, metavar="K", help="encoding workers: threads with the native encoder, else processes (default: all cores)")
    add_field_option(parser)
    add_skip_unreadable_option(parser)
    separator = parser.add_mutually_exclusive_group()
    separator.add_argument("--doc-separator", metavar="TOKEN", default=True,
                           help="the token whose id follows each document (default: <|endoftext|> if the "
                           "tokenizer has it)")
    separator.add_argument("--no-doc-separator", dest="doc_separator", action="store_const", const=None,
                           help="write no id between documents")
    parser.set_defaults(run=run_encode, finish=_tokenizer_then_sources)


def _tokenizer_then_sources(args: argparse.Namespace) -> None:
    """``TOKENIZER SOURCE ...``, or the older ``SOURCE ... --tokenizer DIR``: the same namespace."""
    from bpe_studio.cli.usage import UsageError

    if args.tokenizer_option is not None:
        args.corpus = [args.tokenizer, *args.corpus]
        args.tokenizer = args.tokenizer_option
    if not args.corpus:
        raise UsageError("give the tokenizer, then at least one SOURCE: bpe-studio encode TOKENIZER SOURCE ... "
                         "--out ids.npy")


def run_encode(args: argparse.Namespace, stream: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``bpe-studio encode``; user mistakes raise UsageError, core.errors' types or OSError (the caller prints them)."""
    # (imported here: numpy and the encoder are not the other commands' start-up cost)
    from core.encode.corpus import DEFAULT_SEPARATOR, EncodeFinished, EncodeProgress, check_output, encode_corpus_events
    from core.encode.tokenizer import Tokenizer

    out = stream if stream is not None else sys.stdout
    started = time.monotonic()  # the summary's time: all of it, checking many small files included
    workers = capped_workers(args.workers)
    if not str(args.out).endswith(".npy"):
        from bpe_studio.cli.usage import UsageError

        raise UsageError(f"--out {args.out} must end in .npy")
    # the corpus and output before the (slower) tokenizer load: the same checks as training
    read = ReadOptions(field_of(args), skip_unreadable=args.skip_unreadable)
    corpus = corpus_files(args)
    if isinstance(corpus, dict):
        from bpe_studio.cli.usage import UsageError

        raise UsageError("encode reads plain SOURCEs; NAME=SOURCE names sources for training and counting")
    checked = open_corpus(corpus, read, purpose="encode")  # checked once, here
    files = checked.files
    check_output(Path(args.out))
    tokenizer = Tokenizer.load(args.tokenizer)
    several = len(files) > 1 or any(file.kind != "text" for file in files)
    if args.doc_separator is True and several and DEFAULT_SEPARATOR not in tokenizer.special_ids:
        print(f"bpe-studio: note: the tokenizer has no {DEFAULT_SEPARATOR}, so the documents' ids follow one "
              "another with nothing between them; --doc-separator TOKEN puts one of its tokens there",
              file=sys.stderr)
    events = encode_corpus_events(checked, tokenizer, args.out, read=read,
                                  doc_separator=args.doc_separator, workers=workers)
    progress = ProgressLine(err)
    finished: EncodeFinished | None = None
    try:
        for event in events:
            if isinstance(event, EncodeProgress):
                figures = encode_progress(event.done, event.total, event.tokens, time.monotonic() - started)
                progress.update(
                    "encoding", f"{bar(event.done / max(event.total, 1))} {figures}", force=event.done == event.total
                )
            else:
                finished = event
    except BaseException:
        progress.discard()
        raise
    finally:
        events.close()  # type: ignore[attr-defined]
        progress.close()
    assert finished is not None
    write_result(out, dataclasses.replace(finished, seconds=time.monotonic() - started).summary() + "\n")
    return 0
