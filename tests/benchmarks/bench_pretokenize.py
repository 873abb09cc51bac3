"""Benchmark: pre-tokenization and counting alone — MB/s in one process, and 1 worker against 2.

    python tests/benchmarks/bench_pretokenize.py /work/shared/corpora/pydocs.txt --rounds 3
    python tests/benchmarks/bench_pretokenize.py /tmp/bench24.txt --pattern gpt4
    python tests/benchmarks/bench_pretokenize.py /tmp/web1g.txt --rounds 3 --no-regex

Three measurements, each in a fresh process, taking turns round after round (medians):

- ``scan``: `core.pretokenize.counting.count_chunk` over the whole file in one call and
  one process — the native scanner and its hash table alone (MB/s per core; also by the
  process's CPU time, which other processes on a shared machine disturb less than wall time);
- ``train 1`` / ``train 2``: the trainer's counting stage (a `core.train` run until
  `CountingDone`: chunking, workers — threads of one process on the native path —, adding
  up the counts) with ``workers=1`` and ``workers=2``; the ratio is the speed-up of a
  second worker;
- ``regex``: the same `count_chunk` with ``BPE_STUDIO_PURE_PYTHON=1`` (the `regex` path), for
  scale (``--no-regex`` leaves it out: on 1 GB it takes minutes a round);
- ``halves``: the file in memory, its two halves scanned by two threads at once, each into
  a table of its own, the two tables added: what this machine allows two workers against
  ``scan`` (two vCPUs of a shared host are often not two whole cores), the ceiling for
  ``train 2`` against ``train 1``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import harness

SPECIAL = "<|endoftext|>"


def child(mode: str, corpus: str, pattern: str) -> None:
    import core
    from core.pretokenize.counting import CountTable, count_chunk
    from core.pretokenize.patterns import resolve_pattern

    if mode == "halves":
        halves(Path(corpus).read_bytes(), resolve_pattern(pattern))
        return
    if mode in ("scan", "regex"):
        from core.pretokenize.native import scanner_for

        data = Path(corpus).read_bytes()
        compiled = resolve_pattern(pattern)
        scanner_for(compiled)  # loads the extension and checks its tables (a quarter of a second): not timed
        started, cpu_started = time.perf_counter(), time.process_time()
        total = CountTable()
        total.add(count_chunk(data, compiled, [SPECIAL]))
        words, _ = total.items()
        harness.child_result(time.perf_counter() - started, distinct=len(words), cpu=time.process_time() - cpu_started)
        return
    workers = int(mode.split()[1])
    import numpy  # noqa: F401 - `core` imports lazily: its modules and numpy are not timed
    import core.corpus.count_run  # noqa: F401
    import core.training.trainer  # noqa: F401

    started, cpu_started = time.perf_counter(), time.process_time()
    for event in core.train(corpus, core.TrainOptions(257, [SPECIAL], pattern=pattern, workers=workers)):
        if isinstance(event, core.CountingDone):
            harness.child_result(time.perf_counter() - started, distinct=event.distinct,
                                 cpu=time.process_time() - cpu_started)
            return


def halves(data: bytes, pattern: object) -> None:
    import threading

    from core.pretokenize.native import native_module, scanner_for

    native, scanner = native_module(), scanner_for(pattern)  # type: ignore[arg-type]
    assert native is not None and scanner is not None
    tables = [native.Counts(), native.Counts()]
    middle = len(data) // 2  # not a chunk boundary: a pre-token may be cut in two, which is no matter here
    bounds = [(0, middle), (middle, len(data))]
    started = time.perf_counter()
    threads = [threading.Thread(target=table.scan, args=(data, scanner, *bound), kwargs={"specials": [SPECIAL.encode()]})
               for table, bound in zip(tables, bounds)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    tables[0].add(tables[1])
    words, _ = tables[0].items()
    harness.child_result(time.perf_counter() - started, distinct=0)


def main() -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("corpus")
    parser.add_argument("--pattern", default="gpt2", choices=["gpt2", "gpt4"])
    parser.add_argument("--no-regex", action="store_true", help="leave out the regex path (slow on large files)")
    args = parser.parse_args()
    if args.run:
        child(args.run, args.corpus, args.pattern)
        return 0
    mb = Path(args.corpus).stat().st_size / 1e6

    def run(mode: str, env: dict[str, str] | None = None):  # noqa: ANN202
        return lambda: harness.measure([__file__, args.corpus, "--pattern", args.pattern, "--run", mode], env)

    contenders = {
        "scan": run("scan"), "halves": run("halves"), "train 1": run("train 1"), "train 2": run("train 2"),
    }
    if not args.no_regex:
        contenders["regex"] = run("regex", {"BPE_STUDIO_PURE_PYTHON": "1"})
    results = harness.rounds(contenders, args.rounds)
    seconds = {name: harness.median(runs, "seconds") for name, runs in results.items()}
    distinct = {results[name][0]["distinct"] for name in results if name != "halves"}
    print(f"corpus {args.corpus} ({mb:.1f} MB), pattern {args.pattern}, medians of {args.rounds} rounds; "
          f"{'the same' if len(distinct) == 1 else 'DIFFERENT'} distinct pre-tokens: {sorted(distinct)}; "
          f"CPU SIMD level: {harness.simd_level()}")
    print(f"native scan + count, one process:   {mb / seconds['scan']:7.1f} MB/s "
          f"({mb / harness.median(results['scan'], 'cpu'):.1f} MB/s of CPU time: less noisy on a busy machine)")
    if "regex" in seconds:
        print(f"regex path, one process:            {mb / seconds['regex']:7.1f} MB/s "
              f"({seconds['regex'] / seconds['scan']:.1f}x slower)")
    print(f"trainer's counting stage, 1 worker: {mb / seconds['train 1']:7.1f} MB/s "
          f"({mb / harness.median(results['train 1'], 'cpu'):.1f} MB/s of CPU time)")
    print(f"trainer's counting stage, 2 workers:{mb / seconds['train 2']:7.1f} MB/s "
          f"({seconds['train 1'] / seconds['train 2']:.2f}x one worker; {mb / harness.median(results['train 2'], 'cpu'):.1f} "
          f"MB/s of CPU time, both threads; peak memory {harness.median(results['train 2'], 'peak_mb'):.0f} MB)")
    print(f"this machine's ceiling for 2 workers: two threads scanning the halves in memory at once, "
          f"{seconds['scan'] / seconds['halves']:.2f}x one (medians); round by round: "
          + ", ".join(f"{s['seconds'] / h['seconds']:.2f}x" for s, h in zip(results["scan"], results["halves"])))
    print("trainer's counting stage, 2 workers against 1, round by round: "
          + ", ".join(f"{a['seconds'] / b['seconds']:.2f}x" for a, b in zip(results["train 1"], results["train 2"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
