"""Benchmark: our trainer against rustbpe, SentencePiece (BPE) and Hugging Face tokenizers, side by side.

    python tests/benchmarks/make_corpus.py --size-mb 24 --out /tmp/bench24.txt
    python tests/benchmarks/bench_train.py /tmp/bench24.txt --vocab-size 10000 --rounds 3
    python tests/benchmarks/make_corpus.py --size-mb 500 --out /tmp/bench500.txt
    python tests/benchmarks/bench_train.py /tmp/bench500.txt --vocab-size 32000 --rounds 1

Install the peers first: ``pip install -e '.[bench]'``. Every trainer runs in a fresh
process, all of them in turn each round (imports and nothing else before its clock
starts), on the same file: byte-level BPE to the same vocabulary size, the GPT-2
pattern where the tool takes one (rustbpe), ``<|endoftext|>`` a special token (ours, HF;
rustbpe gets the documents between them; SentencePiece reads lines). Workers: all cores.
Prints the medians of the rounds — seconds, our pre-tokenization and merging split, peak
memory of the whole process tree (workers summed) — and our ratios to each peer.
``--only ours,rustbpe`` picks contenders.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import harness

SPECIAL = "<|endoftext|>"
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
NAMES = {
    "ours": "BPE Studio",
    "rustbpe": "rustbpe",
    "sentencepiece": "SentencePiece (BPE)",
    "hf": "Hugging Face tokenizers",
}


def run_ours(corpus: str, vocab_size: int) -> None:
    import core

    started = time.perf_counter()
    counted = 0.0
    for event in core.train(corpus, core.TrainOptions(vocab_size, [SPECIAL])):
        if isinstance(event, core.CountingDone):
            counted = time.perf_counter() - started
    seconds = time.perf_counter() - started
    harness.child_result(seconds, pretokenize=counted, merge=seconds - counted)


def _documents(corpus: str):  # noqa: ANN202
    with open(corpus, encoding="utf-8", errors="surrogateescape") as f:
        pending = ""
        while block := f.read(1 << 20):
            parts = (pending + block).split(SPECIAL)
            pending = parts.pop()
            yield from parts
        if pending:
            yield pending


def run_rustbpe(corpus: str, vocab_size: int) -> None:
    import rustbpe

    started = time.perf_counter()
    tok = rustbpe.Tokenizer()
    tok.train_from_iterator(_documents(corpus), vocab_size, pattern=GPT2_PATTERN)
    harness.child_result(time.perf_counter() - started)


def run_sentencepiece(corpus: str, vocab_size: int) -> None:
    import os

    import sentencepiece as spm

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        spm.SentencePieceTrainer.train(
            input=corpus, model_prefix=str(Path(tmp) / "sp"), vocab_size=vocab_size, model_type="bpe",
            byte_fallback=True, character_coverage=0.9995, num_threads=os.cpu_count() or 1,
            user_defined_symbols=[SPECIAL], minloglevel=2, train_extremely_large_corpus=False,
        )
        harness.child_result(time.perf_counter() - started)


def run_hf(corpus: str, vocab_size: int) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    started = time.perf_counter()
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=[SPECIAL],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tokenizer.train([corpus], trainer)
    harness.child_result(time.perf_counter() - started)


RUNS = {"ours": run_ours, "rustbpe": run_rustbpe, "sentencepiece": run_sentencepiece, "hf": run_hf}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus")
    parser.add_argument("--vocab-size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default=",".join(RUNS), help="contenders, comma-separated")
    parser.add_argument("--run", choices=list(RUNS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        RUNS[args.run](args.corpus, args.vocab_size)
        return 0
    chosen = [name for name in args.only.split(",") if name]
    results = harness.trainer_rounds(__file__, args.corpus, args.vocab_size, chosen, args.rounds)
    size_mb = Path(args.corpus).stat().st_size / 1e6
    print(f"corpus {args.corpus} ({size_mb:.1f} MB), vocab {args.vocab_size:,}, medians of {args.rounds} "
          f"alternating rounds, each trainer in a fresh process; CPU SIMD level: {harness.simd_level()}")
    print()
    print("| trainer | seconds | peak memory (process tree) |")
    print("|---|---|---|")
    for name in chosen:
        runs = results[name]
        seconds = harness.median(runs, "seconds")
        detail = ""
        if name == "ours":
            detail = (f" (pre-tokenization {harness.median(runs, 'pretokenize'):.2f} + merging "
                      f"{harness.median(runs, 'merge'):.2f})")
        print(f"| {NAMES[name]} | {seconds:.2f}{detail} | {harness.median(runs, 'peak_mb'):.0f} MB |")
    if "ours" in chosen:
        ours = results["ours"]
        print()
        for name in chosen:
            if name != "ours":
                print(f"ours / {NAMES[name]}: time {harness.median(ours, 'seconds') / harness.median(results[name], 'seconds'):.2f}x, "
                      f"peak memory {harness.median(ours, 'peak_mb') / harness.median(results[name], 'peak_mb'):.2f}x")
        print(f"our pre-tokenization: {size_mb / harness.median(ours, 'pretokenize'):.0f} MB/s (all workers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
