"""Running work in parallel, one way for every stage: worker processes started safely from
anywhere, or threads of this process, and the tasks' results in order.

- `core.workers.processes`: starting worker processes safely (a script without a main
  guard, a GUI thread, a frozen app) and how many to start;
- `core.workers.scheduler`: `WorkerPool` (processes or threads) and `results_in_order`,
  which counting in processes, encoding a corpus and evaluating run on.

Counting in threads balances tables rather than tasks and has a scheduler of its own
(`core.corpus.shares`); `Tokenizer.encode_batch` splits one batch in memory over a plain
executor, for which this pool's bookkeeping is too heavy (`core.encode.native`). Long work
that reports progress is a step-generator (`core.steps`).
"""
