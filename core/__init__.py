"""BPE Studio's core: exact, fast byte-level BPE training and tokenization. No Qt.

Public API:
    train_bpe(source, vocab_size, special_tokens, *, pattern="gpt2", workers=None, field="text",
              max_bytes=None, sample=None, seed=0, doc_max_chars=None,
              max_token_length=None, min_frequency=1, initial=None) -> (vocab, merges)
        source: files, folders, globs; plain text, JSONL, Parquet; .gz/.bz2/.xz/.zst
    train_bpe_from_iterator(texts, vocab_size, special_tokens, ...) -> (vocab, merges): each str a document
    train_bpe_events(...) -> Iterator of PretokenizeProgress | CountingDone | MergeEvent | Finished
    count_pretokens(source, special_tokens, *, pattern="gpt2", workers=None, field="text", ...) -> PretokenCounts
        PretokenCounts: pre-token bytes -> count; a + b; .save(path) / .load(path); .from_pairs(pairs)
    train_bpe_from_counts(counts, vocab_size, special_tokens=None, ...) -> (vocab, merges): train_bpe's merges
        (_events / _batches variants as below); core.distributed.count_pretokens: the counting on Dask
    train_bpe_batches(...) -> the same, with the merges in batches of id columns (MergeBatch);
        MergeBatch.extend_vocab(token_bytes) grows initial_token_bytes(special_tokens)
    resolve_pattern(name_or_regex) -> Pattern; GPT2_PATTERN, GPT4_PATTERN
    Tokenizer(vocab, merges, special_tokens=None, *, pattern="gpt2"); Tokenizer.load(path) (also .tiktoken)
        .encode / .encode_iterable / .encode_with_spans -> [TokenSpan] / .decode
    save_tokenizer(out_dir, vocab, merges, special_tokens, pattern); load_gpt2_files(vocab, merges)
    encode_file(corpus, tokenizer, out_npy, *, workers=None, progress=None) -> EncodeFinished
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.corpus.pretoken_counts import PretokenCounts, count_pretokens
from core.errors import CorpusError, InvalidPatternError, InvalidSpecialTokensError
from core.events import (
    BatchedTrainEvent,
    CountingDone,
    Finished,
    MergeBatch,
    MergeEvent,
    PretokenizeProgress,
    TrainEvent,
    initial_token_bytes,
)
from core.pretokenize.patterns import GPT2_PATTERN, GPT4_PATTERN, Pattern, resolve_pattern
from core.pretokenize.specials import split_on_specials
from core.train.trainer import (
    train_bpe,
    train_bpe_batches,
    train_bpe_batches_from_iterator,
    train_bpe_events,
    train_bpe_from_counts,
    train_bpe_from_counts_batches,
    train_bpe_from_counts_events,
    train_bpe_from_iterator,
)

if TYPE_CHECKING:
    from core.encode.corpus_to_npy import EncodeFinished, EncodeProgress, encode_file, encode_file_events
    from core.formats import FormatError, load_gpt2_files, save_tokenizer
    from core.encode.tokenizer import TokenSpan, Tokenizer, TokenizerError

# The tokenizer side needs numpy; training alone does not. These load on first use, so
# a training process (and each of its workers) stays ~15 MB smaller.
_LAZY = {
    "EncodeFinished": "core.encode.corpus_to_npy",
    "EncodeProgress": "core.encode.corpus_to_npy",
    "encode_file": "core.encode.corpus_to_npy",
    "encode_file_events": "core.encode.corpus_to_npy",
    "FormatError": "core.formats",
    "load_gpt2_files": "core.formats",
    "save_tokenizer": "core.formats",
    "TokenSpan": "core.encode.tokenizer",
    "Tokenizer": "core.encode.tokenizer",
    "TokenizerError": "core.encode.tokenizer",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'core' has no attribute {name!r}")


__all__ = [
    "BatchedTrainEvent",
    "GPT2_PATTERN",
    "GPT4_PATTERN",
    "CorpusError",
    "CountingDone",
    "EncodeFinished",
    "EncodeProgress",
    "FormatError",
    "Finished",
    "InvalidPatternError",
    "InvalidSpecialTokensError",
    "MergeBatch",
    "MergeEvent",
    "Pattern",
    "PretokenCounts",
    "PretokenizeProgress",
    "TokenSpan",
    "Tokenizer",
    "TokenizerError",
    "TrainEvent",
    "count_pretokens",
    "encode_file",
    "encode_file_events",
    "initial_token_bytes",
    "load_gpt2_files",
    "resolve_pattern",
    "save_tokenizer",
    "split_on_specials",
    "train_bpe",
    "train_bpe_batches",
    "train_bpe_batches_from_iterator",
    "train_bpe_events",
    "train_bpe_from_counts",
    "train_bpe_from_counts_batches",
    "train_bpe_from_counts_events",
    "train_bpe_from_iterator",
]
