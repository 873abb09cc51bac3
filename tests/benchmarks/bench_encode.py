"""Benchmark: our encoder against tiktoken on the GPT-2 vocabulary, side by side, one thread.

    python tests/benchmarks/bench_encode.py [CORPUS] [--repeats 3] [--workers 2] [--copies N]

CORPUS defaults to ``../shared/corpora/pydocs.txt``; the GPT-2 files come from
``../shared/fixtures``. Each run encodes the whole text with a fresh `core.Tokenizer` (cold
caches) and with tiktoken's ``Encoding`` built offline from the same files (GPT-2 pattern,
ranks = ids, ``<|endoftext|>`` = 50256); the ids are checked equal. Prints MB/s of each
(best of the runs) and the ratio (target: ours/tiktoken >= 0.5). Then runs the parallel
``bpe-studio encode`` itself (a fresh process each time, as a user runs it, with the same
files saved as vocab.json/merges.txt) with ``--workers N`` and with ``--workers 1``, and
compares the encoding time it reports with the single-thread rate above (target: >= 1.5x
on 2 cores); ``--copies N`` runs that part on N copies of CORPUS joined. Tokenizers are
built outside the timed parts, as tiktoken's ``Encoding`` is; all contenders take turns.
Peak memory: each encoder once more, alone in a fresh process.
Not part of the test run (pytest collects ``test_*.py`` only).
"""

from __future__ import annotations

import argparse
import gc
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import tiktoken

from core.formats import load_gpt2_files, save_tokenizer
from core.pretokenize.patterns import GPT2_PATTERN
from core.encode.tokenizer import Tokenizer

SHARED = Path(__file__).resolve().parents[2].parent / "shared"


def timed(run: Callable[..., object], *args: object) -> float:
    started = time.perf_counter()
    run(*args)
    return time.perf_counter() - started


VOCAB_PATH, MERGES_PATH = SHARED / "fixtures" / "gpt2_vocab.json", SHARED / "fixtures" / "gpt2_merges.txt"


def offline_tiktoken(vocab: dict[int, bytes]) -> tiktoken.Encoding:
    """tiktoken's gpt2 encoding built from the GPT-2 files (ranks = ids), as it cannot download."""
    ranks = {token: i for i, token in vocab.items() if i != 50256}
    return tiktoken.Encoding(
        name="gpt2_offline", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={"<|endoftext|>": 50256}
    )


def peak_of(what: str, corpus: str, tokenizer_dir: str, workers: int) -> None:
    """In a fresh process: one encoding of ``corpus``, then print the peak RSS in MB of the
    largest process it took (for the CLI, the CLI or one of its workers)."""
    if what == "cli":
        command = [sys.executable, "-m", "bpe_studio.cli", "encode", corpus, "--tokenizer", tokenizer_dir,
                   "--out", str(Path(tokenizer_dir) / "peak.npy"), "--workers", str(workers)]
        subprocess.run(command, capture_output=True, check=True)
        print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
        return
    text = Path(corpus).read_bytes().decode("utf-8", errors="surrogateescape")
    vocab, merges = load_gpt2_files(VOCAB_PATH, MERGES_PATH, ["<|endoftext|>"])
    if what == "tiktoken":
        offline_tiktoken(vocab).encode(text, allowed_special="all")
    else:
        Tokenizer(vocab, merges, ["<|endoftext|>"]).encode(text)
    # Not ru_maxrss: Linux keeps it across exec, so it would include the (large) parent's.
    status = Path("/proc/self/status").read_text()
    print(int(re.search(r"VmHWM:\s*(\d+) kB", status).group(1)) / 1024)  # type: ignore[union-attr]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=str(SHARED / "corpora" / "pydocs.txt"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--copies", type=int, default=1, help="copies of CORPUS for the parallel part")
    parser.add_argument("--peak-of", choices=["tiktoken", "ours", "cli"], help=argparse.SUPPRESS)
    parser.add_argument("--tokenizer-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peak_of:
        peak_of(args.peak_of, args.corpus, args.tokenizer_dir, args.workers)
        return 0
    if not (VOCAB_PATH.is_file() and Path(args.corpus).is_file()):
        print(f"needs {VOCAB_PATH} and {args.corpus}", file=sys.stderr)
        return 2

    data = Path(args.corpus).read_bytes()
    text = data.decode("utf-8", errors="surrogateescape")
    mb = len(data) / 1e6
    vocab, merges = load_gpt2_files(VOCAB_PATH, MERGES_PATH, ["<|endoftext|>"])
    enc = offline_tiktoken(vocab)

    def fresh() -> Tokenizer:  # cold caches; built outside the timed parts, like tiktoken's Encoding
        return Tokenizer(vocab, merges, ["<|endoftext|>"])

    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(args.corpus)
        if args.copies > 1:
            corpus = Path(tmp) / "corpus.txt"
            with corpus.open("wb") as f:
                for _ in range(args.copies):
                    f.write(data)
        tokenizer_dir = Path(tmp) / "gpt2"
        tokenizer_dir.mkdir()
        save_tokenizer(tokenizer_dir, vocab, merges, ["<|endoftext|>"], "gpt2")
        out = Path(tmp) / "ids.npy"

        def cli(workers: int) -> float:
            """``bpe-studio encode`` in a fresh process, as a user runs it: its own figure for
            the encoding (the tokenizer's loading and Python's start are not in it)."""
            command = [sys.executable, "-m", "bpe_studio.cli", "encode", str(corpus), "--tokenizer",
                       str(tokenizer_dir), "--out", str(out), "--workers", str(workers)]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            return float(re.search(r"\(([0-9.]+) s\)", done.stdout).group(1))  # type: ignore[union-attr]

        # The contenders take turns, round after round, so a slower minute of this shared
        # machine hits them all; each keeps its best time.
        contenders: dict[str, Callable[[], float]] = {
            "tiktoken": lambda: timed(lambda: enc.encode(text, allowed_special="all")),
            "ours": lambda: timed(fresh().encode, text),
            "cli 1": lambda: cli(1),
            "cli N": lambda: cli(args.workers),
        }
        best = dict.fromkeys(contenders, float("inf"))
        theirs = np.array(enc.encode(text, allowed_special="all"), dtype=np.int64)
        ours = fresh().encode_array(text)
        assert np.array_equal(ours, theirs), "the ids differ from tiktoken's"
        for _ in range(args.repeats):
            for name, run in contenders.items():
                gc.collect()
                best[name] = min(best[name], run())
            written = np.load(out, mmap_mode="r")  # the parallel run's
            assert len(written) == len(ours) * args.copies and np.array_equal(written[: len(ours)], ours), "ids differ"
            del written

        def peak(what: str) -> float:
            command = [sys.executable, __file__, str(corpus if what == "cli" else args.corpus), "--peak-of", what,
                       "--tokenizer-dir", str(tokenizer_dir), "--workers", str(args.workers)]
            return float(subprocess.run(command, capture_output=True, text=True, check=True).stdout)

        peaks = {what: peak(what) for what in ("tiktoken", "ours", "cli")}
    t_tiktoken, t_ours, t_one, t_par = best.values()
    t_warm = timed(fresh)  # construction alone

    print(f"corpus: {args.corpus} ({mb:.1f} MB, {len(ours):,} tokens); best of {args.repeats}, one thread")
    print(f"{'encoder':<34}{'seconds':>9}{'MB/s':>9}")
    print(f"{'tiktoken (gpt2, offline)':<34}{t_tiktoken:>9.2f}{mb / t_tiktoken:>9.2f}")
    print(f"{'core.Tokenizer.encode (cold cache)':<34}{t_ours:>9.2f}{mb / t_ours:>9.2f}")
    print(f"ratio ours/tiktoken: {t_tiktoken / t_ours:.2f}  (target >= 0.5; construction {t_warm:.2f} s not timed)")
    print(
        f"peak RSS, each alone in a fresh process (files loaded, text read, ids as a list): tiktoken "
        f"{peaks['tiktoken']:.0f} MB, ours {peaks['ours']:.0f} MB ({peaks['ours'] / peaks['tiktoken']:.2f}x)"
    )
    total = mb * args.copies
    print()
    print(f"bpe-studio encode on {total:.1f} MB ({args.copies} cop{'ies' if args.copies > 1 else 'y'}), as it reports")
    print(f"{'--workers':<34}{'seconds':>9}{'MB/s':>9}")
    print(f"{'1':<34}{t_one:>9.2f}{total / t_one:>9.2f}")
    print(f"{args.workers:<34}{t_par:>9.2f}{total / t_par:>9.2f}")
    print(
        f"parallel speed-up: {t_one / t_par:.2f}x over --workers 1; {total / t_par / (mb / t_ours):.2f}x over "
        "single-thread Tokenizer.encode's MB/s (target >= 1.5x; includes starting the workers)"
    )
    print(f"peak RSS of its largest process (--workers {args.workers}): {peaks['cli']:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
