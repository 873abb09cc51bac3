"""Training in the window: real runs on generated corpora, checked against core.train_bpe;
cancel, close mid-run (no process left behind), and the GUI thread staying responsive."""

from __future__ import annotations

import glob
import multiprocessing
import os
import time

from PySide6.QtCore import QTimer

import core
from bpe_studio.app.train.merges_table import RAW_BYTES_ROLE, TOKEN_ID_ROLE
from core.readable import readable
from bpe_studio.app.models.run_progress import Stage

EOT = "<|endoftext|>"


def wait_until_stopped(qtbot, window, timeout_ms: int = 60_000) -> None:
    qtbot.waitUntil(lambda: not window.is_training(), timeout=timeout_ms)
    window.merges_table.refresh()


def shown_merges(window) -> list[tuple[bytes, bytes]]:
    model = window.merges_table.merges_model
    return [
        (model.data(model.index(row, 1), RAW_BYTES_ROLE), model.data(model.index(row, 2), RAW_BYTES_ROLE))
        for row in range(model.rowCount())
    ]


def children_of(pid: int) -> set[int]:
    pids: set[int] = set()
    for path in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            with open(path) as f:
                pids.update(int(p) for p in f.read().split())
        except OSError:
            pass
    return pids


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def child_pids() -> set[int]:
    """Live child processes of this process, straight from /proc (no psutil).

    Leaves out multiprocessing's resource tracker: one per interpreter, started by the
    first spawn-context process and kept (it exits with this process), not a trainer.
    """
    pids = set()
    for pid in children_of(os.getpid()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                tracker = b"multiprocessing.resource_tracker" in f.read()
        except OSError:
            continue
        if alive(pid) and not tracker:
            pids.add(pid)
    return pids


def test_training_to_completion_shows_exactly_core_merges(qtbot, make_window, make_corpus):
    corpus = make_corpus(60_000, seed=1)
    window = make_window(corpus, 700, [EOT])
    window.start_training()
    assert window.is_training()
    assert window.settings_panel.train_button.text() == "Cancel"
    wait_until_stopped(qtbot, window)

    _, merges = core.train_bpe(corpus, 700, [EOT])
    assert window.banner.text() == ""
    assert window.state.stage is Stage.FINISHED
    assert shown_merges(window) == merges
    model = window.merges_table.merges_model
    left, right = merges[5]
    assert model.data(model.index(5, 3)) == readable(left + right)
    assert model.data(model.index(5, 3), TOKEN_ID_ROLE) == 257 + 5
    assert model.data(model.index(5, 4)) == f"{window.state.counts[5]:,}"
    assert window.settings_panel.train_button.text() == "Train"
    summary = dict(window.summary_panel.rows())
    assert summary["Result:"] == "complete"
    assert summary["Vocabulary:"].startswith("700 tokens")
    # The tokenizer handed on to the other tabs encodes with these merges.
    qtbot.waitUntil(lambda: window.tokenizer is not None)
    text = "Some text, 12345 — θα ми 語学 ok"
    assert window.tokenizer.decode(window.tokenizer.encode(text)) == text
    assert window.merge_counts[257] == window.state.counts[0]


def test_cancel_keeps_a_partial_result_equal_to_a_shorter_run(qtbot, make_window, make_corpus, slow_merges):
    corpus = make_corpus(1_000_000, seed=2)
    window = make_window(corpus, 40_000, [EOT])
    cancelled_at: list[float] = []

    def cancel_once_merging(_batch: object) -> None:
        if window.state.token_ids and not cancelled_at:
            cancelled_at.append(time.monotonic())
            window.cancel_training()

    window.start_training()
    window.training.job.events.connect(cancel_once_merging)
    stopped: list[float] = []
    window.training.job.stopped.connect(lambda _c: stopped.append(time.monotonic()))
    wait_until_stopped(qtbot, window)

    latency = stopped[0] - cancelled_at[0]
    print(f"\ncancel took {latency * 1000:.0f} ms")
    assert latency < 1.0
    state = window.state
    assert state.stage is Stage.CANCELLED
    k = len(state.token_ids)
    assert 0 < k < 40_000 - 257
    session = state.session
    assert session.partial and len(session.merges) == k
    # The partial merges are exactly the first k merges of the full run.
    _, merges = core.train_bpe(corpus, 257 + k, [EOT])
    assert shown_merges(window) == merges
    assert "partial" in window.windowTitle()
    assert not window.summary_panel.partial_label.isHidden()
    assert "cancelled" in window.summary_panel.partial_label.text()
    qtbot.waitUntil(lambda: window.tokenizer is not None)  # browsable
    assert len(window.tokenizer.merges) == k
    assert window.settings_panel.train_button.text() == "Train"


def test_closing_mid_run_stops_the_worker_and_its_processes(qtbot, make_window, make_corpus, heartbeat, monkeypatch,
                                                           answer_message_box):
    # the regex path counts in worker processes (the native one in threads of the training process)
    monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
    corpus = make_corpus(3_000_000, seed=3)
    window = make_window(corpus, 20_000)
    window.settings_panel.workers_spin.setValue(2)
    window.start_training()
    job = window.training.job
    # Wait until the training process has started its pre-tokenization workers, then close.
    workers: set[int] = set()

    def workers_running() -> bool:
        if job.process_pid is not None:
            workers.update(children_of(job.process_pid))
        return bool(workers) or not window.is_training()

    qtbot.waitUntil(workers_running, timeout=30_000)
    assert window.is_training(), "training ended before the close could interrupt it"
    assert window.state.stage.running
    heartbeat.restart()
    started = time.monotonic()
    answer_message_box("Yes")  # "Quit while training?"
    assert not window.close()  # not yet: it stops the run first, staying responsive
    assert window.closing and window.isVisible()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=30_000)
    heartbeat.stop()
    print(f"\nclose took {(time.monotonic() - started) * 1000:.0f} ms; longest GUI gap {heartbeat.worst * 1000:.0f} ms")
    assert heartbeat.worst < 0.3
    assert job._thread.isFinished()
    assert multiprocessing.active_children() == []
    assert not alive(job.process_pid)
    qtbot.waitUntil(lambda: not any(alive(pid) for pid in workers), timeout=5_000)
    qtbot.waitUntil(lambda: not child_pids(), timeout=5_000)


def test_gui_thread_stays_responsive_while_training_3mb(qtbot, make_window, make_corpus):
    corpus = make_corpus(3_000_000, seed=4)
    window = make_window(corpus, 20_000)
    gaps: list[float] = []
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(tick)
    timer.start()
    # Measure the run, not the first paint of the just-shown window (~100 ms on a busy machine).
    qtbot.waitExposed(window)
    qtbot.wait(300)
    gaps.clear()
    last[0] = time.perf_counter()
    window.start_training()
    wait_until_stopped(qtbot, window, timeout_ms=120_000)
    qtbot.waitUntil(lambda: window.tokenizer is not None, timeout=30_000)  # built in the background
    timer.stop()

    assert window.state.stage is Stage.FINISHED, window.banner.text()
    worst = max(gaps)
    p99 = sorted(gaps)[int(len(gaps) * 0.99)]
    print(
        f"\nGUI responsiveness: {len(gaps)} ticks of a 5 ms timer over "
        f"{window.state.elapsed():.1f} s of training; longest gap {worst * 1000:.0f} ms, "
        f"99th percentile {p99 * 1000:.0f} ms"
    )
    assert worst < 0.250


def test_training_the_sample_corpus_preselected_on_first_launch(qtbot, make_window):
    window = make_window(vocab_size=500, special_tokens=[EOT])
    from bpe_studio.app.models.sample_corpus import SAMPLE_CORPUS_PATH

    assert window.settings_panel.corpus() == str(SAMPLE_CORPUS_PATH)
    window.settings_panel.workers_spin.setValue(1)
    window.start_training()
    wait_until_stopped(qtbot, window)
    assert window.state.stage is Stage.FINISHED
    assert len(shown_merges(window)) == 500 - 257
