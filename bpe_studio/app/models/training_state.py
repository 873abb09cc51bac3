"""The state of one training run, built from the trainer's events; what every view reads. No Qt.

The worker thread hands lists of `core` events to the GUI thread, which applies them here:
each `core.MergeBatch`'s columns are appended to this state's ``array('q')`` columns at C
speed, and its new tokens to the vocabulary (`MergeBatch.extend_vocab`); the widgets read
this object from their own timers and repaint. It also turns the run into progress figures
(stage, MB/s, merges/s, ETA) and, at the end or on cancel, into a `Session` that can be
browsed, exported or saved. With named sources it keeps each merge's pair count per source
(provenance) and, from each source's pre-token bytes (`SourceBytes`), each source's tokens
after each merge (`bpe_studio.app.models.provenance.source_tokens`); trained parity-aware, the
language each merge was made for (`core.MergeBatch.chosen`), and a run that stops when the
chosen language has no pair left ends as a normal finish that says so.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from bpe_studio.app.models.run_progress import RATE_SMOOTHING, RATE_WINDOW_SECONDS, ProgressState, Stage
from bpe_studio.app.models.source_state import SourceBytes, SourcesState
from bpe_studio.app.models.session import Session, TrainSettings
from bpe_studio.app.models.vocab_sizes import vocabulary_sizes
from core.events import CountingDone, Finished, MergeBatch, PretokenizeProgress, SplitEvent, initial_token_bytes
from core.progress import RateMeter, training_summary

FREQUENCY_POINTS = 2000


@dataclass(frozen=True)
class TrainerStarted:
    """The first event of every run, sent by the training process once it is up: the window
    can then tell "starting the process" from "opening the corpus", and notice a process
    that never starts or goes silent."""


def thin_log(n: int, max_points: int = FREQUENCY_POINTS) -> np.ndarray:
    """Indices of about ``max_points`` log-spaced items out of ``n`` (for a log x axis)."""
    if n <= max_points:
        return np.arange(n)
    idx = np.geomspace(1, n, max_points).astype(np.int64) - 1
    # ascending already: drop the repeats without np.unique, whose first call imports
    # numpy.ma in the GUI thread (slow: PySide's import hook reads its sources)
    return idx[np.concatenate(([True], idx[1:] != idx[:-1]))]


class TrainingState(SourcesState, ProgressState):
    """Everything known about the current (or last) training run.

    Attributes read by views: ``stage``, ``settings``, ``bytes_done``/``bytes_total``,
    ``counting`` (the `CountingDone` event), ``token_bytes`` (id -> bytes of every token so
    far), the per-merge columns ``token_ids``, ``left_ids``, ``right_ids``, ``counts``,
    ``corpus_tokens`` and ``lengths`` (``array('q')``, in rank order), Picky BPE's removals
    ``splits`` (`core.SplitEvent`s in order), SuperBPE's ``transition`` (the rank of the first
    merge of stage 2, or None), with named sources ``sources`` (their names), ``per_source``
    (each merge's pair count per source, merge after merge), ``source_bytes`` (their pre-token
    bytes, once counted) and ``source_tokens`` (each source's tokens after each merge, as
    floats, merge after merge), parity-aware BPE's ``chosen`` (for each merge, the index of
    the source it was made for, -1 for a global merge), and ``version``, which
    grows with every change so a view can skip repainting when nothing changed. A new run
    replaces the columns (a view can tell by identity). A numpy view of a column must not
    outlive the call that made it: the next batch could not be appended (``BufferError``).
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self, settings: TrainSettings | None = None) -> None:
        self.settings = settings
        self.stage = Stage.IDLE
        self.error = ""
        self.started = 0.0
        self.ended: float | None = None
        self.bytes_done = 0
        self.bytes_total = 0
        self.counting: CountingDone | None = None
        self.frequency_points: tuple[np.ndarray, np.ndarray] | None = None
        self.token_bytes = initial_token_bytes(settings.special_tokens if settings else ())
        self.token_ids = array("q")
        self.left_ids = array("q")
        self.right_ids = array("q")
        self.counts = array("q")
        self.corpus_tokens = array("q")
        self.lengths = array("q")  # byte length of each merged token, for the length chart
        self.splits: list[SplitEvent] = []
        self.sizes = array("q")  # the vocabulary's size after each merge (and its removals)
        self._removed: set[int] = set()  # Picky BPE: ids removed and not made again
        self.stage_two = False  # SuperBPE: the merges come in stages 1 and 2
        self.transition: int | None = None
        # Named sources are known from the settings (CountingDone confirms them), so the views
        # make room for them as the run starts, not as the first merges stream in.
        variant = getattr(getattr(settings, "options", None), "variant", None)
        named = variant is None or getattr(variant, "named_sources", False)  # (parity-aware BPE)
        self.sources: tuple[str, ...] = tuple(getattr(settings, "names", ())) if named else ()
        self.per_source = array("q")
        self.chosen = array("q")
        self.source_bytes: tuple[int, ...] = ()
        self.source_tokens = array("d")
        self._source_tokens_now: np.ndarray | None = None  # each source's tokens after the last merge
        self._tokens_now = 0  # the corpus's tokens after the last merge
        self.vocab: dict[int, bytes] | None = None
        self.finished: Finished | None = None
        self.session: Session | None = None
        self._merge_rate = RateMeter(RATE_WINDOW_SECONDS)
        self._merge_started: float | None = None
        self._smoothed_rate = 0.0  # merges per second, for the ETA
        self._reading_from: tuple[float, int] | None = None  # (time, bytes) of the first progress
        self.process_started = False  # the training process sent its first event
        self.last_heard = 0.0  # when the training process last sent anything
        # Never back to 0: a view that drew version 1 of the last run must see this one as new.
        self.version = getattr(self, "version", 0) + 1

    # -- changes -------------------------------------------------------------------------

    def start(self, settings: TrainSettings, now: float | None = None) -> None:
        """A run with ``settings`` begins."""
        self.reset(settings)
        self.stage = Stage.READING
        self.started = time.monotonic() if now is None else now
        self.last_heard = self.started
        self.version += 1

    def load(self, session: Session) -> None:
        """Show a finished (or partial) result opened from a session file."""
        self.reset(session.settings)
        self.session = session
        self.vocab = dict(session.vocab)
        first = len(session.vocab) - len(session.merges)
        if session.splits:  # Picky BPE's vocabulary lacks the removed tokens: the merges start after the specials
            first = 256 + len(session.settings.special_tokens)
        self.token_bytes = [token for _, token in sorted(session.vocab.items())][:first]
        # a session keeps merges as bytes: find the ids (bytes or earlier merges; special
        # tokens never take part in merges)
        ids = {token: i for i, token in enumerate(self.token_bytes[:256])}
        for token_id, (left, right) in enumerate(session.merges, first):
            self.left_ids.append(ids[left])
            self.right_ids.append(ids[right])
            self.token_bytes.append(left + right)
            ids.setdefault(left + right, token_id)
        self.token_ids = array("q", range(first, first + len(session.merges)))
        self.counts = array("q", session.merge_counts)
        self.corpus_tokens = array("q", session.corpus_tokens)
        self.lengths = array("q", map(len, self.token_bytes[first:]))
        self.splits = list(session.splits)
        stage1 = session.stats.get("stage1_merges")
        if isinstance(stage1, int):
            self.stage_two = True
            self.transition = stage1 if stage1 < len(session.merges) else None
        self.sources = tuple(session.sources)
        self.per_source = array("q", session.per_source)
        self.chosen = array("q", session.chosen)
        if self.sources and len(session.source_bytes) == len(self.sources):
            self.source_bytes = tuple(session.source_bytes)
            self._extend_source_tokens(0, int(session.stats.get("corpus_bytes", 0)))
        ranks, counts = session.stats.get("frequency_ranks"), session.stats.get("frequency_counts")
        if ranks and counts and len(ranks) == len(counts):
            self.frequency_points = (np.asarray(ranks, dtype=np.int64), np.asarray(counts, dtype=np.int64))
        self.stage = Stage.CANCELLED if session.partial else Stage.FINISHED
        self.started, self.ended = 0.0, float(session.stats.get("elapsed", 0.0))
        self.version += 1

    def apply(self, events: Iterable[object], now: float | None = None) -> None:
        """Apply a batch of trainer events (in order)."""
        now = time.monotonic() if now is None else now
        self.last_heard = now
        for event in events:
            if isinstance(event, TrainerStarted):
                self.process_started = True
            elif isinstance(event, MergeBatch):
                self._append_merges(event)
            elif isinstance(event, PretokenizeProgress):
                self.bytes_done, self.bytes_total = event.done, event.total
                if self._reading_from is None:  # MB/s from here: opening the corpus is not reading
                    self._reading_from = (now, event.done)
            elif isinstance(event, SourceBytes):
                self.sources, self.source_bytes = event.names, event.sizes
            elif isinstance(event, CountingDone):
                self.counting = event
                self.sources = getattr(event, "sources", ()) or self.sources
                idx = thin_log(len(event.frequencies))
                self.frequency_points = (idx + 1, np.asarray(event.frequencies)[idx])
                self.bytes_done = self.bytes_total
                self.stage = Stage.COUNTED
            elif isinstance(event, Finished):
                self.vocab = event.vocab
                self.finished = event
                self._end(Stage.FINISHED, now, event.merges)
        if self.token_ids and self.stage is Stage.COUNTED:
            self.stage = Stage.MERGING
            self._merge_started = now
        if self.stage is Stage.MERGING:
            self._merge_rate.add(now, len(self.token_ids))
            rate = self._merge_rate.rate()
            if rate > 0:
                old = self._smoothed_rate
                self._smoothed_rate = rate if old <= 0 else old + RATE_SMOOTHING * (rate - old)
        self.version += 1

    def _append_merges(self, batch: MergeBatch) -> None:
        # column by column at C speed; the only work per merge is making its token's bytes
        known = len(self.token_bytes)
        batch.extend_vocab(self.token_bytes)
        self.lengths.extend(map(len, self.token_bytes[known:]))
        self._extend_sizes(batch, known)
        self.token_ids.extend(batch.token_ids)
        self.left_ids.extend(batch.left_ids)
        self.right_ids.extend(batch.right_ids)
        self.counts.extend(batch.counts)
        self.corpus_tokens.extend(batch.corpus_tokens)
        if batch.per_source is not None and self.sources:
            known_merges = len(self.per_source) // len(self.sources)
            self.per_source.extend(batch.per_source)
            if batch.chosen is not None:
                self.chosen.extend(batch.chosen)
            self._extend_source_tokens(known_merges, self._corpus_bytes())
        self.splits += batch.splits
        if batch.stage:
            self.stage_two = True
            if batch.stage == 2 and self.transition is None:
                self.transition = batch.first_rank

    def _extend_sizes(self, batch: MergeBatch, known: int) -> None:
        self.sizes.extend(vocabulary_sizes(batch, known, self.sizes[-1] if self.sizes else known, self._removed))

    def cancel(self, now: float | None = None) -> None:
        """The run was cancelled: keep what was learned as a partial result."""
        if self.stage.running:
            self._end(Stage.CANCELLED, time.monotonic() if now is None else now)
            self.version += 1

    def fail(self, message: str, now: float | None = None) -> None:
        """The run stopped on an error."""
        self.error = message
        self.ended = time.monotonic() if now is None else now
        self.stage = Stage.FAILED
        self.version += 1

    def _end(self, stage: Stage, now: float, merges: list[tuple[bytes, bytes]] | None = None) -> None:
        self.stage = stage
        self.ended = now
        self.session = self._make_session(partial=stage is Stage.CANCELLED, merges=merges)

    # -- reading ----------------------------------------------------------------------------

    def stage_of(self, rank: int) -> int:
        """The stage of the merge at ``rank``: 0 for one-stage training, SuperBPE's 1 or 2."""
        if not self.stage_two:
            return 0
        return 2 if self.transition is not None and rank >= self.transition else 1

    def merge(self, rank: int) -> tuple[bytes, bytes]:
        """The pair merged at ``rank``, as bytes."""
        return self.token_bytes[self.left_ids[rank]], self.token_bytes[self.right_ids[rank]]

    def merges(self) -> list[tuple[bytes, bytes]]:
        """Every merge so far, in rank order, as byte pairs."""
        tokens = self.token_bytes
        return list(zip(map(tokens.__getitem__, self.left_ids), map(tokens.__getitem__, self.right_ids)))

    def bytes_per_token(self) -> tuple[np.ndarray, np.ndarray]:
        """(vocabulary size, bytes per token) after each merge, for the compression chart."""
        if not self.corpus_tokens:
            return np.empty(0), np.empty(0)
        corpus_bytes = self._corpus_bytes()
        tokens = np.asarray(self.corpus_tokens, dtype=np.float64)
        if len(self.sizes) == len(tokens):
            sizes = np.asarray(self.sizes, dtype=np.float64)
        else:  # an opened session: one token per merge
            sizes = np.arange(len(tokens), dtype=np.float64) + (self.token_ids[0] + 1)
        return sizes, corpus_bytes / np.maximum(tokens, 1.0)

    def _corpus_bytes(self) -> int:
        if self.counting is not None:
            return self.counting.corpus_bytes
        if self.session is not None:
            return int(self.session.stats.get("corpus_bytes", 0))
        return 0

    def token_lengths(self) -> np.ndarray:
        """Byte length of every token learned so far (single bytes included)."""
        # Kept as merges arrive: a pass over all the merges here would cost the GUI thread each chart update.
        return np.concatenate([np.ones(256, dtype=np.int64), np.asarray(self.lengths, dtype=np.int64)])

    def summary(self) -> list[tuple[str, str]]:
        """(label, value) rows describing the finished or cancelled run (`core.progress.training_summary`)."""
        session = self.session
        if session is None:
            return []
        stats = session.stats
        longest = None
        if session.merges and len(self.lengths) == len(session.merges):  # the lengths kept: no pass in Python
            longest = session.merges[int(np.argmax(np.frombuffer(self.lengths, dtype=np.int64)))]
        rows = training_summary(
            seconds=float(stats.get("elapsed", 0.0)),
            vocab_size=len(session.vocab),
            merges=session.merges,
            partial=session.partial,
            distinct=stats.get("distinct"),
            total=stats.get("total"),
            corpus_bytes=int(stats.get("corpus_bytes", 0)),
            corpus_tokens=session.corpus_tokens[-1] if session.corpus_tokens else None,
            invalid_bytes=int(stats.get("invalid_bytes", 0)),
            documents=int(stats.get("documents", 0)),
            input_bytes=int(stats.get("input_bytes", 0)),
            planned=session.settings.max_merges,
            longest=longest,
        )
        planned = session.settings.max_merges
        if self.parity and not session.partial and len(session.merges) < planned:
            rows[0] = ("Result", f"stopped early ({len(session.merges):,} of {planned:,} merges): the language "
                                 "whose turn it was had no pair left")
        return rows

    def _make_session(self, partial: bool, merges: list[tuple[bytes, bytes]] | None = None) -> Session | None:
        """The run as a session; ``merges``: the trainer's own list (the `Finished` event's,
        the same pairs as `merges`: kept rather than rebuilt in the GUI thread)."""
        settings = self.settings
        if settings is None:
            return None
        if merges is None or len(merges) != len(self.left_ids):
            merges = self.merges()
        vocab = dict(self.vocab) if self.vocab is not None else dict(enumerate(self.token_bytes))
        stats: dict[str, object] = {"elapsed": self.elapsed()}
        if self.counting is not None:
            c = self.counting
            stats.update(
                distinct=c.distinct,
                total=c.total,
                invalid_bytes=c.invalid_bytes,
                corpus_bytes=c.corpus_bytes,
                documents=c.documents,
                input_bytes=c.input_bytes,
            )
        if self.frequency_points is not None:  # thinned, for the chart after reopening
            stats["frequency_ranks"] = self.frequency_points[0].tolist()
            stats["frequency_counts"] = self.frequency_points[1].tolist()
        if self.stage_two:
            stage1 = self.finished.stage1_merges if self.finished is not None else None
            stats["stage1_merges"] = stage1 if stage1 is not None else (
                self.transition if self.transition is not None else len(self.left_ids))
        return Session(
            settings=settings,
            vocab=vocab,
            merges=merges,
            merge_counts=list(self.counts),
            corpus_tokens=list(self.corpus_tokens),
            partial=partial,
            stats=stats,
            splits=list(self.splits),
            sources=self.sources,
            per_source=array("q", self.per_source),  # a copy at C speed: as a list, millions of ints held the GUI thread
            source_bytes=list(self.source_bytes),
            chosen=array("q", self.chosen),
        )

