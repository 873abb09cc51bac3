"""Benchmark: encoding with GPT-2's vocabulary — ours against tiktoken, fastokens, tokendagger, gigatoken, splintr-rs and HF.

    python tests/benchmarks/make_corpus.py --size-mb 24 --out /tmp/bench24.txt
    python tests/benchmarks/bench_encode.py /tmp/bench24.txt --rounds 3
    python tests/benchmarks/bench_encode.py /tmp/bench229.txt --rounds 5 --only files

Install the peers first: ``pip install -e '.[bench]'``. The GPT-2 files come from
``../shared/fixtures``; every peer is built offline from them (tiktoken: ``Encoding`` from
the ranks and GPT-2's pattern; fastokens: ``Tokenizer.from_tiktoken`` on the ranks written
as a ``.tiktoken`` file; tokendagger: its ``Encoding``; Hugging Face: the
``tokenizer.json`` we export). The corpus is cut into documents at ``<|endoftext|>``.

1. One thread, document by document: each tool in a fresh process (loading not timed)
   encodes every document in turn with its plain ``encode``; the ids are checked equal
   (a checksum of every tool's ids). Cold: the first pass of the process. Warm on new text
   (``warm``): every other document (half A) is encoded first, untimed, then the other half
   (B, never seen, every cache warm) is timed — the steady state of a large corpus, with
   nothing a cache of repeats could give.
2. Two threads: each tool's batch call on all the documents (tiktoken, tokendagger,
   ours: ``encode_batch`` with 2 threads, and with ``return_numpy=True``, ids
   straight into arrays; fastokens: ``encode_batch`` and ``encode_batch_flat``, gigatoken:
   ``encode_batch`` (arrays) with RAYON_NUM_THREADS=2), and ``bpe-studio encode`` on the
   file with ``--workers 1`` and ``--workers 2`` (the time it reports).
3. A file to a ``.npy`` of ids (``--only files``): ``bpe-studio encode --workers 2
   --no-doc-separator`` (the time it reports: planning, reading, encoding, writing) against
   gigatoken's ``encode_files`` with RAYON_NUM_THREADS=2, its ids flattened and saved with
   ``numpy.save`` (as ``uint16``, the same file as ours, and as its own ``uint32``); the
   ids of both files are checked equal. Also the whole process's wall time (start,
   imports, loading and writing: what a user waits for).
4. What two threads can give here, for ``bpe-studio encode``: the file's bytes in memory,
   cut in two at an exact boundary, encoded by one thread (both halves in turn) and by two
   threads at once, each with an encoder (and cache) of its own, as the command's workers
   (run with case 2, and with case 3 in the same rounds).
All contenders take turns, round after round; medians, MB/s, peak memory of each
process tree (workers summed), the ratios to tiktoken, and the CPU's SIMD level.
splintr-rs is built from the ranks written as a ``.tiktoken`` file (``Tokenizer.from_bytes``).
"""

from __future__ import annotations

import argparse
import base64
import sys
import tempfile
import time
from pathlib import Path

import harness
import numpy as np

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
VOCAB_PATH, MERGES_PATH = SHARED / "fixtures" / "gpt2_vocab.json", SHARED / "fixtures" / "gpt2_merges.txt"
SPECIAL = "<|endoftext|>"
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
NAMES = {
    "ours": "BPE Studio", "tiktoken": "tiktoken", "fastokens": "fastokens", "tokendagger": "tokendagger",
    "hf": "Hugging Face tokenizers", "ours-arrays": "BPE Studio, ids into arrays", "gigatoken": "gigatoken",
    "splintr": "splintr-rs",
}


def documents(corpus: str) -> list[str]:
    text = Path(corpus).read_bytes().decode("utf-8", errors="replace")
    return [d for d in text.split(SPECIAL) if d]


def build(name: str, files: Path):  # noqa: ANN201
    """The encoder ``name`` and its encode-one-document function, built from the files."""
    from core.formats import load_gpt2_files

    vocab, merges = load_gpt2_files(VOCAB_PATH, MERGES_PATH, [SPECIAL])
    ranks = {t: i for i, t in vocab.items() if i != 50256}
    if name == "ours":
        from core.encode.tokenizer import Tokenizer

        tok = Tokenizer(vocab, merges, [SPECIAL])
        return tok, tok.encode_ordinary
    if name == "tiktoken":
        import tiktoken

        enc = tiktoken.Encoding(name="gpt2", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={SPECIAL: 50256})
        return enc, enc.encode_ordinary
    if name == "tokendagger":
        import tokendagger

        enc = tokendagger.Encoding("gpt2", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={SPECIAL: 50256})
        return enc, enc.encode_ordinary
    if name == "fastokens":
        import fastokens

        model = files / "gpt2.tiktoken"
        model.write_text("".join(f"{base64.b64encode(t).decode()} {i}\n" for t, i in ranks.items()))
        tok = fastokens.Tokenizer.from_tiktoken(str(model), pattern=GPT2_PATTERN, special_tokens={SPECIAL: 50256})
        return tok, lambda doc: tok.encode(doc).ids
    if name == "hf":
        import tokenizers

        tok = tokenizers.Tokenizer.from_file(str(files / "tokenizer.json"))
        return tok, lambda doc: tok.encode(doc, add_special_tokens=False).ids
    if name == "gigatoken":
        import gigatoken

        giga = gigatoken.Tokenizer(str(files / "tokenizer.json"))
        return giga, lambda doc: giga.encode(doc).tolist()
    if name == "splintr":
        import splintr

        table = "".join(f"{base64.b64encode(t).decode()} {i}\n" for t, i in ranks.items()).encode()
        spl = splintr.Tokenizer.from_bytes(table, GPT2_PATTERN, {SPECIAL: 50256})
        return spl, spl.encode_ordinary
    raise ValueError(name)


def batch(name: str, encoder, docs: list[str]):  # noqa: ANN001, ANN201
    """Each document's ids: lists, or ``(flat ids, offsets)`` arrays (no Python int per id)."""
    if name == "ours":
        return encoder.encode_batch(docs, workers=2)
    if name == "ours-arrays":
        return encoder.encode_batch(docs, workers=2, return_numpy=True)
    if name == "gigatoken":
        import awkward as ak

        ids = encoder.encode_batch(docs)
        counts = ak.to_numpy(ak.num(ids))
        offsets = np.concatenate([[0], np.cumsum(counts)])
        return ak.to_numpy(ak.flatten(ids)), offsets
    if name in ("tiktoken", "tokendagger"):
        return encoder.encode_batch(docs, num_threads=2) if name == "tokendagger" else encoder.encode_ordinary_batch(docs, num_threads=2)
    if name == "fastokens":
        return [e.ids for e in encoder.encode_batch(docs)]
    if name == "fastokens-flat":
        ids, offsets = encoder.encode_batch_flat(docs)
        flat, bounds = np.frombuffer(ids, np.uint32), np.frombuffer(offsets, np.uint64)
        return [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]  # type: ignore[misc]
    if name == "hf":
        return [e.ids for e in encoder.encode_batch(docs, add_special_tokens=False)]
    if name == "splintr":
        ids, offsets = encoder.encode_batch_flat(docs)
        return np.frombuffer(ids, np.uint32), np.frombuffer(offsets, np.uint64).astype(np.int64)
    raise ValueError(name)


def halves(corpus: str, threads: int) -> None:
    import threading

    from core.corpus.chunks import find_cut
    from core.encode.pipeline import ENCODE_CACHE_ENTRIES
    from core.encode.tokenizer import Tokenizer
    from core.formats import load_gpt2_files

    tok = Tokenizer(*load_gpt2_files(VOCAB_PATH, MERGES_PATH, [SPECIAL]), [SPECIAL])
    data = Path(corpus).read_bytes()
    with open(corpus, "rb") as f:
        middle = find_cut(f, len(data) // 2, len(data), tok.pattern, tok.special_tokens)
    parts = [data[:middle], data[middle:]]
    encoders = [tok._text_encoder(ENCODE_CACHE_ENTRIES) for _ in range(threads)]
    for encoder in encoders:
        encoder.native_available()  # built before the clock starts
    started = time.perf_counter()
    if threads == 1:
        tokens = sum(len(encoders[0].encode_to_array(part)) for part in parts)
    else:
        counted: list[int] = []
        workers = [threading.Thread(target=lambda e, p: counted.append(len(e.encode_to_array(p))), args=(e, p))
                   for e, p in zip(encoders, parts)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        tokens = sum(counted)
    harness.child_result(time.perf_counter() - started, tokens=tokens)


def files_checksum(npy: Path) -> str:
    """A digest of the ids in ``npy`` (whatever its header's padding or its dtype)."""
    import hashlib

    return hashlib.sha1(np.load(npy, mmap_mode="r").astype(np.uint32).tobytes()).hexdigest()


def giga_files(corpus: str, files: Path, dtype: str) -> None:
    """gigatoken's ``encode_files`` on the file (one document), its ids saved to a ``.npy``."""
    import awkward as ak
    import gigatoken

    giga = gigatoken.Tokenizer(str(files / "tokenizer.json"))
    giga.encode("warm up")
    out = files / f"giga-{dtype}.npy"
    out.unlink(missing_ok=True)  # the last round's file: freeing its pages is no part of encoding
    started = time.perf_counter()
    flat = ak.to_numpy(ak.flatten(giga.encode_files(corpus)))
    np.save(out, flat.astype(dtype, copy=False))
    seconds = time.perf_counter() - started
    harness.child_result(seconds, ids=files_checksum(out), tokens=len(flat))


def child(name: str, mode: str, corpus: str, files: Path) -> None:
    if mode.startswith("files-"):
        giga_files(corpus, files, mode.removeprefix("files-"))
        return
    if mode.startswith("halves"):
        halves(corpus, int(mode[-1]))
        return
    docs = documents(corpus)
    encoder, encode = build(name.removesuffix("-flat").removesuffix("-arrays"), files)
    encode("warm up")
    if mode == "warm":  # half A untimed, then half B (new text, every cache warm)
        for doc in docs[0::2]:
            encode(doc)
        docs = docs[1::2]
    if mode in ("docs", "warm"):
        started = time.perf_counter()
        ids = [encode(doc) for doc in docs]
    else:
        started = time.perf_counter()
        ids = batch(name, encoder, docs)
    seconds = time.perf_counter() - started
    if isinstance(ids, tuple):  # (flat, offsets): weigh each id by its document, in numpy
        flat, offsets = ids
        weights = np.repeat(np.arange(len(offsets) - 1) % 7 + 1, np.diff(offsets))
        checksum = int((flat.astype(np.int64) * weights).sum()) % (1 << 61)
        tokens = len(flat)
    else:
        checksum = sum(int(sum(map(int, d))) * (k % 7 + 1) for k, d in enumerate(ids)) % (1 << 61)
        tokens = sum(len(d) for d in ids)
    harness.child_result(seconds, checksum=checksum, tokens=tokens)


def cli(corpus: str, files: Path, workers: int, *extra: str) -> dict[str, float]:
    out = files / "ids.npy"
    out.unlink(missing_ok=True)  # the last round's file (replacing it freed its pages within the timed run)
    argv = ["-m", "bpe_studio", "encode", corpus, "--tokenizer", str(files), "--out", str(out), "--workers", str(workers),
            *extra]
    result: dict[str, float] = {}
    process = harness.measure(["-c", _CLI_WRAPPER, *argv])
    result.update(process)
    if extra:  # the file-to-.npy case: the ids, to compare with gigatoken's
        result["ids"] = files_checksum(out)  # type: ignore[assignment]
    return result


# Runs the CLI and prints, as JSON, the encoding time it reports (size / its MB/s figure,
# which has more digits than its seconds).
_CLI_WRAPPER = """
import json, os, re, subprocess, sys
done = subprocess.run([sys.executable, *sys.argv[1:]], capture_output=True, text=True, check=True)
rate = float(re.search(r"([0-9.]+) MB/s:", done.stdout).group(1))
print(json.dumps({"seconds": os.path.getsize(sys.argv[4]) / 1e6 / rate}))
"""


def main() -> int:
    parser = harness.parser(__doc__, only=["ours", "tiktoken", "fastokens", "tokendagger", "gigatoken", "splintr", "hf"])
    parser.add_argument("corpus", nargs="?", default=str(SHARED / "corpora" / "pydocs.txt"))
    parser.add_argument("--mode", choices=["docs", "warm", "batch", "halves1", "halves2", "files-uint16", "files-uint32"],
                        help=argparse.SUPPRESS)
    parser.add_argument("--files", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        child(args.run, args.mode, args.corpus, Path(args.files))
        return 0
    from core.formats import load_gpt2_files, save_tokenizer

    chosen = harness.chosen(args.only)
    if chosen == ["files"]:
        return files_main(args.corpus, args.rounds)
    mb = len(Path(args.corpus).read_bytes()) / 1e6
    with tempfile.TemporaryDirectory() as tmp:
        files = Path(tmp)
        vocab, merges = load_gpt2_files(VOCAB_PATH, MERGES_PATH, [SPECIAL])
        save_tokenizer(files, vocab, merges, [SPECIAL], "gpt2")

        def run(name: str, mode: str, env: dict[str, str] | None = None):  # noqa: ANN202
            return lambda: harness.measure([__file__, args.corpus, "--run", name, "--mode", mode, "--files", tmp], env)

        two = {"RAYON_NUM_THREADS": "2", "RAYON_RS_NUM_THREADS": "2"}
        one = {"RAYON_NUM_THREADS": "1", "RAYON_RS_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
        contenders = {f"{n} docs": run(n, "docs", one) for n in chosen}
        contenders.update({f"{n} warm": run(n, "warm", one) for n in chosen})
        for n in chosen:
            contenders[f"{n} batch"] = run(n, "batch", two)
            if n == "fastokens":
                contenders["fastokens-flat batch"] = run("fastokens-flat", "batch", two)
            if n == "ours":
                contenders["ours-arrays batch"] = run("ours-arrays", "batch", two)
        if "ours" in chosen:
            contenders["cli 1"] = lambda: cli(args.corpus, files, 1)
            contenders["cli 2"] = lambda: cli(args.corpus, files, 2)
            contenders["halves 1"] = run("ours", "halves1")
            contenders["halves 2"] = run("ours", "halves2")
        results = harness.rounds(contenders, args.rounds)

    for kind in ("docs", "warm", "batch"):
        sums = {results[k][0]["checksum"] for k in results if k.endswith(kind) and "checksum" in results[k][0]}
        if len(sums) > 1:
            print(f"THE IDS DIFFER between tools ({kind}): {sums}", file=sys.stderr)
    print(f"corpus {args.corpus} ({mb:.1f} MB, {len(documents(args.corpus)):,} documents), GPT-2; medians of "
          f"{args.rounds} alternating rounds, each run in a fresh process; ids checked equal between tools; "
          f"CPU SIMD level: {harness.simd_level()}")
    base = harness.median(results["tiktoken docs"], "seconds") if "tiktoken docs" in results else None
    warm_mb = sum(len(d.encode()) for d in documents(args.corpus)[1::2]) / 1e6
    giga_warm = harness.median(results["gigatoken warm"], "seconds") if "gigatoken warm" in results else None
    print()
    print("| encoder | one thread, cold, document by document | one thread, warm on new text | "
          "two threads (batch) | peak memory (batch) |")
    print("|---|---|---|---|---|")
    extra = (["fastokens-flat"] if "fastokens" in chosen else []) + (["ours-arrays"] if "ours" in chosen else [])
    for n in chosen + extra:
        docs = results.get(f"{n} docs")
        cell = "—"
        if docs:
            s = harness.median(docs, "seconds")
            cell = f"{mb / s:.1f} MB/s" + (f" ({base / s:.2f}× tiktoken)" if base else "")
        warm = results.get(f"{n} warm")
        warm_cell = "—"
        if warm:
            s = harness.median(warm, "seconds")
            warm_cell = f"{warm_mb / s:.1f} MB/s" + (f" ({giga_warm / s:.2f}× gigatoken)" if giga_warm else "")
        b = results[f"{n} batch"]
        print(f"| {NAMES.get(n, n)} | {cell} | {warm_cell} | {mb / harness.median(b, 'seconds'):.1f} MB/s | "
              f"{harness.median(b, 'peak_mb'):.0f} MB |")
    if "cli 1" in results:
        one_s, two_s = harness.median(results["cli 1"], "seconds"), harness.median(results["cli 2"], "seconds")
        print()
        print(f"bpe-studio encode (the time it reports): --workers 1 {mb / one_s:.1f} MB/s, --workers 2 "
              f"{mb / two_s:.1f} MB/s ({one_s / two_s:.2f}x), peak memory {harness.median(results['cli 2'], 'peak_mb'):.0f} MB")
        print("  round by round: " + ", ".join(f"{a['seconds'] / b['seconds']:.2f}x"
                                               for a, b in zip(results["cli 1"], results["cli 2"])))
        ceiling = harness.median(results["halves 1"], "seconds") / harness.median(results["halves 2"], "seconds")
        print(f"what two threads give here: the two halves in memory, one thread then two, {ceiling:.2f}x (medians); "
              "round by round: " + ", ".join(f"{a['seconds'] / b['seconds']:.2f}x"
                                             for a, b in zip(results["halves 1"], results["halves 2"])))
    return 0


def files_main(corpus: str, rounds: int) -> int:
    """Case 3 of the module: ``bpe-studio encode`` against gigatoken's ``encode_files``, file to ``.npy``."""
    import os

    from core.formats import load_gpt2_files, save_tokenizer

    mb = os.path.getsize(corpus) / 1e6
    with tempfile.TemporaryDirectory() as tmp:
        files = Path(tmp)
        vocab, merges = load_gpt2_files(VOCAB_PATH, MERGES_PATH, [SPECIAL])
        save_tokenizer(files, vocab, merges, [SPECIAL], "gpt2")
        two = {"RAYON_NUM_THREADS": "2", "RAYON_RS_NUM_THREADS": "2"}
        giga = lambda dtype: lambda: harness.measure(  # noqa: E731
            [__file__, corpus, "--run", "gigatoken", "--mode", f"files-{dtype}", "--files", tmp], two)
        halves = lambda threads: lambda: harness.measure(  # noqa: E731
            [__file__, corpus, "--run", "ours", "--mode", f"halves{threads}", "--files", tmp])
        contenders = {
            "bpe-studio encode": lambda: cli(corpus, files, 2, "--no-doc-separator"),
            "gigatoken encode_files (uint16 .npy)": giga("uint16"),
            "gigatoken encode_files (uint32 .npy)": giga("uint32"),
            "halves 1": halves(1),
            "halves 2": halves(2),
        }
        load = os.getloadavg()

        def walled(run):  # noqa: ANN001, ANN202 - the whole process's wall time too
            def timed():  # noqa: ANN202
                started = time.perf_counter()
                result = run()
                result["wall"] = time.perf_counter() - started
                return result
            return timed

        results = harness.rounds({name: walled(run) for name, run in contenders.items()}, rounds)
        load_after = os.getloadavg()
    ceiling = {k: results.pop(k) for k in ("halves 1", "halves 2")}
    same = len({r["ids"] for runs in results.values() for r in runs}) == 1
    print(f"corpus {corpus} ({mb:.1f} MB), GPT-2, two workers, file to .npy; medians of {rounds} alternating rounds, "
          f"each run in a fresh process; load average {load[0]:.1f} before, {load_after[0]:.1f} after; "
          + ("the ids are identical" if same else "THE IDS DIFFER") + f"; CPU SIMD level: {harness.simd_level()}")
    giga_best = min(harness.median(results[k], "seconds") for k in results if k.startswith("gigatoken"))
    giga_wall = min(harness.median(results[k], "wall") for k in results if k.startswith("gigatoken"))
    print()
    print("| tool | median s (encoding) | MB/s | process wall s | peak MB (process tree) | "
          "speed vs gigatoken's faster (encoding, wall) |")
    print("|---|---|---|---|---|---|")
    for name, runs in results.items():
        s, wall = harness.median(runs, "seconds"), harness.median(runs, "wall")
        print(f"| {name} | {s:.2f} | {mb / s:.1f} | {wall:.2f} | {harness.median(runs, 'peak_mb'):.0f} | "
              f"{giga_best / s:.2f}x, {giga_wall / wall:.2f}x |")
    print("  ours / gigatoken (uint16), round by round: " + ", ".join(
        f"{g['seconds'] / o['seconds']:.2f}x"
        for o, g in zip(results["bpe-studio encode"], results["gigatoken encode_files (uint16 .npy)"])))
    one, two = (harness.median(ceiling[k], "seconds") for k in ("halves 1", "halves 2"))
    print(f"what two threads give here (case 4): one thread {mb / one:.1f} MB/s, two {mb / two:.1f} MB/s, "
          f"{one / two:.2f}x (medians); round by round: " + ", ".join(
              f"{a['seconds'] / b['seconds']:.2f}x" for a, b in zip(ceiling["halves 1"], ceiling["halves 2"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
