"""Types of the compiled merge loop (``_merge_kernel.c``), optional: `core.training.merge` runs without it."""

class MergeState:
    """Words, counts and the pair index of one training run, for `step`."""

    def __init__(
        self,
        words: list[bytes] | tuple[bytes, bytes],
        counts: list[int] | bytes,
        token_bytes: list[bytes],
        *,
        max_token_length: int = 0,
        min_frequency: int = 0,
        forced: bytes = b"",
        max_words: int = 0,
        colon_rule: bool = False,
    ) -> None:
        """``words`` and ``counts``: lists, or packed (`core.training.merge.PackedWords`): the
        words' bytes one after another with their native int64 lengths, and native int64
        counts. ``max_token_length`` 0: no limit; ``forced``: native int32 (left, right) id
        pairs merged first, in order (``array('i', ...).tobytes()``); ``max_words`` (0: no
        limit) and ``colon_rule``: SuperBPE's stage-2 rule on the merged token."""
    def step(self, max_merges: int) -> tuple[bytes, bytes, bytes, bytes, bytes]:
        """Run up to ``max_merges`` merges: five columns of native int64 values (left ids,
        right ids, new ids, counts, tokens removed); empty columns when no pair is left."""
    def memory(self) -> dict[str, int]:
        """The bytes each structure holds (records, holders, map, heap, ...; for the memory
        benchmarks)."""
