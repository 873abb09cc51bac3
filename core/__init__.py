"""BPE Studio's core: exact, fast byte-level BPE training and tokenization. No Qt.

Public API:
    train_bpe(input_path, vocab_size, special_tokens, *, pattern="gpt2", workers=None)
        -> (vocab, merges)
    train_bpe_events(...) -> Iterator of PretokenizeProgress | CountingDone | MergeEvent | Finished
    resolve_pattern(name_or_regex) -> Pattern; GPT2_PATTERN, GPT4_PATTERN
    Tokenizer(vocab, merges, special_tokens=None, *, pattern="gpt2"); Tokenizer.load(path)
        .encode / .encode_iterable / .encode_with_spans -> [TokenSpan] / .decode
    save_tokenizer(out_dir, vocab, merges, special_tokens, pattern); load_gpt2_files(vocab, merges)
    encode_file(corpus, tokenizer, out_npy, *, workers=None, progress=None) -> EncodeFinished
"""

from __future__ import annotations

from core.encode_corpus import EncodeFinished, EncodeProgress, encode_file, encode_file_events
from core.events import CountingDone, Finished, MergeEvent, PretokenizeProgress, TrainEvent
from core.formats import FormatError, load_gpt2_files, save_tokenizer
from core.patterns import GPT2_PATTERN, GPT4_PATTERN, InvalidPatternError, Pattern, resolve_pattern
from core.specials import InvalidSpecialTokensError, split_on_specials
from core.train import CorpusError, train_bpe, train_bpe_events
from core.tokenizer import TokenSpan, Tokenizer, TokenizerError

__all__ = [
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
    "MergeEvent",
    "Pattern",
    "PretokenizeProgress",
    "TokenSpan",
    "Tokenizer",
    "TokenizerError",
    "TrainEvent",
    "encode_file",
    "encode_file_events",
    "load_gpt2_files",
    "resolve_pattern",
    "save_tokenizer",
    "split_on_specials",
    "train_bpe",
    "train_bpe_events",
]
