"""Benchmark: `core.evaluate.evaluate` against a plain tiktoken script (what nanochat's
``tok_eval.py`` does: encode, count tokens), and the n-gram model on the same ids.

    python tests/benchmarks/bench_evaluate.py [CORPUS] [--repeats 3] [--workers 1]

CORPUS defaults to ``../shared/corpora/pydocs.txt``; the tokenizer is GPT-2 from
``../shared/fixtures``. Each contender runs in a fresh process, the contenders taking turns;
imports and tokenizer loading are not timed. "ours" is `evaluate` on CORPUS (tokens, bytes,
characters, words, distinct ids); "tiktoken" encodes the same text with tiktoken's
``Encoding`` built offline from the same files and counts tokens and distinct ids; "lm"
encodes with our tokenizer (not timed) and times `train_ngram` + bits per byte on the
last tenth. Prints the median seconds, MB/s, the ratio ours/tiktoken, and the peak memory
of each process (its children summed). The token counts are checked equal.
Not part of the test run (pytest collects ``test_*.py`` only).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import harness

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
VOCAB, MERGES = SHARED / "fixtures" / "gpt2_vocab.json", SHARED / "fixtures" / "gpt2_merges.txt"


def _peak_mb() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return (own + children) / 1024


def child(kind: str, corpus: Path, workers: int) -> None:
    import numpy as np

    from core.encode.tokenizer import Tokenizer

    tokenizer = Tokenizer.load(VOCAB)
    if kind == "ours":
        from core.evaluate import evaluate

        started = time.perf_counter()
        row = evaluate({"gpt2": tokenizer}, corpus, workers=workers).rows[0]
        seconds, tokens = time.perf_counter() - started, row.tokens
    elif kind == "tiktoken":
        import tiktoken

        from core.pretokenize.patterns import GPT2_PATTERN

        ranks = {t: i for i, t in tokenizer.vocab.items() if i != 50256}
        enc = tiktoken.Encoding(name="gpt2_offline", pat_str=GPT2_PATTERN, mergeable_ranks=ranks,
                                special_tokens={"<|endoftext|>": 50256})
        started = time.perf_counter()
        text = corpus.read_text(encoding="utf-8", errors="surrogateescape")
        ids = enc.encode(text, allowed_special="all")
        _distinct = len(set(ids))
        seconds, tokens = time.perf_counter() - started, len(ids)
    else:
        from core.evaluate.ngram import bits_per_byte, train_ngram

        text = corpus.read_text(encoding="utf-8", errors="surrogateescape")
        ids = np.array(tokenizer.encode(text))
        cut = len(ids) * 9 // 10
        started = time.perf_counter()
        model = train_ngram(ids[:cut], len(tokenizer))
        bits_per_byte(model, ids[cut:], len(tokenizer.decode_bytes(ids[cut:])))
        seconds, tokens = time.perf_counter() - started, len(ids)
    print(f"{seconds:.6f} {tokens} {_peak_mb():.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=SHARED / "corpora" / "pydocs.txt")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.corpus, args.workers)
        return
    size_mb = args.corpus.stat().st_size / 1e6
    results: dict[str, list[tuple[float, int, float]]] = {"ours": [], "tiktoken": [], "lm": []}
    for _ in range(args.repeats):
        for kind in results:
            out = subprocess.run([sys.executable, __file__, str(args.corpus), "--child", kind,
                                  "--workers", str(args.workers)], capture_output=True, text=True, check=True)
            seconds, tokens, peak = out.stdout.split()
            results[kind].append((float(seconds), int(tokens), float(peak)))
    assert results["ours"][0][1] == results["tiktoken"][0][1], "token counts differ"
    print(f"corpus: {args.corpus} ({size_mb:.1f} MB), {results['ours'][0][1]:,} GPT-2 tokens, "
          f"{args.repeats} runs each, workers={args.workers}; CPU SIMD level: {harness.simd_level()}")
    medians = {}
    for kind, runs in results.items():
        median = statistics.median(r[0] for r in runs)
        medians[kind] = median
        peak = max(r[2] for r in runs)
        print(f"{kind:>9}: median {median:.2f} s  ({size_mb / median:.1f} MB/s)  peak {peak:.0f} MB")
    print(f"ours/tiktoken time: {medians['ours'] / medians['tiktoken']:.2f}x")


if __name__ == "__main__":
    main()
