"""Token ids back to bytes: `VocabDecoder`, what `Tokenizer.decode_bytes` runs.

A list of ints, or a one-dimensional numpy array of integers, is joined in one C call
(`core.encode._bpe_kernel.Decoder`, a table of each id's bytes built on first use) when
every id names a token. Anything else (another iterable, an id of another type or not in
the vocabulary) takes the checked Python path, which says what is wrong; so does every
call with ``BPE_STUDIO_PURE_PYTHON=1``, or a vocabulary whose ids are too sparse for a table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from core.errors import OptionsTypeError, TokenizerError
from core.pretokenize.native import python_forced

try:
    from core.encode._bpe_kernel import Decoder as _Decoder
except ImportError:  # built without a C compiler (or an older build without Decoder)
    _Decoder = None  # type: ignore[assignment,misc]

__all__ = ["VocabDecoder", "unknown_id_error"]

SPARSE_IDS = 1024
"""A vocabulary whose largest id passes twice its size plus this decodes in Python (a table
indexed by id would be mostly empty)."""


def unknown_id_error(vocab: Mapping[int, bytes], token_id: object) -> TokenizerError:
    """The error for ``token_id``, which is not an id of ``vocab``."""
    return TokenizerError(f"token id {token_id!r} is not in the vocabulary (ids 0..{max(vocab)})")


class VocabDecoder:
    """``ids -> bytes`` for one vocabulary (id -> token bytes, read when the table is built).
    Pickled without its table (a new one is built on first use)."""

    def __init__(self, vocab: Mapping[int, bytes]) -> None:
        self._vocab = vocab
        self._table: _Decoder | None = None
        self._table_checked = False

    def __getstate__(self) -> dict[str, Any]:
        return {"_vocab": self._vocab}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._vocab = state["_vocab"]
        self._table = None
        self._table_checked = False

    def _native(self) -> _Decoder | None:
        if not self._table_checked:
            top = max(self._vocab, default=-1)
            if _Decoder is not None and 0 <= min(self._vocab, default=0) and top < 2 * len(self._vocab) + SPARSE_IDS:
                self._table = _Decoder(list(map(self._vocab.get, range(top + 1))))
            self._table_checked = True
        return self._table

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes of ``ids`` joined; ``TokenizerError`` names an id not in the vocabulary,
        ``TypeError`` an id that is not an integer (``1.0``, ``True``)."""
        if not python_forced():
            table = self._native()
            if table is not None:
                data = None
                if type(ids) is list:
                    data = table.decode(ids)
                elif isinstance(ids, np.ndarray) and ids.ndim == 1 and ids.dtype.kind in "iu":
                    data = table.decode(np.ascontiguousarray(ids, dtype=np.int64))
                if data is not None:
                    return data
        return self._checked(ids)

    def _checked(self, ids: Iterable[int]) -> bytes:
        vocab = self._vocab
        if hasattr(ids, "tolist"):  # numpy arrays: plain ints look up faster
            ids = ids.tolist()
        elif not isinstance(ids, Sequence) or isinstance(ids, (str, bytes)):
            if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
                raise OptionsTypeError(f"decode() takes a sequence of token ids, got {type(ids).__name__}")
            ids = list(ids)
        if not set(map(type, ids)) <= {int}:
            for position, i in enumerate(ids):
                if type(i) is not int and (isinstance(i, bool) or not hasattr(i, "__index__")):
                    raise OptionsTypeError(
                        f"decode() takes token ids (integers); ids[{position}] is {i!r} ({type(i).__name__})"
                    )
            ids = [int(i) for i in ids]  # numpy integers and other int-like ids
        try:
            return b"".join([vocab[i] for i in ids])
        except KeyError:
            bad = next(i for i in ids if i not in vocab)
            raise unknown_id_error(vocab, bad) from None
