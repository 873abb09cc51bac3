"""Types of the compiled Picky BPE merge loop (``_picky_kernel.c``), optional: `core.variants.picky` runs without it."""

class PickyState:
    """The words, counts, pair index and vocabulary of one Picky BPE run, for `step`."""

    def __init__(self, blob: bytes, lengths: bytes, counts: bytes, specials: list[bytes], threshold: float) -> None:
        """The words packed (`core.training.merge.PackedWords`): their bytes one after another,
        each one's length and (positive) count as native int64. Ids: 0-255 the bytes, then
        ``specials``, then the merged tokens. Raises OverflowError when the weighted bytes
        reach 2**53 (the Python loop then runs)."""
    def step(
        self, max_merges: int, vocab_size: int, seconds: float = 0.0
    ) -> tuple[bytes, bytes, bytes, bytes, bytes, bytes, list[tuple[int, int, bytes, int]]]:
        """Run merges, each with its removals, until ``max_merges`` are made, ``vocab_size``
        tokens are live, no pair is left, or (``seconds`` > 0) that long has passed: six
        columns of native int64 values (left ids, right ids, new ids, pair counts, tokens
        removed net of the splits' pieces, restored 0/1) and the splits as ``(rank,
        token_id, pieces, occurrences)``, the pieces' ids as native int32; empty columns
        when no merge is left."""
