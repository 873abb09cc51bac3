"""The window's end of a run, quitting, the Help menu and its file dialogs (issue 24, points 8 and 11)."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from importlib.metadata import version
from pathlib import Path

from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication, QFileDialog, QToolButton

from bpe_studio.app.help_menu import app_version, shortcut_rows
from bpe_studio.app.models.run_progress import Stage

EOT = "<|endoftext|>"


def test_when_a_run_finishes_everything_says_so_at_once(qtbot, make_window, make_corpus):
    window = make_window(make_corpus(200_000, seed=1), 3_000)
    seen: dict[str, object] = {}

    def look(stage: Stage) -> None:  # runs right after the window's own handler, before any timer
        seen.update(
            stage=stage,
            job_still_running=window.training.running,
            header=window.progress_panel.stage_label.text(),
            status=window.statusBar().currentMessage(),
            button=window.settings_panel.train_button.text(),
            pairs=0 if window.charts.pair_curve.getData()[0] is None else len(window.charts.pair_curve.getData()[0]),
            summary=dict(window.summary_panel.rows()).get("Result:"),
            rows=window.merges_table.merges_model.rowCount(),
        )

    window.training.ended.connect(look)
    window.start_training()
    assert window.settings_panel.train_button.text() == "Cancel"
    qtbot.waitUntil(lambda: bool(seen), timeout=60_000)
    merges = len(window.state.token_ids)
    assert seen["stage"] is Stage.FINISHED and seen["job_still_running"]  # before the job's thread ended
    assert seen["header"] == "Finished" and str(seen["status"]).startswith(f"Finished — {merges:,} merges")
    assert seen["button"] == "Train" and seen["summary"] == "complete" and seen["rows"] == merges
    assert seen["pairs"] > 0  # the pair-count chart is drawn at once, not 1-3 s later
    qtbot.waitUntil(lambda: not window.is_training(), timeout=30_000)
    assert window.statusBar().currentMessage().startswith("Finished")


def test_train_pressed_while_the_last_job_winds_down_starts_when_it_has(qtbot, make_window, make_corpus):
    window = make_window(make_corpus(50_000, seed=2), 600)
    ends: list[tuple[Stage, bool]] = []

    def press_train_once(stage: Stage) -> None:
        ends.append((stage, window.training.running))
        if len(ends) == 1:
            window.start_training()  # the first job is still winding down

    window.training.ended.connect(press_train_once)
    window.start_training()
    qtbot.waitUntil(lambda: len(ends) == 2, timeout=60_000)  # the second run ended too
    assert ends[0] == (Stage.FINISHED, True) and ends[1][0] is Stage.FINISHED
    qtbot.waitUntil(lambda: not window.is_training(), timeout=30_000)
    assert window.settings_panel.train_button.text() == "Train"


def test_quitting_during_training_asks_first(qtbot, make_window, make_corpus, answer_message_box, slow_merges):
    window = make_window(make_corpus(1_000_000, seed=3), 40_000)
    window.ask_before_quitting = True
    window.start_training()
    qtbot.waitUntil(lambda: window.state.stage.running and window.is_training(), timeout=10_000)
    answer_message_box("No")
    assert not window.close()
    assert window.isVisible() and window.is_training() and not window.closing
    answer_message_box("Yes")
    window.close()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=30_000)
    assert not window.is_training()


def test_quitting_when_idle_does_not_ask(qtbot, make_window):
    window = make_window()
    QTimer.singleShot(2_000, lambda: QApplication.activeModalWidget() and QApplication.activeModalWidget().reject())
    assert window.close()
    assert not window.isVisible()


def test_the_help_menu_has_about_docs_and_the_shortcuts(qtbot, make_window, message_box_text):
    window = make_window()
    help_menu = window.menuBar().actions()[-1]
    assert help_menu.text() == "&Help"
    assert [a.text() for a in help_menu.menu().actions()] == ["&About BPE Studio", "&Documentation",
                                                              "&Keyboard shortcuts"]
    assert app_version() == version("bpe-studio")
    assert app_version() in message_box_text(window.help_actions["about"])
    shortcuts = message_box_text(window.help_actions["shortcuts"])
    rows = dict(shortcut_rows(window))
    assert rows["Train"] == "Ctrl+Return or Ctrl+Enter" and rows["Cancel"] == "Esc" and rows["Quit"] == "Ctrl+Q"
    for name, keys in rows.items():
        assert name in shortcuts and keys in shortcuts


def test_the_export_dialog_creates_a_folder_and_starts_there_next_time(qtbot, make_window, make_corpus, tmp_path,
                                                                        settings_file):
    window = make_window(make_corpus(30_000, seed=4), 400)
    window.start_training()
    qtbot.waitUntil(lambda: window.current.tokenizer is not None, timeout=60_000)
    window.qsettings.setValue("paths/export_folder", str(tmp_path))
    made: list[Path] = []

    def new_folder_then_accept() -> None:
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, QFileDialog):
            QTimer.singleShot(10, new_folder_then_accept)
            return
        assert dialog.directory().absolutePath() == str(tmp_path)  # the last export folder
        button = dialog.findChild(QToolButton, "newFolderButton")
        assert button is not None and button.isVisible() and button.isEnabled()
        button.click()  # "Create New Folder"
        created = [p for p in tmp_path.iterdir() if p.is_dir()]
        assert len(created) == 1
        made.append(created[0])
        dialog.selectFile(str(created[0]))
        dialog.accept()

    QTimer.singleShot(0, new_folder_then_accept)
    window.export_dialog()
    assert made
    qtbot.waitUntil(lambda: not window.exports.busy, timeout=30_000)
    assert (made[0] / "merges.txt").is_file()
    # remembered, across runs of the application
    window.qsettings.sync()
    assert QSettings(str(settings_file), QSettings.Format.IniFormat).value("paths/export_folder") == str(made[0])


def test_file_dialogs_start_in_the_last_folder_used(qtbot, make_window, tmp_path, monkeypatch):
    window = make_window()
    folder = tmp_path / "sessions"
    folder.mkdir()
    starts: list[str] = []

    def get_open(_parent, _title, start, _filter):
        starts.append(start)
        return str(folder / "missing.bpesession"), ""

    monkeypatch.setattr(QFileDialog, "getOpenFileName", get_open)
    window.open_session_dialog()  # fails (no such file) but the folder was chosen
    window.open_session_dialog()
    assert starts[1] == str(folder)
    # a dialog of another kind starts in the last folder used for anything
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda _p, _t, start, _f: (starts.append(start), ([], ""))[1])
    window.open_counts_dialog()
    assert starts[2] == str(folder)


def test_continue_choose_takes_a_folder_as_init_does(qtbot, make_window, make_corpus, tmp_path, monkeypatch):
    import core
    from core.formats import save_tokenizer

    vocab, merges = core.train_bpe(make_corpus(20_000, seed=5, name="first.txt"), 400, [EOT])
    save_tokenizer(tmp_path / "base", vocab, merges, [EOT], "gpt2")
    window = make_window()
    options = window.settings_panel.trainer_options
    menu = options.initial_button.menu()
    assert [a.text() for a in menu.actions()] == ["A tokenizer folder…", "A tokenizer file…"]
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *_a, **_k: str(tmp_path / "base"))
    with qtbot.waitSignal(options.initialRead, timeout=30_000) as read:
        menu.actions()[0].trigger()
    assert options.initial() == str(tmp_path / "base") and read.args[0].merges == len(merges)


def test_closing_while_an_export_is_written_waits_for_it(qtbot, make_window, make_corpus, tmp_path, monkeypatch):
    import time

    from bpe_studio.app.controllers import export as export_module
    from core.encode.tokenizer import Tokenizer

    window = make_window(make_corpus(30_000, seed=6), 400)
    window.start_training()
    qtbot.waitUntil(lambda: window.current.tokenizer is not None, timeout=60_000)
    real = export_module.write_tokenizer_files

    def slow(folder, current):
        time.sleep(0.5)  # in the export's thread: the window stays responsive meanwhile
        return real(folder, current)

    monkeypatch.setattr(export_module, "write_tokenizer_files", slow)
    assert window.export_to(tmp_path / "out") is not None
    assert "Exporting" in window.statusBar().currentMessage()
    assert not window.close()  # not yet: the export is let finish (its writer is atomic)
    assert window.closing and window.isVisible()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=30_000)
    tokenizer = Tokenizer.from_files(tmp_path / "out" / "vocab.json", tmp_path / "out" / "merges.txt")
    assert tokenizer.merges == window.state.session.merges
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        ["vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json", "tokenizer.tiktoken"])


def test_open_tokenizer_starts_in_the_folder_used_last(qtbot, make_window, tmp_path, monkeypatch):
    window = make_window()
    folder = tmp_path / "tokenizers"
    folder.mkdir()
    starts: list[str] = []

    def get_open(_parent, _title, start, _filter):
        starts.append(start)
        return (str(folder / "vocab.json"), "") if len(starts) == 1 else ("", "")

    monkeypatch.setattr(QFileDialog, "getOpenFileName", get_open)
    window.open_tokenizer_action.trigger()  # fails to open (no such file): the folder is remembered anyway
    window.open_tokenizer_action.trigger()
    assert starts[1] == str(folder)
