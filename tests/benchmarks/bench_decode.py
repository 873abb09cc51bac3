"""Benchmark: decoding GPT-2 ids back to text — ours against tiktoken, gigatoken, splintr-rs and HF.

    python tests/benchmarks/bench_decode.py ../shared/corpora/pydocs.txt --rounds 5

Every tool is built offline from ``../shared/fixtures`` as in ``bench_encode.py``. In a
fresh process each tool encodes the corpus's documents (not timed), then decodes their ids
back to text (``decode``), timed two ways: each document's ids in turn (a list per
document, as an evaluation or a generation loop does), and all the corpus's ids in one
call. The texts are checked equal between tools (a checksum). Contenders take turns,
round after round; medians, MB of text a second, the ratio to tiktoken, peak memory of
each process, the CPU's SIMD level.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

import bench_encode
import harness

DECODERS = ("ours", "tiktoken", "gigatoken", "splintr", "hf")


def decoder(name: str, tool):  # noqa: ANN001, ANN201
    """The tool's ids -> text function (a list of ints in, a str out)."""
    if name == "hf":
        return lambda ids: tool.decode(ids, skip_special_tokens=False)
    if name == "gigatoken":  # (its decode gives bytes)
        return lambda ids: tool.decode(ids).decode("utf-8", errors="replace")
    return tool.decode


def child(name: str, mode: str, corpus: str, files: Path) -> None:
    docs = bench_encode.documents(corpus)
    tool, encode = bench_encode.build(name, files)
    decode = decoder(name, tool)
    ids = [list(map(int, encode(doc))) for doc in docs]
    decode(ids[0])  # warm up
    digest = hashlib.blake2b()
    if mode == "docs":
        started = time.perf_counter()
        texts = [decode(d) for d in ids]
        seconds = time.perf_counter() - started
        for text in texts:
            digest.update(text.encode("utf-8", "surrogatepass"))
    else:
        flat = [i for d in ids for i in d]
        started = time.perf_counter()
        text = decode(flat)
        seconds = time.perf_counter() - started
        digest.update(text.encode("utf-8", "surrogatepass"))
    harness.child_result(seconds, checksum=digest.hexdigest(), tokens=sum(map(len, ids)))


def main() -> int:
    parser = harness.parser(__doc__, only=DECODERS)
    parser.add_argument("corpus", nargs="?", default=str(bench_encode.SHARED / "corpora" / "pydocs.txt"))
    parser.add_argument("--mode", choices=["docs", "whole"], help=argparse.SUPPRESS)
    parser.add_argument("--files", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        child(args.run, args.mode, args.corpus, Path(args.files))
        return 0
    from core.formats import load_gpt2_files, save_tokenizer

    chosen = harness.chosen(args.only)
    mb = sum(len(d.encode()) for d in bench_encode.documents(args.corpus)) / 1e6
    with tempfile.TemporaryDirectory() as tmp:
        vocab, merges = load_gpt2_files(bench_encode.VOCAB_PATH, bench_encode.MERGES_PATH, [bench_encode.SPECIAL])
        save_tokenizer(Path(tmp), vocab, merges, [bench_encode.SPECIAL], "gpt2")

        def run(name: str, mode: str):  # noqa: ANN202
            return lambda: harness.measure([__file__, args.corpus, "--run", name, "--mode", mode, "--files", tmp])

        contenders = {f"{n} {mode}": run(n, mode) for mode in ("docs", "whole") for n in chosen}
        results = harness.rounds(contenders, args.rounds)

    for mode in ("docs", "whole"):
        sums = {results[f"{n} {mode}"][0]["checksum"] for n in chosen}
        if len(sums) > 1:
            print(f"THE TEXTS DIFFER between tools ({mode}): {sums}", file=sys.stderr)
    tokens = results[f"{chosen[0]} docs"][0]["tokens"]
    print(f"corpus {args.corpus} ({mb:.1f} MB, {tokens:,} GPT-2 tokens); decode, one thread; medians of "
          f"{args.rounds} alternating rounds, each run in a fresh process; texts checked equal between tools; "
          f"CPU SIMD level: {harness.simd_level()}")
    print()
    print("| decoder | document by document | all ids in one call | peak memory |")
    print("|---|---|---|---|")
    for n in chosen:
        cells = []
        for mode in ("docs", "whole"):
            s = harness.median(results[f"{n} {mode}"], "seconds")
            ratio = ""
            if "tiktoken" in chosen:
                ratio = f" ({harness.median(results[f'tiktoken {mode}'], 'seconds') / s:.2f}× tiktoken)"
            cells.append(f"{mb / s:.0f} MB/s{ratio}")
        peak = harness.median(results[f"{n} whole"], "peak_mb")
        print(f"| {bench_encode.NAMES.get(n, n)} | {cells[0]} | {cells[1]} | {peak:.0f} MB |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
