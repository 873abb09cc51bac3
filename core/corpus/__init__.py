"""Stage 0 — the corpus: what the user names, checked, read as documents, cut into exact chunks.

- `core.corpus.sources`: paths, folders, globs -> checked files (text, JSONL, Parquet; compressed);
- `core.corpus.streams`: compressed files decompressed in bounded reads;
- `core.corpus.planning`: the corpus cut into tasks (files into ranges, streams into blocks), reading bounded;
- `core.corpus.documents`: the tasks' documents; sampling and caps;
- `core.corpus.shares`: counting in worker threads, shares balanced by stealing;
- `core.corpus.counting`: counting the documents in parallel, in order;
- `core.corpus.check`: the one check of a corpus file before any work;
- `core.corpus.chunks`: byte ranges that end at exact pre-token boundaries.

The workers they run on are `core.workers`'.
"""
