"""Benchmark: encoding time as the number of special tokens grows — ours against tiktoken.

    python tests/benchmarks/bench_specials.py ../shared/corpora/pydocs.txt --rounds 3
    python tests/benchmarks/bench_specials.py ../shared/corpora/pydocs.txt --every 100 --rounds 3

The text is the corpus's first ``--size-mb`` MB with a special token put in after every
``--every`` characters: ``<|endoftext|>`` every other time, else ``<|tok00001|>`` or
``<|tok00002|>``. The special tokens are ``<|endoftext|>``, random ``<|tokNNNNN|>`` (which
occur nowhere) and, last, those two, for each count in ``--counts`` (with one:
``<|endoftext|>`` alone). GPT-2's vocabulary and
merges come from ``../shared/fixtures``; tiktoken is built offline from them (``Encoding``
from the ranks, GPT-2's pattern and the special tokens), and encodes with
``allowed_special="all"``.

Each tool, for each count, runs in a fresh process, all in turn each round: it builds the
tokenizer (timed: ``build``), then encodes the whole text in one ``encode`` call (timed:
``seconds``); the ids are checked equal (a checksum of each tool's ids). Prints medians,
seconds per MB, the ratio to one special token, and the CPU's SIMD level.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import zlib
from pathlib import Path

import harness

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
VOCAB_PATH, MERGES_PATH = SHARED / "fixtures" / "gpt2_vocab.json", SHARED / "fixtures" / "gpt2_merges.txt"
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
EOT = "<|endoftext|>"
OCCURRING = ["<|tok00001|>", "<|tok00002|>"]
NAMES = {"ours": "BPE Studio", "tiktoken": "tiktoken"}


def make_text(corpus: str, size_mb: float, every: int) -> str:
    """The corpus's first ``size_mb`` MB, with special tokens put in (see the module)."""
    raw = Path(corpus).read_bytes()[: int(size_mb * 1e6)].decode("utf-8", errors="ignore")
    parts = []
    for k, at in enumerate(range(0, len(raw), every)):
        parts.append(raw[at : at + every])
        parts.append(EOT if k % 2 else OCCURRING[(k // 2) % 2])
    return "".join(parts)


def special_tokens(count: int) -> list[str]:
    """``count`` special tokens: ``<|endoftext|>``, random ones, and the two that occur."""
    if count == 1:
        return [EOT]
    rng = random.Random(count)
    tokens = [EOT]
    seen = {EOT, *OCCURRING}
    while len(tokens) < count - len(OCCURRING):
        token = f"<|tok{rng.randrange(3, 10**6):05d}|>"
        if token not in seen:
            seen.add(token)
            tokens.append(token)
    return tokens + OCCURRING[: count - 1]


def run(tool: str, corpus: str, size_mb: float, every: int, count: int) -> None:
    from core.formats import load_gpt2_files

    text = make_text(corpus, size_mb, every)
    specials = special_tokens(count)
    vocab, merges = load_gpt2_files(VOCAB_PATH, MERGES_PATH, [EOT])
    started = time.perf_counter()
    if tool == "ours":
        from core.encode.tokenizer import Tokenizer

        tok = Tokenizer(vocab, merges, specials)
        tok.encode("warm " + EOT)  # builds the engine (lazily made on first use)
        build = time.perf_counter() - started
        started = time.perf_counter()
        ids = tok.encode(text)
    else:
        import tiktoken

        ranks = {t: i for i, t in vocab.items() if i != 50256}
        ids_of = {EOT: 50256, **{t: 50257 + k for k, t in enumerate(t for t in specials if t != EOT)}}
        enc = tiktoken.Encoding(name=f"gpt2-{count}", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens=ids_of)
        enc.encode("warm " + EOT, allowed_special="all")
        build = time.perf_counter() - started
        started = time.perf_counter()
        ids = enc.encode(text, allowed_special="all")
    seconds = time.perf_counter() - started
    harness.child_result(seconds, build=build, ids=len(ids), checksum=zlib.crc32(repr(ids).encode()),
                         mb=len(text.encode("utf-8")) / 1e6)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus")
    parser.add_argument("--size-mb", type=float, default=1.0)
    parser.add_argument("--every", type=int, default=4096, help="characters of text between special tokens")
    parser.add_argument("--counts", default="1,16,17,1000,20000", help="numbers of special tokens, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="ours,tiktoken", help=f"tools, comma-separated, of {','.join(NAMES)}")
    parser.add_argument("--run", choices=list(NAMES), help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        run(args.run, args.corpus, args.size_mb, args.every, args.count)
        return 0
    tools = [t for t in args.only.split(",") if t]
    counts = [int(c) for c in args.counts.split(",") if c]
    contenders = {
        (tool, count): (lambda tool=tool, count=count: harness.measure(
            [__file__, args.corpus, "--size-mb", str(args.size_mb), "--every", str(args.every),
             "--run", tool, "--count", str(count)]))
        for count in counts for tool in tools
    }
    results = harness.rounds(contenders, args.rounds)  # type: ignore[arg-type]
    for count in counts:
        sums = {tool: {r["checksum"] for r in results[(tool, count)]} for tool in tools}
        if len(set().union(*sums.values())) != 1:
            print(f"the ids differ with {count} special tokens: {sums}", file=sys.stderr)
            return 1
    mb = results[(tools[0], counts[0])][0]["mb"]
    print(f"{args.corpus}: {mb:.2f} MB of text, a special token every {args.every} characters, one encode call; medians of {args.rounds} alternating rounds, "
          f"each in a fresh process; CPU SIMD level: {harness.simd_level()}")
    print()
    print("| special tokens | " + " | ".join(f"{NAMES[t]}: s/MB (x one special) | {NAMES[t]}: build s" for t in tools) + " |")
    print("|---:|" + "---:|---:|" * len(tools))
    for count in counts:
        cells = []
        for tool in tools:
            seconds = harness.median(results[(tool, count)], "seconds")
            base = harness.median(results[(tool, counts[0])], "seconds")
            cells.append(f"{seconds / mb:.3f} ({seconds / base:.2f}x) | {harness.median(results[(tool, count)], 'build'):.2f}")
        print(f"| {count:,} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
