"""Stage 3 — text to ids: the tokenizer, its caches and BPE kernels, and whole corpora to ``.npy``.

- `core.encode.tokenizer`: `Tokenizer` (encode, decode, spans);
- `core.encode.piece_encoder`: pieces to ids through capped caches;
- `core.encode.bpe_batch`: BPE of many pre-tokens at once with numpy (the compiled
  ``_bpe_kernel.c`` does it when built);
- `core.encode.corpus_to_npy`: a corpus file to a ``.npy`` of ids, in parallel.
"""
