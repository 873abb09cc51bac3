"""Benchmark: our trainer against Hugging Face `tokenizers` on the same corpus, side by side.

    python tests/benchmarks/bench_train.py CORPUS --vocab-size 10000 [--copies 10]
        [--special-token '<|endoftext|>'] [--workers K]

Each trainer runs in its own fresh process (so peak memory is its own; its imports are
done before the clock starts): byte-level BPE, the same vocabulary size and special token. Prints wall seconds, peak RSS and ratios.
``--copies N`` concatenates N copies of CORPUS into a temporary file first.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _peak_rss_mb() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, children


def import_ours() -> None:
    import core  # noqa: F401


def import_hf() -> None:
    import tokenizers  # noqa: F401


def run_ours(corpus: str, vocab_size: int, specials: list[str], workers: int | None) -> int:
    import core

    vocab, merges = core.train_bpe(corpus, vocab_size, specials, workers=workers)
    return len(vocab)


def run_hf(corpus: str, vocab_size: int, specials: list[str], workers: int | None) -> int:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train([corpus], trainer)
    return tokenizer.get_vocab_size()


def _child(args: argparse.Namespace) -> None:
    run = {"ours": run_ours, "hf": run_hf}[args.run]
    {"ours": import_ours, "hf": import_hf}[args.run]()  # imports are not timed
    start = time.perf_counter()
    size = run(args.corpus, args.vocab_size, args.special_token, args.workers)
    seconds = time.perf_counter() - start
    own, children = _peak_rss_mb()
    print(json.dumps({"seconds": seconds, "rss_mb": own + children, "vocab": size}))


def _measure(tool: str, corpus: str, args: argparse.Namespace) -> dict[str, float]:
    cmd = [sys.executable, __file__, corpus, "--vocab-size", str(args.vocab_size), "--run", tool]
    for token in args.special_token:
        cmd += ["--special-token", token]
    if args.workers:
        cmd += ["--workers", str(args.workers)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus")
    parser.add_argument("--vocab-size", type=int, default=10_000)
    parser.add_argument("--special-token", action="append", default=None)
    parser.add_argument("--workers", type=int)
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1, help="runs per tool; the best is kept")
    parser.add_argument("--run", choices=["ours", "hf"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.special_token is None:
        args.special_token = ["<|endoftext|>"]
    if args.run:
        _child(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        corpus = args.corpus
        if args.copies > 1:
            corpus = str(Path(tmp) / "corpus.txt")
            with open(corpus, "wb") as out:
                for _ in range(args.copies):
                    with open(args.corpus, "rb") as f:
                        shutil.copyfileobj(f, out)
        size_mb = Path(corpus).stat().st_size / 1e6
        results = {}
        for tool in ("ours", "hf"):
            runs = [_measure(tool, corpus, args) for _ in range(args.repeat)]
            results[tool] = min(runs, key=lambda r: r["seconds"])
    ours, hf = results["ours"], results["hf"]
    print(f"corpus {Path(args.corpus).name} x{args.copies} = {size_mb:.1f} MB, vocab {args.vocab_size}, "
          f"specials {args.special_token}")
    print(f"{'':24}{'seconds':>10}{'peak RSS MB':>14}{'vocab':>8}")
    print(f"{'ours (core.train_bpe)':24}{ours['seconds']:>10.2f}{ours['rss_mb']:>14.0f}{ours['vocab']:>8}")
    print(f"{'HF tokenizers':24}{hf['seconds']:>10.2f}{hf['rss_mb']:>14.0f}{hf['vocab']:>8}")
    print(f"ratio ours/HF: time {ours['seconds'] / hf['seconds']:.2f}, peak RSS {ours['rss_mb'] / hf['rss_mb']:.2f}")


if __name__ == "__main__":
    main()
