"""SuperBPE (Liu et al., COLM 2025): tokens that cross spaces, learned in a second stage.

The rules (VARIANTS.md, section 2):

1. Stage 1 is plain BPE on the options' pre-tokens, ``min(transition, merges to make)`` merges.
2. Stage 2 cuts the text anew (`STAGE2_PATTERN`): each line on its own ("\\n" kept at its
   end), split by ``\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]{2,}[\\r\\n/]*| +(?!\\S)`` in Hugging Face's
   "isolated" mode, so words joined by single spaces stay together.
3. Stage 1's merges are made again, in rank order, on the stage-2 pre-tokens, whatever their counts.
4. Then the best pair whose token has no ``": "`` and at most ``max_words`` words (maximal
   runs of bytes other than ``b" "``) is merged, until the vocabulary is full; other pairs
   are skipped, not ending training.

Both stages run in the one merge loop (`core.training.merge.merge_pairs`): stage 2 is the
loop over the stage-2 counts with stage 1's merges forced and the word rule on. The
tokenizer is rank-based BPE over all merges with the stage-2 cut, which a plain
``tokenizer.json`` holds exactly (its Split pre-tokenizer carries the per-line cut).

Example: ``SuperBPE(transition=180_000, max_words=4)`` for a 200k vocabulary.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from core.errors import OptionsError, OptionsTypeError
from core.events import Finished, MergeBatch, initial_token_bytes
from core.pretokenize.patterns import SUPERBPE_PATTERN, Pattern, resolve_pattern
from core.variants.base import Variant

if TYPE_CHECKING:
    from core.corpus.pretoken_counts import PretokenCounts
    from core.encode.tokenizer import Tokenizer
    from core.events import BatchedTrainEvent

__all__ = ["STAGE2_PATTERN", "SuperBPE", "allowed"]

STAGE2_PATTERN = SUPERBPE_PATTERN
"""The stage-2 cut as one regex whose matches are the pre-tokens (`core.pretokenize.patterns`)."""


def allowed(token: bytes, max_words: int | None) -> bool:
    """Stage 2's rule: no ``": "``, and at most ``max_words`` words (``None``: any number).

    ``allowed(b" of the", 4) -> True``; ``allowed(b"key: value", 4) -> False``;
    ``allowed(b"a b c d e", 4) -> False``.
    """
    if b": " in token:
        return False
    return max_words is None or sum(1 for word in token.split(b" ") if word) <= max_words


@dataclass(frozen=True)
class SuperBPE(Variant):
    """SuperBPE: plain BPE up to ``transition`` merges, then tokens that span spaces.

    Args:
        transition: merges of stage 1 (e.g. 180_000 of a 200k vocabulary); at least 0.
        max_words: at most this many words in a stage-2 token (``None``: no limit); at least 1.
    """

    transition: int
    max_words: int | None = 4

    name: ClassVar[str] = "superbpe"
    title: ClassVar[str] = "SuperBPE"
    summary: ClassVar[str] = ("plain BPE up to the transition, then tokens across spaces "
                              "(\"of the\", \"in order to\"): fewer tokens per text")

    def __post_init__(self) -> None:
        if isinstance(self.transition, bool) or not isinstance(self.transition, int):
            raise OptionsTypeError(f"transition must be an integer (merges of stage 1), got {self.transition!r}")
        if self.transition < 0:
            raise OptionsError(f"transition must be at least 0 (merges of stage 1), got {self.transition}")
        if self.max_words is not None:
            if isinstance(self.max_words, bool) or not isinstance(self.max_words, int):
                raise OptionsTypeError(f"max_words must be an integer or None, got {self.max_words!r}")
            if self.max_words < 1:
                raise OptionsError(f"max_words must be at least 1 (or None: no limit), got {self.max_words}")

    def cuts(self, pattern: Pattern) -> tuple[Pattern, ...]:
        return (pattern, resolve_pattern(STAGE2_PATTERN))

    def merge(
        self, counts: list[PretokenCounts], vocab_size: int, specials: list[str]
    ) -> Generator[BatchedTrainEvent]:
        from core.training.trainer import merge_columns, packed_input

        budget = vocab_size - 256 - len(specials)
        token_bytes = initial_token_bytes(specials)
        merges: list[tuple[bytes, bytes]] = []
        forced: list[tuple[int, int]] = []

        # each table and its packed words are let go once read (the kernel keeps its own copy)
        words, word_counts, corpus_bytes, counting_done = packed_input(counts.pop(0))
        yield counting_done
        del counting_done
        batches = merge_columns(words, word_counts, token_bytes, min(self.transition, budget), corpus_bytes,
                                first_rank=0, stage=1)
        del words, word_counts
        for batch in batches:
            forced += zip(batch.left_ids, batch.right_ids)
            merges += zip(map(token_bytes.__getitem__, batch.left_ids), map(token_bytes.__getitem__, batch.right_ids))
            yield batch
        stage1 = len(merges)

        if budget > stage1:
            # (its CountingDone, with the stage-2 cut's statistics, is not kept through stage 2)
            words, word_counts, corpus_bytes = packed_input(counts.pop(0))[:3]
            stage2_tokens = initial_token_bytes(specials)
            # (stage 1's merges again: their counts are not reported, only the tokens they remove)
            batches = merge_columns(words, word_counts, stage2_tokens, budget, corpus_bytes, first_rank=0, stage=2,
                                    forced=forced, forced_counts=False, max_words=self.max_words or 0,
                                    colon_rule=True, prune=1)
            del words, word_counts, forced  # (each let go once the stage-2 loop has read it)
            for batch in batches:
                skip = max(0, stage1 - batch.first_rank)
                if skip >= len(batch):
                    continue
                if skip:
                    batch = MergeBatch(stage1, batch.token_ids[skip:], batch.left_ids[skip:], batch.right_ids[skip:],
                                       batch.counts[skip:], batch.corpus_tokens[skip:], stage=2)
                merges += zip(map(stage2_tokens.__getitem__, batch.left_ids),
                              map(stage2_tokens.__getitem__, batch.right_ids))
                yield batch
        yield Finished(vocab=dict(enumerate(token_bytes + [left + right for left, right in merges[stage1:]])),
                       merges=merges, stage1_merges=stage1)

    def tokenizer(self, finished: Finished, specials: list[str], pattern: Pattern) -> Tokenizer:
        from core.encode.tokenizer import Tokenizer

        return Tokenizer(finished.vocab, finished.merges, specials, pattern=STAGE2_PATTERN)
