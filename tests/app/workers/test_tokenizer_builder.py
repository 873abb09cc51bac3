"""TokenizerBuilder: tokenizers built in the background, the newest request wins, and any
failure (a user error or a bug) reaches `failed` in words."""

from __future__ import annotations

import os
import threading
from types import SimpleNamespace

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

from bpe_studio.app.workers import tokenizer_builder  # noqa: E402
from bpe_studio.app.workers.tokenizer_builder import TokenizerBuilder  # noqa: E402


def session(vocab: dict[int, bytes] | None = None) -> SimpleNamespace:
    vocab = {i: bytes([i]) for i in range(256)} if vocab is None else vocab
    return SimpleNamespace(
        vocab=vocab, merges=[], settings=SimpleNamespace(special_tokens=(), pattern="gpt2", options=SimpleNamespace()),
        merge_counts_by_id=lambda: {},
    )


@pytest.fixture
def builder(qtbot) -> TokenizerBuilder:
    return TokenizerBuilder()


def test_builds_in_the_background(qtbot, builder: TokenizerBuilder) -> None:
    with qtbot.waitSignal(builder.ready, timeout=10_000) as ready:
        builder.build(session())
    tokenizer, counts = ready.args
    assert tokenizer.encode("hi") == [104, 105] and counts == {}
    assert builder.shutdown(1_000)


def test_a_bad_vocabulary_says_why(qtbot, builder: TokenizerBuilder) -> None:
    with qtbot.waitSignal(builder.failed, timeout=10_000) as failed:
        builder.build(session({i: bytes([i]) for i in range(200)}))
    assert failed.args[0].startswith("The tokenizer cannot be built: ")


def test_an_unexpected_error_is_reported(qtbot, builder: TokenizerBuilder, monkeypatch) -> None:
    def broken(*_args, **_kwargs):
        raise KeyError("pattern")

    monkeypatch.setattr(tokenizer_builder, "Tokenizer", broken)
    with qtbot.waitSignal(builder.failed, timeout=10_000) as failed:
        builder.build(session())
    assert failed.args == ["building the tokenizer failed unexpectedly (KeyError: 'pattern')"]


def test_the_newest_request_wins(qtbot, builder: TokenizerBuilder) -> None:
    gate = threading.Event()
    slow = session()
    slow.merge_counts_by_id = lambda: gate.wait(5) and {"slow": 1}
    fast = session()
    fast.merge_counts_by_id = lambda: {"fast": 1}
    got: list[object] = []
    builder.ready.connect(lambda _t, counts: got.append(counts))
    builder.build(slow)
    with qtbot.waitSignal(builder.ready, timeout=10_000):
        builder.build(fast)
    gate.set()
    assert builder.shutdown(5_000)
    qtbot.wait(50)
    assert got == [{"fast": 1}]
