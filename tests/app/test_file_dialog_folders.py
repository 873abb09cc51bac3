"""File dialogs start in the user's last folder (else home), never in the process's current
folder nor inside the application; the folder is shared by the window's dialogs and kept in
the settings; the Export folder dialog takes a new folder's name and creates it."""

from __future__ import annotations

from pathlib import Path

import pytest
import shiboken6
from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QFileDialog, QLineEdit, QMessageBox

from bpe_studio.app import file_dialogs
from bpe_studio.app.file_dialogs import FileDialogs, NewFolderDialog
from bpe_studio.app.models.sample_corpus import SAMPLE_CORPUS_PATH


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A home folder of its own, and a current folder elsewhere (where no dialog may start)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return home


def record_starts(monkeypatch) -> list[str]:
    """Every file dialog answers "cancelled" and records the folder it started in."""
    starts: list[str] = []

    def one(_parent, _title, start="", *_rest, **_kw):
        starts.append(start)
        return "", ""

    def many(_parent, _title, start="", *_rest, **_kw):
        starts.append(start)
        return [], ""

    def folder(_parent, _title, start="", *_rest, **_kw):
        starts.append(start)
        return ""

    monkeypatch.setattr(QFileDialog, "getOpenFileName", one)
    monkeypatch.setattr(QFileDialog, "getSaveFileName", one)
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", many)
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", folder)
    monkeypatch.setattr(file_dialogs, "ask_folder", folder)
    return starts


def every_dialog(window) -> list[object]:
    """The window's dialogs that read files or folders (each called once, all cancelled)."""
    evaluate = window.evaluate_panel
    return [
        window.settings_panel.browse,
        window.settings_panel.corpus_options.choose_folder,
        window.settings_panel.trainer_options.choose_initial,
        window.settings_panel.trainer_options.choose_initial_folder,
        window.settings_panel.variant_options.parity.browse,
        window.open_counts_dialog,
        window.open_session_dialog,
        evaluate.inputs.add_tokenizer_dialog,
        evaluate.inputs.add_source_dialog,
        evaluate.inputs.add_folder_dialog,
        lambda: evaluate._export_dialog("csv"),
        evaluate.lm_panel._browse,
    ]


def test_dialogs_start_at_home_never_in_the_current_or_the_applications_folder(qtbot, make_window, home, monkeypatch):
    window = make_window()  # a first launch: the sample corpus is chosen
    assert window.settings_panel.corpus() == str(SAMPLE_CORPUS_PATH)
    starts = record_starts(monkeypatch)
    for open_dialog in every_dialog(window):
        open_dialog()
    assert len(starts) >= 10
    for start in starts:
        folder = Path(start if Path(start).is_dir() or not start else Path(start).parent)
        assert folder == home, (start, starts)


def test_the_last_folder_is_shared_by_the_dialogs_and_kept(qtbot, make_window, home, monkeypatch):
    texts = home.parent / "texts"
    texts.mkdir()
    corpus = texts / "first.txt"
    corpus.write_text("some text to train on " * 50, encoding="utf-8")
    window = make_window()
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *_a, **_k: ([str(corpus)], ""))
    window.settings_panel.browse()
    assert window.settings_panel.corpus() == str(corpus)
    starts = record_starts(monkeypatch)
    for open_dialog in every_dialog(window)[1:]:
        open_dialog()
    assert starts and all(Path(s if not s or Path(s).is_dir() else Path(s).parent) == texts for s in starts), starts

    # ... and after a restart of the application.
    window.close()
    again = make_window()
    starts.clear()
    again.evaluate_panel.inputs.add_source_dialog()
    assert starts == [str(texts)]


def test_a_remembered_folder_inside_the_application_is_not_used(qtbot, make_window, home):
    window = make_window()
    dialogs: FileDialogs = window.dialogs
    window.qsettings.setValue("paths/last_folder", str(Path(file_dialogs.__file__).parent))
    window.qsettings.setValue("paths/session_folder", str(SAMPLE_CORPUS_PATH.parent))
    assert dialogs.folder("paths/session_folder") == str(home)
    assert dialogs.folder("paths/session_folder", start=str(SAMPLE_CORPUS_PATH)) == str(home)


def _type_in_the_folder_dialog(qtbot, name: str, outcome: list[str]) -> None:
    """Type ``name`` into the next folder dialog and press Enter; a warning box, if one shows,
    is recorded in ``outcome``, closed, and the dialog cancelled."""

    def type_name() -> None:
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, QFileDialog):
            QTimer.singleShot(10, type_name)
            return
        outcome.append(type(dialog).__name__)
        edit = dialog.findChild(QLineEdit, "fileNameEdit")
        edit.setText(name)

        def close_any_warning(waited: int = 0) -> None:
            if not shiboken6.isValid(dialog):  # accepted and gone
                return
            box = QApplication.activeModalWidget()
            if isinstance(box, QMessageBox):
                outcome.append("warning: " + box.text())
                box.reject()
                QTimer.singleShot(0, dialog.reject)
            elif dialog.isVisible() and waited < 10_000:  # no warning yet, the dialog still open: wait
                QTimer.singleShot(20, lambda: close_any_warning(waited + 20))
            elif dialog.isVisible():  # neither accepted nor warned: never leave a test waiting on a dialog
                outcome.append("the dialog stayed open without a warning")
                dialog.reject()

        QTimer.singleShot(20, close_any_warning)
        QTest.keyClick(edit, Qt.Key.Key_Return)

    QTimer.singleShot(0, type_name)


def test_the_export_folder_dialog_creates_a_folder_typed_by_name(qtbot, make_window, make_corpus, tmp_path):
    window = make_window(make_corpus(20_000, seed=2), 300)
    window.start_training()
    qtbot.waitUntil(lambda: window.current.tokenizer is not None, timeout=60_000)
    window.qsettings.setValue("paths/export_folder", str(tmp_path))
    outcome: list[str] = []
    _type_in_the_folder_dialog(qtbot, "new-export", outcome)
    window.export_dialog()
    assert not any(o.startswith("warning") for o in outcome), outcome
    assert (tmp_path / "new-export").is_dir()
    qtbot.waitUntil(lambda: not window.exports.busy, timeout=30_000)
    assert (tmp_path / "new-export" / "merges.txt").is_file()
    assert window.qsettings.value("paths/export_folder") == str(tmp_path / "new-export")


def test_a_folder_that_cannot_be_made_is_said_and_the_dialog_stays(qtbot, tmp_path):
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    outcome: list[str] = []
    _type_in_the_folder_dialog(qtbot, "a-file/sub", outcome)
    assert file_dialogs.ask_folder(None, "Export", str(tmp_path)) == ""
    assert outcome[0] == NewFolderDialog.__name__
    assert len(outcome) == 2 and "Cannot create the folder" in outcome[1] and "a-file" in outcome[1]
    assert not (tmp_path / "a-file").is_dir()
