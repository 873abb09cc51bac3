"""The training variant in the settings panel: Plain BPE, SuperBPE, Picky BPE or parity-aware BPE, with its parameters.

Widgets the settings panel adds to its form with `add_rows`: a combo listing the variants
(`core.variants.VARIANTS`, the one list the command line uses too, then parity-aware BPE,
`core.variants.ParityAware`, which that list leaves out: it needs named sources and a
development set, `ParityOptions`), the chosen variant's parameters (the other variants'
rows are hidden) and its one-line ``summary`` as a hint. `variant` turns the choice into
the variant object `core.TrainOptions(variant=...)` takes (None: plain BPE). SuperBPE's
transition follows the vocabulary size (80% of the merges to make) until the user sets a
number of their own.

    options = VariantOptions(); options.add_rows(form); options.set_max_merges(1744)
    options.variant()   # -> None, Picky(threshold=0.9) or SuperBPE(transition=1395, max_words=4)
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, QSettings, Signal
from PySide6.QtWidgets import QComboBox, QDoubleSpinBox, QFormLayout, QSpinBox, QWidget

from bpe_studio.app.train.parity_options import ParityOptions
from bpe_studio.app.widgets.wrapped_hint import WrappedHint
from core.variants import VARIANTS, ParityAware, Variant

CHOICES: tuple[type[Variant], ...] = (*VARIANTS, ParityAware)
"""The chooser's variants after plain BPE: the command line's list, then parity-aware BPE."""

PLAIN = ("plain", "Plain BPE", "the merge loop of GPT-2: the most frequent pair, merged, until the vocabulary is full")
"""(name, title, summary) of training without a variant."""
DEFAULT_THRESHOLD = 0.9
DEFAULT_TRANSITION_SHARE = 0.8
"""SuperBPE's default transition: this share of the merges to make are stage 1's."""
DEFAULT_MAX_WORDS = 4
AUTO = -1
"""The transition spin box's value meaning "80% of the merges" (shown as such)."""


def default_transition(max_merges: int) -> int:
    """``default_transition(1744) -> 1395``: the stage-1 merges SuperBPE makes by default."""
    return int(max_merges * DEFAULT_TRANSITION_SHARE)


class VariantOptions(QObject):
    """The variant chooser, its parameters and its explanation.

    Signals:
        changed(): the variant or one of its parameters changed.
    """

    changed = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._classes = {cls.name: cls for cls in CHOICES}
        self._max_merges = 0
        self.combo = QComboBox()
        self.combo.addItem(PLAIN[1], PLAIN[0])
        for cls in CHOICES:
            self.combo.addItem(cls.title, cls.name)
        self.combo.setToolTip("How the merges are learned")

        self.threshold_spin = QDoubleSpinBox()
        self.threshold_spin.setRange(0.01, 1.0)
        self.threshold_spin.setSingleStep(0.05)
        self.threshold_spin.setDecimals(2)
        self.threshold_spin.setValue(DEFAULT_THRESHOLD)
        self.threshold_spin.setToolTip("Picky BPE removes a token once more than this share of its "
                                       "occurrences went into the token just merged; 1.0 never removes")
        self.transition_spin = QSpinBox()
        self.transition_spin.setRange(AUTO, 10_000_000)
        self.transition_spin.setGroupSeparatorShown(True)
        self.transition_spin.setSingleStep(100)
        self.transition_spin.setValue(AUTO)
        self.transition_spin.setToolTip("Merges of stage 1 (plain BPE); the rest may cross spaces")
        self.max_words_spin = QSpinBox()
        self.max_words_spin.setRange(0, 64)
        self.max_words_spin.setSpecialValueText("no limit")
        self.max_words_spin.setValue(DEFAULT_MAX_WORDS)
        self.max_words_spin.setToolTip("At most this many words in a token of stage 2")
        self.summary = WrappedHint()
        self.parity = ParityOptions(self)
        self.parity.changed.connect(self.changed)

        # name -> the parameter widgets shown for it
        self._rows: dict[str, list[QWidget]] = {
            "picky": [self.threshold_spin], "superbpe": [self.transition_spin, self.max_words_spin]}
        self._form: QFormLayout | None = None
        self.combo.currentIndexChanged.connect(self._on_choice)
        for spin in (self.threshold_spin, self.transition_spin, self.max_words_spin):
            spin.valueChanged.connect(self.changed)
        self.set_max_merges(0)

    def add_rows(self, form: QFormLayout) -> None:
        """Add the chooser, the parameters and the summary to the settings panel's form."""
        self._form = form
        form.addRow("Variant", self.combo)
        form.addRow("", self.summary)
        form.addRow("Threshold", self.threshold_spin)
        form.addRow("Transition", self.transition_spin)
        form.addRow("Max words", self.max_words_spin)
        self.parity.add_rows(form)
        self._on_choice()

    # -- values --------------------------------------------------------------------------

    def name(self) -> str:
        """The chosen variant's name (``"plain"``, ``"picky"``, ``"superbpe"``, ``"parity"``)."""
        return str(self.combo.currentData())

    def set_max_merges(self, merges: int) -> None:
        """The merges the settings make: SuperBPE's automatic transition is 80% of them."""
        self._max_merges = max(merges, 0)
        self.transition_spin.setSpecialValueText(f"auto: {default_transition(self._max_merges):,} (80%)")

    def transition(self) -> int:
        value = self.transition_spin.value()
        return default_transition(self._max_merges) if value == AUTO else value

    def variant(self) -> Any:
        """The chosen variant for `core.TrainOptions` (None: plain BPE).

        Raises:
            ValueError, TypeError: a parameter the variant refuses (its own message).
        """
        cls = self._classes.get(self.name())
        if cls is None:
            return None
        if cls.name == "picky":
            return cls(threshold=round(self.threshold_spin.value(), 4))
        if cls.name == "superbpe":
            return cls(transition=self.transition(), max_words=self.max_words_spin.value() or None)
        if cls is ParityAware:
            return self.parity.variant()
        return cls()

    def problem(self) -> str | None:
        """What the chosen variant lacks to train on these sources (parity-aware BPE: named
        sources and their development files), or None."""
        return self.parity.problem() if self.name() == ParityAware.name else None

    def set_sources(self, names: tuple[str, ...], named: bool) -> None:
        """The corpus's source names and whether they are named (parity-aware BPE checks them)."""
        self.parity.set_sources(names, named)

    def set_variant(self, variant: Any) -> None:
        """Show ``variant`` (a variant object, or None for plain BPE), e.g. an opened session's."""
        name = getattr(variant, "name", PLAIN[0]) if variant is not None else PLAIN[0]
        self.combo.setCurrentIndex(max(self.combo.findData(name), 0))
        if name == "picky":
            self.threshold_spin.setValue(float(variant.threshold))
        elif name == "superbpe":
            self.transition_spin.setValue(int(variant.transition))
            self.max_words_spin.setValue(variant.max_words or 0)
        elif isinstance(variant, ParityAware):
            self.parity.set_variant(variant)

    def set_running(self, running: bool) -> None:
        for widget in (self.combo, self.threshold_spin, self.transition_spin, self.max_words_spin):
            widget.setEnabled(not running)
        self.parity.set_running(running)

    # -- persistence ---------------------------------------------------------------------------

    def save(self, s: QSettings) -> None:
        s.setValue("train/variant", self.name())
        s.setValue("train/picky_threshold", self.threshold_spin.value())
        s.setValue("train/superbpe_transition", self.transition_spin.value())
        s.setValue("train/superbpe_max_words", self.max_words_spin.value())
        self.parity.save(s)

    def restore(self, s: QSettings) -> None:
        self.combo.setCurrentIndex(max(self.combo.findData(str(s.value("train/variant", PLAIN[0]))), 0))
        for spin, key, kind in ((self.threshold_spin, "train/picky_threshold", float),
                                (self.transition_spin, "train/superbpe_transition", int),
                                (self.max_words_spin, "train/superbpe_max_words", int)):
            try:
                spin.setValue(kind(s.value(key, spin.value())))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                pass
        self.parity.restore(s)

    # -- showing the choice ------------------------------------------------------------------

    def _on_choice(self) -> None:
        name = self.name()
        cls = self._classes.get(name)
        self.summary.setText(cls.summary if cls is not None else PLAIN[2])
        if self._form is not None:
            for variant, widgets in self._rows.items():
                for widget in widgets:
                    self._form.setRowVisible(widget, variant == name)
        self.parity.set_visible(name == ParityAware.name)
        self.changed.emit()
