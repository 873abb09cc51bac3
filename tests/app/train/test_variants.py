"""Training variants in the window: the chooser, SuperBPE's stages and Picky BPE's removals in
the live merges table, the transition on the compression chart, the variant's tokenizer in
Explore, the "spans spaces" filter, and sessions that keep the variant."""

from __future__ import annotations

from array import array

import core
from bpe_studio.app.explore.vocab_model import TOKEN_ID_ROLE as VOCAB_TOKEN_ID_ROLE
from bpe_studio.app.models.session import load_session, save_session
from bpe_studio.app.models.run_progress import Stage
from bpe_studio.app.models.training_state import TrainingState
from bpe_studio.app.models.vocab_data import VocabData
from bpe_studio.app.train.merges_table import KIND_ROLE, RAW_BYTES_ROLE, TOKEN_ID_ROLE, MergesModel
from bpe_studio.app.train.variant_options import default_transition
from core.events import CountingDone, Finished, MergeBatch, SplitEvent
from core.variants import VARIANTS, Picky, SuperBPE

SAMPLE_TEXT = ("of the people, by the people, for the people. In order to form a more perfect union, "
               "we the people of the United States\n") * 60


def choose(panel, name: str) -> None:
    combo = panel.variant_options.combo
    combo.setCurrentIndex(combo.findData(name))


def train(qtbot, window) -> None:
    window.start_training()
    qtbot.waitUntil(lambda: not window.is_training(), timeout=60_000)
    window.merges_table.refresh()
    assert window.state.stage is Stage.FINISHED, window.banner.text()


def rows(window) -> list[tuple[str, object, list[str]]]:
    model = window.merges_table.merges_model
    return [(model.data(model.index(r, 0), KIND_ROLE)[0], model.data(model.index(r, 0), KIND_ROLE)[1],
             [model.data(model.index(r, c)) for c in range(5)]) for r in range(model.rowCount())]


def test_the_chooser_lists_every_variant_with_its_parameters_and_summary(qtbot, make_window, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text(SAMPLE_TEXT, encoding="utf-8")
    window = make_window(corpus, 500)
    panel, options = window.settings_panel, window.settings_panel.variant_options
    assert [options.combo.itemData(i) for i in range(options.combo.count())] == [
        "plain", *(v.name for v in VARIANTS), "parity"]  # parity-aware BPE is not in VARIANTS: it needs named sources
    assert options.combo.itemText(0) == "Plain BPE"
    assert panel.settings().options.variant is None
    choose(panel, "picky")
    assert options.summary.text() == Picky.summary
    assert options.threshold_spin.isVisibleTo(panel) and not options.transition_spin.isVisibleTo(panel)
    assert not options.parity.mode_combo.isVisibleTo(panel)
    assert panel.settings().options.variant == Picky(threshold=0.9)
    choose(panel, "superbpe")
    assert options.summary.text() == SuperBPE.summary
    assert options.transition_spin.isVisibleTo(panel) and not options.threshold_spin.isVisibleTo(panel)
    assert panel.settings().options.variant == SuperBPE(transition=default_transition(500 - 256), max_words=4)
    assert "195" in options.transition_spin.text()  # auto: 80% of the 244 merges
    options.max_words_spin.setValue(0)
    assert panel.settings().options.variant.max_words is None
    # a variant refuses a max token length: said before anything trains
    panel.trainer_options.max_length_spin.setValue(8)
    window.start_training()
    assert not window.is_training() and "max_token_length" in window.banner.text()
    panel.trainer_options.max_length_spin.setValue(1)
    # the choice is kept for the next launch
    panel.save()
    restored = make_window()
    assert restored.settings_panel.variant_options.name() == "superbpe"


def test_superbpe_in_the_window_shows_its_stages_the_transition_and_spanning_tokens(
        qtbot, make_window, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text(SAMPLE_TEXT, encoding="utf-8")
    window = make_window(corpus, 420)
    panel = window.settings_panel
    choose(panel, "superbpe")
    panel.variant_options.transition_spin.setValue(40)
    train(qtbot, window)

    assert window.state.transition == window.state.finished.stage1_merges == 40
    shown = rows(window)
    stages = [stage for kind, stage, _ in shown]
    assert stages[:40] == [1] * 40 and set(stages[40:]) == {2}
    model = window.merges_table.merges_model
    assert "stage 2" in model.data(model.index(40, 0), 3)  # ToolTipRole
    assert model.data(model.index(40, 0), 8) is not None  # BackgroundRole: the tinted rank
    results = [model.data(model.index(r, 3), RAW_BYTES_ROLE) for r in range(model.rowCount())]
    assert any(b" " in token.strip(b" ") for token in results[40:])  # tokens across spaces
    charts = window.train_tab.charts
    charts.refresh()
    assert charts.transition_line.isVisible()
    assert charts.transition_line.value() == 256 + 40

    # Explore encodes with SuperBPE's tokenizer, and filters the tokens that span spaces
    qtbot.waitUntil(lambda: window.explore_panel.vocab is not None, timeout=30_000)
    tokenizer = window.explore_panel.tokenizer
    run = core.train([str(corpus)], core.TrainOptions(420, (), variant=SuperBPE(transition=40, max_words=4)))
    expected = run.tokenizer()
    assert tokenizer.encode("of the people") == expected.encode("of the people")
    assert window.explore_panel.inspector is not None
    browser = window.explore_panel.browser
    browser.spans_box.setChecked(True)
    view = browser.model.vocab.view
    assert 0 < len(view) < len(browser.model.vocab)
    assert all(b" " in browser.model.vocab.token_bytes[row].lstrip() for row in view)
    # a saved session keeps the variant and the transition
    session = window.state.session
    save_session(tmp_path / "s.bpesession", session)
    loaded = load_session(tmp_path / "s.bpesession")
    assert loaded.settings.options.variant == SuperBPE(transition=40, max_words=4)
    state = TrainingState()
    state.load(loaded)
    assert state.transition == 40 and state.stage_of(39) == 1 and state.stage_of(40) == 2


def test_picky_in_the_window_strikes_out_its_removals(qtbot, make_window, make_corpus, tmp_path):
    corpus = make_corpus(20_000, seed=3)
    window = make_window(corpus, 400)
    panel = window.settings_panel
    choose(panel, "picky")
    panel.variant_options.threshold_spin.setValue(0.6)
    train(qtbot, window)

    splits = window.state.splits
    assert splits
    shown = rows(window)
    removals = [(stage, cells) for kind, stage, cells in shown if kind == "split"]
    assert len(removals) == len(splits)
    assert sum(kind == "merge" for kind, _, _ in shown) == len(window.state.token_ids)
    first = splits[0]
    rank, cells = removals[0]
    assert rank == first.rank and cells[2] == f"after #{first.rank:,}"
    assert cells[3].startswith("→ ") and " · " in cells[3]
    # each removal right after its merge
    model = window.merges_table.merges_model
    row = next(r for r in range(model.rowCount()) if model.data(model.index(r, 0), KIND_ROLE)[0] == "split")
    assert model.data(model.index(row - 1, 0), KIND_ROLE)[0] in ("merge", "split")
    assert model.data(model.index(row, 1)).strip() and model.data(model.index(row, 1), 6).strikeOut()  # FontRole
    assert model.data(model.index(row, 1), TOKEN_ID_ROLE) == first.token_id
    # the vocabulary reached the size asked for, the progress never went past the end
    assert len(window.state.vocab) == 400
    assert window.state.progress().fraction == 1.0 and "removed" in window.state.progress().detail
    # Explore shows the compact final vocabulary and encodes as Picky does
    qtbot.waitUntil(lambda: window.explore_panel.vocab is not None, timeout=30_000)
    tokenizer = window.explore_panel.tokenizer
    assert len(window.explore_panel.vocab) == 400
    run = core.train([str(corpus)], window.state.settings.options)
    text = corpus.read_text(encoding="utf-8")[:2000]
    assert tokenizer.encode(text) == run.tokenizer().encode(text)
    # a saved session keeps the removals
    save_session(tmp_path / "p.bpesession", window.state.session)
    loaded = load_session(tmp_path / "p.bpesession")
    assert loaded.splits == list(splits) and loaded.settings.options.variant == Picky(threshold=0.6)
    state = TrainingState()
    state.load(loaded)
    reopened = MergesModel(state)
    reopened.sync()
    assert reopened.rowCount() == model.rowCount()


def test_removals_made_by_hand_sit_after_their_merge(qtbot):
    """Without a trainer: a batch with two removals after merge 1 and a restored token."""
    state = TrainingState()
    from bpe_studio.app.models.session import TrainSettings

    state.start(TrainSettings("x", core.TrainOptions(300, (), variant=Picky(threshold=0.5))), now=0.0)
    state.apply([CountingDone(1, 1, 0, 10, array("q", [1]), b"ab")], now=0.0)
    a, b, c = ord("a"), ord("b"), ord("c")
    batch = MergeBatch(0, array("q", [256, 257, 256]), array("q", [a, 256, a]), array("q", [b, c, b]),
                       array("q", [9, 8, 3]), array("q", [9, 8, 7]),
                       splits=(SplitEvent(1, 256, b"ab", (b"a", b"b"), 2),), restores=True)
    state.apply([batch], now=0.1)
    assert list(state.sizes) == [257, 257, 258]  # ab; abc then ab removed; ab again
    model = MergesModel(state)
    model.sync()
    kinds = [model.data(model.index(r, 0), KIND_ROLE) for r in range(model.rowCount())]
    assert kinds == [("merge", 0), ("merge", 0), ("split", 1), ("merge", 0)]
    assert model.data(model.index(2, 3)) == "→ a · b"
    assert model.data(model.index(3, 0)) == "2"
    assert model.merge(3) == (b"a", b"b")
    state.apply([Finished({}, [(b"a", b"b"), (b"ab", b"c"), (b"a", b"b")], splits=batch.splits)], now=0.2)


def test_spans_spaces_marks_tokens_that_cross_a_word_boundary():
    vocab = {0: b" the", 1: b"of the", 2: b"the ", 3: b"a  b", 4: b"  ", 5: b"x", 6: b"\n  "}
    data = VocabData(vocab, [])
    assert data.spans_spaces.tolist() == [False, True, True, True, False, False, False]
    data.only_spanning = True
    data.set_filter("")
    assert data.view.tolist() == [1, 2, 3]
