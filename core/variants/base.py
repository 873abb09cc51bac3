"""The seam a training variant plugs into: how pre-tokens are cut, how the merge loop runs, how it encodes.

A variant is a frozen dataclass of its parameters (checked when made) that subclasses
`Variant` and overrides what it changes of plain BPE:

- `cuts`: the pre-tokenizations the corpus is counted with (plain: the options' pattern;
  SuperBPE: that and its stage-2 cut). The trainer counts the corpus once per cut.
- `merge`: the merge loop over those counts, yielding `MergeBatch`es (with the variant's
  `SplitEvent`s) and a final `Finished`. Which pairs may merge and what happens after a
  merge live here, in the variant's module.
- `tokenizer`: the `core.Tokenizer` that encodes as the variant specifies.

A variant that trains on named sources (parity-aware BPE: one per language) sets
``named_sources`` and checks their names in `check_sources`; one that reads the training
options in `merge` gets them through `bound`. `core.variants.VARIANTS` lists the variants
the command line's ``--variant`` and the window's chooser offer by default.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, ClassVar

from core.errors import OptionsError

if TYPE_CHECKING:
    from core.corpus.pretoken_counts import PretokenCounts
    from core.encode.tokenizer import Tokenizer
    from core.events import BatchedTrainEvent, Finished
    from core.pretokenize.patterns import Pattern
    from core.training.options import TrainOptions

__all__ = ["Variant"]


@dataclass(frozen=True)
class Variant:
    """A training variant's parameters and rules (subclasses: `core.variants.Picky`, `SuperBPE`).

    Class attributes:
        name: the variant's name on the command line and in saved files (``"picky"``).
        title: its name for people (``"Picky BPE"``).
        summary: what it does, in one line.
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    named_sources: ClassVar[bool] = False
    """Whether it trains on named sources only (parity-aware BPE: one per language)."""

    def check(self, options: TrainOptions) -> None:
        """Refuse options this variant cannot train with (`ValueError` naming them)."""
        for option, plain in (("max_token_length", None), ("min_frequency", 1), ("initial", None)):
            if getattr(options, option) != plain:
                raise OptionsError(f"{option} is not supported with variant={self!r}; leave it at {plain!r}")

    def bound(self, options: TrainOptions) -> Variant:
        """The variant as it trains with ``options`` (one that reads them in `merge`, a copy
        that holds them; the others themselves)."""
        return self

    def check_sources(self, names: tuple[str, ...]) -> None:
        """Refuse named sources it cannot train on (`ValueError` naming them); before any work."""

    def cuts(self, pattern: Pattern) -> tuple[Pattern, ...]:
        """The pre-tokenizations to count the corpus with, in the order `merge` takes the counts."""
        return (pattern,)

    def merge(
        self, counts: list[PretokenCounts], vocab_size: int, specials: list[str]
    ) -> Generator[BatchedTrainEvent]:
        """The merge loop over ``counts`` (one per cut, in the order of `cuts`), to
        ``vocab_size`` tokens. The list is the variant's to empty: a table taken out of it
        (``counts.pop(0)``) is let go once read, not held through the merges."""
        raise NotImplementedError

    def tokenizer(self, finished: Finished, specials: list[str], pattern: Pattern) -> Tokenizer:
        """The tokenizer of a finished run (`Finished` holds what the variant recorded)."""
        raise NotImplementedError

    def parameters(self) -> dict[str, object]:
        """The variant's parameters by name (saved beside its tokenizer)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
