"""Training variants of byte-level BPE, each one module on one seam (`core.variants.base.Variant`).

    from core.variants import ParityAware, Picky, SuperBPE
    core.TrainOptions(vocab_size, specials, variant=Picky(threshold=0.9))
    core.TrainOptions(vocab_size, specials, variant=SuperBPE(transition=180_000, max_words=4))
    core.train({"en": ..., "hi": ...}, core.TrainOptions(vocab_size, specials,
               variant=ParityAware(dev={"en": "dev/en.txt", "hi": "dev/hi.txt"})))

``variant=None`` is plain BPE. The exact rules are in VARIANTS.md (the project's spec);
each variant's oracle sits beside it (``*_reference.py``). `VARIANTS` lists them, for
the command line and the window.
"""

from __future__ import annotations

from core.errors import OptionsError
from core.variants.base import Variant
from core.variants.parity import ParityAware
from core.variants.picky import Picky
from core.variants.superbpe import SuperBPE

__all__ = ["VARIANTS", "ParityAware", "Picky", "SuperBPE", "Variant", "variant_named"]

VARIANTS: tuple[type[Variant], ...] = (SuperBPE, Picky)
"""The variants the command line's ``--variant`` and the window's chooser list, in order
(`ParityAware`, which needs named sources and a development set, has its own flags)."""


def variant_named(name: str) -> type[Variant]:
    """The variant class called ``name`` (``"picky"``, ``"superbpe"``).

    Raises:
        ValueError: no variant has that name (the message lists them).
    """
    for variant in VARIANTS:
        if variant.name == name.lower():
            return variant
    raise OptionsError(f"unknown variant {name!r}; the variants are: bpe, " + ", ".join(v.name for v in VARIANTS))
