"""GUI test set-up: offscreen Qt, QSettings kept in a temporary folder, windows and corpora.

No test touches the user's settings: every test gets its own INI location, and windows
get an explicit QSettings file under ``tmp_path``.
"""

from __future__ import annotations

import functools
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QSettings

SYLLABLES = [
    "ka", "lo", "mi", "ne", "ru", "ta", "shi", "bo", "qu", "ex", "ar", "ven", "dil", "or",
    "sto", "pra", "ül", "ße", "ño", "θα", "λο", "ми", "ра", "語", "学", "ا", "ل",
]


PUNCTUATION = [",", ".", "!", "?", ";", " —", " (x)", "'s", "'ll"]
BREAKS = ["\n", "\n\n", "\t"]


@functools.lru_cache(maxsize=4)
def generate_corpus(size: int, seed: int = 0, documents: int = 40) -> str:
    """Random text of about ``size`` characters: made-up words (many distinct pre-tokens,
    so training has plenty of merges to make), numbers, punctuation, several scripts, and
    ``<|endoftext|>`` between about ``documents`` documents. The same arguments give the
    same text (kept for the next test that asks)."""
    rng = np.random.default_rng(seed)
    drawn = [SYLLABLES[k] for k in rng.integers(len(SYLLABLES), size=6000 * 4).tolist()]
    words = ["".join(drawn[4 * w : 4 * w + n]) for w, n in enumerate(rng.integers(1, 5, size=6000).tolist())]
    kinds = rng.choice(4, size=size // 4 + 16, p=[0.82, 0.08, 0.06, 0.04])  # ~4.6 characters a piece
    pieces = np.empty(len(kinds), dtype=object)
    lengths = np.empty(len(kinds), dtype=np.int64)
    for kind, choices in enumerate([words, None, PUNCTUATION, BREAKS]):
        at = kinds == kind
        if choices is None:
            numbers = rng.integers(100_000, size=int(at.sum()))
            pieces[at] = [f" {n}" for n in numbers.tolist()]
            lengths[at] = 2 + np.floor(np.log10(np.maximum(numbers, 1))).astype(np.int64)
        else:
            picked = rng.integers(len(choices), size=int(at.sum()))
            pieces[at] = np.array(choices, dtype=object)[picked]
            lengths[at] = np.array([len(c) for c in choices])[picked]
    words_at = kinds == 0
    double = rng.random(int(words_at.sum())) >= 0.9
    pieces[words_at] = np.where(double, "  ", " ").astype(object) + pieces[words_at]
    lengths[words_at] += 1 + double
    ends = np.cumsum(lengths)
    count = min(len(ends), int(np.searchsorted(ends, size)) + 1)
    per_doc = max(1, size // documents)
    cuts = np.searchsorted(ends[:count], np.arange(per_doc, int(ends[count - 1]), per_doc), side="right").tolist()
    pieces_list = pieces[:count].tolist()
    return "<|endoftext|>".join("".join(pieces_list[a:b]) for a, b in zip([0, *cuts], [*cuts, count]))


@pytest.fixture(autouse=True)
def isolated_qsettings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Point every QSettings INI location at a fresh temporary folder."""
    folder = tmp_path_factory.mktemp("qsettings")
    for scope in (QSettings.Scope.UserScope, QSettings.Scope.SystemScope):
        QSettings.setPath(QSettings.Format.IniFormat, scope, str(folder))
    yield


@pytest.fixture
def settings_file(tmp_path: Path) -> Path:
    return tmp_path / "settings.ini"


@pytest.fixture
def make_corpus(tmp_path: Path) -> Callable[..., Path]:
    """``make_corpus(size, seed=0, name="corpus.txt") -> path`` of a generated UTF-8 corpus."""

    def make(size: int, seed: int = 0, name: str = "corpus.txt") -> Path:
        path = tmp_path / name
        path.write_text(generate_corpus(size, seed), encoding="utf-8")
        return path

    return make


@pytest.fixture
def make_window(qtbot, settings_file: Path) -> Iterator[Callable[..., object]]:
    """``make_window(corpus=None, vocab_size=None, special_tokens=None)``: a shown MainWindow with
    test settings (``special_tokens`` typed into the panel when given; else its default, none).

    At the test's end the windows close without asking (a test that left a run going would
    otherwise wait for an answer to "Quit while training?")."""
    from bpe_studio import MainWindow

    windows = []

    def make(corpus: str | os.PathLike[str] | None = None, vocab_size: int | None = None,
             special_tokens: list[str] | None = None):
        qsettings = QSettings(str(settings_file), QSettings.Format.IniFormat)
        window = MainWindow(
            corpus=None if corpus is None else str(corpus), vocab_size=vocab_size, settings=qsettings
        )
        if special_tokens is not None:
            window.settings_panel.specials_edit.setPlainText("\n".join(special_tokens))
        qtbot.addWidget(window)
        window.show()
        windows.append(window)
        return window

    yield make
    for window in windows:
        window.ask_before_quitting = False


@pytest.fixture
def slow_merges(monkeypatch: pytest.MonkeyPatch) -> None:
    """Train with the pure-Python merge loop, so a run lasts long enough to cancel mid-merge.

    The compiled kernel finishes tens of thousands of merges before a cancel can reach the
    training process; the window behaves the same with either loop (the spawned training
    process inherits the environment).
    """
    monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1")


class Heartbeat:
    """A 5 ms timer in the GUI thread; ``worst`` is the longest gap between its ticks (a
    frozen window shows as a long gap), ``worst_work`` the most CPU time the GUI thread
    itself spent between two ticks (its own work, whatever else the machine runs: a busy
    shared machine stretches ``worst`` by scheduling and by background threads)."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self._timer = QTimer()
        self._timer.setInterval(5)
        self._timer.timeout.connect(self._tick)
        self.restart()
        self._timer.start()

    def restart(self) -> None:
        self.worst = self.worst_work = 0.0
        self._last = time.perf_counter()
        self._last_work = time.thread_time()

    def _tick(self) -> None:
        now, work = time.perf_counter(), time.thread_time()  # this runs in the GUI thread
        self.worst = max(self.worst, now - self._last)
        self.worst_work = max(self.worst_work, work - self._last_work)
        self._last, self._last_work = now, work

    def stop(self) -> None:
        self._tick()
        self._timer.stop()


@pytest.fixture
def heartbeat(qtbot) -> Iterator[Heartbeat]:
    """A running `Heartbeat`; call ``restart()`` right before what is measured."""
    beat = Heartbeat()
    yield beat
    beat.stop()


@pytest.fixture(autouse=True)
def no_job_outlives_its_test() -> Iterator[None]:
    """Wait, after each test, for the background jobs it started (superseded renderings and
    encodings end on their own): a thread left running made later tests see a threaded
    process (``core.workers.processes.can_fork`` then refuses to fork)."""
    yield
    from bpe_studio.app.workers import thread_job

    for job in list(thread_job._live):
        job.shutdown(30_000)


def _wait_for_job(qtbot, job, timeout: int = 30_000) -> list[object]:
    """Wait for a `ThreadJob` to stop; returns what it returned (``[]`` if None, refused or failed)."""
    if job is None:
        return []
    results: list[object] = []
    job.returned.connect(results.append)
    if job.running:
        with qtbot.waitSignal(job.stopped, timeout=timeout):
            pass
    return results


def _export_and_wait(qtbot, window, folder, **kwargs) -> list[Path]:
    """``window.export_to(folder)`` and wait for the files: their paths (``[]`` if refused or failed)."""
    results = _wait_for_job(qtbot, window.export_to(folder, **kwargs))
    return list(results[0]) if results else []


def _save_session_and_wait(qtbot, window, path) -> Path | None:
    """``window.save_session_to(path)`` and wait: the path written (None if refused or failed)."""
    results = _wait_for_job(qtbot, window.save_session_to(path))
    return results[0] if results else None


def _answer_message_box(qtbot, button_text: str) -> None:
    """Click ``button_text`` ("&Yes", "&No", ...) in the next modal message box, once it shows."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox

    def click() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(10, click)
            return
        for button in box.buttons():
            if button.text().replace("&", "") == button_text.replace("&", ""):
                button.click()
                return
        raise AssertionError(f"no {button_text!r} in {[b.text() for b in box.buttons()]}")

    QTimer.singleShot(0, click)


@pytest.fixture
def export_and_wait(qtbot) -> Callable[..., list[Path]]:
    """``export_and_wait(window, folder, allow_empty=False)``: export and wait; the paths written."""
    return lambda window, folder, **kwargs: _export_and_wait(qtbot, window, folder, **kwargs)


@pytest.fixture
def save_session_and_wait(qtbot) -> Callable[..., Path | None]:
    """``save_session_and_wait(window, path)``: save the session and wait; the path written or None."""
    return lambda window, path: _save_session_and_wait(qtbot, window, path)


@pytest.fixture
def answer_message_box(qtbot) -> Callable[[str], None]:
    """``answer_message_box("Yes")``: click that button in the next modal message box."""
    return lambda button_text: _answer_message_box(qtbot, button_text)


def _message_box_text(action) -> str:  # noqa: ANN001 - a QAction
    """Trigger ``action``, read the modal message box it opens, close it; its text."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox

    shown: list[str] = []

    def read_and_close() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(10, read_and_close)
            return
        shown.append(box.text())
        box.accept()

    QTimer.singleShot(0, read_and_close)
    action.trigger()
    return shown[0]


@pytest.fixture
def message_box_text() -> Callable[[object], str]:
    """``message_box_text(action)``: trigger it and read the message box it opens (then closed)."""
    return _message_box_text
