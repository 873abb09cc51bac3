"""BPE Studio's core: exact, fast byte-level BPE training and tokenization. No Qt.

The API (`__all__`; each name loads on first use, so ``import core`` is light and loads no numpy):

    options = TrainOptions(vocab_size, special_tokens, *, pattern="gpt2", max_token_length=None,
                           min_frequency=1, initial=None, workers=None)      # checked when made
    read = ReadOptions(field="text", sample=None, seed=0, doc_max_chars=None, max_bytes=None)
    run = train(input, options, *, read=None) -> TrainRun
        input: paths, folders, globs (text, JSONL, Parquet; .gz/.bz2/.xz/.zst), an iterable of
        texts, or PretokenCounts. Iterate the run: PretokenizeProgress, CountingDone, MergeBatch,
        Finished; run.merge_events(): one MergeEvent per merge; run.result() -> (vocab, merges);
        run.close() / with: cancel.
    train_bpe(input_path, vocab_size, special_tokens=None, *, pattern="gpt2", workers=None)
        -> (vocab, merges)                                                   # CS336's signature
    count_pretokens(input, special_tokens=(), *, pattern="gpt2", workers=None, read=None,
                    client=None) -> PretokenCounts   # a Mapping[bytes, int]; a + b; .save / .load
    resolve_pattern(name_or_regex) -> Pattern (checked); GPT2_PATTERN, GPT4_PATTERN
    Tokenizer(vocab, merges, special_tokens=None, *, pattern="gpt2"); Tokenizer.load(path)
        .encode (str or bytes) / .encode_bytes / .encode_batch / .encode_iterable / .encode_with_spans
        .encode_to_array -> an int64 array; .encode_batch(texts, return_numpy=True) -> (ids, offsets) / .decode
    save_tokenizer(out_dir, vocab, merges, special_tokens, pattern); load_gpt2_files(vocab, merges)
    encode_corpus(sources, tokenizer, out_npy, *, read=None, workers=None, doc_separator=True,
                  progress=None) -> EncodeFinished                           # a corpus -> .npy of ids
    BpeStudioError: the base of every user mistake `core` raises (`core.errors`)
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:  # what type checkers see; at run time each name loads on first use
    from typing import Any

    from core.corpus.count_run import count_pretokens
    from core.corpus.pretoken_counts import PretokenCounts
    from core.corpus.sources import ReadOptions
    from core.encode.corpus import EncodeFinished, EncodeProgress, encode_corpus
    from core.encode.tokenizer import Tokenizer, TokenSpan
    from core.errors import (BpeStudioError, CorpusError, FormatError, InvalidPatternError, InvalidSpecialTokensError,
                             TokenizerError)
    from core.events import CountingDone, Finished, MergeBatch, MergeEvent, PretokenizeProgress
    from core.formats import load_gpt2_files, save_tokenizer
    from core.pretokenize.patterns import GPT2_PATTERN, GPT4_PATTERN, resolve_pattern
    from core.training.options import TrainOptions
    from core.training.run import TrainRun
    from core.training.trainer import train, train_bpe

_HOMES = {
    "train": "core.training.trainer",
    "train_bpe": "core.training.trainer",
    "TrainRun": "core.training.run",
    "TrainOptions": "core.training.options",
    "ReadOptions": "core.corpus.sources",
    "count_pretokens": "core.corpus.count_run",
    "PretokenCounts": "core.corpus.named_counts",  # (PretokenCounts, with the reader of named files set)
    "PretokenizeProgress": "core.events",
    "CountingDone": "core.events",
    "MergeBatch": "core.events",
    "MergeEvent": "core.events",
    "Finished": "core.events",
    "BpeStudioError": "core.errors",
    "CorpusError": "core.errors",
    "FormatError": "core.errors",
    "TokenizerError": "core.errors",
    "InvalidPatternError": "core.errors",
    "InvalidSpecialTokensError": "core.errors",
    "GPT2_PATTERN": "core.pretokenize.patterns",
    "GPT4_PATTERN": "core.pretokenize.patterns",
    "resolve_pattern": "core.pretokenize.patterns",
    "Tokenizer": "core.encode.tokenizer",
    "TokenSpan": "core.encode.tokenizer",
    "save_tokenizer": "core.formats",
    "load_gpt2_files": "core.formats",
    "encode_corpus": "core.encode.corpus",
    "EncodeProgress": "core.encode.corpus",
    "EncodeFinished": "core.encode.corpus",
}

__all__ = [
    "BpeStudioError",
    "CorpusError",
    "CountingDone",
    "EncodeFinished",
    "EncodeProgress",
    "Finished",
    "FormatError",
    "GPT2_PATTERN",
    "GPT4_PATTERN",
    "InvalidPatternError",
    "InvalidSpecialTokensError",
    "MergeBatch",
    "MergeEvent",
    "PretokenCounts",
    "PretokenizeProgress",
    "ReadOptions",
    "TokenSpan",
    "Tokenizer",
    "TokenizerError",
    "TrainOptions",
    "TrainRun",
    "count_pretokens",
    "encode_corpus",
    "load_gpt2_files",
    "resolve_pattern",
    "save_tokenizer",
    "train",
    "train_bpe",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'core' has no attribute {name!r}")
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*__all__, *(n for n, v in globals().items() if type(v) is type(_importlib) and not n.startswith("_"))})
