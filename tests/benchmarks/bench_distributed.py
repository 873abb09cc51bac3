"""Counting pre-tokens locally against on a 2-process Dask LocalCluster, side by side.

    .venv/bin/python tests/benchmarks/make_corpus.py --size-mb 500 --out /tmp/bench500.txt
    .venv/bin/python tests/benchmarks/bench_distributed.py /tmp/bench500.txt --rounds 2

Each round runs, in fresh processes and in turn: ``core.count_pretokens(workers=2)``
(the trainer's counting stage) and ``core.count_pretokens(..., client=)`` on a
``LocalCluster(n_workers=2, processes=True, threads_per_worker=1)`` (started before the
clock; its start-up is reported apart). Printed: medians of wall time, the peak memory of
the whole process tree (workers summed), each Dask worker's own peak, and the bytes
shipped back to the client (the final table only) against the sum of the shards' tables
(which stay on the cluster). Also: the counts are checked equal, and the size of the
``.bpc`` file. Then a note of what one merge machine holds: memory per distinct pre-token.
"""

from __future__ import annotations

import argparse
import pickle
import resource
import sys
import time
from pathlib import Path

import harness

SPECIAL = "<|endoftext|>"


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(mode: str, corpus: str, out: str) -> None:
    import core

    if mode == "local":
        started = time.perf_counter()
        counts = core.count_pretokens(corpus, [SPECIAL], workers=2)
        seconds = time.perf_counter() - started
        counts.save(out)
        harness.child_result(seconds, distinct=len(counts), file=Path(out).stat().st_size)
        return
    import warnings

    import distributed

    import core.distributed as cd

    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        client.run(lambda: __import__("core.distributed"))  # imports not timed
        startup = time.perf_counter() - t0
        started = time.perf_counter()
        counts = core.count_pretokens(corpus, [SPECIAL], client=client)
        seconds = time.perf_counter() - started
        workers = sorted(client.run(_maxrss_mb).values())
        shards = len(list(core.corpus.planning.plan_tasks(
            core.corpus.sources.open_corpus(corpus, core.corpus.sources.ReadOptions()),
            core.resolve_pattern("gpt2"), [SPECIAL], cd.SHARD_BYTES)))
    shipped = len(pickle.dumps(counts.chunk()))
    counts.save(out)
    harness.child_result(seconds, distinct=len(counts), startup=startup, worker_peak_mb=workers,
                         client_peak_mb=_maxrss_mb(), shipped=shipped, shards=shards, file=Path(out).stat().st_size)


def main() -> int:
    parser = harness.parser(__doc__, rounds=2)
    parser.add_argument("corpus")
    parser.add_argument("--out", default="/tmp/bench_counts", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        child(args.run, args.corpus, args.out)
        return 0
    mb = Path(args.corpus).stat().st_size / 1e6

    def run(mode: str):  # noqa: ANN202
        return lambda: harness.measure([__file__, args.corpus, "--run", mode, "--out", f"{args.out}.{mode}.bpc"])

    results = harness.rounds({"local": run("local"), "dask": run("dask")}, args.rounds)
    same = Path(f"{args.out}.local.bpc").read_bytes() == Path(f"{args.out}.dask.bpc").read_bytes()
    local, dask = results["local"], results["dask"]
    s_local, s_dask = harness.median(local, "seconds"), harness.median(dask, "seconds")
    distinct = local[0]["distinct"]
    print(f"corpus {args.corpus} ({mb:.1f} MB), medians of {args.rounds} rounds; counts files "
          f"{'IDENTICAL' if same else 'DIFFERENT'}; {distinct:,} distinct pre-tokens; CPU SIMD level: {harness.simd_level()}")
    print(f"local, 2 workers:          {s_local:7.2f} s  {mb / s_local:6.1f} MB/s  "
          f"peak (tree) {harness.median(local, 'peak_mb'):6.0f} MB")
    print(f"Dask LocalCluster, 2 procs:{s_dask:7.2f} s  {mb / s_dask:6.1f} MB/s  "
          f"peak (tree) {harness.median(dask, 'peak_mb'):6.0f} MB  ({s_dask / s_local:.2f}x local time; "
          f"cluster start-up {harness.median(dask, 'startup'):.1f} s, not counted)")
    print(f"Dask: {dask[0]['shards']} shards; worker peaks {[round(x) for x in dask[-1]['worker_peak_mb']]} MB, "
          f"client peak {dask[-1]['client_peak_mb']:.0f} MB; shipped back {dask[0]['shipped'] / 1e6:.1f} MB "
          f"(the final table); .bpc file {local[0]['file'] / 1e6:.1f} MB")
    per = local[0]["file"] / max(distinct, 1)
    print(f"merge machine: the .bpc holds {per:.1f} bytes per distinct pre-token; training holds them as Python "
          f"bytes + ints plus the merge state — see docs/distributed.md for the scaling note")
    return 0


if __name__ == "__main__":
    sys.exit(main())
