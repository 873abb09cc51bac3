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

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from collections.abc import Callable, Sequence
from typing import Any

PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 1e6


class _ProcessTree:
    """The resident memory of a process and all its descendants, sampled cheaply.

    Walking every process's ``/proc/<pid>/stat`` at each sample took ~5 ms, a third of a
    core at one sample per 10 ms, taken from the contenders (threads and workers most);
    reading each new pid's parent once and walking every live pid's chain at each sample
    still took 0.8 ms of CPU (7% of a core). Now whether a pid is in the tree is decided
    once, when it first appears, from its parent's; a sample lists ``/proc`` and reads
    ``statm`` of the tree's processes only (0.4 ms).
    """

    def __init__(self, root: int) -> None:
        self.root = root
        self._in_tree: dict[int, bool] = {}  # every live pid seen: whether it is the root's or a descendant's

    def _joins(self, pid: int, live: set[int]) -> bool:
        if pid == self.root:
            return True
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
            parent = int(stat[stat.rindex(b")") + 2 :].split()[1])
        except (OSError, ValueError):
            return False
        if parent not in self._in_tree and parent in live:  # (a parent of a higher pid: they wrapped)
            self._in_tree[parent] = self._joins(parent, live)
        return self._in_tree.get(parent, False)

    def rss_mb(self) -> float:
        live = {int(entry) for entry in os.listdir("/proc") if entry.isdigit()}
        for pid in self._in_tree.keys() - live:  # ended: the pid may be reused by another
            del self._in_tree[pid]
        for pid in sorted(live - self._in_tree.keys()):  # (a parent's pid is most often lower)
            if pid not in self._in_tree:
                self._in_tree[pid] = self._joins(pid, live)
        total = 0.0
        for pid, mine in self._in_tree.items():
            if mine:
                try:
                    with open(f"/proc/{pid}/statm", "rb") as f:
                        total += int(f.read().split()[1]) * PAGE_MB
                except (OSError, ValueError):
                    pass  # ended meanwhile
        return total


QUIET_BLAS = {"OPENBLAS_NUM_THREADS": "1"}
"""In every contender's environment: numpy's OpenBLAS otherwise starts a thread that spins
for about 0.1 s of CPU when numpy is imported, taking the second core from the first
tenths of a second of whatever is measured next (`bpe-studio` sets the same for itself;
none of the peers uses OpenBLAS)."""


def measure(argv: Sequence[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``python *argv`` in a fresh process; its last stdout line (JSON) plus ``peak_mb``."""
    process = subprocess.Popen(
        [sys.executable, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **QUIET_BLAS, **(env or {})},
    )
    peak = 0.0
    done = threading.Event()
    tree = _ProcessTree(process.pid)

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree.rss_mb())
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


def parser(doc: str | None, rounds: int = 3, only: Sequence[str] = ()) -> argparse.ArgumentParser:
    """A benchmark's command line: ``--rounds``, ``--only NAME,...`` when it has contenders
    to choose from, and the hidden ``--run NAME`` that `measure` re-invokes it with."""
    made = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    made.add_argument("--rounds", type=int, default=rounds)
    if only:
        made.add_argument("--only", default=",".join(only), help="the contenders to run, comma-separated")
    made.add_argument("--run", help=argparse.SUPPRESS)
    return made


def chosen(only: str) -> list[str]:
    """The names of ``--only``."""
    return [name for name in only.split(",") if name]


def child_result(seconds: float, **extra: Any) -> None:
    """Print a child's result (the last line of its stdout)."""
    print(json.dumps({"seconds": seconds, **extra}))


def trainer_rounds(script: str, corpus: str, vocab_size: int, names: Sequence[str], count: int) -> dict[str, list[dict[str, Any]]]:
    """`rounds` of ``script CORPUS --vocab-size N --run NAME`` for each of ``names``, each in a fresh process."""
    contenders = {
        name: (lambda name=name: measure([script, corpus, "--vocab-size", str(vocab_size), "--run", name]))
        for name in names
    }
    return rounds(contenders, count)


def simd_level() -> str:
    """The widest SIMD level the CPU has, as the figures beside it should say."""
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return "unknown"
    return "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE4.2" if "sse4_2" in flags else "scalar"
