"""The Evaluate tab's background work, without Qt: measuring (with the size ladder) and shrinking.

`evaluation_work` is the generator a `ThreadJob` runs: one progress step per row, then
the `Evaluation`. With a size ladder every tokenizer is measured at each size, named
``"name @ size"``, and ``vs base`` compares each rung with the baseline tokenizer's
largest rung (the chosen baseline, else the first tokenizer): ``1.250`` means 25% more
tokens than at full size. With a reference row (``en``), each row's premium is its tokens
over the reference row's; `reference_names` lists the names the sources' rows answer to,
for the tab's Reference chooser.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Sequence
from typing import Any

from core.evaluate.measures import Row, evaluate_steps, row_names

MAX_LISTED = 200
"""A folder's first files named in the Reference chooser (a bigger folder: type the name)."""
DEFAULT_REFERENCE = "en"


def reference_names(sources: Sequence[str], rows: Sequence[Row] = ()) -> list[str]:
    """The names a reference may take, sorted: each file's stem (``en`` for ``dev/en.txt``; a
    folder's own files, as many as `MAX_LISTED`) and, from an evaluation's ``rows``, each
    row's (its file's stem or its group value: JSONL groups are only known once read).

    Quick enough for the GUI thread: one directory listing per folder, nothing opened.
    """
    names: set[str] = set()
    for source in sources:
        if os.path.isdir(source):
            try:
                with os.scandir(source) as entries:
                    files = sorted(e.path for e in entries if not e.name.startswith(".") and e.is_file())
            except OSError:
                files = []
            names.update(row_names(path)[-1] for path in files[:MAX_LISTED])
        elif os.path.isfile(source):
            names.add(row_names(source)[-1])
    names.update(row_names(row.source)[-1] for row in rows)
    return sorted(name for name in names if name)


def ladder(tokenizers: dict[str, Any], sizes: str, baseline: str | None) -> tuple[dict[str, Any], str]:
    """``(tokenizers cut at each size, the baseline's largest rung)``.

    Args:
        tokenizers: names -> tokenizers or paths (as the tab lists them).
        sizes: ``"auto"`` or ``"1k,2k,4096"``.
        baseline: the tokenizer the rungs are compared to (None: the first one).
    """
    from bpe_studio.sizes import parse_sizes
    from core.evaluate.ladder import default_sizes, ladder_tokenizers
    from core.evaluate.measures import load_tokenizers

    rungs: dict[str, Any] = {}
    top: dict[str, str] = {}
    for name, tokenizer in load_tokenizers(tokenizers).items():
        wanted = default_sizes(tokenizer) if sizes == "auto" else parse_sizes(sizes)
        for size, cut in ladder_tokenizers(tokenizer, wanted):
            rungs[f"{name} @ {size}"] = cut
            top[name] = f"{name} @ {size}"  # sizes come smallest first: the last is the largest
    base = baseline if baseline in top else next(iter(top))
    return rungs, top[base]


def evaluation_work(tokenizers: dict[str, Any], sources: list[str], group_by: str | None, baseline: str | None,
                    sizes: str | None, reference: str | None = None) -> Generator[Any, None, Any]:
    """Measure ``tokenizers`` on ``sources`` (a ladder of ``sizes`` when given), each row's
    premium against the ``reference`` row; yields ``(done, total, label)`` per row, returns
    the `core.evaluate.measures.Evaluation`."""
    if sizes:
        tokenizers, baseline = ladder(tokenizers, sizes, baseline)
    return (yield from evaluate_steps(tokenizers, sources, group_by=group_by, baseline=baseline,
                                      reference=reference))


def shrink_work(spec: Any, name: str, size: int, out_dir: str) -> str:
    """Write ``spec`` cut to ``size`` tokens into ``out_dir``; the line saying so."""
    from core.encode.tokenizer import Tokenizer
    from core.evaluate.ladder import shrink
    from core.formats import save_tokenizer

    tokenizer = spec if isinstance(spec, Tokenizer) else Tokenizer.load(spec)
    vocab, merges = shrink(tokenizer, size)
    save_tokenizer(out_dir, vocab, merges, tokenizer.special_tokens, tokenizer.pattern)
    return f"Wrote “{name}” ({len(tokenizer):,} tokens) cut to {len(vocab):,} tokens into {out_dir}."
