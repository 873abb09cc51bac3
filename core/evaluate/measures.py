"""Held-out evaluation: how many tokens each tokenizer makes of each source.

For each tokenizer and each group of text (`core.evaluate.texts`), a `Row`:

- ``tokens``: ids produced (documents encoded one by one, as ``bpe-studio encode`` does,
  with no separator id counted);
- ``bytes``: UTF-8 bytes of the text (an invalid byte kept from the file counts 1);
- ``chars``: characters (an invalid byte counts as one character);
- ``words``: maximal runs of non-whitespace characters (``str.split()``: whitespace is
  what `str.isspace` says, Unicode-wide); a word never spans two documents;
- ``bytes_per_token``, ``chars_per_token``, ``fertility`` (tokens per word);
- ``distinct``: distinct ids produced; ``vocab_used``: ``distinct / vocab_size``;
- ``vs_baseline``: ``tokens / baseline tokens`` on the same text (below 1: fewer tokens
  than the baseline), ``None`` without a baseline;
- ``renyi_efficiency``: the Rényi entropy of order 2.5 of the row's token distribution, in
  bits, over log2 of the vocabulary size (Zouhar et al. 2023; what
  ``tokenization_scorer.score(..., metric="renyi", power=2.5, vocab=vocab_size)`` gives);
- ``premium``: with a reference row (``reference``: a row's source, its file's stem such as
  ``en`` for ``dev/en.txt``, or its group value), ``tokens / the reference row's tokens``
  for the same tokenizer — on parallel text, what the same content costs in this language;
- ``gini``: per tokenizer, the Gini coefficient of its rows' token counts,
  ``sum |x_i - x_j| / (2 n^2 mean)`` (0: every row costs the same), in each of its rows
  and in `Evaluation.gini`.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import os
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Union

import numpy as np

from core.encode.tokenizer import TEXT_ERRORS, Tokenizer
from core.errors import CorpusError, OptionsError
from core.evaluate.texts import is_stream, read_groups
from core.steps import run_steps

__all__ = [
    "COLUMNS", "Evaluation", "Row", "TextCounts", "count_text", "evaluate", "evaluate_steps", "gini", "load_tokenizers",
    "measure", "renyi_efficiency", "row_names", "rows_csv", "rows_json",
]

TokenizerSpec = Union[Tokenizer, str, "os.PathLike[str]"]
Progress = Callable[[int, int, str], None]
"""``progress(done, total, label)``: groups measured so far, of ``total`` (tokenizers x groups)."""


@dataclass(frozen=True)
class TextCounts:
    """What a text holds, whatever the tokenizer."""

    bytes: int
    chars: int
    words: int


@dataclass(frozen=True)
class Row:
    """One tokenizer on one group of text (see the module docstring for each measure)."""

    tokenizer: str
    source: str
    vocab_size: int
    tokens: int
    bytes: int
    chars: int
    words: int
    distinct: int
    vs_baseline: float | None = None
    renyi_efficiency: float = 0.0
    premium: float | None = None
    gini: float | None = None

    @property
    def bytes_per_token(self) -> float:
        return self.bytes / self.tokens if self.tokens else 0.0

    @property
    def chars_per_token(self) -> float:
        return self.chars / self.tokens if self.tokens else 0.0

    @property
    def fertility(self) -> float:
        return self.tokens / self.words if self.words else 0.0

    @property
    def vocab_used(self) -> float:
        return self.distinct / self.vocab_size if self.vocab_size else 0.0

    def as_dict(self) -> dict[str, Any]:
        """Every field and measure, for CSV/JSON export."""
        out = asdict(self)
        out.update(bytes_per_token=self.bytes_per_token, chars_per_token=self.chars_per_token,
                   fertility=self.fertility, vocab_used=self.vocab_used)
        return out


COLUMNS = ("tokenizer", "source", "vocab_size", "tokens", "bytes", "chars", "words", "bytes_per_token",
           "chars_per_token", "fertility", "distinct", "vocab_used", "vs_baseline", "renyi_efficiency", "premium",
           "gini")
"""Export column order."""


@dataclass
class Evaluation:
    """The rows, each tokenizer's id counts over all its text (for vocabulary health), and
    each tokenizer's Gini coefficient over its rows' token counts."""

    rows: list[Row]
    counts: dict[str, np.ndarray]
    gini: dict[str, float] = field(default_factory=dict)


RENYI_POWER = 2.5


def renyi_efficiency(counts: np.ndarray, vocab_size: int, power: float = RENYI_POWER) -> float:
    """The Rényi efficiency of a token distribution (id -> count): its Rényi entropy of order
    ``power`` in bits over ``log2(vocab_size)``; 0 with no token or a vocabulary of one."""
    total = int(counts.sum())
    if total == 0 or vocab_size < 2:
        return 0.0
    probs = counts[counts > 0] / total
    return float((1 / (1 - power)) * np.log2(np.sum(probs ** power)) / np.log2(vocab_size))


def gini(values: Sequence[int]) -> float:
    """``sum_i sum_j |x_i - x_j| / (2 n^2 mean)``: 0 when every value is the same."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) == 0 or not x.mean() > 0:
        return 0.0
    return float(np.abs(x[:, None] - x[None, :]).sum() / (2 * len(x) ** 2 * x.mean()))


def row_names(source: str) -> tuple[str, ...]:
    """The names a row answers to as a reference: its source, its file's stem, its group value."""
    if source.endswith("]") and " [" in source:
        _path, group = source[:-1].split(" [", 1)
        return (source, group.split("=", 1)[-1])
    return (source, Path(source).name.split(".")[0])

def _byte_len(text: str) -> int:
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogateescape" if _has_escapes(text) else "strict"))


def _has_escapes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def count_text(texts: Iterable[str], stream: bool) -> TextCounts:
    """Bytes, characters and words of ``texts`` (blocks of one document if ``stream``)."""
    nbytes = chars = words = 0
    in_word = False
    for text in texts:
        if not text:
            continue
        nbytes += _byte_len(text)
        chars += len(text)
        words += len(text.split())
        if stream:
            if in_word and not text[0].isspace():
                words -= 1  # the word goes on from the previous block
            in_word = not text[-1].isspace()
    return TextCounts(nbytes, chars, words)


def measure(tokenizer: Tokenizer, texts: Iterable[str], stream: bool) -> tuple[int, np.ndarray]:
    """``(tokens, id counts)`` of ``texts`` encoded (a stream's blocks as one text)."""
    counts = np.zeros(max(tokenizer.vocab) + 1, np.int64)
    tokens = 0
    arrays = tokenizer.encode_iterable(texts, escaped=True).arrays() if stream else (
        tokenizer.encode_to_array(t.encode("utf-8", TEXT_ERRORS)) for t in texts)
    for ids in arrays:
        tokens += len(ids)
        counts += np.bincount(ids, minlength=len(counts))
    return tokens, counts


def _name(spec: TokenizerSpec, index: int) -> str:
    if isinstance(spec, Tokenizer):
        return f"tokenizer {index + 1}"
    path = Path(spec)
    for suffix in ("vocab.json", "merges.txt", "tokenizer.json", "tokenizer.tiktoken", ".tiktoken", ".json"):
        if path.name.endswith(suffix):
            prefix = path.name[: -len(suffix)].rstrip("_-.")
            return prefix or path.resolve().parent.name or str(spec)
    return path.name or str(spec)


def load_tokenizers(tokenizers: Mapping[str, TokenizerSpec] | Sequence[TokenizerSpec]) -> dict[str, Tokenizer]:
    """Names -> loaded tokenizers (paths loaded with `Tokenizer.load`; names from the paths,
    made unique). Raises FileNotFoundError/FormatError naming a bad path."""
    items = list(tokenizers.items()) if isinstance(tokenizers, Mapping) else [
        (_name(spec, i), spec) for i, spec in enumerate(tokenizers)]
    out: dict[str, Tokenizer] = {}
    for name, spec in items:
        unique, n = name, 2
        while unique in out:
            unique, n = f"{name} ({n})", n + 1
        out[unique] = spec if isinstance(spec, Tokenizer) else Tokenizer.load(spec)
    if not out:
        raise OptionsError("no tokenizer to evaluate; give at least one")
    return out


def evaluate(
    tokenizers: Mapping[str, TokenizerSpec] | Sequence[TokenizerSpec],
    sources: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    field: str = "text",
    group_by: str | None = None,
    baseline: str | None = None,
    reference: str | None = None,
    progress: Progress | None = None,
    workers: int | None = None,
) -> Evaluation:
    """Measure every tokenizer on every group of ``sources`` (see the module docstring).

    ``core.evaluate.evaluate(["mytok/", "gpt2/"], ["held_out/"], baseline="gpt2")``

    Args:
        tokenizers: tokenizers or paths (a dict gives their names).
        sources: files, folders, globs; a folder gives one row per file.
        field: the JSONL field / Parquet column holding the text.
        group_by: a JSONL/Parquet field whose values split a file into rows (``lang``).
        baseline: the name of the tokenizer the others are compared to (``vs_baseline``).
        reference: the row each row's ``premium`` is against (a source, a file's stem such
            as ``en``, or a group value).
        progress: called with ``(done, total, label)`` after each row.
        workers: processes measuring files side by side (`evaluate_steps`).

    Raises:
        FileNotFoundError, FormatError: a tokenizer cannot be loaded.
        FileNotFoundError, CorpusError: a source is missing, empty or has no text.
        ValueError: ``baseline`` is not one of the tokenizers, or ``reference`` not a row.
    """
    steps = evaluate_steps(tokenizers, sources, field=field, group_by=group_by, baseline=baseline,
                           reference=reference, workers=workers)
    return run_steps(steps, None if progress is None else lambda step: progress(*step))


def evaluate_steps(
    tokenizers: Mapping[str, TokenizerSpec] | Sequence[TokenizerSpec],
    sources: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    field: str = "text",
    group_by: str | None = None,
    baseline: str | None = None,
    reference: str | None = None,
    workers: int | None = None,
) -> Generator[tuple[int, int, str], None, Evaluation]:
    """`evaluate` as a generator: yields ``(done, total, label)`` after each row and returns
    the `Evaluation` (for a worker thread that checks for cancellation between rows).

    ``workers``: processes measuring groups (files, JSONL groups) side by side; by default
    all cores when there are several groups and at least `PARALLEL_BYTES` of input, else 1.
    The figures are the same whatever the number."""
    loaded = load_tokenizers(tokenizers)
    if baseline is not None and baseline not in loaded:
        raise OptionsError(f"the baseline {baseline!r} is not one of the tokenizers ({', '.join(loaded)})")
    source_list = [sources] if isinstance(sources, (str, os.PathLike)) else list(sources)
    if not source_list:
        raise OptionsError("no source to evaluate on; give at least one file or folder")
    groups = [g for s in source_list for g in read_groups(s, field=field, group_by=group_by)]
    if reference is not None and sum(reference in row_names(label) for label, _, _ in groups) != 1:
        found = sum(reference in row_names(label) for label, _, _ in groups)
        raise OptionsError(f"the reference {reference!r} is " + ("not a row" if not found else f"{found} rows")
                           + "; the rows are " + ", ".join(row_names(label)[-1] for label, _, _ in groups))
    total = len(groups) * len(loaded)
    rows: list[Row] = []
    totals = {name: np.zeros(max(t.vocab) + 1, np.int64) for name, t in loaded.items()}
    done = 0
    input_bytes = sum(file.size for _, _, file in groups)
    if workers is None:
        workers = min(os.cpu_count() or 1, len(groups)) if input_bytes >= PARALLEL_BYTES else 1
    results = _measured_in_pool(loaded, groups, workers) if workers > 1 and len(groups) > 1 else (
        _measure_group(loaded, texts) for _, texts, _ in groups)
    try:
        for (label, _texts, _file), (text, measured) in zip(groups, results):
            if text.bytes == 0:
                raise CorpusError(f"{label} holds no text to evaluate on")
            for (name, tokenizer), (tokens, counts) in zip(loaded.items(), measured):
                totals[name] += counts
                rows.append(Row(name, label, len(tokenizer), tokens, text.bytes, text.chars, text.words,
                                int(np.count_nonzero(counts)), renyi_efficiency=renyi_efficiency(counts, len(tokenizer))))
                done += 1
                yield done, total, label
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()
    if baseline is not None:
        base = {r.source: r.tokens for r in rows if r.tokenizer == baseline}
        rows = [replace(r, vs_baseline=r.tokens / base[r.source] if base[r.source] else None) for r in rows]
    if reference is not None:
        against = {r.tokenizer: r.tokens for r in rows if reference in row_names(r.source)}
        rows = [replace(r, premium=r.tokens / against[r.tokenizer] if against[r.tokenizer] else None) for r in rows]
    ginis = {name: gini([r.tokens for r in rows if r.tokenizer == name]) for name in loaded}
    rows = [replace(r, gini=ginis[r.tokenizer]) for r in rows]
    return Evaluation(rows, totals, ginis)


PARALLEL_BYTES = 8 << 20
"""Below this much input, starting worker processes costs more than it saves."""

_worker_tokenizers: dict[str, Tokenizer] = {}


def _measure_group(tokenizers: Mapping[str, Tokenizer], texts: Iterable[str]
                   ) -> tuple[TextCounts, list[tuple[int, np.ndarray]]]:
    stream = is_stream(texts)
    return count_text(texts, stream), [measure(t, texts, stream) for t in tokenizers.values()]


def _tokenizer_state(tokenizer: Tokenizer) -> tuple[Any, ...]:
    pattern = tokenizer.pattern
    return (tokenizer.vocab, tokenizer.merges, tokenizer.special_tokens,
            pattern.name if pattern.name in ("gpt2", "gpt4") else pattern.source)


def _init_worker(states: dict[str, tuple[Any, ...]]) -> None:
    for name, (vocab, merges, specials, pattern) in states.items():
        _worker_tokenizers[name] = Tokenizer(vocab, merges, specials, pattern=pattern)


def _measure_in_worker(texts: Iterable[str], _warm: object = None) -> tuple[TextCounts, list[tuple[int, np.ndarray]]]:
    return _measure_group(_worker_tokenizers, texts)


def _measured_in_pool(tokenizers: Mapping[str, Tokenizer], groups: list[Any], workers: int
                      ) -> Generator[tuple[TextCounts, list[tuple[int, np.ndarray]]], None, None]:
    """`_measure_group` of each group in worker processes and in this one while they start
    (or if they cannot), in order; the workers stop on close."""
    from core.workers.scheduler import WorkerPool, results_in_order

    states = {name: _tokenizer_state(t) for name, t in tokenizers.items()}
    pool = WorkerPool(min(workers, len(groups)), initializer=_init_worker, initargs=(states,))
    try:
        here = functools.partial(_measure_group, tokenizers)
        for measured in results_in_order([texts for _, texts, _ in groups], pool, _measure_in_worker, run_here=here):
            assert measured is not None  # (only results: no poll)
            yield measured
    finally:
        pool.close()


def rows_csv(rows: Sequence[Row]) -> str:
    """The rows as CSV text, `COLUMNS` in order."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        d = row.as_dict()
        writer.writerow({k: d[k] for k in COLUMNS})
    return out.getvalue()


def rows_json(rows: Sequence[Row]) -> str:
    """The rows as a JSON list of objects, `COLUMNS` in order."""
    return json.dumps([{k: r.as_dict()[k] for k in COLUMNS} for r in rows], indent=1) + "\n"
