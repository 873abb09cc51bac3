"""One test helper: `core.train` called with its options spelled as keywords.

Many tests vary a few options at a time (``**kw`` from a parametrization); `train_run` sorts
the keywords into `core.TrainOptions` and `core.ReadOptions` and starts the run.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import core

_TRAIN = {f.name for f in fields(core.TrainOptions)} - {"_"}
_READ = {f.name for f in fields(core.ReadOptions)}


def train_run(input: Any, vocab_size: int, special_tokens: Any = (), *, chunk_size: int | None = None,
              **kw: Any) -> core.TrainRun:
    """``core.train(input, TrainOptions(vocab_size, special_tokens, ...), read=ReadOptions(...))``."""
    unknown = set(kw) - _TRAIN - _READ
    if unknown:
        raise TypeError(f"not an option: {sorted(unknown)}")
    options = core.TrainOptions(vocab_size, () if special_tokens is None else special_tokens,
                                **{k: v for k, v in kw.items() if k in _TRAIN})
    read = {k: v for k, v in kw.items() if k in _READ}
    return core.train(input, options, read=core.ReadOptions(**read) if read else None, chunk_size=chunk_size)
