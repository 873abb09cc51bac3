"""``bpe-studio count``: count a corpus's pre-tokens into a ``.bpc`` file (locally or on Dask).

    bpe-studio count shards/ --special-token '<|endoftext|>' --out counts.bpc
    bpe-studio count 'data/*.parquet' --out counts.bpc --dask tcp://scheduler:8786
    bpe-studio count corpus.txt --out counts.bpc --dask-local 4
    bpe-studio train --from-counts a.bpc b.bpc --vocab-size 32000 --out tok/

Everything that can be checked without reading the corpus (the options, the output file's
folder, every file of the corpus) is checked first; the file is written (atomically) only
once counting has finished. The format: docs/formats.md, "Pre-token counts".
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, TextIO

import core
from core.corpus.count_run import check_counting, check_named_counting, count_events, count_named_events
from core.corpus.named_counts import NamedCounts
from core.corpus.pretoken_counts import PretokenCounts
from core.events import PretokenizeProgress
from core.formats.atomic import check_output_dir
from core.pretokenize.specials import validate_special_tokens
from core.progress import bytes_progress, format_bytes, read_summary
from core.steps import run_steps
from bpe_studio.cli.checks import capped_workers, check_text_option, corpus_files, non_empty, pattern_option
from bpe_studio.cli.terminal import ProgressLine, bar, write_result
from bpe_studio.cli.train import add_source_options, read_options


def add_count_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "count",
        help="count a corpus's pre-tokens into a file (locally or on a Dask cluster)",
        description="Count the pre-tokens of SOURCE(s) (as 'train' reads them) into FILE, to add to other "
        "counts and train from with 'bpe-studio train --from-counts'. With --dask, the counting runs on a "
        "Dask cluster (pip install 'bpe-studio[dask]'); its workers must see the files at the same paths.",
    )
    parser.add_argument("corpus", nargs="+", metavar="SOURCE", help="files, folders or glob patterns")
    parser.add_argument("--out", required=True, type=non_empty("the counts file to write"), metavar="FILE",
                        help="the counts file to write (e.g. counts.bpc)")
    parser.add_argument("--special-token", action="append", default=[], metavar="TOK", dest="special_tokens",
                        help="a special token (repeat for several), e.g. '<|endoftext|>'")
    parser.add_argument("--pattern", default="gpt2", type=pattern_option, metavar="gpt2|gpt4|REGEX",
                        help="pre-tokenization pattern (default: gpt2)")
    parser.add_argument("--workers", type=int, metavar="K", help="local counting workers: threads on text and JSONL, processes for Parquet and custom patterns (default: all cores)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--dask", metavar="ADDRESS", help="count on the Dask cluster at ADDRESS (tcp://host:8786)")
    where.add_argument("--dask-local", type=int, metavar="N", help="count on a Dask cluster of N local processes")
    parser.add_argument("--dask-timeout", type=float, default=60.0, metavar="SECONDS",
                        help="with --dask: seconds to wait to reach the scheduler, then for a first worker "
                        "on a scheduler that has none (default: 60)")
    add_source_options(parser)
    parser.set_defaults(run=run_count)


def run_count(args: argparse.Namespace, stream: TextIO | None = None) -> int:
    from bpe_studio.cli.usage import UsageError

    out = stream if stream is not None else sys.stdout
    started = time.monotonic()
    target = Path(args.out)
    if target.is_dir():
        raise IsADirectoryError(f"--out {target} is a folder; give the counts file's name (e.g. counts.bpc)")
    if not target.absolute().parent.is_dir():
        raise FileNotFoundError(f"--out {target}: the folder {target.absolute().parent} does not exist")
    check_output_dir(target.absolute().parent)
    for token in args.special_tokens:
        check_text_option("--special-token", token)
    check_text_option("--pattern", args.pattern)
    pattern = core.resolve_pattern(args.pattern)
    specials = validate_special_tokens(args.special_tokens)
    read = read_options(args)
    if args.dask_local is not None and args.dask_local < 1:
        raise UsageError(f"--dask-local must be at least 1, got {args.dask_local}")
    if not args.dask_timeout > 0:
        raise UsageError(f"--dask-timeout must be a positive number of seconds, got {args.dask_timeout:g}")
    on_dask = args.dask is not None or args.dask_local is not None
    if on_dask and args.max_bytes is not None:
        raise UsageError("--max-bytes needs the documents in order, which a Dask cluster does not keep; "
                         "use --sample, or count without --dask")
    corpus = corpus_files(args)
    with contextlib.ExitStack() as stack:
        events: Generator[Any, None, PretokenCounts]
        if on_dask:
            from core import distributed as dist

            try:
                dist.require_distributed()
            except ImportError as e:
                raise UsageError(str(e)) from None
            client = stack.enter_context(_dask_client(args.dask, args.dask_local, args.dask_timeout))
            if isinstance(corpus, dict):  # named sources: one after another
                events = _named_on_cluster(corpus, lambda files: dist.count_on_cluster_events(
                    files, specials, client=client, pattern=pattern.source, read=read,
                    worker_timeout=args.dask_timeout))
            else:
                events = dist.count_on_cluster_events(corpus, specials, client=client, pattern=pattern.source,
                                                      read=read, worker_timeout=args.dask_timeout)
        elif isinstance(corpus, dict):
            events = count_named_events(check_named_counting(corpus, specials, pattern, capped_workers(args.workers),
                                                             None, read))
        else:
            events = count_events(check_counting(corpus, specials, pattern, capped_workers(args.workers), None, read))
        try:
            counts = _follow(events, started)
        except TimeoutError as e:
            if on_dask and isinstance(e, dist.NoWorkersError):  # say the option that sets the wait
                raise dist.NoWorkersError(e.address, e.timeout, option="--dask-timeout") from None
            raise
    counts.save(target)
    rows = [
        ("Counted", f"{len(counts):,} distinct pre-tokens, {counts.total:,} in all"),
        ("Read", read_summary(counts.documents, counts.total_bytes, counts.input_bytes)),
        ("Invalid UTF-8 bytes", f"{counts.invalid_bytes:,}"),
        ("Time", f"{time.monotonic() - started:.1f} s"),
        ("Wrote", f"{target} ({format_bytes(os.path.getsize(target))})"),
    ]
    write_result(out, "".join(f"{label.lower()}: {value}\n" for label, value in rows))
    return 0


@contextlib.contextmanager
def _dask_client(address: str | None, local: int | None, timeout: float) -> Iterator[Any]:
    import distributed

    if address is not None:
        try:  # reaching the scheduler is bounded by --dask-timeout too
            client = distributed.Client(address, timeout=f"{timeout}s")
        except OSError as e:
            raise ConnectionError(f"--dask {address}: cannot reach the Dask scheduler ({e})") from None
        with client:
            yield client
        return
    # No dashboard, and the scheduler's HTTP server (which it starts even then) on a free
    # port: on Dask's 8787 it warned whenever another cluster was running.
    with distributed.LocalCluster(n_workers=local, processes=True, threads_per_worker=1, dashboard_address=None,
                                  scheduler_kwargs={"dashboard_address": ":0"}) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def _named_on_cluster(
    corpus: dict[str, list[Path]], count: Callable[[list[Path]], Generator[Any, None, PretokenCounts]]
) -> Generator[Any, None, PretokenCounts]:
    """Each named source counted on the cluster in turn (`count`), into `NamedCounts`."""
    shares = {}
    for name, files in corpus.items():
        shares[name] = yield from count(files)
    return NamedCounts(shares)


def _follow(events: Generator[Any, None, PretokenCounts], started: float) -> PretokenCounts:
    progress = ProgressLine()

    def show(event: Any) -> None:
        if not isinstance(event, PretokenizeProgress):  # core.distributed.WaitingForWorkers
            progress.discard()
            print(f"waiting for Dask workers: the scheduler at {event.address} has none; start them "
                  f"with 'dask worker {event.address}' (giving up after {event.timeout:g} s)",
                  file=sys.stderr, flush=True)
            return
        figures = bytes_progress(event.done, event.total, time.monotonic() - started)
        progress.update("counting", f"{bar(event.done / max(event.total, 1))} {figures}",
                        force=event.done == event.total)

    try:
        return run_steps(events, show)
    except BaseException:
        progress.discard()
        raise
    finally:
        events.close()
        progress.close()
