"""The corpus options in the Train tab: several files, folders, the field chooser, cap and sample.

Real widgets, offscreen: the field chooser lists the string fields of a JSONL file's first
records; the settings carry the field, the cap and the sample to the trainer; training a
folder of JSONL shards in the window gives exactly `core.train_bpe`'s merges and the
summary shows the documents and bytes read; dropping several files makes one corpus.
"""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent

import core
from bpe_studio.app.models.run_progress import Stage
from bpe_studio.app.train.corpus_picker import describe

EOT = "<|endoftext|>"


def _write_jsonl(path: Path, n: int, offset: int = 0) -> None:
    path.write_text("".join(json.dumps({"id": i, "title": f"t{i}", "body": f"doc {i + offset}: lo mi ne ru " * (i % 5 + 1)})
                            + "\n" for i in range(n)))


def _wait(qtbot, window) -> None:
    qtbot.waitUntil(lambda: not window.is_training(), timeout=60_000)


def test_field_chooser_lists_the_string_fields(qtbot, make_window, tmp_path: Path) -> None:
    _write_jsonl(tmp_path / "a.jsonl", 30)
    window = make_window()
    panel = window.settings_panel
    options = panel.corpus_options
    panel.set_corpus(str(tmp_path / "c.txt"))
    assert options.field_combo.isHidden()
    panel.set_corpus(str(tmp_path / "a.jsonl"))
    assert not options.field_combo.isHidden()
    fields = [options.field_combo.itemText(i) for i in range(options.field_combo.count())]
    assert fields == ["title", "body"]  # "id" holds numbers
    options.field_combo.setCurrentText("body")
    options.max_mb_spin.setValue(5)
    options.sample_spin.setValue(25.0)
    settings = panel.settings()
    assert (settings.field, settings.max_bytes, settings.sample) == ("body", 5_000_000, 0.25)
    panel.set_corpus(str(tmp_path))  # a folder holding the JSONL file
    assert not options.field_combo.isHidden()
    assert panel.corpus_info.text().endswith("B")


def test_training_a_folder_of_shards_in_the_window(qtbot, make_window, tmp_path: Path) -> None:
    shards = tmp_path / "shards"
    (shards / "more").mkdir(parents=True)
    _write_jsonl(shards / "a.jsonl", 200)
    _write_jsonl(shards / "more" / "b.jsonl", 300, offset=200)
    window = make_window(shards, 400, [EOT])
    window.settings_panel.corpus_options.field_combo.setCurrentText("body")
    window.start_training()
    _wait(qtbot, window)
    assert window.banner.text() == ""
    assert window.state.stage is Stage.FINISHED
    assert window.state.merges() == core.train(shards, core.TrainOptions(400, [EOT]), read=core.ReadOptions(field="body")).result()[1]
    summary = dict(window.summary_panel.rows())
    assert summary["Read:"].startswith("500 documents")


def test_a_bad_field_is_reported_in_the_banner(qtbot, make_window, tmp_path: Path) -> None:
    _write_jsonl(tmp_path / "a.jsonl", 10)
    window = make_window(tmp_path / "a.jsonl", 300)
    window.settings_panel.corpus_options.field_combo.setCurrentText("nope")
    window.start_training()
    _wait(qtbot, window)
    assert "no field 'nope'" in window.banner.text()
    assert window.state.stage is Stage.FAILED


def test_dropping_several_files_makes_one_corpus(qtbot, make_window, make_corpus, tmp_path: Path) -> None:
    a, b = make_corpus(5000, name="a.txt"), make_corpus(5000, seed=2, name="b.txt")
    window = make_window()
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(a)), QUrl.fromLocalFile(str(b))])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, data, Qt.MouseButton.NoButton,
                       Qt.KeyboardModifier.NoModifier)
    window.dropEvent(event)
    assert window.settings_panel.settings().sources == [str(a), str(b)]
    assert window.settings_panel.corpus_info.text().startswith("2 files")
    assert describe(f"{a}; {tmp_path / 'nope.txt'}").startswith("No such file")


def test_the_window_encodes_jsonl_as_documents_not_raw_json(tmp_path: Path) -> None:
    """File › Encode a corpus on a JSONL file encodes each record's text, then <|endoftext|>."""
    import numpy as np

    from bpe_studio.app.workers.encode_job import encode_corpus

    docs = [f"record {i}: lo mi ne" + " ru" * (i % 4) for i in range(60)]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps({"text": d, "n": i}) + "\n" for i, d in enumerate(docs)))
    vocab, merges = core.train_bpe(tmp_path / "a.jsonl", 300, [EOT], workers=1)
    tokenizer = core.Tokenizer(vocab, merges, [EOT])
    run = encode_corpus(tmp_path / "a.jsonl", tokenizer, tmp_path / "a.npy", 1)
    while True:
        try:
            next(run)
        except StopIteration as stop:
            assert stop.value.tokens > 0
            break
    expected: list[int] = []
    for doc in docs:
        expected += tokenizer.encode(doc) + [tokenizer.special_ids[EOT]]
    assert np.load(tmp_path / "a.npy").tolist() == expected


def test_a_huge_folder_typed_in_does_not_freeze_the_window(qtbot, make_window, tmp_path: Path) -> None:
    """A folder is looked at only up to SCAN_LIMIT files on the GUI thread (typing "/" once
    walked the whole disk): described as "more than ...", its later JSONL file not sought."""
    from bpe_studio.app.train.corpus_picker import SCAN_LIMIT

    big = tmp_path / "big"
    big.mkdir()
    for i in range(SCAN_LIMIT + 50):
        (big / f"{i:05d}.txt").write_bytes(b"x")
    (big / "zz.jsonl").write_text('{"text": "x"}\n')
    window = make_window()
    window.settings_panel.set_corpus(str(big))
    assert "more than 2,000 files" in window.settings_panel.corpus_info.text()
    assert window.settings_panel.corpus_options.field_combo.isHidden()
