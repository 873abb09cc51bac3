"""Types of the compiled BPE kernel (``_bpe_kernel.c``), optional: `core.encode.piece_encoder` works without it."""

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

class BpeTable:
    """The merges, for `encode_text`."""

    def __init__(self, byte_ids: Sequence[int], rows: NDArray[np.int64], new_ids: NDArray[np.int64]) -> None: ...
    def encode_text(self, text: str, char_lengths: object) -> tuple[bytes, bytes]:
        """Encode the text's consecutive parts (``char_lengths`` characters each): the ids
        of all parts one after another and the number of ids of each, as int64 bytes."""
