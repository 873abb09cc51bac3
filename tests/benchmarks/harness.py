"""What the benchmarks share: each run in a fresh process, its whole process tree's peak memory, medians.

`measure(argv)` starts ``python argv...`` (a benchmark script re-invoked in its child mode),
samples the resident memory of that process and all its descendants every 10 ms (summed:
worker processes count), and returns the JSON the child printed last plus ``peak_mb``.
The child does its imports and loading before it starts its clock and reports its own
``seconds``. `rounds` runs every contender once per round, in turn, so that a slow
minute on a shared machine hits them all alike; `median` summarises.
Not collected by pytest (no ``test_`` prefix).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 1e6


def _tree_rss_mb(root: int) -> float:
    """Resident memory of ``root`` and all its descendants, in MB (from /proc)."""
    parents: dict[int, int] = {}
    rss: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            statm = Path(f"/proc/{entry}/statm").read_text().split()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        pid = int(entry)
        parents[pid] = int(fields[1])
        rss[pid] = int(statm[1]) * PAGE_MB
    total = 0.0
    for pid in rss:
        p = pid
        while p and p != root and p in parents:
            p = parents[p]
        if p == root:
            total += rss[pid]
    return total


def measure(argv: Sequence[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``python *argv`` in a fresh process; its last stdout line (JSON) plus ``peak_mb``."""
    process = subprocess.Popen(
        [sys.executable, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **(env or {})},
    )
    peak = 0.0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss_mb(process.pid))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = process.communicate()
    done.set()
    sampler.join()
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{err}")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result["peak_mb"] = peak
    return result


def rounds(contenders: dict[str, Callable[[], dict[str, Any]]], count: int) -> dict[str, list[dict[str, Any]]]:
    """Each contender once per round, in turn; the results of each, by name."""
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in contenders}
    for r in range(count):
        for name, run in contenders.items():
            results[name].append(run())
            print(f"  round {r + 1}: {name}: {results[name][-1]['seconds']:.2f} s", file=sys.stderr)
    return results


def median(runs: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(r[key] for r in runs))


def child_result(seconds: float, **extra: Any) -> None:
    """Print a child's result (the last line of its stdout)."""
    print(json.dumps({"seconds": seconds, **extra}))
