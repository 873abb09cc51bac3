"""Stage 0 — the corpus on disk: checking it, cutting it into exact chunks, running chunks in parallel.

- `core.corpus.check`: the one check of a corpus file before any work;
- `core.corpus.chunks`: byte ranges that end at exact pre-token boundaries;
- `core.corpus.processes`: worker pools started safely from scripts, threads and GUIs.
"""
