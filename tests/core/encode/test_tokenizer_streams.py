"""The tokenizer's streams and spans: encode_iterable equals encode however the text is cut,
in bounded memory; encode_with_spans places every token in the text (bytes and characters)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import core.encode.streaming as streaming_module
from core.encode.tokenizer import TokenSpan, Tokenizer, TokenSpans
from tests.tokenizer_cases import FAST, byte_tokenizer, texts

REPOSITORY = Path(__file__).resolve().parents[3]


# ----------------------------------------------------------------------------- streaming


@pytest.fixture
def cut_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make encode_iterable look for a cut after every piece it is given."""
    monkeypatch.setattr(streaming_module, "ITER_BATCH_CHARS", 0)


def test_encode_iterable_every_split(trained: Tokenizer, cut_every_time: None) -> None:
    text = "Hi  there<|a|><|b|>x DON'T \n\n 123456 漢字<|endoftext|> e\u0301<|a|>  end\u3000 "
    expected = trained.encode(text)
    for i in range(len(text) + 1):
        assert list(trained.encode_iterable([text[:i], text[i:]])) == expected, i
    for i, j in itertools.combinations(range(0, len(text) + 1, 3), 2):
        assert list(trained.encode_iterable([text[:i], "", text[i:j], text[j:]])) == expected, (i, j)
    assert list(trained.encode_iterable(iter(text))) == expected  # one character at a time


@FAST
@given(pieces=st.lists(texts, max_size=6))
def test_encode_iterable_equals_encode(trained: Tokenizer, cut_every_time: None, pieces: list[str]) -> None:
    assert list(trained.encode_iterable(pieces)) == trained.encode("".join(pieces))


def test_encode_iterable_is_lazy_and_batches_by_default() -> None:
    tok = byte_tokenizer(["<|endoftext|>"])
    endless = itertools.cycle(["hello world<|endoftext|>", " hello\n"])
    first = list(itertools.islice(tok.encode_iterable(endless), 1000))
    assert first == tok.encode("hello world<|endoftext|> hello\n" * 300)[:1000]


def test_encode_iterable_long_run_without_cut_point() -> None:
    # One 200k-character run with no whitespace: the fallback cuts at pre-token boundaries.
    tok = byte_tokenizer()
    text = "hello,world;" * 20_000
    assert list(tok.encode_iterable(text[i : i + 1000] for i in range(0, len(text), 1000))) == tok.encode(text)


# The whole process's peak, so the native caches' pages count (tracemalloc sees none of them):
# a stream of 150,000 made-up words, each seen several times (a cache keeps a pre-token seen
# twice), fills every cache of the encoder it uses.
STREAM_MEMORY = """
import random, sys
from tests.tokenizer_cases import byte_tokenizer

def peak_kb():
    return int(next(line for line in open("/proc/self/status") if line.startswith("VmHWM")).split()[1])

rng = random.Random(3)
words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyzé€", k=rng.randint(2, 9))) for _ in range(150_000)]

def lines(count):
    for n in range(count):
        yield " ".join(rng.choices(words, k=12)) + ("<|endoftext|>" if n % 50 == 0 else "\\n")

tok = byte_tokenizer(["<|endoftext|>"])
assert tok.encode("warm up")  # the imports made, not the stream's caches
open("/proc/self/clear_refs", "w").write("5")  # the peak starts again from here
before = peak_kb()
total = sum(1 for _ in tok.encode_iterable(lines(int(sys.argv[1]))))
print(total, peak_kb() - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak from /proc")
@pytest.mark.parametrize(("engine", "lines"), [("native", 60_000), ("python", 10_000)])
def test_encode_iterable_extra_memory_is_a_few_mb_caches_included(engine: str, lines: int) -> None:
    env = {**os.environ, "BPE_STUDIO_PURE_PYTHON": "1" if engine == "python" else "0"}
    done = subprocess.run([sys.executable, "-c", STREAM_MEMORY, str(lines)], cwd=REPOSITORY, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    total, extra_kb = map(int, done.stdout.split())
    assert total > lines * 40  # every line went through (4 MB of text, or 0.7 MB in Python)
    assert extra_kb < 6_000, f"encode_iterable took {extra_kb / 1000:.1f} MB more"


# ----------------------------------------------------------------------------- spans


def check_spans(tok: Tokenizer, text: str, spans: list[TokenSpan]) -> None:
    data = text.encode("utf-8", "surrogateescape")
    assert [s.token_id for s in spans] == tok.encode(text)
    starts = [0]
    for ch in text:
        starts.append(starts[-1] + len(ch.encode("utf-8", "surrogateescape")))
    for s in spans:
        assert data[s.byte_start : s.byte_end] == tok.token_bytes(s.token_id)
        assert s.special == (s.token_id in tok.special_ids.values())
        # The characters touched: the smallest whole-character range holding the bytes.
        assert starts[s.char_start] <= s.byte_start < starts[s.char_start + 1]
        assert starts[s.char_end - 1] < s.byte_end <= starts[s.char_end]
        assert s.partial == (starts[s.char_start] != s.byte_start or starts[s.char_end] != s.byte_end)
    if tok.pattern.name != "custom":  # patterns that cover all text: spans tile it
        assert [s.byte_start for s in spans] == [0, *(s.byte_end for s in spans)][: len(spans)]
        assert (spans[-1].byte_end if spans else 0) == len(data)


@FAST
@given(text=texts)
def test_spans_cover_the_input(trained: Tokenizer, text: str) -> None:
    check_spans(trained, text, trained.encode_with_spans(text))


@FAST
@given(text=texts, start=st.integers(-8, 80), stop=st.integers(-8, 80))
def test_token_spans_are_the_sequence_of_their_spans(trained: Tokenizer, text: str, start: int, stop: int) -> None:
    spans = trained.encode_with_spans(text)
    objects = [spans[k] for k in range(len(spans))]
    assert list(spans) == objects and spans == objects and objects == spans
    assert [spans[k] for k in range(-len(spans), 0)] == objects
    part = spans[start:stop]
    assert isinstance(part, TokenSpans) and part == objects[start:stop] and list(part) == objects[start:stop]
    assert spans.token_ids.tolist() == trained.encode(text)
    assert TokenSpans.of(objects) == spans
    if objects:
        assert spans != objects[:-1] and (len(spans) == 1 or spans[1:] != spans[:-1])  # columns compared
        flipped = TokenSpan(objects[0].token_id, objects[0].byte_start, objects[0].byte_end, objects[0].char_start,
                            objects[0].char_end, not objects[0].partial, objects[0].special)
        assert TokenSpans.of([flipped, *objects[1:]]) != spans


def test_spans_of_split_characters() -> None:
    tok = byte_tokenizer(["<|a|>"])
    text = "a€<|a|>😀"  # no merges for these bytes: every byte is its own token
    spans = tok.encode_with_spans(text)
    check_spans(tok, text, spans)
    euro = [s for s in spans if s.char_start == 1]
    assert len(euro) == 3 and all(s.partial and (s.char_start, s.char_end) == (1, 2) for s in euro)
    assert spans[4] == TokenSpan(261, 4, 9, 2, 7, False, True)
    assert [(s.char_start, s.char_end, s.byte_start, s.partial) for s in spans[5:]] == [
        (7, 8, b, True) for b in range(9, 13)
    ]
