"""Benchmark: loading GPT-2 from its files — ours against tiktoken and HF tokenizers.

    python tests/benchmarks/bench_load.py --rounds 5

GPT-2 is written once as our export (``save_tokenizer``: vocab.json + merges.txt,
tokenizer.json, tokenizer.tiktoken). In a fresh process each loader reads one of them and
encodes a short text (what a script waits for before its first ids); imports are not
timed. Ours loads the folder (vocab.json + merges.txt), ``tokenizer.json`` and
``tokenizer.tiktoken`` (whose merges are recovered from the ranks); tiktoken builds an
``Encoding`` from ``load_tiktoken_bpe``; HF reads ``tokenizer.json``. The short text's ids
are checked equal. Contenders take turns, round after round; medians, peak memory of each
process, the CPU's SIMD level.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import bench_encode
import harness

LOADERS = {
    "ours-folder": "BPE Studio, vocab.json + merges.txt",
    "ours-json": "BPE Studio, tokenizer.json",
    "ours-tiktoken": "BPE Studio, tokenizer.tiktoken",
    "tiktoken": "tiktoken, tokenizer.tiktoken",
    "hf": "HF tokenizers, tokenizer.json",
}
TEXT = "Hello world, this is GPT-2 loaded from its files.<|endoftext|>"


def child(name: str, folder: Path) -> None:
    if name.startswith("ours"):
        from core.encode.tokenizer import Tokenizer

        path = {"ours-folder": folder, "ours-json": folder / "tokenizer.json",
                "ours-tiktoken": folder / "tokenizer.tiktoken"}[name]
        options = {"encoding": "r50k_base"} if name == "ours-tiktoken" else {}
        started = time.perf_counter()
        ids = Tokenizer.load(path, **options).encode(TEXT)
    elif name == "tiktoken":
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe

        started = time.perf_counter()
        ranks = load_tiktoken_bpe(str(folder / "tokenizer.tiktoken"))
        enc = tiktoken.Encoding(name="gpt2", pat_str=bench_encode.GPT2_PATTERN, mergeable_ranks=ranks,
                                special_tokens={bench_encode.SPECIAL: 50256})
        ids = enc.encode(TEXT, allowed_special="all")
    else:
        import tokenizers

        started = time.perf_counter()
        ids = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json")).encode(TEXT).ids
    seconds = time.perf_counter() - started
    harness.child_result(seconds, ids=list(ids))


def main() -> int:
    parser = harness.parser(__doc__, only=list(LOADERS))
    parser.add_argument("--files", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        child(args.run, Path(args.files))
        return 0
    from core.formats import load_gpt2_files, save_tokenizer

    chosen = harness.chosen(args.only)
    with tempfile.TemporaryDirectory() as tmp:
        vocab, merges = load_gpt2_files(bench_encode.VOCAB_PATH, bench_encode.MERGES_PATH, [bench_encode.SPECIAL])
        save_tokenizer(Path(tmp), vocab, merges, [bench_encode.SPECIAL], "gpt2")

        def run(name: str):  # noqa: ANN202
            return lambda: harness.measure([__file__, "--run", name, "--files", tmp])

        results = harness.rounds({n: run(n) for n in chosen}, args.rounds)
    if len({tuple(results[n][0]["ids"]) for n in chosen}) > 1:
        print("THE IDS DIFFER between loaders", file=sys.stderr)
    print(f"GPT-2 loaded from its files and a short text encoded; medians of {args.rounds} alternating rounds, "
          f"each run in a fresh process (imports not timed); ids checked equal; CPU SIMD level: {harness.simd_level()}")
    print()
    print("| loader | time | peak memory |")
    print("|---|---|---|")
    for n in chosen:
        print(f"| {LOADERS[n]} | {harness.median(results[n], 'seconds') * 1000:.0f} ms | "
              f"{harness.median(results[n], 'peak_mb'):.0f} MB |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
