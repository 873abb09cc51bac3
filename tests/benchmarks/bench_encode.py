"""Benchmark: our encoder against tiktoken on the GPT-2 vocabulary, side by side, one thread.

    python tests/benchmarks/bench_encode.py [CORPUS] [--repeats 3] [--workers 2] [--copies N]

CORPUS defaults to ``../shared/corpora/pydocs.txt``; the GPT-2 files come from
``../shared/fixtures``. Each run encodes the whole text with a fresh `core.Tokenizer` (cold
caches) and with tiktoken's ``Encoding`` built offline from the same files (GPT-2 pattern,
ranks = ids, ``<|endoftext|>`` = 50256); the ids are checked equal. Prints MB/s of each
(best of the runs) and the ratio (target: ours/tiktoken >= 0.5). Then times the parallel
``encode`` path (`core.encode_corpus.encode_file`, what ``bpe-studio encode`` runs) with
``--workers`` processes against one process and against the single-thread rate above
(target: >= 1.5x on 2 cores); ``--copies N`` runs that part on N copies of CORPUS joined.
Workers are forked here, as by ``bpe-studio encode`` on Linux (``--start-method spawn``
measures spawned ones, which take ~0.25 s to start). Tokenizers are built outside the timed
parts, as tiktoken's ``Encoding`` is.
Not part of the test run (pytest collects ``test_*.py`` only).
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import tiktoken

from core.encode_corpus import encode_file
from core.formats import load_gpt2_files
from core.patterns import GPT2_PATTERN
from core.tokenizer import Tokenizer

SHARED = Path(__file__).resolve().parents[2].parent / "shared"


def best_of(repeats: int, run) -> tuple[float, object]:  # noqa: ANN001
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=str(SHARED / "corpora" / "pydocs.txt"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--copies", type=int, default=1, help="copies of CORPUS for the parallel part")
    parser.add_argument("--start-method", choices=["fork", "spawn"], help="how workers start (default: as the CLI)")
    args = parser.parse_args()
    vocab_path, merges_path = SHARED / "fixtures" / "gpt2_vocab.json", SHARED / "fixtures" / "gpt2_merges.txt"
    if not (vocab_path.is_file() and Path(args.corpus).is_file()):
        print(f"needs {vocab_path} and {args.corpus}", file=sys.stderr)
        return 2

    data = Path(args.corpus).read_bytes()
    text = data.decode("utf-8", errors="surrogateescape")
    mb = len(data) / 1e6
    vocab, merges = load_gpt2_files(vocab_path, merges_path, ["<|endoftext|>"])
    ranks = {token: i for i, token in vocab.items() if i != 50256}
    enc = tiktoken.Encoding(
        name="gpt2_offline", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={"<|endoftext|>": 50256}
    )

    def fresh() -> Tokenizer:  # cold caches; built outside the timed parts, like tiktoken's Encoding
        return Tokenizer(vocab, merges, ["<|endoftext|>"])

    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(args.corpus)
        if args.copies > 1:
            corpus = Path(tmp) / "corpus.txt"
            with corpus.open("wb") as f:
                for _ in range(args.copies):
                    f.write(data)
        out = Path(tmp) / "ids.npy"
        # The contenders take turns, round after round, so a slower minute of this shared
        # machine hits them all; each keeps its best time.
        contenders = {
            "tiktoken": (lambda: None, lambda _: enc.encode(text, allowed_special="all")),
            "ours": (fresh, lambda tok: tok.encode(text)),
            "one process": (fresh, lambda tok: encode_file(corpus, tok, out, workers=1)),
            "parallel": (fresh, lambda tok: encode_file(
                corpus, tok, out, workers=args.workers, start_method=args.start_method
            )),
        }
        best = dict.fromkeys(contenders, float("inf"))
        theirs = np.array(enc.encode(text, allowed_special="all"), dtype=np.int64)
        ours = fresh().encode_array(text)
        assert np.array_equal(ours, theirs), "the ids differ from tiktoken's"
        for _ in range(args.repeats):
            for name, (make, run) in contenders.items():
                thing = make()
                gc.collect()
                started = time.perf_counter()
                run(thing)
                best[name] = min(best[name], time.perf_counter() - started)
                del thing
            written = np.load(out, mmap_mode="r")  # the parallel run's
            assert len(written) == len(ours) * args.copies and np.array_equal(written[: len(ours)], ours), "ids differ"
            del written
    t_tiktoken, t_ours, t_one, t_par = best.values()
    t_warm, _ = best_of(1, fresh)  # construction alone

    print(f"corpus: {args.corpus} ({mb:.1f} MB, {len(ours):,} tokens); best of {args.repeats}, one thread")
    print(f"{'encoder':<34}{'seconds':>9}{'MB/s':>9}")
    print(f"{'tiktoken (gpt2, offline)':<34}{t_tiktoken:>9.2f}{mb / t_tiktoken:>9.2f}")
    print(f"{'core.Tokenizer.encode (cold cache)':<34}{t_ours:>9.2f}{mb / t_ours:>9.2f}")
    print(f"ratio ours/tiktoken: {t_tiktoken / t_ours:.2f}  (target >= 0.5; construction {t_warm:.2f} s not timed)")
    total = mb * args.copies
    print()
    print(f"encode_file (what bpe-studio encode runs) on {total:.1f} MB ({args.copies} cop{'ies' if args.copies > 1 else 'y'})")
    print(f"{'processes':<34}{'seconds':>9}{'MB/s':>9}")
    print(f"{'1':<34}{t_one:>9.2f}{total / t_one:>9.2f}")
    print(f"{args.workers:<34}{t_par:>9.2f}{total / t_par:>9.2f}")
    print(
        f"parallel speed-up: {t_one / t_par:.2f}x over 1 process; {total / t_par / (mb / t_ours):.2f}x over "
        "single-thread Tokenizer.encode's MB/s (target >= 1.5x; includes starting the workers)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
