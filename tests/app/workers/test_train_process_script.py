"""The window trains from a user's script that has no ``if __name__ == "__main__":`` guard,
and tells the user when the training process is silent or never starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from core import TrainOptions
from bpe_studio.app.models.session import TrainSettings
from bpe_studio.app.models.run_progress import SILENCE_SECONDS
from bpe_studio.app.models.training_state import TrainingState
from bpe_studio.app.train.progress_panel import ProgressPanel

SCRIPT = textwrap.dedent(
    """
    # A user's script: no `if __name__ == "__main__":` guard, as in a notebook or a quick test.
    import sys
    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication
    from bpe_studio import MainWindow

    print("script ran", flush=True)
    app = QApplication.instance() or QApplication([])
    window = MainWindow(corpus=sys.argv[1], vocab_size=300,
                        settings=QSettings(sys.argv[2], QSettings.Format.IniFormat))
    window.show()
    window.start_training()

    def check():
        if not window.is_training():
            print("stage", window.state.stage.name, window.banner.text(), flush=True)
            window.close()
            app.quit()

    timer = QTimer()
    timer.timeout.connect(check)
    timer.start(100)
    app.exec()
    """
)


def test_a_script_without_main_guard_trains_and_runs_once(tmp_path, make_corpus):
    script = tmp_path / "user_script.py"
    script.write_text(SCRIPT, encoding="utf-8")
    corpus = make_corpus(20_000)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    proc = subprocess.Popen(
        [sys.executable, str(script), str(corpus), str(tmp_path / "settings.ini")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the script and whatever it spawned
        out, err = proc.communicate()
        raise AssertionError(f"the script hung; stdout: {out!r}, stderr: {err[-2000:]!r}") from None
    assert proc.returncode == 0, err
    # The script ran once (the training process did not re-run it) and training finished.
    assert out.count("script ran") == 1, out
    assert "stage FINISHED" in out, (out, err)


def test_a_silent_training_process_is_reported(qtbot, tmp_path):
    state = TrainingState()
    panel = ProgressPanel(state)
    qtbot.addWidget(panel)
    start = time.monotonic() - SILENCE_SECONDS - 5
    state.start(TrainSettings(str(tmp_path / "c.txt"), TrainOptions(300)), now=start)
    panel.refresh()
    assert "has not started" in panel.detail_label.text()
    assert "has not started" in panel.status_text()
    # Once it started and spoke, it is fine; silent again for long, it is reported again.
    from bpe_studio.app.models.training_state import TrainerStarted

    state.apply([TrainerStarted()])
    panel.refresh()
    assert panel.detail_label.text() == "opening the corpus…"
    state.apply([], now=time.monotonic() - SILENCE_SECONDS - 1)
    panel.refresh()
    assert "no word from the training process" in panel.detail_label.text()
