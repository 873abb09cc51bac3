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
        sources: bytes = b"",
        nsources: int = 0,
        forced_counts: bool = True,
        prune: int = 0,
    ) -> None:
        """``words`` and ``counts``: lists, or packed (`core.training.merge.PackedWords`): the
        words' bytes one after another with their native int64 lengths, and native int64
        counts. ``max_token_length`` 0: no limit; ``forced``: native int32 (left, right) id
        pairs merged first, in order (``array('i', ...).tobytes()``); ``max_words`` (0: no
        limit) and ``colon_rule``: SuperBPE's stage-2 rule on the merged token; ``sources``:
        each word's source (native uint16) below ``nsources``: each merge also gives its
        count per source (a sixth column); ``prune``: 1, the rare pairs leave the pair map
        when it would grow (counted again if needed), 2 at every merge (tests), 0 never."""
    def step(self, max_merges: int) -> tuple[bytes, ...]:
        """Run up to ``max_merges`` merges: five columns of native int64 values (left ids,
        right ids, new ids, counts, tokens removed; with sources a sixth, each merge's count
        per source); empty columns when no pair is left."""
    def best(self) -> tuple[int, int, int] | None:
        """``(left, right, count)`` of the pair `step` would merge next, or ``None``."""
    def merge(self, left: int, right: int) -> tuple[bytes, ...]:
        """`step`'s columns for one merge of ``(left, right)``, made now whatever its count."""
    def memory(self) -> dict[str, int]:
        """The bytes each structure holds (records, holders, map, heap, ...; for the memory
        benchmarks)."""

def merge_many(states: tuple[MergeState, ...], left: int, right: int) -> bytes:
    """``MergeState.merge(left, right)`` in each state: their (count, tokens removed) as native int64 pairs."""
