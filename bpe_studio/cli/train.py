"""``bpe-studio train``: headless training with terminal progress and a summary.

    bpe-studio train corpus.txt --vocab-size 10000 --special-token '<|endoftext|>' --out tok/
    bpe-studio train shards/ 'more/*.jsonl.zst' --field text --max-bytes 2GiB --sample 0.1 --out tok/

Writes vocab.json + merges.txt (GPT-2 format), tokenizer_config.json, tokenizer.json and
tokenizer.tiktoken into the output directory, only once training has finished. Everything
that can be checked without the corpus (the options, the output folder can be written, the
special tokens and pattern can be stored) is checked before the corpus is read. The options
are built from the arguments in one place (`train_options`, `read_options`: the
`core.TrainOptions` and `core.ReadOptions` the library takes). Follows the run
(`core.train`): the progress line moves once per batch of merges.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from array import array
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

import core
from core.errors import BpeStudioError, InvalidSpecialTokensError
from core.events import CountingDone, Finished, MergeBatch, PretokenizeProgress
from core.formats import check_save_tokenizer, save_tokenizer
from core.variants import VARIANTS, ParityAware, Picky, SuperBPE, Variant
from core.formats.hf_json import regex_only_syntax
from bpe_studio.cli.checks import (
    add_field_option,
    add_skip_unreadable_option,
    capped_workers,
    check_text_option,
    corpus_files,
    field_of,
    non_empty,
    pattern_option,
)
from bpe_studio.cli.terminal import ProgressLine, bar, write_result
from core.progress import bytes_progress, merges_progress, training_summary


def add_train_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "train",
        help="train a tokenizer on a corpus",
        description="Train a byte-level BPE tokenizer on SOURCE(s) and write it into DIR. A source is a "
        "file, a folder (read recursively, hidden files skipped) or a glob; plain text, JSONL (.jsonl, "
        ".ndjson) or Parquet, optionally compressed (.gz, .bz2, .xz, .zst). Each plain file, JSONL record "
        "and Parquet row is a document: nothing is merged across documents.",
    )
    parser.add_argument("corpus", nargs="*", metavar="SOURCE",
                        help="files, folders or glob patterns; or named sources, NAME=SOURCE each (en=data/en.txt "
                             "hi=data/hi/): trained on together, with each merge's count per source in provenance.tsv")
    parser.add_argument("--from-counts", nargs="+", metavar="FILE",
                        help="train from pre-token counts files ('bpe-studio count'), added up, instead of SOURCEs")
    parser.add_argument("--vocab-size", type=int, required=True, metavar="N",
                        help="vocabulary size: 256 bytes + special tokens + merges")
    parser.add_argument("--special-token", action="append", default=[], metavar="TOK", dest="special_tokens",
                        help="a special token (repeat for several), e.g. '<|endoftext|>'")
    parser.add_argument("--out", required=True, type=non_empty("the folder to write the tokenizer into"),
                        metavar="DIR", help="directory to write the tokenizer files into")
    parser.add_argument("--workers", type=int, metavar="K", help="pre-tokenization workers: threads on text and JSONL, processes for Parquet and custom patterns (default: all cores)")
    parser.add_argument("--pattern", type=pattern_option, metavar="gpt2|gpt4|REGEX",
                        help="pre-tokenization pattern (default: gpt2, or --init's)")
    add_source_options(parser)
    options = parser.add_argument_group("trainer options (docs/semantics.md)")
    options.add_argument("--max-token-length", type=int, metavar="L",
                         help="never merge a pair whose token would be longer than L bytes (L >= 2)")
    options.add_argument("--min-frequency", type=int, default=1, metavar="F",
                         help="stop when the best pair occurs fewer than F times (default: 1)")
    variants = parser.add_argument_group("variants (docs/variants.md)")
    variants.add_argument("--variant", type=str.lower, default="bpe",
                          choices=["bpe", *(v.name for v in VARIANTS), ParityAware.name],
                          help="bpe (default); " + "; ".join(f"{v.name}: {v.summary}"
                                                             for v in (*VARIANTS, ParityAware)))
    variants.add_argument("--picky-threshold", type=float, metavar="T",
                          help="picky: remove a token when more than this share of it went into a merge, in (0, 1] (default 0.9)")
    variants.add_argument("--transition", type=int, metavar="T",
                          help="superbpe: merges of stage 1 (default: 90%% of the merges to make)")
    variants.add_argument("--max-words", type=int, metavar="K",
                          help="superbpe: at most K words in a stage-2 token (default 4)")
    variants.add_argument("--dev", nargs="+", metavar="NAME=FILE|DIR",
                          help="parity: each language's development text (the same sentences in each), NAME=FILE "
                               "each, or a folder of files named by language (en.txt, hi.txt, ...)")
    variants.add_argument("--ratio", metavar="NAME=R,...",
                          help="parity, instead of --dev: each language's target compression against the first's, "
                               "e.g. en=1,hi=1.6")
    variants.add_argument("--global-merges", type=int, metavar="G", help="parity: the first G merges by all languages")
    variants.add_argument("--window", type=int, metavar="W",
                          help="parity: the moving-window variant over the last W choices")
    variants.add_argument("--alpha", type=float, metavar="A", help="parity: the window's allowance (default 2)")
    options.add_argument("--init", metavar="TOKENIZER",
                         help="continue training this tokenizer (folder or file): its merges and ids stay, "
                         "new merges follow; its pattern is used")
    parser.set_defaults(run=run_train)


def add_source_options(parser: argparse.ArgumentParser) -> None:
    """--field (`add_field_option`, as every command reading a corpus), --max-bytes, --sample, --seed,
    --doc-max-chars, --skip-unreadable (`add_skip_unreadable_option`)."""
    add_field_option(parser)
    parser.add_argument("--max-bytes", type=_size, metavar="SIZE",
                        help="read at most this much text, e.g. 500MB or 2GiB")
    parser.add_argument("--sample", type=_fraction, metavar="FRACTION",
                        help="keep this fraction of the documents, e.g. 0.1 (reproducible with --seed)")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="sampling seed (default: 0)")
    parser.add_argument("--doc-max-chars", type=_positive, metavar="N", help="cut each document after N characters")
    add_skip_unreadable_option(parser)


def _size(text: str) -> int:
    from core.corpus.sources import parse_size

    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _fraction(text: str) -> float:
    try:
        value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction in (0, 1]; write e.g. 0.1 or 10%")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


OPTION_FLAGS = {
    "vocab_size": "--vocab-size", "special_tokens": "--special-token", "max_token_length": "--max-token-length",
    "min_frequency": "--min-frequency", "workers": "--workers", "pattern": "--pattern", "field": "--field",
    "sample": "--sample", "seed": "--seed", "doc_max_chars": "--doc-max-chars", "max_bytes": "--max-bytes",
}
"""The flag of each `core.TrainOptions` / `core.ReadOptions` field, to name it in an error."""


def _as_flags(error: BpeStudioError) -> BpeStudioError:
    """``error`` with the option's name spelled as its flag (``max_token_length`` -> ``--max-token-length``)."""
    from bpe_studio.cli.usage import UsageError

    message = str(error)
    if isinstance(error, InvalidSpecialTokensError):
        return InvalidSpecialTokensError(f"--special-token: {message}")
    for name, flag in OPTION_FLAGS.items():
        if message.startswith(name + " "):
            return UsageError(flag + message[len(name):])
    return error


def read_options(args: argparse.Namespace) -> core.ReadOptions:
    """The `core.ReadOptions` of the source options (`add_source_options`)."""
    try:
        return core.ReadOptions(field=field_of(args), sample=args.sample, seed=args.seed,
                                doc_max_chars=args.doc_max_chars, max_bytes=args.max_bytes,
                                skip_unreadable=args.skip_unreadable)
    except BpeStudioError as e:
        raise _as_flags(e) from None


def variant_of(args: argparse.Namespace, specials: int) -> Variant | None:
    """The `core.variants` variant of ``--variant`` and its parameters (``None``: plain BPE)."""
    from bpe_studio.cli.usage import UsageError

    given = {"--picky-threshold": args.picky_threshold, "--transition": args.transition, "--max-words": args.max_words,
             "--dev": args.dev, "--ratio": args.ratio, "--global-merges": args.global_merges, "--window": args.window,
             "--alpha": args.alpha}
    own = {"bpe": (), "picky": ("--picky-threshold",), "superbpe": ("--transition", "--max-words"),
           "parity": ("--dev", "--ratio", "--global-merges", "--window", "--alpha")}[args.variant]
    stray = [flag for flag, value in given.items() if value is not None and flag not in own]
    if stray:
        raise UsageError(f"{stray[0]} applies to another variant, not --variant {args.variant}")
    try:
        if args.variant == "picky":
            return Picky(0.9 if args.picky_threshold is None else args.picky_threshold)
        if args.variant == "superbpe":
            merges = max(0, (args.vocab_size or 0) - 256 - specials)
            transition = merges * 9 // 10 if args.transition is None else args.transition
            return SuperBPE(transition, 4 if args.max_words is None else args.max_words)
        if args.variant == "parity":
            if bool(args.dev) == bool(args.ratio):
                raise UsageError("--variant parity needs --dev (each language's development text) or --ratio, "
                                 "one of them")
            return ParityAware(dev=_dev_texts(args.dev) if args.dev else None,
                               ratio=_ratios(args.ratio) if args.ratio else None,
                               global_merges=args.global_merges or 0, window=args.window,
                               alpha=2.0 if args.alpha is None else args.alpha)
    except BpeStudioError as e:
        flag = {"threshold": "--picky-threshold", "transition": "--transition", "max_words": "--max-words",
                "global_merges": "--global-merges", "window": "--window", "alpha": "--alpha", "ratio": "--ratio"}
        message = str(e)
        for name, option in flag.items():
            if message.startswith(name + " "):
                message = option + message[len(name):]
        raise UsageError(message) from None
    return None


def _dev_texts(given: list[str]) -> dict[str, Path]:
    """``--dev``: ``NAME=FILE`` arguments, or one folder whose files are named by language."""
    from bpe_studio.cli.usage import UsageError
    from bpe_studio.cli.checks import named_sources

    if len(given) == 1 and Path(given[0]).is_dir():
        files = sorted(path for path in Path(given[0]).iterdir() if path.is_file() and not path.name.startswith("."))
        if not files:
            raise UsageError(f"--dev {given[0]}: the folder holds no file; give one file per language (en.txt, ...)")
        return {path.name.split(".")[0]: path for path in files}
    named = named_sources(given)
    if named is None:
        raise UsageError("--dev takes NAME=FILE for each language, or a folder of files named by language")
    return {name: Path(paths[0]) for name, paths in named.items()}


def _ratios(text: str) -> dict[str, float]:
    """``--ratio en=1,hi=1.6``."""
    from bpe_studio.cli.usage import UsageError

    ratios: dict[str, float] = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        try:
            ratios[name.strip()] = float(value)
        except ValueError:
            raise UsageError(f"--ratio: {part!r} is not NAME=NUMBER (e.g. --ratio en=1,hi=1.6)") from None
    return ratios


def train_options(args: argparse.Namespace, pattern: str, initial: object | None, workers: int | None,
                  special_tokens: list[str] | None = None) -> core.TrainOptions:
    """The `core.TrainOptions` of ``bpe-studio train``'s arguments (the pattern, initial
    tokenizer, workers (`capped_workers`) and, from counts, special tokens as resolved by
    `run_train`)."""
    specials = args.special_tokens if special_tokens is None else special_tokens
    try:
        return core.TrainOptions(
            args.vocab_size, specials, pattern=pattern, max_token_length=args.max_token_length,
            min_frequency=args.min_frequency, initial=initial, workers=workers,
            variant=variant_of(args, len(specials)),
        )
    except BpeStudioError as e:
        raise _as_flags(e) from None


def run_train(args: argparse.Namespace, stream: TextIO | None = None) -> int:
    out = stream if stream is not None else sys.stdout
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise NotADirectoryError(f"--out {args.out} exists and is not a directory")
    from bpe_studio.cli.usage import UsageError

    started = time.monotonic()
    if bool(args.corpus) == bool(args.from_counts):
        raise UsageError("give either SOURCEs or --from-counts FILE ..., not both" if args.corpus
                         else "the following arguments are required: SOURCE (or --from-counts FILE ...)")
    if args.pattern is not None:
        check_text_option("--pattern", args.pattern)
    for token in args.special_tokens:
        check_text_option("--special-token", token)
    read = read_options(args)
    workers = capped_workers(args.workers)
    train_options(args, args.pattern or "gpt2", None, workers)  # the values, before anything is read
    initial = core.Tokenizer.load(args.init) if args.init else None
    pattern = args.pattern or (initial.pattern.source if initial else "gpt2")
    counts = None
    if args.from_counts:  # checked (read) before anything else is
        reading = [name for name, value in (("--field", args.field), ("--max-bytes", args.max_bytes),
                                            ("--sample", args.sample), ("--doc-max-chars", args.doc_max_chars))
                   if value is not None]
        if reading:
            raise UsageError(f"{reading[0]} applies when reading a corpus; give it to 'bpe-studio count' instead")
        counts = core.PretokenCounts.add_all(core.PretokenCounts.load(path) for path in args.from_counts)
        if args.pattern and core.resolve_pattern(args.pattern).source != counts.pattern:
            raise UsageError("--pattern differs from the pattern the counts were made with; leave it out")
        pattern = counts.pattern
    counted = list(counts.special_tokens) if counts is not None and not args.special_tokens and not initial else None
    options = train_options(args, pattern, initial, workers, counted)
    specials = list(options.special_tokens)
    if initial:  # its special tokens (by id) come first
        inherited = sorted(initial.special_ids, key=initial.special_ids.__getitem__)
        specials = inherited + [t for t in specials if t not in inherited]
    _check_before_reading(args.out, specials, pattern)
    corpus = corpus_files(args) if counts is None else None
    if isinstance(options.variant, ParityAware):  # one named source per language, as --dev / --ratio name them
        names = tuple(corpus) if isinstance(corpus, dict) else getattr(counts, "sources", ())
        if not names:
            raise UsageError("--variant parity trains on named sources, one per language: NAME=SOURCE each "
                             "(en=data/en.txt hi=data/hi.txt ...)")
        try:
            options.variant.check_sources(names)
        except BpeStudioError as e:
            raise UsageError(f"--{e}") from None
    run = core.train(counts if counts is not None else corpus, options, read=None if counts is not None else read)
    progress = ProgressLine()
    counting: CountingDone | None = None
    finished: Finished | None = None
    last_merge: MergeBatch | None = None
    merge_start = 0.0
    planned = args.vocab_size - 256 - len(specials)
    try:
        for event in run:
            now = time.monotonic()
            if isinstance(event, PretokenizeProgress):
                figures = bytes_progress(event.done, event.total, now - started)
                progress.update(
                    "reading", f"{bar(event.done / max(event.total, 1))} {figures}", force=event.done == event.total
                )
            elif isinstance(event, CountingDone):
                # the summary's figures, not the frequencies: 8 bytes per distinct pre-token
                # held through the merges (30 MB for 3.8 M)
                counting, merge_start = replace(event, frequencies=array("q")), now
            elif isinstance(event, MergeBatch):
                last_merge = event
                done = event.first_rank + len(event)
                figures = merges_progress(done, planned, done / max(now - merge_start, 1e-9))
                progress.update("merging", f"{bar(done / max(planned, 1))} {figures}")
            elif isinstance(event, Finished):
                finished = event
    except BaseException:
        progress.discard()
        raise
    finally:
        run.close()
        progress.close()
    assert finished is not None and counting is not None
    paths = run.tokenizer().save(args.out) if options.variant else save_tokenizer(
        args.out, finished.vocab, finished.merges, specials, pattern)
    if run.sources and (options.variant is None or isinstance(options.variant, ParityAware)):
        # named sources: where each merge came from (and, parity-aware, which language chose it)
        paths.append(_write_provenance(args.out, run))
    _print_summary(out, time.monotonic() - started, counting, finished, last_merge, paths, planned)
    return 0


def _write_provenance(out_dir: str, run: core.TrainRun) -> Any:
    """``provenance.tsv`` in ``out_dir`` (docs/formats.md), written atomically."""
    from pathlib import Path

    from core.formats.atomic import atomic_output
    from core.training.provenance import provenance_tsv

    path = Path(out_dir) / "provenance.tsv"
    with atomic_output(path) as f:
        f.write(provenance_tsv(run.provenance(), run.sources).encode("utf-8"))
    return path


def _check_before_reading(out_dir: str, specials: list[str], pattern: str) -> None:
    """What can go wrong without the corpus, checked before it is read (a mistake found
    after an hour of training costs the hour): the options are text, the pattern is
    valid, the output folder can be written and the special tokens can be stored; and a
    note for what the exports cannot carry (special tokens where one begins another, for
    tiktoken; a pattern only the regex module reads)."""
    for token in specials:
        check_text_option("--special-token", token)
    check_text_option("--pattern", pattern)
    try:
        check_save_tokenizer(out_dir, specials)
    except InvalidSpecialTokensError as e:
        raise InvalidSpecialTokensError(f"--special-token: {e}") from e
    overlapping = [(a, b) for a in specials for b in specials if a != b and b.startswith(a)]
    if overlapping:
        shorter, longer = overlapping[0]
        print(f"bpe-studio: note: the special token {shorter!r} begins {longer!r}: BPE Studio and Hugging Face take "
              f"the longer where both match, tiktoken either, so tokenizer.tiktoken may give other ids on text "
              "holding it (docs/formats.md)", file=sys.stderr)
    regex_only = regex_only_syntax(core.resolve_pattern(pattern).source)
    if regex_only is not None:
        print(f"bpe-studio: note: the pattern uses {regex_only}, which only Python's regex module reads: "
              "Hugging Face tokenizers and tiktoken will refuse the tokenizer.json and tokenizer.tiktoken "
              "written, or give other ids (core.Tokenizer.load reads them)", file=sys.stderr)


def _print_summary(
    out: TextIO | None,
    wall: float,
    counting: CountingDone,
    finished: Finished,
    last_merge: MergeBatch | None,
    paths: list[Any],
    planned: int,
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
        documents=counting.documents,
        input_bytes=counting.input_bytes,
        planned=planned,
    )
    rows.append(("Wrote", ", ".join(str(p) for p in paths)))
    write_result(out, "".join(f"{label.lower()}: {value}\n" for label, value in rows))
