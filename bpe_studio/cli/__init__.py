"""The ``bpe-studio`` command: open the application, or train/encode headless.

    bpe-studio [CORPUS] [--vocab-size N]          open the window
    bpe-studio train CORPUS --vocab-size N --out DIR [...]
    bpe-studio encode CORPUS --tokenizer DIR --out ids.npy [...]
    bpe-studio count SOURCE --out counts.bpc [--dask ADDRESS | --dask-local N] [...]

A user mistake (missing file, bad option, vocabulary too small) prints one line,
``bpe-studio: error: ...``, on stderr and exits with status 2; nothing is written. So
does running out of memory. Ctrl+C, SIGTERM and SIGHUP stop a command cleanly (workers
stopped, temporary files removed; `bpe_studio.cli.stopping`): exit status 130, or 128 plus
the signal's number.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

PROG = "bpe-studio"
EXIT_USAGE = 2
EVALUATE_COMMANDS = ("eval", "shrink", "health", "lm")


class UsageError(Exception):
    """A mistake in the command line; the message is shown as is."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr (no usage block) and exit 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _gui_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Train, inspect and export byte-level BPE tokenizers. "
        "Also: 'bpe-studio train --help', 'bpe-studio encode --help'.",
    )
    parser.add_argument("corpus", nargs="?", help="a text file to preselect for training")
    parser.add_argument("--vocab-size", type=int, metavar="N", help="vocabulary size to preselect")
    return parser


def _command_parser() -> argparse.ArgumentParser:
    from bpe_studio.cli.count import add_count_parser
    from bpe_studio.cli.encode import add_encode_parser
    from bpe_studio.cli.evaluate import add_evaluate_parsers
    from bpe_studio.cli.train import add_train_parser

    parser = _Parser(prog=PROG, description="Train and use byte-level BPE tokenizers headless.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    add_train_parser(commands)
    add_encode_parser(commands)
    add_evaluate_parsers(commands)
    add_count_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    from bpe_studio.cli.stopping import Stopped, stop_signals_raise

    try:
        if args_list and args_list[0] in ("train", "encode", "count", *EVALUATE_COMMANDS):
            with stop_signals_raise():
                args = _command_parser().parse_args(args_list)
                return int(args.run(args))
        args = _gui_parser().parse_args(args_list)
        if args.vocab_size is not None and args.vocab_size < 256:
            raise UsageError(f"--vocab-size must be at least 256, got {args.vocab_size}")
    except (UsageError, ValueError, OSError) as e:
        return _fail(e)
    except MemoryError:
        return _fail(MemoryError(
            "out of memory; try a smaller corpus, fewer --workers, or a machine with more memory"
        ))
    except Stopped as e:
        _say(f"{PROG}: stopped by {e.name}")
        return 128 + e.signum
    except KeyboardInterrupt:
        _say(f"{PROG}: cancelled")
        return 130
    from bpe_studio.app.application import run_app

    return run_app(corpus=args.corpus, vocab_size=args.vocab_size)


def _fail(error: BaseException) -> int:
    message = str(error) or type(error).__name__
    if isinstance(error, OSError) and error.filename and str(error.filename) not in message:
        message = f"{message}: {error.filename}"
    _say(f"{PROG}: error: {message}".splitlines()[0])
    return EXIT_USAGE


def _say(line: str) -> None:
    """One line on stderr, if there is a stderr to write to (it may have been closed)."""
    if sys.stderr is not None:
        try:
            print(line, file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass


if __name__ == "__main__":
    sys.exit(main())
