"""The vocabulary size ladder: one tokenizer cut at several sizes.

BPE training is greedy, so training with a smaller ``vocab_size`` gives a prefix of the
merges. `shrink` keeps the first merges so that the vocabulary has ``vocab_size`` tokens:
single bytes, special tokens, and the token each kept merge makes. Ids stay as they are
when they are already ``0..vocab_size-1`` (a tokenizer BPE Studio trained: bytes, then
specials, then merges); otherwise the kept ids are renumbered densely in their order
(GPT-2: ``<|endoftext|>`` becomes the last id).
"""

from __future__ import annotations

from collections.abc import Sequence

from core.encode.tokenizer import Tokenizer
from core.errors import OptionsError

__all__ = ["default_sizes", "ladder_tokenizers", "shrink"]


def _minimum(tokenizer: Tokenizer) -> int:
    return 256 + len(tokenizer.special_ids)


def shrink(tokenizer: Tokenizer, vocab_size: int) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """``(vocab, merges)`` of ``tokenizer`` cut to ``vocab_size`` tokens (see the module docstring).

    Raises:
        ValueError: ``vocab_size`` is above the vocabulary or below 256 + the special tokens.
    """
    size = len(tokenizer)
    if vocab_size > size:
        raise OptionsError(f"size {vocab_size:,} is above the tokenizer's vocabulary ({size:,} tokens); "
                           "a tokenizer can only be cut to a smaller size")
    low = _minimum(tokenizer)
    if vocab_size < low:
        raise OptionsError(f"size {vocab_size:,} is below {low:,} (256 bytes + "
                           f"{len(tokenizer.special_ids)} special tokens)")
    specials = set(tokenizer.special_ids.values())
    encoder: dict[bytes, int] = {}
    for token_id in sorted(tokenizer.vocab):
        if token_id not in specials:
            encoder.setdefault(tokenizer.vocab[token_id], token_id)
    kept = {encoder[bytes([b])] for b in range(256)} | specials
    merges: list[tuple[bytes, bytes]] = []
    for left, right in tokenizer.merges:
        if len(kept) >= vocab_size:
            break
        merges.append((left, right))
        kept.add(encoder[left + right])
    if len(kept) < vocab_size:
        # the merges are all kept; the rest are tokens no merge makes (kept in id order)
        for token_id in sorted(set(tokenizer.vocab) - kept):
            if len(kept) >= vocab_size:
                break
            kept.add(token_id)
    ids = sorted(kept)
    if ids == list(range(vocab_size)):
        return {i: tokenizer.vocab[i] for i in ids}, merges
    return {new: tokenizer.vocab[old] for new, old in enumerate(ids)}, merges


def default_sizes(tokenizer: Tokenizer) -> list[int]:
    """A geometric ladder: 512, 1024, 2048, ... below the vocabulary size, then the size itself."""
    size = len(tokenizer)
    sizes = []
    step = 512
    while step < size:
        if step >= _minimum(tokenizer):
            sizes.append(step)
        step *= 2
    return sizes + [size]


def ladder_tokenizers(tokenizer: Tokenizer, sizes: Sequence[int]) -> list[tuple[int, Tokenizer]]:
    """``(size, tokenizer cut at size)`` for each size, smallest first (checked as `shrink`)."""
    out = []
    for size in sorted(set(sizes)):
        if size == len(tokenizer):
            out.append((size, tokenizer))
            continue
        vocab, merges = shrink(tokenizer, size)
        out.append((size, Tokenizer(vocab, merges, tokenizer.special_tokens, pattern=tokenizer.pattern)))
    return out
