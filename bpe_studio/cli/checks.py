"""Checks of command-line values that need no corpus, run before any long work.

- `pattern_option`: ``--pattern`` is checked as it is read (an unknown name such as
  ``gpt3``, a regex that matches the empty string), the error naming the flag.
- `check_text_option`: a value given as text (a special token, a pattern) must be text:
  bytes that are not UTF-8 reach Python as lone surrogates (``$'\\xff\\xfe'`` becomes
  ``'\\udcff\\udcfe'``), which no file can hold; the error names the option.
- `capped_workers`: ``--workers`` beyond what the machine can use
  (`core.workers.processes.max_workers`) is lowered, and a note on stderr says so.
- `non_empty`: an argparse type refusing an empty value (``--out ''`` would write into
  the current folder, ``--pattern ''`` would quietly mean the default).
- `check_output_file`: a file a command writes (``eval --csv``) is checked before the
  work: not a folder, its folder writable, and not one of the command's own inputs
  (``--csv held_out.txt`` replaced the text it measured).
- `sources_without_output`: a corpus folder that holds the command's own output (``train
  . --out tok``) is read without it: a second run read the first one's ``vocab.json``
  and ``merges.txt`` as text, and each run trained another tokenizer.
- `add_field_option` / `note_field_unused`: every subcommand reading a corpus takes
  ``--field`` the same way; given for a corpus with no JSONL or Parquet file, a note says
  it is not used (a file of JSON lines named ``.txt`` is read as plain text, JSON and all).
- `corpus_files`: the files ``train``, ``count`` and ``encode`` read, with both of the
  above.
- `in_cli_words`: the library names its arguments in messages (``field=``); the command
  line says its flags instead (``--field``).
- `TOKENIZER_HELP`: every subcommand names its tokenizer the same way, a positional
  ``TOKENIZER`` first, with this help.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from core.workers.processes import MAX_WORKERS_PER_CORE, max_workers, usable_cores

__all__ = ["TOKENIZER_HELP", "add_field_option", "capped_workers", "check_output_file", "check_text_option",
           "corpus_files", "field_of", "in_cli_words", "named_sources", "non_empty", "note_field_unused", "pattern_option",
           "sources_without_output"]

TOKENIZER_HELP = ("a tokenizer: a folder (vocab.json + merges.txt, tokenizer.json or tokenizer.tiktoken) "
                  "or one of those files")


def add_field_option(parser: argparse.ArgumentParser) -> None:
    """``--field NAME``: ``None`` when not given (`field_of` gives the default)."""
    parser.add_argument("--field", metavar="NAME",
                        help="the JSONL field / Parquet column holding the text (default: text)")


def add_skip_unreadable_option(parser: argparse.ArgumentParser) -> None:
    """``--skip-unreadable``: leave out what a folder's walk cannot read, with a warning."""
    parser.add_argument("--skip-unreadable", action="store_true",
                        help="leave out folders inside a SOURCE that cannot be read (no permission, links in a "
                        "loop), with a warning listing them (default: an error)")


def field_of(args: argparse.Namespace) -> str:
    """The ``--field`` to read (the default, ``text``, when not given)."""
    return args.field if args.field is not None else "text"


def note_field_unused(field: str | None, files: Iterable[Path]) -> None:
    """A note on stderr when ``--field`` was given (``field`` not ``None``) and none of
    ``files`` is JSONL or Parquet: plain text is read whole, whatever it holds."""
    from core.corpus.sources import corpus_file_kind

    if field is None:
        return
    files = list(dict.fromkeys(files))
    if any(corpus_file_kind(file)[0] != "text" for file in files):
        return
    example = files[0].name if len(files) == 1 else f"{len(files)} files"
    print(f"bpe-studio: note: --field {field} is not used: the corpus ({example}) is plain text, read whole; "
          "a file of JSON lines is read as records when its name ends in .jsonl or .ndjson", file=sys.stderr)


def non_empty(what: str) -> Callable[[str], str]:
    """An argparse ``type`` that refuses an empty (or blank) value, saying what to give."""

    def check(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"is empty; give {what}")
        return text

    check.__name__ = "non-empty value"
    return check


def pattern_option(text: str) -> str:
    """The argparse ``type`` of ``--pattern``: a built-in name (any case) or a regex, checked
    by `core.resolve_pattern` before any work (``gpt3`` or ``(?=a)`` is refused, with why)."""
    from core.pretokenize.patterns import resolve_pattern

    text = non_empty("gpt2, gpt4 or a regex")(text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text  # check_text_option names the bytes
    try:
        resolve_pattern(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e).replace(f"pattern={text!r} ", f"{text!r} ", 1)) from None
    return text


def check_text_option(option: str, value: str) -> None:
    """`UsageError` naming ``option`` if ``value`` holds bytes that are not UTF-8."""
    from bpe_studio.cli.usage import UsageError

    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raw = value.encode("utf-8", "surrogateescape")
        raise UsageError(
            f"{option} {raw!r} is not valid UTF-8 text (the shell passed undecodable bytes); "
            "give it as UTF-8 text"
        ) from e


def capped_workers(workers: int | None) -> int | None:
    """``workers``, lowered to `max_workers` (with a note on stderr) when above it."""
    if workers is not None and workers < 1:
        from bpe_studio.cli.usage import UsageError

        raise UsageError(f"--workers must be at least 1, got {workers}")
    limit = max_workers()
    if workers is None or workers <= limit:
        return workers
    if sys.stderr is not None:
        cores = usable_cores()
        print(
            f"bpe-studio: note: --workers {workers} is more than this machine can use; using {limit} "
            f"({MAX_WORKERS_PER_CORE} per core, {cores} core{'s' if cores != 1 else ''}; "
            "never more than one per chunk of the corpus)",
            file=sys.stderr,
        )
    return limit


def check_output_file(option: str, path: str, inputs: Iterable[str | os.PathLike[str]]) -> None:
    """Refuse ``option``'s file ``path`` (before any work) if it is a folder, its folder is
    missing or not writable, or it is one of ``inputs`` — files, or folders whose files
    (not below) are inputs, such as a tokenizer's.

    Raises:
        IsADirectoryError, FileNotFoundError, PermissionError, UsageError: saying what to do.
    """
    from core.formats.atomic import check_output_dir

    out = Path(path)
    if out.is_dir():
        raise IsADirectoryError(f"{option} {path} is a folder; give a file name")
    if not out.absolute().parent.is_dir():
        raise FileNotFoundError(f"{option} {path}: its folder does not exist; create it or write elsewhere")
    check_output_dir(out.absolute().parent)
    if not out.exists():
        return
    for given in inputs:
        folder = Path(given)
        for file in sorted(folder.iterdir()) if folder.is_dir() else [folder]:
            if file.exists() and os.path.samefile(file, out):
                from bpe_studio.cli.usage import UsageError

                raise UsageError(f"{option} {path} is one of the inputs ({file}); writing it would replace it, "
                                 "so give another file name")


def sources_without_output(sources: list[str], out: str, skip_unreadable: bool = False) -> list[Path]:
    """The files of ``sources`` (resolved once, here), but ``out`` and any file under it (a
    note on stderr says how many were left out); what cannot be read is an error naming
    ``--skip-unreadable``, or with it a warning listing what was skipped."""
    import warnings

    from core.corpus.paths import ResolvedPaths, UnreadableError, UnreadableSkipped, resolve_paths

    output = os.path.abspath(out)
    with warnings.catch_warnings(record=True) as skipped:
        warnings.simplefilter("always", UnreadableSkipped)
        try:
            files = resolve_paths(sources, skip_unreadable=skip_unreadable)
        except UnreadableError as e:
            raise UnreadableError(e.unreadable, option="--skip-unreadable") from None
    for warning in skipped:
        if issubclass(warning.category, UnreadableSkipped):
            print(f"bpe-studio: warning: {warning.message}", file=sys.stderr)
        else:  # not ours: as it would have been shown
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    name, under = os.path.basename(output), output.rstrip(os.sep) + os.sep

    def is_output(file: Path) -> bool:  # (strings, and a path without the name is not looked at: 100,000 files)
        path = os.path.abspath(file) if name in str(file) else ""
        return path == output or path.startswith(under)

    kept = ResolvedPaths(file for file in files if not is_output(file))
    if not kept:
        raise FileNotFoundError(f"the sources hold only the output of an earlier run ({out}); give the corpus")
    left_out = len(files) - len(kept)
    if left_out:
        print(f"bpe-studio: note: not reading {left_out} file{'s' * (left_out != 1)} of the output ({out}) "
              "found among the sources", file=sys.stderr)
    return kept


def corpus_files(args: argparse.Namespace) -> list[Path] | dict[str, list[Path]]:
    """The files of ``args.corpus`` to read, ``args.out`` left out (`sources_without_output`),
    with a note if ``--field`` is not used (`note_field_unused`); named sources
    (``NAME=SOURCE``, `named_sources`) as a mapping from each name to its files."""
    named = named_sources(args.corpus)
    skip = getattr(args, "skip_unreadable", False)
    if named is None:
        files = sources_without_output(args.corpus, args.out, skip)
        note_field_unused(args.field, files)
        return files
    by_name = {name: sources_without_output(sources, args.out, skip) for name, sources in named.items()}
    note_field_unused(args.field, [file for files in by_name.values() for file in files])
    return by_name


_NAMED = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.-]{0,63})=(.+)", re.DOTALL)


def named_sources(sources: list[str]) -> dict[str, list[str]] | None:
    """``NAME=SOURCE`` arguments (a name of letters, digits, ``_ . -``; a name given twice
    gathers its sources) as ``{name: [source, ...]}``, or ``None`` when no argument names
    its source. A path that exists is a path, even with ``=`` in it.

    Raises:
        UsageError: some sources named and some not.
    """
    from bpe_studio.cli.usage import UsageError

    matches = [None if Path(source).exists() else _NAMED.fullmatch(source) for source in sources]
    if not any(matches):
        return None
    unnamed = [source for source, match in zip(sources, matches) if match is None]
    if unnamed:
        raise UsageError(f"name every source (NAME=SOURCE, e.g. en=data/en.txt) or none; {unnamed[0]!r} has no name")
    named: dict[str, list[str]] = {}
    for match in matches:
        assert match is not None
        named.setdefault(match.group(1), []).append(match.group(2))
    return named


LIBRARY_ARGUMENTS = {"field": "--field", "sample": "--sample", "max_bytes": "--max-bytes", "out": "--out",
                     "doc_separator": "--doc-separator", "pattern": "--pattern", "special_tokens": "--special-token",
                     "workers": "--workers", "seed": "--seed", "doc_max_chars": "--doc-max-chars"}
"""The library's arguments that have a flag of the same meaning."""

_ARGUMENT = re.compile(r"\b(" + "|".join(LIBRARY_ARGUMENTS) + r")=(?=[\s),;:.]|$)")


def in_cli_words(message: str) -> str:
    """A library message in the command line's words: an argument named alone (``field=``,
    not ``field='body'``) becomes its flag (``--field``)."""
    return _ARGUMENT.sub(lambda m: LIBRARY_ARGUMENTS[m.group(1)], message)
