"""Benchmark: training on a compressed JSONL corpus — BPE Studio against Hugging Face `tokenizers`.

    python tests/benchmarks/bench_sources.py [--mb 300] [--vocab-size 10000] [--workers K] [--keep]

Builds (once; reused while it exists) ``/tmp/bpe-studio-bench-sources/corpus-<MB>mb.jsonl.zst``:
about ``--mb`` MB of JSONL (one ``{"text": ...}`` record a line), its documents taken from
``../shared/corpora/pydocs.txt`` (paragraphs grouped into documents of a few KB) and from
generated text (made-up words with a Zipf-like frequency, numbers and punctuation, so the
corpus is not the same 11 MB over and over), shuffled together with a fixed seed.

Then, each in its own fresh process (imports done before the clock starts), alternating:
- BPE Studio: ``core.train_bpe(corpus, V, ["<|endoftext|>"], field="text")`` — the
  compressed stream is read once and its documents counted in worker processes;
- Hugging Face: ``Tokenizer(BPE)`` with the ByteLevel pre-tokenizer and ``BpeTrainer``,
  ``train_from_iterator`` fed by a plain Python reader (zstandard stream, one ``json.loads``
  a line) — what a user writes without a source layer.
Prints wall seconds and the peak memory of each whole process tree (the RSS of the process
and all its children, summed, sampled from /proc by harness.py), and the ratios.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import sys
import time
from pathlib import Path

import harness

HERE = Path(__file__).resolve()
SHARED = HERE.parents[3] / "shared"
CACHE = Path("/tmp/bpe-studio-bench-sources")
EOT = "<|endoftext|>"


# --------------------------------------------------------------------------- the corpus


def _pydocs_documents(path: Path, rng: random.Random) -> list[str]:
    paragraphs = path.read_text(encoding="utf-8", errors="replace").split("\n\n")
    docs, current, size = [], [], 0
    target = rng.randint(1000, 8000)
    for paragraph in paragraphs:
        current.append(paragraph)
        size += len(paragraph)
        if size >= target:
            docs.append("\n\n".join(current))
            current, size, target = [], 0, rng.randint(1000, 8000)
    if current:
        docs.append("\n\n".join(current))
    return docs


def _generated_documents(rng: random.Random, count: int) -> list[str]:
    syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "shi", "bo", "qu", "ex", "ar", "ven", "dil", "or",
                 "sto", "pra", "ül", "ße", "ño", "θα", "λο", "ми", "ра", "語", "学", "in", "est", "ion"]
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(40_000)]
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    docs = []
    for _ in range(count):
        n = rng.randint(150, 1200)
        picked = rng.choices(words, weights, k=n)
        parts = []
        for i, word in enumerate(picked):
            parts.append(word)
            r = rng.random()
            parts.append(", " if r < 0.06 else ". " if r < 0.1 else f" {rng.randint(0, 9999)} " if r < 0.12
                         else "\n\n" if r < 0.13 else " ")
        docs.append("".join(parts))
    return docs


def build_corpus(mb: int) -> Path:
    """The benchmark corpus (built once, then reused)."""
    import zstandard

    path = CACHE / f"corpus-{mb}mb.jsonl.zst"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    rng = random.Random(11)
    pydocs = _pydocs_documents(SHARED / "corpora" / "pydocs.txt", rng)
    target = mb * 1_000_000
    written = 0
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as raw, zstandard.ZstdCompressor(level=3).stream_writer(raw) as out:
        while written < target:
            batch = _generated_documents(rng, 2000) + rng.sample(pydocs, min(len(pydocs), 600))
            rng.shuffle(batch)
            data = "".join(json.dumps({"id": written + i, "text": doc}) + "\n" for i, doc in enumerate(batch)).encode()
            out.write(data)
            written += len(data)
    tmp.rename(path)
    return path


# --------------------------------------------------------------------------- the runs (child processes)


def read_jsonl_zst(path: str):
    """A plain Python reader: each record's text."""
    import zstandard

    with open(path, "rb") as raw:
        text = io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(raw), encoding="utf-8")
        for line in text:
            if line.strip():
                yield json.loads(line)["text"]


def run_ours(corpus: str, vocab_size: int, workers: int | None) -> dict[str, int]:
    import core

    vocab, merges = core.train(corpus, core.TrainOptions(vocab_size, [EOT], workers=workers), read=core.ReadOptions(field="text")).result()
    return {"vocab": len(vocab)}


def run_hf(corpus: str, vocab_size: int, workers: int | None) -> dict[str, int]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOT],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(read_jsonl_zst(corpus), trainer)
    return {"vocab": tokenizer.get_vocab_size()}


def _child(tool: str, corpus: str, vocab_size: int, workers: int | None) -> None:
    if tool == "ours":
        import core  # noqa: F401  (imports are not timed)
    else:
        import tokenizers  # noqa: F401
        import zstandard  # noqa: F401
    start = time.perf_counter()
    result = {"ours": run_ours, "hf": run_hf}[tool](corpus, vocab_size, workers)
    harness.child_result(time.perf_counter() - start, **result)


# --------------------------------------------------------------------------- measuring


def measure(tool: str, corpus: Path, args: argparse.Namespace) -> dict[str, float]:
    """One fresh process (`harness.measure`: seconds and the process tree's peak memory)."""
    argv = [str(HERE), "--run", tool, "--corpus", str(corpus), "--vocab-size", str(args.vocab_size)]
    if args.workers:
        argv += ["--workers", str(args.workers)]
    return harness.measure(argv)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=300, help="JSONL size to build, in MB (before compression)")
    parser.add_argument("--vocab-size", type=int, default=10_000)
    parser.add_argument("--workers", type=int)
    parser.add_argument("--keep", action="store_true", help="keep the built corpus (default: removed at the end)")
    parser.add_argument("--run", choices=["ours", "hf"], help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        _child(args.run, args.corpus, args.vocab_size, args.workers)
        return
    started = time.perf_counter()
    corpus = build_corpus(args.mb)
    print(f"corpus: {corpus} ({corpus.stat().st_size / 1e6:.1f} MB compressed, ~{args.mb} MB of JSONL; "
          f"built or found in {time.perf_counter() - started:.0f} s); CPU SIMD level: {harness.simd_level()}", flush=True)
    results = {}
    for tool in ("ours", "hf"):  # one run each, as the issue asks; each in a fresh process
        results[tool] = measure(tool, corpus, args)
        print(f"  {tool}: {results[tool]}", flush=True)
    ours, hf = results["ours"], results["hf"]
    print(f"\nvocab {args.vocab_size}, special token {EOT}, workers {args.workers or os.cpu_count()}")
    print(f"{'':44}{'seconds':>10}{'peak MB (tree)':>16}{'vocab':>8}")
    print(f"{'BPE Studio core.train_bpe(corpus.jsonl.zst)':44}{ours['seconds']:>10.1f}{ours['peak_mb']:>16.0f}"
          f"{ours['vocab']:>8}")
    print(f"{'HF train_from_iterator(Python JSONL reader)':44}{hf['seconds']:>10.1f}{hf['peak_mb']:>16.0f}"
          f"{hf['vocab']:>8}")
    print(f"ratio BPE Studio / HF: time {ours['seconds'] / hf['seconds']:.2f}, peak memory "
          f"{ours['peak_mb'] / hf['peak_mb']:.2f}")
    if not args.keep:
        corpus.unlink()


if __name__ == "__main__":
    main()
