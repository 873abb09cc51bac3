"""Parity-aware BPE in the window: chosen in the Train panel with a development folder or
ratios, refused before any work when a source has no development file, the language each
merge was made for marked in the merges table, an early stop shown as a normal finish, and
sessions and exports that keep the parameters and the choices.

The run is checked against ``core.train`` with `core.variants.ParityAware` on the same
named files, run independently here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import core
from bpe_studio.app.models.session import load_session
from bpe_studio.app.models.run_progress import Stage
from bpe_studio.app.train.merges_table import SOURCES_COLUMN
from bpe_studio.app.train.share_bar import CHOSEN_ROLE, SHARES_ROLE
from core.variants import ParityAware

from tests.app.train.test_training import shown_merges, wait_until_stopped

ENGLISH = "the quick brown fox jumps over the lazy dog, then the fox naps by the river. "
GREEK = "η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο και κοιμάται στο ποτάμι. "
SPANISH = "el rápido zorro marrón salta sobre el perro perezoso y luego duerme junto al río. "
TEXTS = {"en": (ENGLISH, 150), "el": (GREEK, 90), "es": (SPANISH, 40)}
VOCAB = 420
"""164 merges: all made (Greek, the costliest on the development set, takes most)."""
EARLY_VOCAB = 600
"""More merges than the rules can make: the run stops when the chosen language has no pair left."""


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[dict[str, Path], Path]:
    """Three named training files (unbalanced) and a development folder of the same
    sentences in each language (plus one language the run does not train on)."""
    dev = tmp_path / "dev"
    dev.mkdir()
    sources = {}
    for name, (text, copies) in TEXTS.items():
        sources[name] = tmp_path / f"{name}.txt"
        sources[name].write_text(text * copies + "\n", encoding="utf-8")
        (dev / f"{name}.txt").write_text(text * 3 + "\n", encoding="utf-8")
    (dev / "de.txt").write_text("der schnelle braune Fuchs springt über den faulen Hund.\n", encoding="utf-8")
    return sources, dev


def choose_parity(window, sources: dict[str, Path], dev: Path | None) -> None:
    panel = window.settings_panel
    panel.named_sources.check.setChecked(True)
    assert panel.named_sources.names() == tuple(sources)
    combo = panel.variant_options.combo
    combo.setCurrentIndex(combo.findData("parity"))
    if dev is not None:
        panel.variant_options.parity.dev_edit.setText(str(dev))


def core_run(sources: dict[str, Path], dev: Path, vocab: int) -> core.TrainRun:
    variant = ParityAware(dev={name: str(dev / f"{name}.txt") for name in sources})
    run = core.train({name: str(path) for name, path in sources.items()}, core.TrainOptions(vocab, workers=1,
                                                                                            variant=variant))
    run.result()
    return run


def test_parity_aware_training_marks_each_merge_with_its_language(qtbot, make_window, corpus, tmp_path,
                                                                  save_session_and_wait, export_and_wait) -> None:
    sources, dev = corpus
    window = make_window("; ".join(str(p) for p in sources.values()), VOCAB)
    choose_parity(window, sources, dev)
    parity = window.settings_panel.variant_options.parity
    assert parity.mode_combo.isVisibleTo(window) and parity.dev_row.isVisibleTo(window)
    assert not parity.ratio_table.isVisibleTo(window)
    assert "Name each source" in parity.requirement.text()
    assert parity.status.text() == "✓ development files for en, el, es"  # de.txt is not a source: left out
    window.start_training()
    wait_until_stopped(qtbot, window)
    assert window.banner.text() == "" and window.state.stage is Stage.FINISHED

    run = core_run(sources, dev, VOCAB)
    provenance = run.provenance()
    assert shown_merges(window) == run.result()[1] and len(provenance) == VOCAB - 256
    assert window.state.sources == run.sources == ("en", "el", "es")

    # Each row's share bar holds the counts per language and its dot the language the merge was made for.
    window.merges_table.refresh()
    model = window.merges_table.merges_model
    marks = [model.data(model.index(rank, SOURCES_COLUMN), CHOSEN_ROLE) for rank in range(len(provenance))]
    assert [run.sources[i] for i in marks] == [p.chosen for p in provenance]
    assert len({p.chosen for p in provenance}) == 3  # every language had merges made for it
    for rank in (0, len(provenance) // 2, len(provenance) - 1):
        assert model.data(model.index(rank, SOURCES_COLUMN), SHARES_ROLE) == tuple(provenance[rank].counts.values())
        tip = model.data(model.index(rank, SOURCES_COLUMN), 3)
        assert f"made for {provenance[rank].chosen}" in tip
    assert window.train_tab.source_legend.names == ("en", "el", "es")
    window.charts.refresh()
    assert sum(c.isVisible() for c in window.charts.source_curves) == 3  # bytes per token per language

    # The session keeps the development files (their folder comes back) and the choices.
    path = save_session_and_wait(window, tmp_path / "parity.bpesession")
    session = load_session(path)
    assert session.settings.options.variant == ParityAware(dev={n: str(dev / f"{n}.txt") for n in sources})
    assert [run.sources[i] for i in session.chosen] == [p.chosen for p in provenance]
    other = make_window()
    assert other.open_session(path)
    reopened = other.settings_panel.variant_options
    assert reopened.name() == "parity" and reopened.parity.dev_folder() == str(dev)
    assert other.settings_panel.validation_error() is None
    other.merges_table.refresh()
    model = other.merges_table.merges_model
    assert model.chosen_name(0) == provenance[0].chosen and model.chosen_name(100) == provenance[100].chosen

    # provenance.tsv beside the tokenizer names each merge's language, as bpe-studio train writes it.
    from core.training.provenance import provenance_tsv

    qtbot.waitUntil(lambda: window.current.tokenizer is not None, timeout=30_000)
    export_and_wait(window, tmp_path / "out")
    assert (tmp_path / "out" / "provenance.tsv").read_text(encoding="utf-8") == provenance_tsv(provenance, run.sources)


def test_a_source_without_its_development_file_is_refused_before_any_work(qtbot, make_window, corpus) -> None:
    sources, dev = corpus
    (dev / "el.txt").unlink()
    window = make_window("; ".join(str(p) for p in sources.values()), VOCAB)
    panel = window.settings_panel
    combo = panel.variant_options.combo
    combo.setCurrentIndex(combo.findData("parity"))
    panel.variant_options.parity.dev_edit.setText(str(dev))

    window.start_training()  # naming is off
    assert not window.is_training() and window.state.stage is Stage.IDLE
    assert "Name each source" in window.banner.text()

    panel.named_sources.check.setChecked(True)
    window.start_training()
    assert not window.is_training() and window.state.stage is Stage.IDLE
    message = window.banner.text()
    assert "no file for el" in message and str(dev) in message and "el.txt" in message
    assert panel.variant_options.parity.status.text() == message  # said in the panel as well

    panel.variant_options.parity.dev_edit.setText(str(dev / "nowhere"))
    window.start_training()
    assert not window.is_training() and "does not exist" in window.banner.text()
    panel.variant_options.parity.dev_edit.setText("")
    window.start_training()
    assert not window.is_training() and "Choose the development folder" in window.banner.text()


def test_ratios_start_at_one_per_source_and_train_as_core(qtbot, make_window, corpus) -> None:
    sources, _dev = corpus
    window = make_window("; ".join(str(p) for p in sources.values()), VOCAB)
    choose_parity(window, sources, None)
    parity = window.settings_panel.variant_options.parity
    parity.mode_combo.setCurrentIndex(parity.mode_combo.findData("ratio"))
    assert parity.ratio_table.isVisibleTo(window) and not parity.dev_row.isVisibleTo(window)
    table = parity.ratio_table
    assert [(table.item(r, 0).text(), table.item(r, 1).data(2)) for r in range(table.rowCount())] == [
        ("en", 1.0), ("el", 1.0), ("es", 1.0)]
    table.item(1, 1).setData(2, 1.5)  # Greek may cost half as much again
    parity.window_spin.setValue(20)
    assert parity.alpha_spin.isVisibleTo(window)
    expected = ParityAware(ratio={"en": 1.0, "el": 1.5, "es": 1.0}, window=20, alpha=2.0)
    assert window.settings_panel.settings().options.variant == expected
    window.start_training()
    wait_until_stopped(qtbot, window)
    assert window.state.stage is Stage.FINISHED, window.banner.text()
    run = core.train({n: str(p) for n, p in sources.items()}, core.TrainOptions(VOCAB, workers=1, variant=expected))
    assert shown_merges(window) == run.result()[1]
    assert [run.sources[i] if i >= 0 else None for i in window.state.chosen] == [p.chosen for p in run.provenance()]

    # Renaming a source follows into the table (its typed ratio is kept under its name).
    window.settings_panel.named_sources.table.item(2, 0).setText("spa")
    assert [table.item(r, 0).text() for r in range(table.rowCount())] == ["en", "el", "spa"]
    assert window.settings_panel.settings().options.variant.ratio == {"en": 1.0, "el": 1.5, "spa": 1.0}

    # The parameters are kept for the next launch.
    window.settings_panel.save()
    options = make_window().settings_panel.variant_options
    assert options.name() == "parity" and options.parity.mode() == "ratio"
    assert options.parity.window_spin.value() == 20 and options.parity.ratios() == {"en": 1.0, "el": 1.5, "spa": 1.0}


def test_an_early_stop_is_a_normal_finish_that_says_why(qtbot, make_window, corpus) -> None:
    sources, dev = corpus
    window = make_window("; ".join(str(p) for p in sources.values()), EARLY_VOCAB)
    choose_parity(window, sources, dev)
    window.start_training()
    wait_until_stopped(qtbot, window)
    run = core_run(sources, dev, EARLY_VOCAB)
    merges = run.result()[1]
    planned = EARLY_VOCAB - 256
    assert len(merges) < planned and shown_merges(window) == merges
    assert window.state.stage is Stage.FINISHED and window.banner.text() == ""
    detail = window.state.progress().detail
    last = run.provenance()[-1].chosen
    assert detail.startswith(f"stopped after {len(merges):,} of {planned:,} merges: the language whose turn it was "
                             f"had no pair left (the last merge was for {last})")
    assert window.progress_panel.stage_label.text() == "Finished"
    result = dict(window.state.summary())["Result"]
    assert result.startswith(f"stopped early ({len(merges):,} of {planned:,} merges)")
    assert window.current.session is not None and not window.current.session.partial
