"""Stage 2 — pre-token counts to merges: the trainer, its merge loop and kernel, and the oracle.

- `core.train.trainer`: `train_bpe` / `train_bpe_batches` / `train_bpe_events`, the recipe
  from file to vocabulary;
- `core.train.merge`: the incremental merge loop (Python) and its compiled kernel
  (``_merge_kernel.c``), handing merges over in batches of columns;
- `core.train.reference`: a short, obviously correct trainer that the tests compare against.
"""
