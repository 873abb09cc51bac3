"""More special tokens than the C code finds itself (`NATIVE_MAX_SPECIALS`): the text is cut at
them in Python, in one step for all (`SpecialMatcher.split`), and the stretches between them
are encoded in one C call — the same ids as a plain loop, in about the time of one token."""

from __future__ import annotations

import random
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from core.encode.tokenizer import Tokenizer
from core.formats import load_gpt2_files
from core.pretokenize.specials import LONG_SPECIAL, NATIVE_MAX_SPECIALS

BYTES = {i: bytes([i]) for i in range(256)}  # no merges: an ordinary byte is its own id
SPECIALS = ["<|a|>", "<|a|><|b|>", "<|b|>", "é€", "<|" + "z" * LONG_SPECIAL + "|>"]
SPECIALS += [f"<|extra{k}|>" for k in range(NATIVE_MAX_SPECIALS)]


def reference(tok: Tokenizer, text: str) -> list[int]:
    ids, pos = [], 0
    while pos < len(text):
        hits = [t for t in tok.special_tokens if text.startswith(t, pos)]
        if hits:
            best = max(hits, key=len)
            ids.append(tok.special_ids[best])
            pos += len(best)
        else:
            ids += list(text[pos].encode("utf-8"))
            pos += 1
    return ids


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([*SPECIALS, "<|", "<|a|><|", "x", " y", "é", "€", "z" * 3]), max_size=14))
def test_many_special_tokens_encode_as_a_plain_loop_does(parts: list[str]) -> None:
    tok = Tokenizer(BYTES, [], SPECIALS)
    text = "".join(parts)
    want = reference(tok, text)
    assert tok.encode(text) == want
    assert tok.encode(text.encode()) == want
    assert tok.encode_to_array(text.encode()).tolist() == want
    assert tok.encode_batch([text, "", text + "<|extra3|>"], workers=1) == [want, [], want + [tok.special_ids["<|extra3|>"]]]


def _seconds(tok: Tokenizer, text: str) -> float:
    tok.encode(text)  # caches warm
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        tok.encode(text)
        best = min(best, time.perf_counter() - started)
    return best


def test_encoding_time_does_not_grow_with_the_number_of_special_tokens(shared_dir: Path) -> None:
    """GPT-2's tokenizer with 3,000 special tokens, one in the text every ~100 characters: at
    most about twice the time with one token (an alternation of every token, tried at each
    occurrence, took ~30x)."""
    fixtures = shared_dir / "fixtures"
    vocab, merges = load_gpt2_files(fixtures / "gpt2_vocab.json", fixtures / "gpt2_merges.txt", [])
    rng = random.Random(3)
    many = [f"<|tok{k:05d}|>" for k in rng.sample(range(2, 100_000), 2_999)] + ["<|tok00001|>"]
    prose = (fixtures / "corpus.en").read_text(encoding="utf-8")  # 133 KB
    text = "<|tok00001|>".join(prose[at : at + 100] for at in range(0, len(prose), 100))
    one, lots = Tokenizer(vocab, merges, ["<|tok00001|>"]), Tokenizer(vocab, merges, many)
    one_id, lots_id = one.special_ids["<|tok00001|>"], lots.special_ids["<|tok00001|>"]
    want = [lots_id if i == one_id else i for i in one.encode(text)]
    assert want.count(lots_id) == text.count("<|tok00001|>") > 1_000
    assert lots.encode(text) == want
    assert lots.encode_to_array(text.encode()).tolist() == want
    assert _seconds(lots, text) <= 2.5 * _seconds(one, text) + 0.005
