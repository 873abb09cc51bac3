"""Choosing files and keeping results: drag and drop, the recent list, keyboard shortcuts,
persistent settings, export (loaded back by core.Tokenizer.from_files) and sessions."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, QPointF, QSettings, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QFileDialog

import core
from bpe_studio.app import file_dialogs
from bpe_studio.app.main_window import MainWindow
from bpe_studio.app.models.sample_corpus import SAMPLE_CORPUS_PATH
from bpe_studio.app.models.session import load_session
from bpe_studio.app.models.run_progress import Stage
from core.encode.tokenizer import Tokenizer

EOT = "<|endoftext|>"


def train_and_wait(qtbot, window) -> None:
    window.start_training()
    qtbot.waitUntil(lambda: not window.is_training(), timeout=60_000)
    qtbot.waitUntil(lambda: window.tokenizer is not None, timeout=30_000)


def drop(window, mime: QMimeData) -> tuple[bool, bool]:
    """Drag ``mime`` over the window and drop it; returns (enter accepted, drop accepted)."""
    pos = QPointF(window.width() / 2, window.height() / 2)
    enter = QDragEnterEvent(pos.toPoint(), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, enter)
    event = QDropEvent(pos, Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, event)
    return enter.isAccepted(), event.isAccepted()


def test_dropping_a_file_chooses_it_as_corpus(qtbot, make_window, make_corpus):
    window = make_window(vocab_size=300)
    corpus = make_corpus(10_000, name="dropped corpus.txt")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(corpus))])
    assert drop(window, mime) == (True, True)
    assert window.settings_panel.corpus() == str(corpus)
    assert "dropped corpus.txt" in window.windowTitle()
    # Text that is not a file is refused.
    text = QMimeData()
    text.setText("just some text")
    assert drop(window, text) == (False, False)
    assert window.settings_panel.corpus() == str(corpus)
    train_and_wait(qtbot, window)
    assert window.state.stage is Stage.FINISHED


def test_export_writes_files_that_tokenizer_from_files_loads(qtbot, make_window, make_corpus, tmp_path, export_and_wait):
    corpus = make_corpus(40_000, seed=7)
    window = make_window(corpus, 600, [EOT])
    train_and_wait(qtbot, window)
    out = tmp_path / "export"
    paths = export_and_wait(window, out)
    assert {p.name for p in paths} >= {"vocab.json", "merges.txt", "tokenizer.json"}
    assert window.banner.kind() == "info" and "Exported the tokenizer" in window.banner.text()
    loaded = Tokenizer.from_files(out / "vocab.json", out / "merges.txt", [EOT])
    vocab, merges = core.train_bpe(corpus, 600, [EOT])
    assert loaded.merges == merges
    text = corpus.read_text(encoding="utf-8")[:5000]
    assert loaded.encode(text) == Tokenizer(vocab, merges, [EOT]).encode(text)
    assert loaded.encode(EOT) == [256]


def test_export_of_a_cancelled_run_is_marked_partial(qtbot, make_window, make_corpus, tmp_path, slow_merges, export_and_wait):
    window = make_window(make_corpus(1_000_000, seed=8), 40_000)
    window.start_training()
    window.training.job.events.connect(lambda _b: window.state.token_ids and window.cancel_training())
    qtbot.waitUntil(lambda: not window.is_training(), timeout=60_000)
    k = len(window.state.token_ids)
    assert window.state.stage is Stage.CANCELLED and k > 0
    assert export_and_wait(window, tmp_path / "partial")
    assert "partial tokenizer" in window.banner.text()
    loaded = Tokenizer.from_files(tmp_path / "partial" / "vocab.json", tmp_path / "partial" / "merges.txt")
    assert len(loaded.merges) == k


def test_export_before_training_says_what_to_do(qtbot, make_window, tmp_path):
    window = make_window()
    assert window.export_to(tmp_path / "out") is None
    assert "train a tokenizer" in window.banner.text()
    assert not (tmp_path / "out").exists()


def test_session_round_trip_reopens_the_result_without_training(qtbot, make_window, make_corpus, tmp_path, settings_file, save_session_and_wait):
    corpus = make_corpus(30_000, seed=9)
    window = make_window(corpus, 500, [EOT])
    window.settings_panel.pattern_combo.setCurrentIndex(window.settings_panel.pattern_combo.findData("gpt4"))
    train_and_wait(qtbot, window)
    path = save_session_and_wait(window, tmp_path / "run.bpesession")
    assert path is not None and load_session(path).merges == window.state.merges()

    other = MainWindow(settings=QSettings(str(tmp_path / "other.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(other)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    assert drop(other, mime) == (True, True)  # dropping a session opens it
    assert other.state.stage is Stage.FINISHED
    other.merges_table.refresh()
    assert other.merges_table.merges_model.rowCount() == 500 - 257
    assert other.state.merges() == window.state.merges()
    assert other.state.token_bytes == window.state.token_bytes
    for column in ("token_ids", "left_ids", "right_ids", "counts", "corpus_tokens", "lengths"):
        assert getattr(other.state, column) == getattr(window.state, column), column
    assert other.settings_panel.pattern() == "gpt4"
    assert other.settings_panel.corpus() == str(corpus)
    qtbot.waitUntil(lambda: other.tokenizer is not None)
    assert other.tokenizer.encode("hello ka lo 12") == window.tokenizer.encode("hello ka lo 12")
    assert other.merge_counts == window.merge_counts
    other.summary_panel.refresh()
    assert dict(other.summary_panel.rows())["Result:"] == "complete"
    # The charts come back too (the pre-token frequencies as a thinned curve).
    assert other.state.frequency_points[1].tolist() == window.state.frequency_points[1].tolist()
    other.charts.refresh()
    assert len(other.charts.freq_curve.xData) == len(window.state.frequency_points[0]) > 0
    assert len(other.charts.pair_curve.xData) == 500 - 257


def test_a_damaged_session_is_reported_with_its_name(qtbot, make_window, tmp_path):
    window = make_window()
    bad = tmp_path / "broken.bpesession"
    bad.write_text('{"format": "bpe-studio-session", "version": 1, "settings": {}}', encoding="utf-8")
    assert not window.open_session(bad)
    assert "broken.bpesession" in window.banner.text() and window.banner.kind() == "error"
    bad.write_text("{not json", encoding="utf-8")
    assert not window.open_session(bad)
    assert "line 1" in window.banner.text()
    assert window.state.stage is Stage.IDLE


def test_settings_and_recent_files_persist(qtbot, make_corpus, settings_file):
    corpus = make_corpus(20_000)
    first = MainWindow(settings=QSettings(str(settings_file), QSettings.Format.IniFormat))
    qtbot.addWidget(first)
    assert first.settings_panel.corpus() == str(SAMPLE_CORPUS_PATH)  # first launch
    panel = first.settings_panel
    panel.set_corpus(str(corpus))
    panel.set_vocab_size(1234)
    panel.specials_edit.setPlainText("<|endoftext|>\n<|pad|>")
    panel.pattern_combo.setCurrentIndex(panel.pattern_combo.findData("gpt4"))
    panel.workers_spin.setValue(1)
    panel.recent.add(str(corpus))
    screen = first.screen().availableGeometry()
    first.resize(min(780, screen.width() - 20), min(560, screen.height() - 40))
    size = first.size()
    first.close()

    second = MainWindow(settings=QSettings(str(settings_file), QSettings.Format.IniFormat))
    qtbot.addWidget(second)
    s = second.settings_panel.settings()
    assert (s.corpus, s.vocab_size, s.special_tokens, s.pattern, s.workers) == (
        str(corpus), 1234, ("<|endoftext|>", "<|pad|>"), "gpt4", 1
    )
    assert second.size() == size
    assert second.settings_panel.recent.paths() == [str(corpus)]
    second.recent_menu.aboutToShow.emit()
    assert any(corpus.name in a.text() for a in second.recent_menu.actions())
    # The command line's choices win over the remembered ones.
    third = MainWindow(corpus=str(SAMPLE_CORPUS_PATH), vocab_size=777,
                       settings=QSettings(str(settings_file), QSettings.Format.IniFormat))
    qtbot.addWidget(third)
    assert third.settings_panel.settings().vocab_size == 777
    assert third.settings_panel.corpus() == str(SAMPLE_CORPUS_PATH)


def test_keyboard_shortcuts(qtbot, make_window, make_corpus, tmp_path, monkeypatch, slow_merges):
    window = make_window(vocab_size=40_000)
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    corpus = make_corpus(1_000_000, seed=10)
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: ([str(corpus)], ""))
    QTest.keyClick(window, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier)
    assert window.settings_panel.corpus() == str(corpus)

    QTest.keyClick(window, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert window.is_training()
    qtbot.waitUntil(lambda: bool(window.state.token_ids) or not window.is_training(), timeout=60_000)
    QTest.keyClick(window, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not window.is_training(), timeout=10_000)
    assert window.state.stage is Stage.CANCELLED

    out = tmp_path / "via-ctrl-e"
    monkeypatch.setattr(file_dialogs, "ask_folder", lambda *a, **k: str(out))  # the Export folder dialog
    QTest.keyClick(window, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: not window.exports.busy, timeout=30_000)  # written off the GUI thread
    assert (out / "merges.txt").is_file()

    # Ctrl+Enter (the keypad Enter) starts training too.
    window.settings_panel.set_vocab_size(300)
    QTest.keyClick(window, Qt.Key.Key_Enter, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.KeypadModifier)
    assert window.is_training()
    qtbot.waitUntil(lambda: not window.is_training(), timeout=60_000)
    assert window.state.stage is Stage.FINISHED
    assert Path(window.state.session.settings.corpus) == corpus
