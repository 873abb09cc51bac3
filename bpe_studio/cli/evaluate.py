"""``bpe-studio eval`` / ``shrink``: judge tokenizers on held-out text (docs/evaluate.md).

    bpe-studio eval mytok/ gpt2/ --on held_out/ data.jsonl --group-by lang --baseline gpt2 --csv out.csv
    bpe-studio eval mytok/ --on held_out.txt --sizes 1k,2k,4k       (the vocabulary size ladder)
    bpe-studio shrink mytok/ --vocab-size 4096 --out mytok-4k/
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from bpe_studio.cli.usage import UsageError
from bpe_studio.sizes import parse_sizes
from bpe_studio.cli.checks import (
    TOKENIZER_HELP,
    add_field_option,
    capped_workers,
    check_output_file,
    field_of,
    non_empty,
    note_field_unused,
)
from core.corpus.paths import resolve_paths
if TYPE_CHECKING:
    from core.evaluate.measures import Row

__all__ = ["MAX_SAMPLES", "MAX_SAMPLE_TOKENS", "add_evaluate_parsers", "format_table", "parse_sizes"]

# ``lm`` samples are lines for a person to read, and each sampled token costs one pass over
# the whole vocabulary: the bounds keep a mistyped number from running for days.
MAX_SAMPLE_TOKENS = 1_000
MAX_SAMPLES = 100


def add_evaluate_parsers(commands: Any) -> None:
    """Register ``eval``, ``shrink``, ``health`` and ``lm`` on an argparse subparsers object."""
    parser = commands.add_parser(
        "eval",
        help="measure tokenizers on held-out text",
        description="Measure each TOKENIZER (a folder, tokenizer.json, GPT-2 vocab/merges, .tiktoken) on each "
        "SOURCE (a file; a folder gives one row per file; a JSONL/Parquet file one row, or one per value of "
        "--group-by): tokens, bytes and characters per token, tokens per word, distinct tokens used.",
    )
    parser.add_argument("tokenizers", nargs="+", metavar="TOKENIZER", help=f"{TOKENIZER_HELP}; several for a table")
    parser.add_argument("--on", nargs="+", required=True, metavar="SOURCE", help="held-out files, folders or globs")
    add_field_option(parser)
    parser.add_argument("--group-by", metavar="FIELD", help="one row per value of this JSONL/Parquet field (e.g. lang)")
    parser.add_argument("--reference", metavar="ROW",
                        help="the row each row's premium (its tokens / the reference row's, same tokenizer) is "
                             "against: a source, a file's stem (en for dev/en.txt) or a --group-by value; for "
                             "parallel text")
    parser.add_argument("--baseline", metavar="NAME",
                        help="the tokenizer (its name in the table) the others are compared to; default: the last one")
    parser.add_argument("--sizes", metavar="N,N,...",
                        help="the vocabulary size ladder of one tokenizer: these sizes (1k = 1000) or 'auto'")
    parser.add_argument("--workers", type=int, metavar="K",
                        help="processes measuring files side by side (default: all cores from 8 MB of input)")
    parser.add_argument("--csv", metavar="FILE", help="also write the table as CSV")
    parser.add_argument("--json", metavar="FILE", help="also write the table as JSON")
    parser.set_defaults(run=run_eval)

    shrink = commands.add_parser(
        "shrink",
        help="cut a tokenizer to a smaller vocabulary",
        description="Keep the first merges of TOKENIZER so the vocabulary has N tokens: the tokenizer training "
        "with --vocab-size N would have given.",
    )
    shrink.add_argument("tokenizer", metavar="TOKENIZER", help=TOKENIZER_HELP)
    shrink.add_argument("--vocab-size", type=int, required=True, metavar="N",
                        help="the smaller vocabulary size (256 bytes + special tokens + the merges kept)")
    shrink.add_argument("--out", required=True, type=non_empty("the folder to write the tokenizer into"),
                        metavar="DIR", help="directory to write the cut tokenizer's files into")
    shrink.set_defaults(run=run_shrink)

    health = commands.add_parser(
        "health",
        help="find junk tokens in a vocabulary",
        description="List tokens no text encodes to (only reachable as a step of a longer merge), tokens that are "
        "not whole UTF-8, long repetitive tokens, and with --on tokens never (or at most --rare times) produced "
        "on held-out text; with --compare, the overlap with another vocabulary.",
    )
    health.add_argument("tokenizer", metavar="TOKENIZER", help=TOKENIZER_HELP)
    health.add_argument("--on", nargs="+", metavar="SOURCE", help="held-out text for the unused-token check")
    add_field_option(health)
    health.add_argument("--rare", type=int, default=0, metavar="N", help="tokens produced at most N times are unused")
    health.add_argument("--min-length", type=int, default=5, metavar="BYTES",
                        help="shortest repetitive token reported (default: 5)")
    health.add_argument("--compare", metavar="TOKENIZER", help="another tokenizer: the overlap of the vocabularies")
    health.add_argument("--show", type=int, default=10, metavar="N", help="examples listed per check (default: 10)")
    health.set_defaults(run=run_health)

    lm = commands.add_parser(
        "lm",
        help="train a tiny n-gram model on the tokens; bits per byte on held-out text",
        description="Encode --train with each TOKENIZER, count a Kneser-Ney trigram model on the ids and measure "
        "it on --on in bits per byte (comparable across vocabularies); print a few sampled lines.",
    )
    lm.add_argument("tokenizers", nargs="+", metavar="TOKENIZER", help=f"{TOKENIZER_HELP}; several to compare")
    lm.add_argument("--train", nargs="+", required=True, metavar="SOURCE", help="the text the model is counted on")
    lm.add_argument("--on", nargs="+", required=True, metavar="SOURCE", help="held-out text")
    add_field_option(lm)
    lm.add_argument("--samples", type=int, default=2, metavar="N",
                    help=f"sampled lines per tokenizer, 0 to {MAX_SAMPLES} (default: 2)")
    lm.add_argument("--sample-tokens", type=int, default=30, metavar="N",
                    help=f"tokens per sample, 1 to {MAX_SAMPLE_TOKENS:,} (default: 30)")
    lm.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the sampled lines (default: 0)")
    lm.set_defaults(run=run_lm)


def _fmt(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}" if value >= 0.01 or value == 0 else f"{value:.2e}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


TABLE_COLUMNS = (("tokenizer", "tokenizer"), ("source", "source"), ("vocab", "vocab_size"), ("tokens", "tokens"),
                 ("bytes/tok", "bytes_per_token"), ("chars/tok", "chars_per_token"), ("tok/word", "fertility"),
                 ("distinct", "distinct"), ("vocab used", "vocab_used"), ("vs base", "vs_baseline"),
                 ("renyi", "renyi_efficiency"), ("premium", "premium"), ("gini", "gini"))


def format_table(rows: list[Row]) -> str:
    """A plain-text table, one line per row, columns aligned."""
    cells = [[h for h, _ in TABLE_COLUMNS]]
    for row in rows:
        d = row.as_dict()
        cells.append([f"{100 * d[key]:.2f}%" if key == "vocab_used" else _fmt(d[key]) for _, key in TABLE_COLUMNS])
    widths = [max(len(r[i]) for r in cells) for i in range(len(TABLE_COLUMNS))]
    lines = []
    for r in cells:
        parts = [c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def _write(path: str, text: str) -> None:
    from core.formats.atomic import atomic_output

    with atomic_output(Path(path)) as f:
        f.write(text.encode("utf-8"))


def run_eval(args: argparse.Namespace, stream: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``bpe-studio eval``; user mistakes raise UsageError, core.errors' types or OSError (the caller prints them)."""
    # (imported in each command: numpy is not the other commands' start-up cost)
    from core.evaluate.measures import evaluate, load_tokenizers, rows_csv, rows_json

    out = stream or sys.stdout
    errs = err or sys.stderr
    workers = capped_workers(args.workers)
    if args.csv is not None and args.json is not None and Path(args.csv).absolute() == Path(args.json).absolute():
        raise UsageError(f"--csv and --json are the same file ({args.csv}); give each its own")
    outputs = [(option, path) for option, path in (("--csv", args.csv), ("--json", args.json)) if path is not None]
    on_files = resolve_paths(args.on) if outputs else None  # (a missing source is said here too, before any work)
    for option, path in outputs:
        check_output_file(option, path, [*args.tokenizers, *(on_files or [])])
    if args.sizes is not None:
        from core.evaluate.ladder import default_sizes, ladder_tokenizers

        if len(args.tokenizers) != 1:
            raise UsageError("--sizes needs exactly one tokenizer (its ladder is measured)")
        (name, tokenizer), = load_tokenizers(args.tokenizers).items()
        sizes = default_sizes(tokenizer) if args.sizes == "auto" else parse_sizes(args.sizes)
        tokenizers: Any = {f"{name} @ {size}": t for size, t in ladder_tokenizers(tokenizer, sizes)}
        baseline = args.baseline
    else:
        tokenizers = load_tokenizers(args.tokenizers)
        baseline = args.baseline if args.baseline is not None else (
            list(tokenizers)[-1] if len(tokenizers) > 1 else None)

    def progress(done: int, total: int, label: str) -> None:
        if errs.isatty():
            errs.write(f"\r{done}/{total} {label[-60:]:<60}")
            errs.flush()

    result = evaluate(tokenizers, args.on, field=_field(args, args.on, on_files), group_by=args.group_by,
                      baseline=baseline, reference=args.reference, progress=progress, workers=workers)
    if errs.isatty():
        errs.write("\r" + " " * 80 + "\r")
    out.write(format_table(result.rows) + "\n")
    if args.csv:
        _write(args.csv, rows_csv(result.rows))
    if args.json:
        _write(args.json, rows_json(result.rows))
    return 0


def run_shrink(args: argparse.Namespace, stream: TextIO | None = None) -> int:
    """Run ``bpe-studio shrink``."""
    from core.evaluate.measures import load_tokenizers

    from core.evaluate.ladder import shrink
    from core.formats import save_tokenizer

    out = stream or sys.stdout
    (_, tokenizer), = load_tokenizers([args.tokenizer]).items()
    vocab, merges = shrink(tokenizer, args.vocab_size)
    save_tokenizer(args.out, vocab, merges, tokenizer.special_tokens, tokenizer.pattern)
    out.write(f"{args.out}: {len(vocab):,} tokens ({len(merges):,} merges)\n")
    return 0


def _field(args: argparse.Namespace, sources: list[str], files: list[Path] | None = None) -> str:
    """The ``--field`` to read, with a note when it was given for plain text alone (``files``:
    ``sources`` resolved already, if they were)."""
    if args.field is not None:
        note_field_unused(args.field, files if files is not None else resolve_paths(sources))
    return field_of(args)


def run_health(args: argparse.Namespace, stream: TextIO | None = None) -> int:
    """Run ``bpe-studio health``."""
    from core.evaluate.measures import evaluate, load_tokenizers

    from core.evaluate.health import health, overlap
    from core.readable import readable

    out = stream or sys.stdout
    if args.rare < 0 or args.min_length < 1 or args.show < 0:
        raise UsageError("--rare and --show must be at least 0, --min-length at least 1")
    (name, tokenizer), = load_tokenizers([args.tokenizer]).items()
    counts = None
    if args.on:
        counts = evaluate({name: tokenizer}, args.on, field=_field(args, args.on)).counts[name]
    other = load_tokenizers([args.compare]) if args.compare else None
    report = health(tokenizer, counts, rare=args.rare, min_length=args.min_length)
    out.write(f"{name}: {report.size:,} tokens\n")
    checks = [("unreachable (no text encodes to them alone)", report.unreachable),
              ("partial (not whole UTF-8)", report.partial),
              (f"repetitive (>= {args.min_length} bytes of one short unit)", report.repetitive)]
    if report.unused is not None:
        checks.append((f"unused on held-out text (produced <= {args.rare} times)", report.unused))
    for title, ids in checks:
        out.write(f"{len(ids):>8,}  {title}\n")
        for token_id in ids[: args.show]:
            out.write(f"{'':10}{token_id:>7}  {readable(tokenizer.vocab[token_id])}\n")
    if other is not None:
        (other_name, other_tok), = other.items()
        result = overlap(tokenizer, other_tok)
        out.write(f"overlap with {other_name}: {result.shared:,} shared, {result.only_a:,} only in {name}, "
                  f"{result.only_b:,} only in {other_name}\n")
        for k, shared in result.by_rank:
            out.write(f"{'':10}first {k:,} of {name}: {shared:,} in {other_name} ({100 * shared / k:.1f}%)\n")
    return 0


def run_lm(args: argparse.Namespace, stream: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``bpe-studio lm`` (on a terminal, a progress line on stderr says which step runs)."""
    from core.evaluate.measures import load_tokenizers

    from core.evaluate.ngram import bits_per_byte, encode_sources, train_ngram

    out = stream or sys.stdout
    errs = err or sys.stderr

    def progress(text: str) -> None:
        if errs.isatty():  # the steps take seconds each: say what runs (nothing in pipes and logs)
            errs.write(f"\r{text[:78]:<78}" if text else "\r" + " " * 78 + "\r")
            errs.flush()
    if not 0 <= args.samples <= MAX_SAMPLES:
        raise UsageError(f"--samples must be from 0 to {MAX_SAMPLES}, got {args.samples:,}")
    if not 1 <= args.sample_tokens <= MAX_SAMPLE_TOKENS:
        raise UsageError(f"--sample-tokens must be from 1 to {MAX_SAMPLE_TOKENS:,} (a sample is a line to read), "
                         f"got {args.sample_tokens:,}")
    if args.seed < 0:
        raise UsageError(f"--seed must be at least 0, got {args.seed:,}")
    field = _field(args, [*args.train, *args.on])
    tokenizers = load_tokenizers(args.tokenizers)
    lines = [("tokenizer", "vocab", "train tokens", "held-out tokens", "bits/token", "bits/byte")]
    samples = []
    for k, (name, tokenizer) in enumerate(tokenizers.items(), 1):
        step = f"{name} ({k}/{len(tokenizers)}): "
        progress(step + "encoding the training text…")
        ids, _ = encode_sources(tokenizer, args.train, field=field)
        if len(ids) < 3:
            progress("")
            raise UsageError(f"{' '.join(args.train)}: too little text to train on (fewer than 3 tokens)")
        progress(step + f"counting the model on {len(ids):,} tokens…")
        model = train_ngram(ids, max(tokenizer.vocab) + 1)
        progress(step + "measuring the held-out text…")
        held, nbytes = encode_sources(tokenizer, args.on, field=field)
        bpb = bits_per_byte(model, held, nbytes)
        lines.append((name, f"{len(tokenizer):,}", f"{len(ids):,}", f"{len(held):,}",
                      f"{model.bits(held) / max(len(held), 1):.3f}", f"{bpb:.4f}"))
        for k in range(args.samples):
            text = tokenizer.decode(model.sample(args.sample_tokens, seed=args.seed + k))
            samples.append(f"{name}: {text!r}")
    progress("")
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    for line in lines:
        out.write("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths)))
                  .rstrip() + "\n")
    for sample in samples:
        out.write(sample + "\n")
    return 0
