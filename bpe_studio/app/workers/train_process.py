"""Running the core trainer in a child process and reading its events back in batches. No Qt.

Why a process and not just a thread: the merge loop is pure Python and holds the GIL. With
the trainer in a thread of the GUI process, every Python call the GUI makes while painting
(each table cell's ``data()``, each chart item) waits for the GIL, and those waits add up
to freezes of the window. In a child process the trainer has
its own GIL and the GUI thread never waits for it.

The child (spawn context: safe with Qt, works from a console script) iterates the run
``core.train`` returns for the settings' options (named sources, plain or parity-aware: `NamedRun`, the same
training with each source's pre-token bytes sent once they are counted), checks a cancel flag between events, and sends the events as
they are (pickled dataclasses) over a pipe, in lists at most every `BATCH_SECONDS`; the merges held
back meanwhile go as one columnar `core.MergeBatch` (five arrays, however many merges), which
the GUI thread appends to its arrays at C speed. Closing the event stream — on cancel, on
the end, on an error, or when the pipe breaks because the GUI went away — stops the
trainer's own worker processes. When training finishes, the child also builds the `core.Tokenizer` and
sends it: built in a thread of the GUI process, its pure Python held the GIL against the
GUI thread while it painted. The tokenizer and the `Finished` event (vocabulary and merges)
go in parts (`split_pickle`): unpickled whole, each would hold the GIL in one long C call;
part by part, only briefly at a time.

    proc = TrainingProcess(settings); proc.start()
    for batch in proc.batches(): ...   # lists of core events; proc.cancel() from any thread
    proc.tokenizer                     # the finished run's tokenizer (or None)
    proc.stop()
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.popen_spawn_posix  # noqa: F401 - with the window, not in the first run (see below)
import multiprocessing.resource_tracker  # noqa: F401
import multiprocessing.synchronize  # noqa: F401
import os
import time
from collections.abc import Generator, Iterator
from itertools import groupby
from typing import Any

import core
from bpe_studio.app.models.session import TrainSettings
from bpe_studio.app.models.training_state import SourceBytes, TrainerStarted
from bpe_studio.app.workers.split_pickle import dumps_parts, loads_parts
from core.workers.processes import main_module_hidden
# What `check_settings` (and the spawn above) needs, imported with the window rather than
# by the first run's threads: imports there (PySide's import hook reads each module's source) held
# the GIL against the GUI thread while the run started.
from core.corpus import count_run as _count_run  # noqa: F401
from core.training import run as _run, trainer as _trainer  # noqa: F401
from core.corpus.count_run import check_named_counting, count_named_events
from core.corpus.named_counts import NamedCounts
from core.errors import OptionsError, OptionsTypeError
from core.events import CountingDone, Finished, MergeBatch, PretokenizeProgress
from core.training.options import merge_options

BATCH_SECONDS = 0.05
"""Events are held back at most this long before being sent to the GUI."""

POLL_SECONDS = 0.1
STOP_GRACE_SECONDS = 10.0
TRAINER_NICENESS = 10
"""How much lower the trainer's CPU priority is than the GUI's (see `_yield_cpu_to_the_gui`)."""

log = logging.getLogger(__name__)


class TrainingFailed(Exception):
    """Training stopped on an error; the message is for the user."""


def _joined(events: list[object]) -> list[object]:
    """``events`` with each run of consecutive `MergeBatch`es of one stage joined into one
    batch (SuperBPE's stages stay apart: a batch never spans the transition)."""
    joined: list[object] = []
    for stage, run in groupby(events, key=lambda event: event.stage if isinstance(event, MergeBatch) else None):
        if stage is not None:
            joined.append(MergeBatch.concat(list(run)))  # type: ignore[arg-type]
        else:
            joined.extend(run)
    return joined


COUNTS_SUFFIX = ".bpc"
"""Pre-token counts files (`core.PretokenCounts`, File › Open pre-token counts…): a corpus
whose sources are all such files is trained from the counts they add up to."""


def counts_files(settings: TrainSettings) -> list[str] | None:
    """The settings' sources when they are all pre-token counts files, else ``None``."""
    sources = settings.sources
    return sources if sources and all(s.lower().endswith(COUNTS_SUFFIX) for s in sources) else None


def _check_counts_settings(paths: list[str], settings: TrainSettings) -> None:
    """The counts files' headers against the run's pattern and special tokens (cheap: the
    tables themselves are read by the training process)."""
    for path in paths:
        info = core.PretokenCounts.read_info(path)
        if core.resolve_pattern(settings.pattern).source != info["pattern"]:
            raise ValueError(f"{path} was counted with another pre-tokenization pattern; choose the pattern "
                             "it was counted with (opening the file sets it)")
        if set(settings.special_tokens) != set(info["special_tokens"]):
            raise ValueError(f"{path} was counted with the special tokens {info['special_tokens']}, "
                             f"not {list(settings.special_tokens)}; train with those (opening the file sets them)")


def source_bytes(counts: NamedCounts) -> SourceBytes:
    """Each source's pre-token bytes: the sum of its pre-tokens' lengths times their counts."""
    sizes = []
    for share in counts.shares():
        lengths, occurrences = share.lengths_and_counts()
        sizes.append(int(lengths @ occurrences))
    return SourceBytes(counts.sources, tuple(sizes))


def _counted(counts: NamedCounts) -> Generator[PretokenizeProgress, None, NamedCounts]:
    """Counts there already, as a counting that is done at once."""
    return counts
    yield  # a generator


class NamedRun:
    """Training on named sources, as ``core.train({name: source, ...}, options)`` does —
    the same counting (`core.corpus.count_run.count_named_events`, its progress and
    cancelling) and the same merges from the same `NamedCounts` — with one event more:
    `SourceBytes`, each source's pre-token bytes, which only those counts hold, sent before
    the merges (the compression chart draws a line per source from it).

    Like a `core.TrainRun`: iterate it, `close` it (cancel), ask the finished run for its
    `tokenizer`.
    """

    def __init__(self, counting: Generator[PretokenizeProgress, None, NamedCounts], options: core.TrainOptions) -> None:
        self._counting = counting
        self._options = options
        self._run: core.TrainRun | None = None
        self._events = self._stream()

    @classmethod
    def of(cls, settings: TrainSettings) -> NamedRun:
        """The run of ``settings``' named sources, checked (every file) before any work."""
        options = settings.options
        sources = settings.named_sources
        assert sources is not None
        if options.variant is not None:  # parity-aware BPE: its languages are the sources, checked before reading
            options.variant.check_sources(tuple(sources))
        specials = list(options.special_tokens) if options.initial is None else merge_options(options)[1]
        named = check_named_counting(sources, specials, options.compiled_pattern, options.workers, None,
                                     settings.read)
        return cls(count_named_events(named), options)

    def _stream(self) -> Generator[object]:
        counts = yield from self._counting
        yield source_bytes(counts)
        self._run = core.train(counts, self._options)
        del counts  # the run lets the table go once it has laid out the words
        yield from self._run

    def __iter__(self) -> Iterator[object]:
        return self._events

    def close(self) -> None:
        self._events.close()  # stops the counting's workers
        if self._run is not None:
            self._run.close()

    def tokenizer(self) -> object:
        if self._run is None:
            raise RuntimeError("this training run was closed before it finished: it has no result")
        return self._run.tokenizer()


def _open_run(settings: TrainSettings) -> core.TrainRun | NamedRun:
    """The training run for ``settings``: on the corpus (or its named sources), or on the
    sum of its pre-token counts files (checked when opened)."""
    paths = counts_files(settings)
    variant = getattr(settings.options, "variant", None)
    named = settings.named_sources
    if paths is None:
        if named is None:
            return core.train(settings.sources, settings.options, read=settings.read)
        if variant is not None and not variant.named_sources:  # its own counting (two cuts for SuperBPE)
            return core.train(named, settings.options, read=settings.read)
        # plain or parity-aware BPE: each source's bytes, then the merges with their provenance
        # (and the language each parity-aware merge was made for)
        return NamedRun.of(settings)
    _check_counts_settings(paths, settings)
    if named is None:
        counts = core.PretokenCounts.add_all(core.PretokenCounts.load(path) for path in paths)
    else:
        try:
            counts = NamedCounts({name: core.PretokenCounts.load(path) for name, path in named.items()})
        except OptionsTypeError as e:  # a file of named sources' counts given a name of its own
            raise OptionsError(f"{e}: a counts file of named sources already names its sources; train on it "
                               "without naming it") from None
    if isinstance(counts, NamedCounts) and (variant is None or variant.named_sources):
        return NamedRun(_counted(counts), settings.options)
    return core.train(counts, settings.options)


def check_settings(settings: TrainSettings) -> None:
    """Raise the trainer's own error for bad input (missing/binary file, vocabulary too
    small, bad pattern or special tokens) without doing any work."""
    paths = counts_files(settings)
    if paths is not None:  # the headers only: the tables are read by the training process
        _check_counts_settings(paths, settings)
        return
    _open_run(settings).close()  # a corpus run checks its input when it is opened


def _yield_cpu_to_the_gui(pid: int) -> None:
    """Lower the CPU priority of process ``pid`` (the trainer; its workers inherit it).

    The trainer still runs at full speed on an idle core; it only gives way when the GUI
    needs the CPU. On a machine whose cores are all busy, the GUI thread otherwise gets
    half a core against the merge loop and each repaint takes twice as long. Set from this side right after the
    spawn, so the child's interpreter start and imports already run at the lower priority.
    """
    try:
        os.setpriority(os.PRIO_PROCESS, pid, os.getpriority(os.PRIO_PROCESS, 0) + TRAINER_NICENESS)
    except (AttributeError, OSError):  # no priorities on this platform, or the child is gone
        pass


def _build_tokenizer(run: core.TrainRun | NamedRun) -> object | None:
    """The finished run's tokenizer, encoding as its variant does (`TrainRun.tokenizer`), or
    None if it cannot be built (the GUI then builds it from the session itself and reports
    the problem)."""
    try:
        return run.tokenizer()
    except (ValueError, RuntimeError):
        return None


def _child_main(conn: Any, cancel: Any, settings: TrainSettings) -> None:
    """The child process: train, sending ``("events", [...])`` batches and the ``Finished``
    event as ``("finished", parts)``, then (if it finished) ``("tokenizer", parts)``, then
    ``("done", cancelled)``; or ``("failed", message)`` (parts: `split_pickle.dumps_parts`)."""
    cancelled = False
    finished: Finished | None = None
    batch: list[object] = []
    try:
        conn.send(("events", [TrainerStarted()]))
        stream = _open_run(settings)
        try:
            last = time.monotonic()
            for event in stream:
                batch.append(event)
                if isinstance(event, Finished):
                    finished = event
                if cancel.is_set():
                    cancelled = True
                    break
                now = time.monotonic()
                if isinstance(event, Finished):  # in parts (see `split_pickle`), after the merges before it
                    if batch[:-1]:
                        conn.send(("events", _joined(batch[:-1])))
                    conn.send(("finished", dumps_parts(event)))
                    batch, last = [], now
                elif now - last >= BATCH_SECONDS or isinstance(event, CountingDone):
                    conn.send(("events", _joined(batch)))
                    batch, last = [], now
        finally:
            stream.close()  # stops the trainer's worker processes
        if batch:
            conn.send(("events", _joined(batch)))
        if finished is not None and not cancelled:
            tokenizer = _build_tokenizer(stream)
            if tokenizer is not None and not cancel.is_set():
                conn.send(("tokenizer", dumps_parts(tokenizer)))
        conn.send(("done", cancelled))
    except (BrokenPipeError, EOFError):
        pass  # the GUI is gone: nobody to tell
    except (core.BpeStudioError, OSError) as e:
        _send_failure(conn, batch, str(e))
    except MemoryError:
        _send_failure(conn, batch, "training ran out of memory; try a smaller corpus or vocabulary")
    except Exception as e:  # a bug: report it in words, keep the details on stderr
        log.exception("training failed")
        _send_failure(conn, batch, f"training failed unexpectedly ({type(e).__name__}: {e})")
    finally:
        conn.close()


def _send_failure(conn: Any, batch: list[object], message: str) -> None:
    try:
        if batch:
            conn.send(("events", _joined(batch)))
        conn.send(("failed", message))
    except (BrokenPipeError, EOFError, OSError):
        pass


def _exit_reason(code: int | None) -> str:
    """``-9`` -> "killed by SIGKILL, often a sign of running out of memory", ``1`` -> "exit code 1"."""
    if code is None:
        return "no exit code"
    if code < 0:
        import signal

        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}" + (", often a sign of running out of memory" if name == "SIGKILL" else "")
    return f"exit code {code}"


class TrainingProcess:
    """One training run in a spawned child process.

    Attributes:
        cancelled: after `batches` ends, whether the run was cancelled.
        tokenizer: after `batches` ends, the finished run's `core.Tokenizer` (None if the run
            did not finish, or the child could not build it).
    """

    def __init__(self, settings: TrainSettings) -> None:
        context = multiprocessing.get_context("spawn")
        self._cancel = context.Event()
        self._conn, child_conn = context.Pipe(duplex=False)
        self._process = context.Process(
            target=_child_main, args=(child_conn, self._cancel, settings), name="bpe-studio-trainer"
        )
        self._child_conn = child_conn
        self._cancelled_at: float | None = None
        self.cancelled = False
        self.tokenizer: object | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def start(self) -> None:
        # Hidden main module: the child must not re-run the user's script, which would open
        # another window (or hang) when the script has no `if __name__ == "__main__":` guard.
        with main_module_hidden():
            self._process.start()
        if self._process.pid is not None:
            _yield_cpu_to_the_gui(self._process.pid)
        self._child_conn.close()  # the child holds the only write end: EOF when it exits

    def cancel(self) -> None:
        """Ask the run to stop at its next event (safe from any thread)."""
        if self._cancelled_at is None:
            self._cancelled_at = time.monotonic()
        self._cancel.set()

    def batches(self) -> Iterator[list[object]]:
        """Yield lists of events until the run ends.

        Raises:
            TrainingFailed: the trainer reported an error, or the process died.
        """
        while True:
            try:
                if not self._conn.poll(POLL_SECONDS):
                    if self._cancelled_at is not None and time.monotonic() - self._cancelled_at > STOP_GRACE_SECONDS:
                        self.cancelled = True  # the child ignores the flag: `stop` will kill it
                        return
                    continue
                kind, payload = self._conn.recv()
            except (EOFError, OSError):
                self._process.join(1.0)
                raise TrainingFailed(
                    f"the training process stopped unexpectedly ({_exit_reason(self._process.exitcode)}); "
                    "try again, or with fewer workers or a smaller vocabulary"
                ) from None
            if kind == "events":
                yield payload
            elif kind == "finished":
                yield [loads_parts(payload)]
            elif kind == "tokenizer":
                self.tokenizer = loads_parts(payload)
            elif kind == "done":
                self.cancelled = bool(payload)
                return
            else:
                raise TrainingFailed(str(payload))

    def stop(self, timeout: float = STOP_GRACE_SECONDS) -> None:
        """Cancel and wait for the child to exit (it stops its own workers first); kill it
        only if it does not exit within ``timeout`` seconds."""
        self._cancel.set()
        if self._process.pid is not None:
            self._process.join(timeout)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()
        self._conn.close()
        self._child_conn.close()  # still open here if the process never started
