"""The ``bpe-studio`` command: open the application, or work headless.

    bpe-studio [CORPUS] [--vocab-size N]          open the window
    bpe-studio train SOURCE ... --vocab-size N --out DIR [...]
    bpe-studio encode TOKENIZER SOURCE ... --out ids.npy [...]
    bpe-studio count SOURCE ... --out counts.bpc [--dask ADDRESS | --dask-local N] [...]
    bpe-studio eval TOKENIZER ... --on SOURCE ...  (and shrink, health, lm)
    bpe-studio docs [PAGE]                        the documentation (README, docs/*.md)
    bpe-studio --help | --version

A tokenizer is given the same way everywhere: the first positional argument, TOKENIZER
(a folder or a tokenizer file). ``bpe-studio --help`` lists every subcommand, a line each,
taken from the subcommands' own parsers.

A user mistake (missing file, bad option, vocabulary too small: `core.errors`' types,
`UsageError`, a file's ``OSError``) prints one line, ``bpe-studio: error: ...``, on stderr
and exits with status 2; nothing is written. So does running out of memory. Any other
exception is a bug: one line says so and where its traceback was logged
(`bpe_studio.cli.crash`), and the status is 1. Ctrl+C, SIGTERM and SIGHUP stop a command
cleanly (workers stopped, temporary files removed; `bpe_studio.cli.stopping`): exit
status 130, or 128 plus the signal's number. Output that cannot be shown (stdout closed, a
pipe whose reader stopped, ``| head -1``) is dropped and the status is the command's own
(0 on success); characters the terminal cannot show are escaped
(`bpe_studio.cli.terminal.guarded_streams`).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import re
import sys
from collections.abc import Iterator, Sequence
from typing import NoReturn

from bpe_studio.cli.usage import UsageError
from core.errors import BpeStudioError

PROG = "bpe-studio"
EXIT_USAGE = 2
EVALUATE_COMMANDS = ("eval", "shrink", "health", "lm")
COMMANDS = ("train", "encode", "count", *EVALUATE_COMMANDS, "docs")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr (no usage block) and exit 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


class _TopParser(_Parser):
    """The parser of ``bpe-studio [CORPUS]``, whose help also lists every subcommand (built
    only when help is asked for: the window's start imports no subcommand)."""

    def format_help(self) -> str:
        lines = [f"  {PROG} [CORPUS]".ljust(28) + "open the window (with CORPUS chosen)"]
        for name, summary in command_summaries():
            lines.append(f"  {PROG} {name}".ljust(28) + summary)
        from bpe_studio.cli.docs import docs_pointer

        return (super().format_help().rstrip("\n") + "\n\ncommands:\n" + "\n".join(lines)
                + f"\n\n'{PROG} COMMAND --help' tells more about each.\n\n{docs_pointer()}\n")


def version() -> str:
    """The installed version of bpe-studio (from the package metadata)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("bpe-studio")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def _gui_parser() -> argparse.ArgumentParser:
    parser = _TopParser(
        prog=PROG,
        description="Train, inspect and export byte-level BPE tokenizers: the window, or a command below.",
    )
    parser.add_argument("corpus", nargs="?", help="a text file to preselect for training")
    parser.add_argument("--vocab-size", type=int, metavar="N", help="vocabulary size to preselect")
    parser.add_argument("--version", action="version", version=f"{PROG} {version()}",
                        help="print the version and exit")
    return parser


def command_summaries() -> list[tuple[str, str]]:
    """``(name, one-line help)`` of every subcommand, in the order ``--help`` lists them."""
    commands = next(a for a in _command_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return [(action.dest, action.help or "") for action in commands._choices_actions]


def _command_parser() -> argparse.ArgumentParser:
    from bpe_studio.cli.count import add_count_parser
    from bpe_studio.cli.docs import PointerFormatter, add_docs_parser, docs_pointer
    from bpe_studio.cli.encode import add_encode_parser
    from bpe_studio.cli.evaluate import add_evaluate_parsers
    from bpe_studio.cli.train import add_train_parser

    parser = _Parser(prog=PROG, description="Train and use byte-level BPE tokenizers headless.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")
    add_train_parser(commands)
    add_count_parser(commands)
    add_encode_parser(commands)
    add_evaluate_parsers(commands)
    add_docs_parser(commands)
    pointer = docs_pointer()
    for command in commands.choices.values():  # every COMMAND --help ends by saying where the docs are
        command.epilog = f"{command.epilog}\n\n{pointer}" if command.epilog else pointer
        command.formatter_class = PointerFormatter
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    from bpe_studio.cli.terminal import guarded_streams

    with guarded_streams():  # stdout closed, piped into head, or ASCII-only: no traceback
        status, args = _run(args_list)
    if status is not None:
        return status
    from bpe_studio.app.application import run_app

    return run_app(corpus=args.corpus, vocab_size=args.vocab_size)


def _run(args_list: list[str]) -> tuple[int | None, argparse.Namespace]:
    """Run a subcommand (its exit status), or parse the window's options (status None)."""
    from bpe_studio.cli.stopping import Stopped, stop_signals_raise

    out: str | None = None
    args = argparse.Namespace()
    try:
        if args_list and args_list[0] in COMMANDS:
            with stop_signals_raise():
                args = _command_parser().parse_args(args_list)
                finish = getattr(args, "finish", None)
                if finish is not None:  # a subcommand's own check of what argparse cannot tell
                    finish(args)
                out = getattr(args, "out", None)
                with _no_empty_output_folder(out):
                    return int(args.run(args)), args
        args = _gui_parser().parse_args(args_list)
        if args.vocab_size is not None and args.vocab_size < 256:
            raise UsageError(f"--vocab-size must be at least 256, got {args.vocab_size}")
    except (UsageError, BpeStudioError, OSError) as e:
        return _fail(_disk_full(e, out)), args
    except MemoryError:
        return _fail(MemoryError(
            "out of memory; try a smaller corpus, fewer --workers, or a machine with more memory"
        )), args
    except Stopped as e:
        _say(f"{PROG}: stopped by {e.name}")
        return 128 + e.signum, args
    except KeyboardInterrupt:
        _say(f"{PROG}: cancelled")
        return 130, args
    except Exception as e:  # not a user mistake: our bug
        return _bug(e, args_list), args
    return None, args


@contextlib.contextmanager
def _no_empty_output_folder(out: str | None) -> Iterator[None]:
    """A command that fails leaves no empty ``--out`` folder it made (its files are written
    atomically, so the folder is all that could be left)."""
    made = out is not None and bool(out) and not os.path.lexists(out)
    try:
        yield
    except BaseException:
        if made and out is not None and os.path.isdir(out) and not os.path.islink(out):
            with contextlib.suppress(OSError):
                os.rmdir(out)  # only if empty
        raise


_SHORT_WRITE = re.compile(r"\d+ requested and \d+ written")


def _disk_full(error: BaseException, out: str | None) -> BaseException:
    """A full disk said plainly, naming the file being written: not ``[Errno 28] No space
    left on device`` alone, nor numpy's "185736 requested and 115090 written"."""
    if not isinstance(error, OSError):
        return error
    if error.errno != errno.ENOSPC and not _SHORT_WRITE.fullmatch(str(error)):
        return error
    target = error.filename or out
    where = f" writing {target}" if target else ""
    return OSError(f"no space left on device{where}; free some space or write elsewhere")


def _fail(error: BaseException) -> int:
    from bpe_studio.cli.checks import in_cli_words

    message = in_cli_words(str(error) or type(error).__name__)
    if isinstance(error, OSError) and error.filename and str(error.filename) not in message:
        message = f"{message}: {error.filename}"
    _say(f"{PROG}: error: {message}".splitlines()[0])
    return EXIT_USAGE


def _bug(error: Exception, args_list: list[str]) -> int:
    """Say ``error`` is a bug, its traceback in a log (`bpe_studio.cli.crash`); status 1."""
    import traceback

    from bpe_studio.cli.crash import EXIT_BUG, report_bug

    line, log = report_bug(error, args_list, version())
    if log is None and sys.stderr is not None:
        with contextlib.suppress(OSError, ValueError):
            traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
    _say(line)
    return EXIT_BUG


def _say(line: str) -> None:
    """One line on stderr, if there is a stderr to write to (it may have been closed)."""
    if sys.stderr is not None:
        try:
            print(line, file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass


if __name__ == "__main__":
    sys.exit(main())
