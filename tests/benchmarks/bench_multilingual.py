"""Benchmark: plain and parity-aware BPE on many languages, side by side in one run.

    python tests/benchmarks/bench_multilingual.py ../shared/corpora/multilingual --vocab-size 32000
    python tests/benchmarks/bench_multilingual.py ../shared/corpora/multilingual --vocab-size 8000 --rounds 3

The corpus folder holds ``train/<lang>.txt[.xz]`` (one named source per language) and
``dev/<lang>.txt`` (the same sentences in each language). Trains, each in a fresh process,
in turn each round (imports before the clock): plain BPE on the named sources, parity-aware
BPE (dev mode) and parity-aware BPE with the moving window (W = 100, alpha = 2). Prints
medians of time and peak memory (process tree), the merges each made (parity-aware stops
when the language it chose has no pair left), then each tokenizer's bytes per token and
premium over English on every dev file, their Gini coefficient and English's bytes per token.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import harness

SPECIAL = "<|endoftext|>"
NAMES = {"plain": "plain BPE", "parity": "parity-aware (dev)", "window": "parity-aware (window 100)"}


def sources(root: Path) -> tuple[dict[str, Path], dict[str, Path]]:
    train = {path.name.split(".")[0]: path for path in sorted((root / "train").iterdir()) if path.is_file()}
    dev = {path.name.split(".")[0]: path for path in sorted((root / "dev").iterdir()) if path.is_file()}
    return train, {name: dev[name] for name in train}


def run(kind: str, root: Path, vocab_size: int, out: Path) -> None:
    import core
    from core.variants import ParityAware

    train, dev = sources(root)
    variant = {"plain": None, "parity": ParityAware(dev=dev),
               "window": ParityAware(dev=dev, window=100, alpha=2.0)}[kind]
    started = time.perf_counter()
    training = core.train(train, core.TrainOptions(vocab_size, [SPECIAL], variant=variant))
    tokenizer = training.tokenizer()
    seconds = time.perf_counter() - started
    tokenizer.save(out)
    harness.child_result(seconds, merges=len(tokenizer.merges))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path, help="a folder with train/ and dev/")
    parser.add_argument("--vocab-size", type=int, default=32_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--run", choices=list(NAMES), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        run(args.run, args.corpus, args.vocab_size, args.out)
        return 0
    import core
    from core.evaluate.measures import evaluate

    with tempfile.TemporaryDirectory() as folder:
        outs = {name: Path(folder) / name for name in NAMES}
        contenders = {name: (lambda name=name: harness.measure(
            [__file__, str(args.corpus), "--vocab-size", str(args.vocab_size), "--run", name, "--out", str(outs[name])]))
            for name in NAMES}
        results = harness.rounds(contenders, args.rounds)
        _train, dev = sources(args.corpus)
        tokenizers = {name: core.Tokenizer.load(outs[name]) for name in NAMES}
        evaluation = evaluate(tokenizers, list(dev.values()), reference="en")
    print(f"corpus {args.corpus} ({len(dev)} languages), vocab {args.vocab_size:,}, medians of {args.rounds} "
          f"round(s), each in a fresh process; CPU SIMD level: {harness.simd_level()}")
    print()
    print("| trainer | seconds | peak memory | merges | Gini (dev tokens) | en bytes/token |")
    print("|---|---|---|---|---|---|")
    for name in NAMES:
        runs = results[name]
        english = next(r for r in evaluation.rows if r.tokenizer == name and Path(r.source).stem == "en")
        print(f"| {NAMES[name]} | {harness.median(runs, 'seconds'):.2f} | {harness.median(runs, 'peak_mb'):.0f} MB | "
              f"{int(harness.median(runs, 'merges')):,} | {evaluation.gini[name]:.3f} | {english.bytes_per_token:.2f} |")
    print()
    print("| language | " + " | ".join(f"{NAMES[n]}: bytes/token, premium" for n in NAMES) + " |")
    print("|---|" + "---|" * len(NAMES))
    for language in dev:
        cells = []
        for name in NAMES:
            row = next(r for r in evaluation.rows if r.tokenizer == name and Path(r.source).stem == language)
            cells.append(f"{row.bytes_per_token:.2f}, {row.premium:.2f}")
        print(f"| {language} | " + " | ".join(cells) + " |")
    print(json.dumps({name: harness.median(results[name], "seconds") for name in NAMES}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
