"""Benchmark: writing GPT-2 as tokenizer files — ours against Hugging Face tokenizers.

    python tests/benchmarks/bench_export.py --rounds 5

GPT-2 is loaded from ``../shared/fixtures`` (not timed) in a fresh process, then written:
our five files (``save_tokenizer``: vocab.json, merges.txt, tokenizer_config.json,
tokenizer.json, .tiktoken), our ``tokenizer.json`` alone, and HF tokenizers'
``Tokenizer.save`` of the same ``tokenizer.json``. The two ``tokenizer.json`` files are
checked to load in HF with the same vocabulary and merges. Contenders take turns, round
after round; medians, peak memory of each process, the CPU's SIMD level.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import bench_encode
import harness

WRITERS = {
    "ours-all": "BPE Studio, the five files",
    "ours-json": "BPE Studio, tokenizer.json",
    "hf-json": "HF tokenizers, tokenizer.json",
}


def child(name: str, out: Path) -> None:
    from core.formats import load_gpt2_files, save_tokenizer, save_tokenizer_json

    vocab, merges = load_gpt2_files(bench_encode.VOCAB_PATH, bench_encode.MERGES_PATH, [bench_encode.SPECIAL])
    out.mkdir(parents=True, exist_ok=True)
    if name == "hf-json":
        import tokenizers

        save_tokenizer_json(out / "source.json", vocab, merges, [bench_encode.SPECIAL], "gpt2")
        tok = tokenizers.Tokenizer.from_file(str(out / "source.json"))
        started = time.perf_counter()
        tok.save(str(out / "tokenizer.json"))
    elif name == "ours-json":
        started = time.perf_counter()
        save_tokenizer_json(out / "tokenizer.json", vocab, merges, [bench_encode.SPECIAL], "gpt2")
    else:
        started = time.perf_counter()
        save_tokenizer(out, vocab, merges, [bench_encode.SPECIAL], "gpt2")
    seconds = time.perf_counter() - started
    harness.child_result(seconds, bytes=sum(p.stat().st_size for p in out.iterdir() if p.name != "source.json"))


def _same_in_hf(paths: list[Path]) -> bool:
    import tokenizers

    models = [json.loads(tokenizers.Tokenizer.from_file(str(p)).to_str())["model"] for p in paths]
    return all((m["vocab"], m["merges"]) == (models[0]["vocab"], models[0]["merges"]) for m in models)


def main() -> int:
    parser = harness.parser(__doc__, only=list(WRITERS))
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        child(args.run, Path(args.out))
        return 0
    chosen = harness.chosen(args.only)
    with tempfile.TemporaryDirectory() as tmp:
        def run(name: str):  # noqa: ANN202
            return lambda: harness.measure([__file__, "--run", name, "--out", str(Path(tmp) / name)])

        results = harness.rounds({n: run(n) for n in chosen}, args.rounds)
        written = [Path(tmp) / n / "tokenizer.json" for n in chosen]
        if not _same_in_hf(written):
            print("THE tokenizer.json FILES DIFFER in HF's reading", file=sys.stderr)
    print(f"GPT-2 (50,257 tokens, 50,000 merges) written to files; medians of {args.rounds} alternating rounds, "
          f"each run in a fresh process (loading not timed); every tokenizer.json read back by HF alike; "
          f"CPU SIMD level: {harness.simd_level()}")
    print()
    print("| writer | time | written | peak memory |")
    print("|---|---|---|---|")
    for n in chosen:
        seconds = harness.median(results[n], "seconds")
        written_mb = harness.median(results[n], "bytes") / 1e6
        print(f"| {WRITERS[n]} | {seconds * 1000:.0f} ms | {written_mb:.1f} MB | "
              f"{harness.median(results[n], 'peak_mb'):.0f} MB |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
