"""Types of the compiled merge loop (``_merge_kernel.c``), optional: `core.train.merge` runs without it."""

class MergeState:
    """Words, counts and the pair index of one training run, for `step`."""

    def __init__(self, words: list[bytes], counts: list[int], token_bytes: list[bytes]) -> None: ...
    def step(self, max_merges: int) -> tuple[bytes, bytes, bytes, bytes, bytes]:
        """Run up to ``max_merges`` merges: five columns of native int64 values (left ids,
        right ids, new ids, counts, tokens removed); empty columns when no pair is left."""
