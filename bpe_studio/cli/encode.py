"""``bpe-studio encode``: a corpus to a ``.npy`` of token ids, in parallel, with progress.

    bpe-studio encode corpus.txt --tokenizer tok/ --out ids.npy [--workers K]

Progress (MB/s) goes to stderr; a one-line summary (tokens, bytes per token, MB/s) to stdout.
The ``.npy`` appears only when encoding has finished (``uint16`` ids when the vocabulary
fits, else ``uint32``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from bpe_studio.cli.checks import capped_workers
from bpe_studio.cli.terminal import ProgressLine, bar, write_result
from core.progress import encode_progress
from core.encode.corpus_to_npy import EncodeFinished, EncodeProgress, check_paths, encode_file_events
from core.encode.tokenizer import Tokenizer


def add_encode_parser(commands: Any) -> None:
    """Register the ``encode`` subcommand on an argparse subparsers object."""
    parser = commands.add_parser(
        "encode",
        help="encode a text file into a .npy of token ids",
        description="Encode CORPUS with the tokenizer in DIR into a .npy of token ids.",
    )
    parser.add_argument("corpus", help="a text file (UTF-8; invalid bytes are encoded as bytes)")
    parser.add_argument("--tokenizer", required=True, metavar="DIR",
                        help="a tokenizer directory (vocab.json + merges.txt, or tokenizer.json) or file")
    parser.add_argument("--out", required=True, metavar="IDS.npy", help="the .npy file to write")
    parser.add_argument("--workers", type=int, metavar="K", help="encoding processes (default: all cores)")
    parser.set_defaults(run=run_encode)


def run_encode(args: argparse.Namespace, stream: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``bpe-studio encode``; user mistakes raise ValueError/OSError (the caller prints them)."""
    out = stream if stream is not None else sys.stdout
    workers = capped_workers(args.workers)
    if not str(args.out).endswith(".npy"):
        raise ValueError(f"--out {args.out} must end in .npy")
    check_paths(Path(args.corpus), Path(args.out))  # before the (slower) tokenizer load
    tokenizer = Tokenizer.load(args.tokenizer)
    events = encode_file_events(args.corpus, tokenizer, args.out, workers=workers)
    progress = ProgressLine(err)
    finished: EncodeFinished | None = None
    started = time.monotonic()
    try:
        for event in events:
            if isinstance(event, EncodeProgress):
                figures = encode_progress(event.done, event.total, event.tokens, time.monotonic() - started)
                progress.update(
                    "encoding", f"{bar(event.done / max(event.total, 1))} {figures}", force=event.done == event.total
                )
            else:
                finished = event
    finally:
        events.close()
        progress.close()
    assert finished is not None
    write_result(out, finished.summary() + "\n")
    return 0
