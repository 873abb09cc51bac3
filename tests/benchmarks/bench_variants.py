"""Benchmark: SuperBPE and Picky BPE against plain BPE, side by side in one run.

    python tests/benchmarks/bench_variants.py ../shared/corpora/pydocs.txt --vocab-size 10000 --rounds 3
    python tests/benchmarks/bench_variants.py ../shared/corpora/pydocs.txt --vocab-size 32000 --rounds 3
    python tests/benchmarks/make_corpus.py --size-mb 100 --out /tmp/bench100.txt
    python tests/benchmarks/bench_variants.py /tmp/bench100.txt --vocab-size 32000 --rounds 1

Each trainer runs in a fresh process, all in turn each round (imports before the clock
starts): plain BPE, Picky (threshold 0.9) and SuperBPE (transition at 80% of the merges),
``<|endoftext|>`` a special token, all cores. Prints medians (seconds; counting and merging
split; peak memory of the process tree, workers summed), each variant's ratios to plain
BPE, and the CPU's SIMD level.

The public Picky BPE implementation, pip ``pickybpe-bauwenst`` (the ``bench`` extra), runs
when asked for (``--only plain,picky,pickybpe``): ``PickyBPETrainer(vocab_size, 0.9)``
from the file, its own whitespace split and characters (not bytes), so only its time
compares. It is slow: one round is plenty.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import harness

SPECIAL = "<|endoftext|>"
NAMES = {"plain": "plain BPE", "picky": "Picky BPE (0.9)", "superbpe": "SuperBPE (80%)",
         "pickybpe": "pickybpe-bauwenst 1.3 (Picky 0.9)"}
DEFAULT = "plain,picky,superbpe"


def run_pickybpe(corpus: str, vocab_size: int) -> None:
    import logging
    import tempfile

    from pickybpe.vocabularisation import PickyBPETrainer

    logging.disable(logging.INFO)
    trainer = PickyBPETrainer(vocab_size, picky_threshold=0.9)
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        trainer.fit_from_file(corpus, Path(out) / "tokenizer.json")
        seconds = time.perf_counter() - started
    harness.child_result(seconds, counting=0.0, merge=seconds)


def run(kind: str, corpus: str, vocab_size: int) -> None:
    if kind == "pickybpe":
        run_pickybpe(corpus, vocab_size)
        return
    import core
    from core.variants import Picky, SuperBPE

    variant = {"plain": None, "picky": Picky(0.9),
               "superbpe": SuperBPE((vocab_size - 257) * 8 // 10)}[kind]
    started = time.perf_counter()
    counted = 0.0
    for event in core.train(corpus, core.TrainOptions(vocab_size, [SPECIAL], variant=variant)):
        if isinstance(event, core.CountingDone) and not counted:
            counted = time.perf_counter() - started
    seconds = time.perf_counter() - started
    harness.child_result(seconds, counting=counted, merge=seconds - counted)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus")
    parser.add_argument("--vocab-size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default=DEFAULT, help=f"contenders, comma-separated, of {','.join(NAMES)}")
    parser.add_argument("--run", choices=list(NAMES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        run(args.run, args.corpus, args.vocab_size)
        return 0
    chosen = [name for name in args.only.split(",") if name]
    results = harness.trainer_rounds(__file__, args.corpus, args.vocab_size,
                                     [name for name in chosen if name != "pickybpe"], args.rounds)
    failures: dict[str, str] = {}
    if "pickybpe" in chosen:  # once, after the others: slow, and it may fail
        started = time.perf_counter()
        try:
            results["pickybpe"] = [harness.measure([__file__, args.corpus, "--vocab-size", str(args.vocab_size),
                                                    "--run", "pickybpe"])]
        except RuntimeError as e:
            last = str(e).strip().splitlines()[-1]
            failures["pickybpe"] = f"failed after {time.perf_counter() - started:.0f} s: {last}"
    size_mb = Path(args.corpus).stat().st_size / 1e6
    print(f"corpus {args.corpus} ({size_mb:.1f} MB), vocab {args.vocab_size:,}, medians of {args.rounds} "
          f"alternating rounds, each in a fresh process; CPU SIMD level: {harness.simd_level()}")
    print()
    print("| trainer | seconds (first counting + the rest) | peak memory (process tree) |")
    print("|---|---|---|")
    for name in chosen:
        if name in failures:
            print(f"| {NAMES[name]} | {failures[name]} | |")
            continue
        runs = results[name]
        print(f"| {NAMES[name]} | {harness.median(runs, 'seconds'):.2f} ({harness.median(runs, 'counting'):.2f} + "
              f"{harness.median(runs, 'merge'):.2f}) | {harness.median(runs, 'peak_mb'):.0f} MB |")
    if "plain" in chosen:
        plain = results["plain"]
        print()
        for name in chosen:
            if name != "plain" and name not in failures:
                print(f"{NAMES[name]} / plain BPE: time "
                      f"{harness.median(results[name], 'seconds') / harness.median(plain, 'seconds'):.2f}x, peak memory "
                      f"{harness.median(results[name], 'peak_mb') / harness.median(plain, 'peak_mb'):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
