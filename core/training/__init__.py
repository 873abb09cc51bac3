"""Stage 2 — pre-token counts to merges: the trainer, its merge loop and kernel, and the oracle.

`core.train` (this package's `trainer.train`) is the training entry.

- `core.training.trainer`: `train` (and `train_bpe`, CS336's signature), the recipe from
  input to vocabulary; `core.training.run`: the `TrainRun` it returns;
- `core.training.options`: `TrainOptions`, what to train, and its layout for the merge loop;
- `core.training.merge`: the incremental merge loop (Python) and its compiled kernel
  (``_merge_kernel.c``), handing merges over in batches of columns;
- `core.training.reference`: a short, obviously correct trainer that the tests compare against.
"""

from __future__ import annotations
