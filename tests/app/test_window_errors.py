"""Every mistake is shown in the window in words (never a traceback), and the window stays usable."""

from __future__ import annotations

import os
import signal

import pytest

from bpe_studio.app.models.run_progress import Stage


def train_and_wait(qtbot, window) -> None:
    window.start_training()
    qtbot.waitUntil(lambda: not window.is_training(), timeout=60_000)


def banner_error(window) -> str:
    assert window.banner.kind() == "error"
    text = window.banner.text()
    assert text and "Traceback" not in text
    return text


@pytest.mark.parametrize(
    "make_input, expected",
    [
        (lambda tmp: tmp / "missing.txt", "missing.txt"),
        (lambda tmp: tmp, "holds no files"),  # an empty folder (a folder is a corpus of its files)
        (lambda tmp: (tmp / "blob.bin").write_bytes(b"\x00\x01\x02\x00" * 4096) and tmp / "blob.bin", "binary"),
        (lambda tmp: (tmp / "empty.txt").write_bytes(b"") == 0 and tmp / "empty.txt", "empty"),
    ],
    ids=["missing", "directory", "binary", "empty"],
)
def test_bad_corpus_is_reported_and_the_window_stays_usable(qtbot, make_window, make_corpus, tmp_path, make_input, expected):
    window = make_window(make_input(tmp_path), 300)
    train_and_wait(qtbot, window)
    assert expected in banner_error(window).lower()
    assert window.state.stage is Stage.FAILED
    assert window.settings_panel.train_button.text() == "Train"
    # Still usable: a good corpus trains.
    window.settings_panel.set_corpus(str(make_corpus(20_000)))
    train_and_wait(qtbot, window)
    assert window.banner.text() == ""
    assert window.state.stage is Stage.FINISHED


def test_vocabulary_too_small_is_reported(qtbot, make_window, make_corpus):
    window = make_window(make_corpus(10_000), 257)
    window.settings_panel.specials_edit.setPlainText("<|endoftext|>\n<|pad|>")
    assert "too small" in window.settings_panel.merges_hint.text()
    train_and_wait(qtbot, window)
    message = banner_error(window)
    assert "too small" in message and "258" in message


def test_bad_regex_is_flagged_as_you_type_and_refused(qtbot, make_window, make_corpus):
    window = make_window(make_corpus(10_000), 300)
    panel = window.settings_panel
    panel.pattern_combo.setCurrentIndex(panel.pattern_combo.findData("custom"))
    assert not panel.regex_edit.isHidden()
    panel.regex_edit.setText(r"\p{L}+|(")
    assert panel.regex_status.property("invalid") is True
    assert "invalid" in panel.regex_status.text()
    window.start_training()
    assert not window.is_training()
    assert "invalid pre-tokenization pattern" in banner_error(window)
    panel.regex_edit.setText(r"\p{L}+|\p{N}+|\s+|[^\s\p{L}\p{N}]+")
    assert panel.regex_status.property("invalid") is False
    assert panel.regex_status.text().startswith("✓")
    train_and_wait(qtbot, window)
    assert window.state.stage is Stage.FINISHED
    assert window.state.session.settings.pattern == r"\p{L}+|\p{N}+|\s+|[^\s\p{L}\p{N}]+"


def test_no_corpus_and_duplicate_special_tokens_are_refused(qtbot, make_window, make_corpus):
    window = make_window(make_corpus(10_000), 300)
    window.settings_panel.set_corpus("")
    window.start_training()
    assert "Choose a corpus" in banner_error(window)
    window.settings_panel.set_corpus(str(make_corpus(10_000)))
    window.settings_panel.specials_edit.setPlainText("<|a|>\n<|a|>")
    window.start_training()
    assert "given twice" in banner_error(window)
    assert not window.is_training()


def test_a_crashed_training_process_is_reported(qtbot, make_window, make_corpus):
    window = make_window(make_corpus(3_000_000, seed=5), 20_000)
    window.start_training()
    qtbot.waitUntil(lambda: window.training.job.process_pid is not None and window.state.bytes_total > 0, timeout=30_000)
    os.kill(window.training.job.process_pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: not window.is_training(), timeout=30_000)
    message = banner_error(window)
    assert "stopped unexpectedly" in message and "killed by SIGKILL" in message
    assert window.state.stage is Stage.FAILED
