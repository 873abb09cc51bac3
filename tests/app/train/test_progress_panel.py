"""Progress to trust: MB/s counts reading only (not opening the corpus), every phase shows
an ETA, and the merge ETA is not wild in the first moments."""

from __future__ import annotations

import re
import time
from array import array

from core import TrainOptions
from bpe_studio.app.models.session import TrainSettings
from bpe_studio.app.models.training_state import TrainerStarted, TrainingState
from core.events import CountingDone, MergeBatch, PretokenizeProgress
from bpe_studio.app.train.progress_panel import ProgressPanel


def merges(first: int, n: int) -> MergeBatch:
    ids = array("q", range(256 + first, 256 + first + n))
    return MergeBatch(first, ids, array("q", [97] * n), array("q", [98] * n), array("q", [5] * n), array("q", [100] * n))


def eta_seconds(text: str) -> float | None:
    m = re.search(r"ETA ([\d.]+) s", text)
    return float(m.group(1)) if m else None


def test_reading_rate_excludes_opening_and_every_phase_has_an_eta(qtbot, tmp_path):
    state = TrainingState()
    panel = ProgressPanel(state)
    qtbot.addWidget(panel)
    t0 = time.monotonic() - 20.0
    state.start(TrainSettings(str(tmp_path / "c.txt"), TrainOptions(10_256)), now=t0)
    state.apply([TrainerStarted(), PretokenizeProgress(0, 100_000_000)], now=t0 + 8.0)  # 8 s to open
    state.apply([PretokenizeProgress(40_000_000, 100_000_000)], now=time.monotonic())
    panel.refresh()
    detail = panel.detail_label.text()
    # 40 MB in the ~12 s since reading began (not the 20 s since the start): 3.3 MB/s.
    assert "40.0 MB of 100.0 MB" in detail and "3.3 MB/s" in detail, detail
    assert 15 <= float(re.search(r"ETA (\d+) s", detail).group(1)) <= 21

    counting = CountingDone(10, 100, 0, 100_000_000, array("q", [50, 30, 20]), b"ab")
    start = time.monotonic()
    state.apply([counting, merges(0, 10)], now=start)  # the first merges are slow...
    state.apply([merges(10, 10)], now=start + 0.5)
    panel.refresh()
    assert "ETA" not in panel.detail_label.text()  # ... so no ETA from them yet
    # Then the merge loop speeds up: 1,000 merges a second.
    k, t = 20, start + 0.5
    for _ in range(30):
        t += 0.1
        state.apply([merges(k, 100)], now=t)
        k += 100
    eta = eta_seconds(state.progress(now=t).detail)
    assert eta is not None
    left = 10_000 - k
    assert left / 1000 * 0.7 <= eta <= left / 1000 * 1.5  # near the truth, not 50 times it
