"""The controllers alone, without a window: training, export, sessions, encoding, closing."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import multiprocessing
from pathlib import Path

import numpy as np
import pytest

import core
from core import TrainOptions
from bpe_studio.app.controllers.closing import CloseGuard
from bpe_studio.app.controllers.current import CurrentController
from bpe_studio.app.controllers.encoding import EncodingController, separator_choices
from bpe_studio.app.controllers.export import NOTHING_TO_EXPORT, ExportController
from bpe_studio.app.controllers.sessions import SessionController
from bpe_studio.app.controllers.training import TrainingController
from bpe_studio.app.models.current_tokenizer import CurrentTokenizer
from bpe_studio.app.models.session import TrainSettings, load_session
from bpe_studio.app.models.run_progress import Stage
from core.encode.tokenizer import Tokenizer

EOT = "<|endoftext|>"


def train_alone(qtbot, corpus: Path, vocab_size: int = 320) -> tuple[TrainingController, list]:
    controller = TrainingController()
    results: list = []
    controller.result.connect(lambda session, prebuilt: results.append((session, prebuilt)))
    with qtbot.waitSignal(controller.stopped, timeout=60_000):
        assert controller.start(TrainSettings(str(corpus), TrainOptions(vocab_size, (EOT,), workers=1)))
    return controller, results


def test_training_runs_and_ends_without_a_window(qtbot, make_corpus):
    corpus = make_corpus(30_000, seed=1)
    controller, results = train_alone(qtbot, corpus)
    assert controller.state.stage is Stage.FINISHED and not controller.running
    [(session, prebuilt)] = results
    vocab, merges = core.train_bpe(corpus, 320, [EOT])
    assert session.merges == merges and not session.partial
    assert prebuilt is not None and prebuilt.merges == merges


def test_ended_comes_with_the_finished_event_before_the_job_stops(qtbot, make_corpus):
    controller = TrainingController()
    seen: list[tuple[str, object, bool]] = []
    controller.ended.connect(lambda stage: seen.append(("ended", stage, controller.running)))
    controller.stopped.connect(lambda cancelled: seen.append(("stopped", cancelled, controller.running)))
    with qtbot.waitSignal(controller.stopped, timeout=60_000):
        controller.start(TrainSettings(str(make_corpus(20_000, seed=2)), TrainOptions(300, (), workers=1)))
    # `ended` once, as soon as the state finished: the job was still winding down then
    assert seen == [("ended", Stage.FINISHED, True), ("stopped", False, False)]


def test_cancel_keeps_a_partial_result_and_an_early_cancel_restores_the_previous(qtbot, make_corpus, slow_merges):
    corpus = make_corpus(1_000_000, seed=3)
    controller, results = train_alone(qtbot, make_corpus(20_000, seed=4, name="small.txt"), 300)
    previous = controller.state.session
    # cancelled mid-merge: a partial result
    controller.job = None
    ended: list[Stage] = []
    controller.ended.connect(ended.append)
    controller.start(TrainSettings(str(corpus), TrainOptions(40_000, (), workers=1)))
    controller.job.events.connect(lambda _b: controller.state.token_ids and controller.cancel())
    qtbot.waitUntil(lambda: not controller.running, timeout=60_000)
    assert ended == [Stage.CANCELLED] and controller.state.session.partial and controller.state.session.merges
    assert results[-1][0] is controller.state.session and results[-1][1] is None
    partial = controller.state.session
    # cancelled before the first merge: the previous result is shown again
    restored: list = []
    controller.restored.connect(restored.append)
    controller.start(TrainSettings(str(corpus), TrainOptions(40_000, (), workers=1)))
    controller.cancel()
    qtbot.waitUntil(lambda: not controller.running, timeout=60_000)
    assert restored == [partial] and controller.state.session is partial
    assert previous is not None


def test_a_failure_ends_the_state_and_says_why(qtbot, tmp_path):
    controller = TrainingController()
    failed: list[str] = []
    controller.failed.connect(failed.append)
    with qtbot.waitSignal(controller.stopped, timeout=30_000):
        controller.start(TrainSettings(str(tmp_path / "missing.txt"), TrainOptions(300)))
    assert controller.state.stage is Stage.FAILED
    assert len(failed) == 1 and "missing.txt" in failed[0]


def test_export_runs_off_the_gui_thread_and_names_what_it_wrote(qtbot, make_corpus, tmp_path, monkeypatch):
    import threading

    from bpe_studio.app.controllers import export as export_module

    controller, results = train_alone(qtbot, make_corpus(20_000, seed=5))
    session = controller.state.session
    current = CurrentTokenizer(results[0][1], "Trained on corpus.txt", session)
    threads: list[str] = []
    real = export_module.write_tokenizer_files

    def spy(folder, current):
        threads.append(threading.current_thread().name)
        return real(folder, current)

    monkeypatch.setattr(export_module, "write_tokenizer_files", spy)
    exports = ExportController()
    with qtbot.waitSignal(exports.finished, timeout=30_000) as blocker:
        assert exports.export(tmp_path / "out", current) is not None
    message, paths = blocker.args
    assert threads and threads[0] != threading.main_thread().name
    assert {p.name for p in paths} >= {"vocab.json", "merges.txt", "tokenizer.json"}
    assert "Trained on corpus.txt" in message and str(tmp_path / "out") in message
    assert Tokenizer.from_files(tmp_path / "out" / "vocab.json", tmp_path / "out" / "merges.txt").merges == session.merges


def test_export_refuses_nothing_and_an_unconfirmed_empty_result(qtbot, tmp_path):
    exports = ExportController()
    with qtbot.waitSignal(exports.failed) as blocker:
        assert exports.export(tmp_path / "out", CurrentTokenizer()) is None
    assert blocker.args == [NOTHING_TO_EXPORT]
    assert not (tmp_path / "out").exists()


def test_export_into_an_unwritable_place_fails_in_one_line(qtbot, make_corpus, tmp_path):
    controller, results = train_alone(qtbot, make_corpus(20_000, seed=6))
    blocker_file = tmp_path / "a_file"
    blocker_file.write_text("x")
    exports = ExportController()
    with qtbot.waitSignal(exports.failed, timeout=30_000) as blocker:
        exports.export(blocker_file / "sub", CurrentTokenizer(results[0][1], "t", controller.state.session))
    assert blocker.args[0].startswith("Export failed: ") and "\n" not in blocker.args[0]


def test_sessions_save_off_thread_and_open_again(qtbot, make_corpus, tmp_path):
    controller, results = train_alone(qtbot, make_corpus(20_000, seed=7))
    session = controller.state.session
    sessions = SessionController()
    with qtbot.waitSignal(sessions.saved, timeout=30_000) as blocker:
        sessions.save(tmp_path / "run.bpesession", CurrentTokenizer(None, "Trained on corpus.txt", session))
    message, path = blocker.args
    assert path == tmp_path / "run.bpesession" and "Trained on corpus.txt" in message
    opened = sessions.open(path)
    assert opened is not None and opened.merges == session.merges == load_session(path).merges
    # an opened tokenizer has no session; a broken file is one line
    with qtbot.waitSignal(sessions.failed) as blocker:
        assert sessions.save(tmp_path / "x.bpesession", CurrentTokenizer(object(), "gpt2", None)) is None
    assert "opened from files" in blocker.args[0]
    (tmp_path / "bad.bpesession").write_text("{not json", encoding="utf-8")
    with qtbot.waitSignal(sessions.failed) as blocker:
        assert sessions.open(tmp_path / "bad.bpesession") is None
    assert "bad.bpesession" in blocker.args[0]


def test_encoding_alone_writes_the_ids_and_cancel_writes_nothing(qtbot, make_corpus, tmp_path, slow_merges):
    corpus = make_corpus(20_000, seed=8)
    vocab, merges = core.train_bpe(corpus, 300, [EOT])
    tokenizer = Tokenizer(vocab, merges, [EOT])
    current = CurrentTokenizer(tokenizer, "small", None)
    encoding = EncodingController(workers=1)
    with qtbot.waitSignal(encoding.finished, timeout=60_000) as blocker:
        assert encoding.start(corpus, tmp_path / "ids.npy", current, doc_separator=None) is not None
    qtbot.waitUntil(lambda: not encoding.running, timeout=30_000)
    assert "small" in blocker.args[0]
    assert np.load(tmp_path / "ids.npy").tolist() == tokenizer.encode(corpus.read_text(encoding="utf-8"))

    big = make_corpus(3_000_000, seed=9, name="big.txt")
    stopped: list[bool] = []
    encoding.stopped.connect(stopped.append)
    job = encoding.start(big, tmp_path / "big.npy", current)
    qtbot.waitSignal(job.progress, timeout=30_000).wait()
    assert encoding.cancel()
    qtbot.waitUntil(lambda: bool(stopped), timeout=30_000)
    assert stopped == [True] and not (tmp_path / "big.npy").exists()
    assert multiprocessing.active_children() == []


def test_separator_choices_are_the_clis(qtbot):
    with_eot = Tokenizer({i: bytes([i]) for i in range(256)} | {256: EOT.encode(), 257: b"<pad>"}, [], [EOT, "<pad>"])
    assert [value for _label, value in separator_choices(with_eot)] == [True, "<pad>", None]
    plain = Tokenizer({i: bytes([i]) for i in range(256)}, [], [])
    assert [value for _label, value in separator_choices(plain)] == [True]


def test_current_follows_the_last_result_or_the_opened_tokenizer(qtbot, make_corpus):
    controller, results = train_alone(qtbot, make_corpus(20_000, seed=10))
    current = CurrentController()
    with qtbot.waitSignal(current.ready, timeout=30_000):
        current.publish(controller.state.session, results[0][1])
    assert current.current.tokenizer is results[0][1] and current.current.title.startswith("Trained on corpus.txt")
    opened = Tokenizer({i: bytes([i]) for i in range(256)}, [], [])
    current.show_opened(opened, "bytes")
    assert current.current == CurrentTokenizer(opened, "bytes", None)
    assert current.tokenizer is results[0][1]  # still the latest trained one


def test_close_guard_cancels_and_says_idle_when_nothing_runs(qtbot):
    running = {"a": True}
    cancelled: list[str] = []
    guard = CloseGuard([("the work", lambda: running["a"], lambda: cancelled.append("a"))])
    assert guard.request() == "the work" and cancelled == ["a"] and guard.waiting
    with qtbot.waitSignal(guard.idle, timeout=2_000):
        running["a"] = False
    assert CloseGuard([("x", lambda: False, lambda: None)]).request() == ""


@pytest.mark.parametrize("area", ["train", "explore", "compare", "encode", "evaluate"])
def test_panels_do_not_import_each_other(area):
    import ast

    folder = Path(__file__).resolve().parents[3] / "bpe_studio" / "app" / area
    others = {"train", "explore", "compare", "encode", "evaluate"} - {area}
    for module in folder.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bpe_studio.app."):
                assert node.module.split(".")[2] not in others, f"{module.name} imports {node.module}"


def test_controllers_hold_no_widgets():
    import ast

    folder = Path(__file__).resolve().parents[3] / "bpe_studio" / "app" / "controllers"
    for module in folder.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert node.module not in ("PySide6.QtWidgets", "PySide6.QtGui"), f"{module.name} imports {node.module}"
                assert not node.module.startswith(("bpe_studio.app.widgets", "bpe_studio.app.train",
                                                   "bpe_studio.app.explore", "bpe_studio.app.evaluate")), module.name
