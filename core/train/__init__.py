"""Stage 2 — pre-token counts to merges: the trainer, its merge loop and kernel, and the oracle.

- `core.train.trainer`: `train` (and `train_bpe`, CS336's signature), the recipe from
  input to vocabulary; `core.train.run`: the `TrainRun` it returns;
- `core.train.options`: `TrainOptions`, what to train, and its layout for the merge loop;
- `core.train.merge`: the incremental merge loop (Python) and its compiled kernel
  (``_merge_kernel.c``), handing merges over in batches of columns;
- `core.train.reference`: a short, obviously correct trainer that the tests compare against.
"""

from __future__ import annotations

import sys
import types
from typing import Any


class _TrainPackage(types.ModuleType):
    """This package, callable: ``core.train(input, options)`` is `core.train.trainer.train`.

    One name for the training entry and the package it lives in, without either hiding
    the other: ``core.train.merge`` and ``import core.train.reference as oracle`` work as
    for any package (a function named ``train`` in `core` would hide them)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from core.train.trainer import train

        return train(*args, **kwargs)


def __getattr__(name: str) -> Any:
    if name == "__wrapped__":  # inspect.signature(core.train) and help() find the function
        from core.train.trainer import train

        return train
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


sys.modules[__name__].__class__ = _TrainPackage
