"""Stage 3 — text to ids: the tokenizer, its engines, and whole corpora to ``.npy``.

- `core.encode.tokenizer`: `Tokenizer` (encode, encode_batch, encode_iterable, encode_with_spans,
  encode_to_array, decode); `core.encode.engine` chooses its engine, native or Python, in one place;
- `core.encode.native` (the compiled ``_bpe_kernel.c``) and `core.encode.piece_encoder`
  (regex, capped caches) are the engines; `core.encode.merge` the Python merge reference;
- `core.encode.streaming` and `core.encode.spans`: streams in bounded memory, token spans;
- `core.encode.corpus`: `encode_corpus` / `encode_corpus_events`, any corpus to a ``.npy``
  (over `core.encode.pipeline`, `core.encode.plain_file` and `core.encode.documents`).
"""
