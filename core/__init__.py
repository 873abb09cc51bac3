"""BPE Studio's core: exact, fast byte-level BPE training and tokenization. No Qt.

Public API:
    train_bpe(input_path, vocab_size, special_tokens, *, pattern="gpt2", workers=None)
        -> (vocab, merges)
    train_bpe_events(...) -> Iterator of PretokenizeProgress | CountingDone | MergeEvent | Finished
    resolve_pattern(name_or_regex) -> Pattern; GPT2_PATTERN, GPT4_PATTERN
"""

from __future__ import annotations

from core.events import CountingDone, Finished, MergeEvent, PretokenizeProgress, TrainEvent
from core.patterns import GPT2_PATTERN, GPT4_PATTERN, InvalidPatternError, Pattern, resolve_pattern
from core.specials import InvalidSpecialTokensError, split_on_specials
from core.train import CorpusError, train_bpe, train_bpe_events

__all__ = [
    "GPT2_PATTERN",
    "GPT4_PATTERN",
    "CorpusError",
    "CountingDone",
    "Finished",
    "InvalidPatternError",
    "InvalidSpecialTokensError",
    "MergeEvent",
    "Pattern",
    "PretokenizeProgress",
    "TrainEvent",
    "resolve_pattern",
    "split_on_specials",
    "train_bpe",
    "train_bpe_events",
]
