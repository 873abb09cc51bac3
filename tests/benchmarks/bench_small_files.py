"""Benchmark: a folder of many tiny files — counting and training, BPE Studio against Hugging Face `tokenizers`.

    python tests/benchmarks/bench_small_files.py [--files 20000] [--bytes 100] [--rounds 5]

Builds (once; reused while it exists) ``/tmp/bpe-studio-bench-small/<files>x<bytes>/``: that many
files of about ``--bytes`` bytes each, words drawn from ``../shared/corpora/pydocs.txt`` (or
made-up words when it is absent). Then, each in its own fresh process, alternating:
- ``count``: ``core.count_pretokens(folder)`` — every file checked, then counted;
- ``cli``: ``bpe-studio count folder --out counts.bpc``, the whole command;
- ``train``: ``core.train(folder, TrainOptions(300, ["<|endoftext|>"]))``;
- ``hf``: Hugging Face ``Tokenizer(BPE)`` with the ByteLevel pre-tokenizer, ``train(files)`` to
  the same vocabulary size (it reads the files itself).
Prints, for each, the median seconds after imports, the median wall time of the whole
process (start, imports and all: what a user waits for), files per second of that wall
time, the peak memory of the process tree, and the CPU's SIMD level.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import harness

HERE = Path(__file__).resolve()
PYDOCS = HERE.parents[3] / "shared" / "corpora" / "pydocs.txt"
CACHE = Path("/tmp/bpe-studio-bench-small")
NAMES = {"count": "core.count_pretokens", "cli": "bpe-studio count", "train": "core.train (vocab 300)",
         "hf": "HF tokenizers train (vocab 300)"}
VOCAB = 300


def make_folder(files: int, size: int) -> Path:
    folder = CACHE / f"{files}x{size}"
    if folder.is_dir() and len(os.listdir(folder)) == files:
        return folder
    rng = random.Random(files)
    if PYDOCS.exists():
        words = PYDOCS.read_text(encoding="utf-8", errors="replace").split()[:200_000]
    else:
        words = ["".join(rng.choice("etaoinshrdlu") for _ in range(rng.randint(1, 9))) for _ in range(5000)]
    partial = Path(tempfile.mkdtemp(dir=CACHE.parent if CACHE.exists() else None, prefix="small-"))
    for i in range(files):
        text = " ".join(rng.choice(words) for _ in range(size // 4))[:size]
        (partial / f"{i:06d}.txt").write_text(text, encoding="utf-8")
    CACHE.mkdir(exist_ok=True)
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    partial.rename(folder)
    return folder


def run(tool: str, folder: str) -> None:
    if tool == "count":
        import core

        started = time.perf_counter()
        counts = core.count_pretokens(folder)
        harness.child_result(time.perf_counter() - started, distinct=len(counts))
    elif tool == "train":
        import core

        started = time.perf_counter()
        vocab, _ = core.train(folder, core.TrainOptions(VOCAB, ["<|endoftext|>"])).result()
        harness.child_result(time.perf_counter() - started, vocab=len(vocab))
    elif tool == "cli":
        from bpe_studio.cli import main as cli_main

        with tempfile.TemporaryDirectory() as out:
            started = time.perf_counter()
            code = cli_main(["count", folder, "--out", os.path.join(out, "counts.bpc")])
            if code != 0:
                raise SystemExit(f"bpe-studio count failed ({code})")
            harness.child_result(time.perf_counter() - started)
    else:
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers

        files = sorted(str(p) for p in Path(folder).iterdir())  # (listing the folder is its user's part)
        started = time.perf_counter()
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["<|endoftext|>"], show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train(files, trainer)
        harness.child_result(time.perf_counter() - started, vocab=tok.get_vocab_size())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--bytes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", default=",".join(NAMES), help=f"tools, comma-separated, of {','.join(NAMES)}")
    parser.add_argument("--run", choices=list(NAMES), help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        run(args.run, args.folder)
        return 0
    folder = str(make_folder(args.files, args.bytes))

    def timed(tool: str) -> dict[str, float]:
        started = time.perf_counter()
        result = harness.measure([__file__, "--run", tool, "--folder", folder])
        result["wall"] = time.perf_counter() - started
        return result

    tools = [t for t in args.only.split(",") if t]
    results = harness.rounds({tool: (lambda tool=tool: timed(tool)) for tool in tools}, args.rounds)
    print(f"{args.files:,} files of about {args.bytes} bytes in {folder}; medians of {args.rounds} alternating "
          f"rounds, each in a fresh process; CPU SIMD level: {harness.simd_level()}")
    print()
    print("| run | seconds after imports | process wall s | files/s (wall) | peak MB |")
    print("|---|---:|---:|---:|---:|")
    for tool in tools:
        wall = harness.median(results[tool], "wall")
        print(f"| {NAMES[tool]} | {harness.median(results[tool], 'seconds'):.2f} | {wall:.2f} | "
              f"{args.files / wall:,.0f} | {harness.median(results[tool], 'peak_mb'):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
