"""File › Encode a corpus to .npy…: the window encodes a text file with its tokenizer into a
``.npy`` of ids in the background (spawned workers), shows progress, can be cancelled, and
reports the result or the error in its banner."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QKeySequence  # noqa: E402

import core  # noqa: E402
from bpe_studio.app.encode.encode_dialog import EncodeDialog  # noqa: E402
from core.formats import save_tokenizer  # noqa: E402
from core.progress import format_bytes  # noqa: E402
from core.encode.tokenizer import Tokenizer  # noqa: E402

EOT = "<|endoftext|>"


@pytest.fixture
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory, make_corpus) -> Path:
    """A small tokenizer (trained by the core on a generated corpus), saved as files outside
    ``tmp_path`` (whose contents the tests check)."""
    train = make_corpus(40_000, seed=21, name="train.txt")
    vocab, merges = core.train_bpe(train, 500, [EOT], workers=1)
    train.unlink()
    folder = tmp_path_factory.mktemp("tokenizer")
    save_tokenizer(folder, vocab, merges, [EOT], "gpt2")
    return folder


def window_with_tokenizer(qtbot, make_window, tokenizer_dir: Path):
    window = make_window()
    assert not window.encode_action.isEnabled()
    with qtbot.waitSignal(window.explore_panel.vocab_ready, timeout=10_000):
        assert window.explore_panel.open_tokenizer(tokenizer_dir)
    assert window.encode_action.isEnabled()
    return window


def leftovers(folder: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


def test_encoding_writes_the_ids_of_the_whole_text(qtbot, make_window, make_corpus, tokenizer_dir, tmp_path):
    window = window_with_tokenizer(qtbot, make_window, tokenizer_dir)
    corpus = make_corpus(300_000, seed=5)  # several scripts, <|endoftext|> between documents
    text = corpus.read_text(encoding="utf-8") + " naïve Ünïcode ✓ 漢字 🙂" + EOT
    corpus.write_text(text, encoding="utf-8")
    out = tmp_path / "ids.npy"
    progress: list[object] = []
    job = window.encode_corpus_to(corpus, out)
    assert job is not None and window.is_encoding()
    assert window.encode_strip.isVisible() and not window.encode_action.isEnabled()
    job.progress.connect(progress.append)
    with qtbot.waitSignal(job.stopped, timeout=30_000) as stopped:
        pass
    assert stopped.args == [False]
    reference = Tokenizer.from_files(tokenizer_dir / "vocab.json", tokenizer_dir / "merges.txt", [EOT])
    # the file is one document, followed by <|endoftext|> as bpe-studio encode writes it
    expected = reference.encode(text) + reference.encode(EOT)
    ids = np.load(out)
    assert ids.dtype == np.uint16 and ids.tolist() == expected
    assert window.banner.kind() == "info"
    size = format_bytes(len(text.encode("utf-8")))
    assert window.banner.text().startswith(f"Encoded {size} into {len(expected):,} tokens (uint16, ")
    assert window.banner.text().endswith(f": {out} — tokenizer “{window.current.title}”")
    assert not window.encode_strip.isVisible() and window.encode_action.isEnabled()
    assert progress and progress[-1].done == progress[-1].total  # the last figures are shown
    assert leftovers(tmp_path, {"corpus.txt", "ids.npy", "settings.ini"}) == []


@pytest.mark.parametrize("how", ["button", "esc"])
def test_cancel_leaves_no_file_and_no_process(qtbot, make_window, make_corpus, tokenizer_dir, tmp_path, how, monkeypatch):
    # The Python paths (~5 MB/s): the native encoder can finish 5 MB between the first
    # progress event and the cancel, and there would be nothing left to cancel.
    monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
    window = window_with_tokenizer(qtbot, make_window, tokenizer_dir)
    corpus = make_corpus(5_000_000, seed=6, name="big.txt")
    job = window.encode_corpus_to(corpus, tmp_path / "ids.npy")
    assert job is not None
    qtbot.waitSignal(job.progress, timeout=10_000).wait()  # the workers are starting or running
    with qtbot.waitSignal(job.stopped, timeout=30_000) as stopped:
        if how == "button":
            qtbot.mouseClick(window.encode_strip.cancel_button, Qt.MouseButton.LeftButton)
        else:  # Esc stops the encoding when no training runs
            assert QKeySequence("Esc") in window.cancel_action.shortcuts()
            window.cancel_action.trigger()
    assert stopped.args == [True]
    assert leftovers(tmp_path, {"big.txt", "settings.ini"}) == []
    assert multiprocessing.active_children() == []
    assert "cancelled" in window.banner.text()
    assert window.encode_action.isEnabled() and not window.encode_strip.isVisible()


def test_closing_the_window_stops_the_encoding(qtbot, make_window, make_corpus, tokenizer_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1")  # slow enough to be running at the close
    window = window_with_tokenizer(qtbot, make_window, tokenizer_dir)
    corpus = make_corpus(3_000_000, seed=7, name="big.txt")
    job = window.encode_corpus_to(corpus, tmp_path / "ids.npy")
    assert job is not None
    qtbot.waitSignal(job.progress, timeout=10_000).wait()
    window.close()  # stops the encoding first, then closes (the window stays responsive meanwhile)
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=30_000)
    assert not job.running
    assert multiprocessing.active_children() == []
    assert leftovers(tmp_path, {"big.txt", "settings.ini"}) == []


def test_a_missing_corpus_is_reported_in_the_banner(qtbot, make_window, tokenizer_dir, tmp_path):
    window = window_with_tokenizer(qtbot, make_window, tokenizer_dir)
    job = window.encode_corpus_to(tmp_path / "missing.txt", tmp_path / "ids.npy")
    assert job is not None
    with qtbot.waitSignal(job.stopped, timeout=10_000):
        pass
    assert window.banner.kind() == "error"
    text = window.banner.text()
    assert "missing.txt" in text and "not found" in text and "\n" not in text and "Traceback" not in text
    assert not (tmp_path / "ids.npy").exists()
    assert window.encode_action.isEnabled()
    # Writing the ids over the corpus itself is refused before any work.
    corpus = tmp_path / "corpus.npy"
    corpus.write_text("some text", encoding="utf-8")
    assert window.encode_corpus_to(corpus, corpus) is None
    assert "the corpus itself" in window.banner.text() and window.banner.kind() == "error"
    assert corpus.read_text(encoding="utf-8") == "some text"
    # After a failure the next encoding runs normally.
    job = window.encode_corpus_to(corpus, tmp_path / "ids.npy")
    assert job is not None
    finished: list[object] = []
    job.finished.connect(finished.append)
    with qtbot.waitSignal(job.stopped, timeout=10_000):
        pass
    assert finished[0].tokens == len(np.load(tmp_path / "ids.npy")) > 0
    assert window.banner.kind() == "info"


def test_the_action_waits_for_a_tokenizer_and_uses_the_dialogs(qtbot, make_window, make_corpus, tmp_path, monkeypatch):
    corpus = make_corpus(30_000, seed=8)
    window = make_window(corpus, 400)
    assert not window.encode_action.isEnabled()
    assert window.encode_action.shortcut().toString() == "Ctrl+Shift+E"
    assert window.encode_action in window.menuBar().actions()[0].menu().actions()
    window.encode_action.trigger()  # disabled: nothing happens
    assert window.encoding.job is None
    assert window.encode_corpus_to(corpus, tmp_path / "ids.npy") is None
    assert "train a tokenizer" in window.banner.text()

    window.settings_panel.workers_spin.setValue(1)
    window.start_training()
    qtbot.waitUntil(lambda: window.encode_action.isEnabled(), timeout=60_000)
    seen: dict[str, object] = {}

    def fill_in(dialog: EncodeDialog) -> int:
        seen.update(corpus=dialog.corpus(), out=dialog.out_edit.text(), separator=dialog.doc_separator())
        dialog.out_edit.setText(str(tmp_path / "chosen"))  # no suffix: .npy is added
        return 1

    monkeypatch.setattr(EncodeDialog, "exec", fill_in)
    window.encode_action.trigger()
    # the training corpus, a .npy beside it, and bpe-studio encode's default separator
    assert seen == {"corpus": str(corpus), "out": str(tmp_path / "corpus.npy"), "separator": True}
    assert window.encoding.job is not None
    with qtbot.waitSignal(window.encoding.job.stopped, timeout=30_000):
        pass
    expected = window.tokenizer.encode(corpus.read_text(encoding="utf-8"))
    assert np.load(tmp_path / "chosen.npy").tolist() == expected
    assert window.qsettings.value("paths/encode_folder") == str(tmp_path)


def test_an_unexpected_error_in_the_encoder_is_reported_and_the_strip_hides(
    qtbot, make_window, make_corpus, tokenizer_dir, tmp_path, monkeypatch, caplog
):
    # A bug in the core (here a KeyError after the first progress event) must not make the
    # strip vanish in silence: the banner says encoding failed, the details go to the log.
    from core.encode import corpus as encode_corpus

    def broken_encoder(corpus, tokenizer, out, **_kwargs):
        yield encode_corpus.EncodeProgress(0, Path(corpus).stat().st_size, 0)
        raise KeyError("no such piece")

    monkeypatch.setattr(encode_corpus, "encode_corpus_events", broken_encoder)
    window = window_with_tokenizer(qtbot, make_window, tokenizer_dir)
    # no separator: a single text file then goes the broken encoder's way
    job = window.encode_corpus_to(make_corpus(20_000, seed=9), tmp_path / "ids.npy", doc_separator=None)
    assert job is not None and window.encode_strip.isVisible()
    with qtbot.waitSignal(job.stopped, timeout=10_000) as stopped:
        pass
    assert stopped.args == [False]
    assert window.banner.kind() == "error"
    assert window.banner.text() == "Encoding failed unexpectedly (KeyError: 'no such piece')"
    assert not window.encode_strip.isVisible()
    assert window.encode_action.isEnabled() and not window.is_encoding()
    assert not (tmp_path / "ids.npy").exists()
    assert any(r.exc_info and isinstance(r.exc_info[1], KeyError) for r in caplog.records)



def test_export_save_and_encode_follow_one_named_tokenizer(qtbot, make_window, make_corpus, tokenizer_dir, tmp_path, export_and_wait):
    """Train, then open another tokenizer in Explore: Export, Save session and Encode all act on
    the one opened last, and each names it (menus, dialog, strip, result)."""
    window = make_window(make_corpus(20_000, seed=3), 300)
    with qtbot.waitSignal(window.explore_panel.vocab_ready, timeout=60_000):
        window.start_training()
    trained = window.current
    assert trained.title.startswith("Trained on corpus.txt") and trained.session is not None
    assert trained.title in window.export_action.text() and trained.title in window.encode_action.text()
    assert window.explore_panel.title == trained.title

    with qtbot.waitSignal(window.explore_panel.vocab_ready, timeout=10_000):
        assert window.explore_panel.open_tokenizer(tokenizer_dir)
    opened = window.current
    opened_tokenizer = window.explore_panel.tokenizer
    assert opened.tokenizer is opened_tokenizer and opened.session is None
    for action in (window.export_action, window.encode_action):
        assert opened.title in action.text() and trained.title not in action.text()

    # Export writes the opened tokenizer, and says which.
    paths = export_and_wait(window, tmp_path / "export")
    assert paths and opened.title in window.banner.text()
    exported = Tokenizer.from_files(tmp_path / "export" / "vocab.json", tmp_path / "export" / "merges.txt")
    assert exported.merges == opened_tokenizer.merges and len(exported.merges) != len(trained.session.merges)
    # Save session explains that an opened tokenizer has no training result to save.
    assert window.save_session_to(tmp_path / "s.bpesession") is None
    assert window.banner.kind() == "error" and opened.title in window.banner.text()
    assert not (tmp_path / "s.bpesession").exists()
    # Encode: the strip and the result name it.
    corpus = make_corpus(5_000, seed=4, name="enc.txt")
    job = window.encode_corpus_to(corpus, tmp_path / "ids.npy")
    assert opened.title in window.encode_strip.title_label.full_text()
    with qtbot.waitSignal(job.stopped, timeout=30_000):
        pass
    assert opened.title in window.banner.text()
    assert np.load(tmp_path / "ids.npy").tolist() == opened_tokenizer.encode(corpus.read_text(encoding="utf-8") + EOT)


@pytest.mark.parametrize("kind", ["jsonl", "txt"])
@pytest.mark.parametrize("separator, flags", [(True, []), (None, ["--no-doc-separator"]), (EOT, ["--doc-separator", EOT])])
def test_the_window_and_bpe_studio_encode_write_the_same_bytes(qtbot, make_window, make_corpus, tokenizer_dir, tmp_path,
                                                               kind, separator, flags):
    import json

    from bpe_studio.cli import main

    text = make_corpus(60_000, seed=31, name="source.txt").read_text(encoding="utf-8")
    documents = [d for d in text.split(EOT) if d]
    assert len(documents) > 10  # a multi-document corpus either way
    corpus = tmp_path / f"corpus.{kind}"
    if kind == "jsonl":
        corpus.write_text("".join(json.dumps({"text": d}) + "\n" for d in documents), encoding="utf-8")
    else:
        corpus.write_text(text, encoding="utf-8")  # documents separated by <|endoftext|> in the text
    cli_out, window_out = tmp_path / "cli.npy", tmp_path / "window.npy"
    assert main(["encode", str(corpus), "--tokenizer", str(tokenizer_dir), "--out", str(cli_out), "--workers", "1",
                 *flags]) == 0
    window = window_with_tokenizer(qtbot, make_window, tokenizer_dir)
    job = window.encode_corpus_to(corpus, window_out, doc_separator=separator)
    assert job is not None
    with qtbot.waitSignal(job.stopped, timeout=60_000) as stopped:
        pass
    assert stopped.args == [False]
    assert window_out.read_bytes() == cli_out.read_bytes()
    ids = np.load(window_out).tolist()
    ends_with_eot = ids[-1] == 256  # <|endoftext|>'s id in this tokenizer
    assert ends_with_eot == (separator is not None)


def test_the_encode_dialog_offers_the_clis_separators(qtbot, make_window, tokenizer_dir, make_corpus, monkeypatch):
    window = window_with_tokenizer(qtbot, make_window, tokenizer_dir)
    corpus = make_corpus(5_000, seed=3, name="enc.txt")
    chosen: list[object] = []

    def choose_none(dialog: EncodeDialog) -> int:
        combo = dialog.separator_combo
        chosen.extend(combo.itemData(i) for i in range(combo.count()))
        dialog.corpus_edit.setText(str(corpus))
        dialog.out_edit.setText(str(corpus.with_suffix(".npy")))
        combo.setCurrentIndex(combo.findData(None))
        return 1

    monkeypatch.setattr(EncodeDialog, "exec", choose_none)
    window.encode_action.trigger()
    assert chosen == [True, None]  # <|endoftext|> (the default), or none
    with qtbot.waitSignal(window.encoding.job.stopped, timeout=30_000):
        pass
    ids = np.load(corpus.with_suffix(".npy")).tolist()
    assert ids == window.current.tokenizer.encode(corpus.read_text(encoding="utf-8"))  # no separator written
