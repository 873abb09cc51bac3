"""The settings panel's trainer options in a real window: max token length and min frequency
reach the trainer; continuing a tokenizer reads it off the GUI thread, takes its special
tokens and pattern, and the merges table and pair chart show its merges apart from the new ones."""

from __future__ import annotations

from PySide6.QtCore import Qt

from core import TrainOptions
import core
from bpe_studio.app.models.run_progress import Stage
from bpe_studio.app.train.merges_table import RAW_BYTES_ROLE
from core.formats import save_tokenizer
from core.training.reference import train_bpe_reference

EOT = "<|endoftext|>"


def wait_until_stopped(qtbot, window, timeout_ms: int = 60_000) -> None:
    qtbot.waitUntil(lambda: not window.is_training(), timeout=timeout_ms)
    window.merges_table.refresh()


def shown_merges(window) -> list[tuple[bytes, bytes]]:
    model = window.merges_table.merges_model
    return [(model.data(model.index(r, 1), RAW_BYTES_ROLE), model.data(model.index(r, 2), RAW_BYTES_ROLE))
            for r in range(model.rowCount())]


def test_max_token_length_and_min_frequency_reach_the_trainer(qtbot, make_window, make_corpus) -> None:
    corpus = make_corpus(30_000, seed=3)
    window = make_window(corpus, 600, [EOT])
    options = window.settings_panel.trainer_options
    assert options.max_token_length() is None and options.min_frequency() == 1  # defaults: no limits
    options.max_length_spin.setValue(3)
    options.min_frequency_spin.setValue(4)
    window.start_training()
    wait_until_stopped(qtbot, window)
    assert window.state.stage is Stage.FINISHED, window.banner.text()
    _, merges = core.train(corpus, core.TrainOptions(600, [EOT], max_token_length=3, min_frequency=4)).result()
    assert shown_merges(window) == merges
    assert all(len(a + b) <= 3 for a, b in merges)
    settings = window.state.session.settings
    assert (settings.max_token_length, settings.min_frequency) == (3, 4)


def test_continue_a_tokenizer(qtbot, make_window, make_corpus, tmp_path) -> None:
    first = make_corpus(20_000, seed=4, name="first.txt")
    second = make_corpus(20_000, seed=5, name="second.txt")
    vocab, merges = core.train_bpe(first, 400, [EOT, "<|pad|>"], pattern="gpt4")
    save_tokenizer(tmp_path / "base", vocab, merges, [EOT, "<|pad|>"], "gpt4")

    window = make_window(second, 500)
    panel = window.settings_panel
    panel.specials_edit.setPlainText("<|new|>\n" + EOT)
    options = panel.trainer_options
    with qtbot.waitSignal(options.initialRead, timeout=30_000):
        options.set_initial(str(tmp_path / "base"))
    # its special tokens first (ids kept), then the others; its pattern
    assert panel.special_tokens() == [EOT, "<|pad|>", "<|new|>"]
    assert panel.pattern() == "gpt4"
    assert options.initial_status.text() == "Keeps 142 merges, 400 tokens"
    panel.specials_edit.setPlainText("<|new|>")  # edited away: they stay, first
    assert panel.settings().special_tokens == (EOT, "<|pad|>", "<|new|>")

    window.start_training()
    wait_until_stopped(qtbot, window)
    assert window.state.stage is Stage.FINISHED, window.banner.text()
    base = core.Tokenizer.load(tmp_path / "base")
    want_vocab, want_merges = train_bpe_reference(
        second, 500, ["<|new|>"], pattern="gpt4", initial=(base.vocab, base.merges, base.special_ids)
    )
    assert shown_merges(window) == want_merges
    assert window.state.session.vocab == want_vocab
    model = window.merges_table.merges_model
    foreground, tooltip = Qt.ItemDataRole.ForegroundRole, Qt.ItemDataRole.ToolTipRole
    for row in (0, 141):  # kept: greyed, italic, said so
        assert model.data(model.index(row, 1), foreground) is not None
        assert model.data(model.index(row, 0), Qt.ItemDataRole.FontRole).italic()
        assert "kept from the tokenizer" in model.data(model.index(row, 3), tooltip)
    assert model.data(model.index(142, 1), foreground) is None
    assert "kept" not in model.data(model.index(142, 3), tooltip) and model.data(model.index(142, 0), tooltip) is None
    window.charts.refresh()
    assert window.charts.kept_line.isVisible() and window.charts.kept_line.value() == 142
    qtbot.waitUntil(lambda: window.tokenizer is not None)
    assert window.tokenizer.special_ids == {EOT: 256, "<|pad|>": 257, "<|new|>": 400}


def test_a_tokenizer_that_cannot_be_read_is_said_so(qtbot, make_window, make_corpus, tmp_path) -> None:
    window = make_window(make_corpus(5_000), 300)
    options = window.settings_panel.trainer_options
    with qtbot.waitSignal(options.initialFailed, timeout=30_000):
        options.set_initial(str(tmp_path / "nothing"))
    assert "Cannot continue it" in options.initial_status.text() and "does not exist" in options.initial_status.text()
    assert options.initial() is None


def test_a_session_keeps_the_trainer_options(tmp_path) -> None:
    from bpe_studio.app.models.session import Session, TrainSettings, load_session, save_session

    settings = TrainSettings("c.txt", TrainOptions(300, (EOT,), pattern="gpt4", max_token_length=8, min_frequency=3,
                                                 initial=str(tmp_path / "base")), inherited_merges=12)
    vocab = {i: bytes([i]) for i in range(256)} | {256: EOT.encode()}
    save_session(tmp_path / "s.bpesession", Session(settings, vocab, []))
    assert load_session(tmp_path / "s.bpesession").settings == settings


def test_merge_counts_by_id_of_a_continued_tokenizer_with_its_own_ids() -> None:
    from bpe_studio.app.models.session import Session, TrainSettings

    # GPT-2-like: single bytes at other ids, a merge at 256, a special token at 257, a new merge at 258
    vocab = {i: bytes([255 - i]) for i in range(256)} | {256: b"ab", 257: EOT.encode(), 258: b"xy"}
    session = Session(TrainSettings("c.txt", TrainOptions(259, (EOT,))), vocab, [(b"a", b"b"), (b"x", b"y")], merge_counts=[5, 3])
    assert session.merge_counts_by_id() == {256: 5, 258: 3}
