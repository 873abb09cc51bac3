"""Byte-level BPE training: exact, parallel, streaming, cancellable.

The recipe (the exact rules: docs/semantics.md):
1. Check the input: the options (`TrainOptions`, checked when made; an initial tokenizer is
   loaded and laid out here), the read options, the corpus.
2. Read the corpus as tasks of documents (`core.corpus.documents`): files cut into chunks at
   exact pre-token boundaries (`core.corpus.chunks`), JSONL at line ends, Parquet by row
   group, compressed streams read once here and handed over in blocks.
3. Count pre-tokens per task in worker threads or processes (`core.pretokenize.counting`);
   add the counts into a `PretokenCounts` (`core.corpus.count_run.count_events`: the same
   path as `core.count_pretokens`). Training from counts made elsewhere starts at step 4.
4. Merge the most frequent pair, repeatedly (`core.training.merge`, with its compiled kernel), until
   the vocabulary is full — after an initial tokenizer's merges, within the options
   (``max_token_length``, ``min_frequency``, ``initial``: `core.training.options`).

`train` returns a `TrainRun` (`core.training.run`) that yields an event after each step of the
way (`core.events`), the merges in batches of columns (`MergeBatch`) as the merge loop hands
them over; `TrainRun.result` runs it to the end. `train_bpe` is CS336's signature over it.
"""

from __future__ import annotations

import dataclasses
import json
import operator
import os
import tempfile
from array import array
from collections.abc import Generator, Iterable, Iterator, Mapping
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.corpus.bpc_file import MAX_CORPUS_BYTES
from core.corpus.count_run import (
    CountingRun,
    NamedCountingRun,
    check_counting,
    check_named_counting,
    count_events,
    count_named_events,
)
from core.corpus.named_counts import NamedCounts, check_source_names
from core.corpus.pretoken_counts import PretokenCounts
from core.corpus.sources import Corpus, ReadOptions, Source
from core.errors import OptionsError, OptionsTypeError
from core.events import BatchedTrainEvent, CountingDone, Finished, MergeBatch, initial_token_bytes
from core.pretokenize.patterns import Pattern, resolve_pattern
from core.training.merge import PackedWords, merge_pairs
from core.training.options import MergeOptions, TrainOptions, merge_options
from core.training.run import TrainRun

if TYPE_CHECKING:
    from core.variants.base import Variant

__all__ = ["merge_columns", "named_words", "packed_input", "train", "train_bpe"]


def train(
    input: Source | Iterable[str] | PretokenCounts | Mapping[str, Source | Iterable[str]],
    options: TrainOptions,
    *,
    read: ReadOptions | None = None,
    chunk_size: int | None = None,
) -> TrainRun:
    """Train a byte-level BPE tokenizer: check everything now, return the run to iterate or wait on.

    Args:
        input: what to train on —
            a path, a folder (its files, recursively, in sorted order, hidden ones skipped),
            a glob, or a list or tuple of them: plain UTF-8 text (invalid bytes kept
            byte-exact), JSONL (``.jsonl``, ``.ndjson``) or Parquet, any but Parquet
            optionally ``.gz``, ``.bz2``, ``.xz`` or ``.zst``; each plain file, JSONL record
            and Parquet row is a document (nothing is counted or merged across documents);
            or any other iterable of strings, each a document, read once in order (a
            streamed dataset works; a list of texts: ``iter(texts)``);
            or `PretokenCounts` (`core.count_pretokens`, `PretokenCounts.load`, ``a + b``),
            made with ``options``' pattern and special tokens;
            or named sources: a mapping from a name to any of the corpora above
            (``{"en": "data/en/", "hi": "hi.jsonl.zst"}``), counted one by one and trained on
            together (the merges of training on all of them; `core.corpus.named_counts`).
        options: what to train (`TrainOptions`).
        read: what to read of a corpus (`ReadOptions`: field, sample + seed, document cap,
            max bytes); not with counts (they were read when counted).
        chunk_size: bytes per pre-tokenization task (default: sized from the corpus and the
            workers). Any value gives the same result.

    Returns:
        A `TrainRun`: iterate it for `PretokenizeProgress`, `CountingDone`, `MergeBatch`es
        and `Finished`, or call ``.result()`` for ``(vocab, merges)``. Closing it cancels
        training and stops the worker processes.

    Raises (here, before any work): TypeError, ValueError, CorpusError, FormatError,
    OSError for bad options or input — every file of the corpus is checked (and the first
    record of each JSONL or Parquet file). What is found only while reading (a bad line deep
    in a file, a corrupt compressed stream, a file changed during the run) raises from the
    run, before any result.

    Example: on a file holding ``"low low"``, ``train(path, TrainOptions(258)).result()[1] ==
    [(b"o", b"w"), (b"l", b"ow")]`` — ``(l, o)`` and ``(o, w)`` both occur twice and the
    tie goes to the greater pair.
    """
    if not isinstance(options, TrainOptions):
        raise OptionsTypeError(f"options must be TrainOptions, got {type(options).__name__}; "
                               "e.g. core.TrainOptions(vocab_size, special_tokens)")
    if read is not None and not isinstance(read, ReadOptions):
        raise OptionsTypeError(f"read must be ReadOptions, got {type(read).__name__}")
    variant = options.variant.bound(options) if options.variant is not None else None
    if variant is not None and variant.named_sources:  # (parity-aware BPE: one source per language)
        names = input.sources if isinstance(input, NamedCounts) else tuple(input) if isinstance(input, Mapping) else ()
        if not names:
            raise OptionsError(f"{variant.title} trains on named sources, one per language: "
                               "core.train({'en': ..., 'hi': ...}, options), or their NamedCounts")
        variant.check_sources(check_source_names(names))
    if isinstance(input, PretokenCounts):
        if read is not None and read != ReadOptions():
            raise OptionsError("read options apply when reading a corpus; pre-token counts were read when "
                               "they were counted (give them to core.count_pretokens)")
        merging, specials = _check_counts(input, options)
        if variant is None:
            return TrainRun(_train_from_counts(input, options.vocab_size, specials, merging), specials,
                            pattern=options.compiled_pattern)
        if len(variant.cuts(options.compiled_pattern)) > 1:
            raise OptionsError(f"{variant.title} cuts the text a second way, which pre-token counts cannot give: "
                               "train it on the corpus itself (files or texts), not on counts")
        return TrainRun(variant.merge([input], options.vocab_size, specials), specials, variant, options.compiled_pattern)
    merging, specials = merge_options(options)
    if isinstance(input, Mapping):  # named sources: counted one by one, trained on together
        named = check_named_counting(input, specials, options.compiled_pattern, options.workers, chunk_size,
                                     read if read is not None else ReadOptions())
        if variant is None:
            return TrainRun(_train_named(named, options.vocab_size, merging), specials,
                            pattern=options.compiled_pattern)
        cuts = variant.cuts(options.compiled_pattern)
        if len(cuts) > 1 and not all(isinstance(run.corpus, Corpus) for _, run in named.runs):
            raise OptionsError(f"{variant.title} reads the text twice: give each named source as files, not texts")
        return TrainRun(_train_variant_named(named, cuts, variant, options.vocab_size), specials, variant,
                        options.compiled_pattern)
    counting = check_counting(input, specials, options.compiled_pattern, options.workers, chunk_size,
                              read if read is not None else ReadOptions())
    if variant is None:
        return TrainRun(_train(counting, options.vocab_size, merging), specials, pattern=options.compiled_pattern)
    cuts = variant.cuts(options.compiled_pattern)
    return TrainRun(_train_variant(counting, cuts, variant, options.vocab_size), specials, variant,
                    options.compiled_pattern)


def train_bpe(
    input_path: str | os.PathLike[str],
    vocab_size: int,
    special_tokens: list[str] | None = None,
    *,
    pattern: str = "gpt2",
    workers: int | None = None,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Train a byte-level BPE tokenizer on a corpus file (CS336's signature; `train` does the work).

    Args:
        input_path: a file (or a folder, a glob, a list of them: as `train` takes them).
        vocab_size: the vocabulary size to reach: 256 bytes + special tokens + merges.
        special_tokens: strings that split the text and get their own ids (256, 257, ...).
        pattern: ``"gpt2"``, ``"gpt4"`` or a regex for pre-tokenization.
        workers: processes or threads for pre-tokenization (default: all cores).

    Returns:
        ``(vocab, merges)``: id -> token bytes, and the merges in the order learned.
        Training stops early when no pair is left to merge.
    """
    if not isinstance(input_path, (str, os.PathLike, list, tuple)):
        raise OptionsTypeError(f"input_path must be the path of a corpus file, got {type(input_path).__name__}; "
                               "to train on texts or counts use core.train")
    options = TrainOptions(vocab_size, () if special_tokens is None else special_tokens,
                           pattern=pattern, workers=workers)
    return train(input_path, options).result()


def _check_counts(counts: PretokenCounts, options: TrainOptions) -> tuple[MergeOptions, list[str]]:
    """The merge options and special tokens, once the counts are known to fit the options."""
    if resolve_pattern(options.pattern).source != counts.pattern:
        raise OptionsError(
            f"these pre-token counts were made with another pattern ({_describe(counts.pattern)}), not "
            f"{_describe(options.pattern)}: train with the pattern they were counted with "
            "(TrainOptions(..., pattern=counts.pattern)), or count again"
        )
    merging, specials = merge_options(options)
    if set(specials) != set(counts.special_tokens):
        raise OptionsError(
            f"these pre-token counts were made with the special tokens {list(counts.special_tokens)}, "
            f"not {specials}: train with the special tokens they were counted with, or count again"
        )
    return merging, specials


def _describe(pattern: str) -> str:
    name = resolve_pattern(pattern).name
    return repr(name) if name != "custom" else repr(pattern if len(pattern) < 40 else pattern[:37] + "...")


def _train(counting: CountingRun, vocab_size: int, merging: MergeOptions) -> Generator[BatchedTrainEvent]:
    """Count (`core.corpus.count_run.count_events`), then train from the counts."""
    counts = yield from count_events(counting)
    merged = _train_from_counts(counts, vocab_size, counting.specials, merging)
    del counts  # the merging drops the count table once it has packed the words (below)
    yield from merged


def _train_named(named: NamedCountingRun, vocab_size: int, merging: MergeOptions) -> Generator[BatchedTrainEvent]:
    """Count each named source (`core.corpus.count_run.count_named_events`), then train from their counts."""
    counts = yield from count_named_events(named)
    merged = _train_from_counts(counts, vocab_size, named.specials, merging)
    del counts
    yield from merged


def _train_variant_named(
    named: NamedCountingRun, cuts: tuple[Pattern, ...], variant: Variant, vocab_size: int
) -> Generator[BatchedTrainEvent]:
    """Count the named sources once per cut of the variant, then run its merge loop."""
    counts: list[PretokenCounts] = []
    for cut in cuts:
        runs = tuple((name, dataclasses.replace(run, pattern=cut)) for name, run in named.runs)
        counts.append((yield from count_named_events(NamedCountingRun(runs))))
    yield from variant.merge(counts, vocab_size, named.specials)


def _train_variant(
    counting: CountingRun, cuts: tuple[Pattern, ...], variant: Variant, vocab_size: int
) -> Generator[BatchedTrainEvent]:
    """Count the corpus once per cut of the variant (texts given as an iterable are kept in
    a temporary file for the counts after the first), then run the variant's merge loop."""
    with tempfile.TemporaryDirectory(prefix="bpe-studio-") as spool_dir:
        first = counting
        if len(cuts) > 1 and not isinstance(counting.corpus, Corpus):
            spool = Path(spool_dir) / "texts.jsonl"
            first = dataclasses.replace(counting, corpus=_spooled(counting.corpus, spool))
        counts = [(yield from count_events(first))]
        for cut in cuts[1:]:
            corpus = counting.corpus if isinstance(counting.corpus, Corpus) else _unspooled(spool)
            counts.append((yield from count_events(dataclasses.replace(counting, corpus=corpus, pattern=cut))))
    yield from variant.merge(counts, vocab_size, counting.specials)


def _spooled(texts: Iterator[str], path: Path) -> Iterator[str]:
    """``texts``, each also written to ``path`` (one JSON string a line: any str, lone
    surrogates included, comes back the same)."""
    with open(path, "w", encoding="utf-8") as f:
        for text in texts:
            f.write(json.dumps(text) + "\n")
            yield text


def _unspooled(path: Path) -> Iterator[str]:
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


def _train_from_counts(
    counts: PretokenCounts, vocab_size: int, specials: list[str], merging: MergeOptions
) -> Generator[BatchedTrainEvent]:
    words, word_counts, corpus_bytes, counting_done = packed_input(counts)
    sources: tuple[list[int], int] | None = None
    if isinstance(counts, NamedCounts):  # each source's words, each with its source: provenance
        counting_done = dataclasses.replace(counting_done, sources=counts.sources)
        words, word_counts, word_sources = named_words(counts)
        sources = (word_sources, len(counts.sources))
    # the packed words are all the merging needs: the native count table (~60 bytes per
    # distinct pre-token) is not held during the merges, unless the caller keeps it
    del counts
    yield counting_done
    # nor its statistics, unless the caller keeps the event: the pre-token frequencies are
    # 8 bytes per distinct pre-token, all through the merges
    del counting_done

    token_bytes = initial_token_bytes(specials)
    merges: list[tuple[bytes, bytes]] = []
    num_merges = vocab_size - len(token_bytes)  # an initial tokenizer's merges included
    initial = merging.initial
    batches = merge_columns(
        words, word_counts, token_bytes, num_merges, corpus_bytes, max_token_length=merging.max_token_length,
        min_frequency=merging.min_frequency, forced=initial.forced if initial else (), sources=sources,
    )
    # the kernel has its own copy: the words are not held while it merges
    del words, word_counts
    for batch in batches:
        # merge_columns has already appended this batch's tokens to token_bytes
        merges += zip(map(token_bytes.__getitem__, batch.left_ids), map(token_bytes.__getitem__, batch.right_ids))
        yield batch
    vocab = initial.final_vocab(token_bytes) if initial else dict(enumerate(token_bytes))
    yield Finished(vocab=vocab, merges=merges)


def named_words(counts: NamedCounts) -> tuple[list[bytes] | PackedWords, list[int] | None, list[int]]:
    """Each source's words one after another (a word in several sources once in each, with
    that source's count: the pair counts add up as in the sum) and each word's source."""
    shares = counts.shares()
    sources: list[int] = []
    packs = [share.packed_words() for share in shares]
    if all(pack is not None for pack in packs):
        for number, pack in enumerate(packs):
            assert pack is not None
            sources += [number] * (len(pack[1]) // 8)
        return PackedWords(*(b"".join(pack[k] for pack in packs if pack is not None) for k in range(3))), None, sources
    words: list[bytes] = []
    word_counts: list[int] = []
    for number, share in enumerate(shares):
        share_words, share_counts = share.columns()
        words += share_words
        word_counts += share_counts
        sources += [number] * len(share_words)
    return words, word_counts, sources


def packed_input(counts: PretokenCounts) -> tuple[list[bytes] | PackedWords, list[int] | None, int, CountingDone]:
    """What the merge loop reads of ``counts``: ``(words, word counts, corpus bytes, CountingDone)``
    (the words packed as the native table gives them, with ``None`` for their counts, or as lists)."""
    # the statistics in numpy: with millions of distinct pre-tokens, Python's sort and sums
    # are slow
    import numpy as np  # only here: `import core` and counting do not load numpy

    packed = counts.packed_words()  # the native table's: no Python object per pre-token
    words: list[bytes] | PackedWords
    word_counts: list[int] | None
    if packed is not None:
        words, word_counts = PackedWords(*packed), None
        lengths, occurrences = np.frombuffer(words.lengths, np.int64), np.frombuffer(words.counts, np.int64)
    else:
        words, word_counts = counts.columns()
        lengths, occurrences = counts.lengths_and_counts()
    longest = int(lengths.argmax()) if len(lengths) else -1
    if longest < 0:
        longest_pretoken = b""
    elif isinstance(words, PackedWords):
        start = int(lengths[:longest].sum())
        longest_pretoken = words.blob[start : start + int(lengths[longest])]
    else:
        longest_pretoken = words[longest]
    # largest first, sorted where they are kept: no sorted copy, no reversed view made into
    # another array
    frequencies = array("q", [0]) * len(occurrences)
    descending = np.frombuffer(frequencies, np.int64)
    np.negative(occurrences, out=descending)
    descending.sort()
    np.negative(descending, out=descending)
    del descending  # (a view: the array cannot change size while one is held)
    # the int64 sums below would wrap silently: a bound first (reductions, not a float dot
    # product, whose BLAS threads would spin on after it and slow the merges), near the
    # limit the exact sum
    bound = float(occurrences.sum(dtype=np.float64)) * float(lengths.max()) if len(lengths) else 0.0
    if bound > 2.0**62 and sum(map(operator.mul, lengths.tolist(), occurrences.tolist())) > MAX_CORPUS_BYTES:
        raise OptionsError("the pre-token counts add up to more than 2**63 - 1 bytes, more than training can count")
    corpus_bytes = int(lengths @ occurrences)
    counting_done = CountingDone(
        distinct=len(lengths),
        total=int(occurrences.sum()),
        invalid_bytes=counts.invalid_bytes,
        corpus_bytes=corpus_bytes,
        frequencies=frequencies,
        longest_pretoken=longest_pretoken,
        documents=counts.documents,
        input_bytes=counts.input_bytes,
    )
    return words, word_counts, corpus_bytes, counting_done


def merge_columns(
    words: list[bytes] | PackedWords,
    word_counts: list[int] | None,
    token_bytes: list[bytes],
    num_merges: int,
    corpus_tokens: int,
    *,
    first_rank: int = 0,
    stage: int = 0,
    **loop_options: Any,
) -> Iterator[MergeBatch]:
    """The merge loop's batches (`core.training.merge.merge_pairs`, ``loop_options`` its
    options) as `MergeBatch`es, ``token_bytes`` grown by each batch's tokens when it is
    yielded; ``corpus_tokens`` is the corpus in tokens before the first merge."""
    batches = merge_pairs(words, word_counts, token_bytes, num_merges, **loop_options)
    del words, word_counts, loop_options  # the kernel has its own copy (forced merges too)
    rank = first_rank
    for lefts, rights, new_ids, pair_counts, removed, *per_source in batches:
        # all at C speed: no Python work per merge
        after = array("q", accumulate(removed, operator.sub, initial=corpus_tokens))
        del after[0]
        corpus_tokens = after[-1]
        yield MergeBatch(rank, new_ids, lefts, rights, pair_counts, after, stage,
                         per_source=per_source[0] if per_source else None)
        rank += len(new_ids)
