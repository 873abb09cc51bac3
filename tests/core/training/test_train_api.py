"""The training API: `TrainOptions` checked when made, one entry (`core.train`) for every
input form, the `TrainRun` it returns, and `train_bpe` with CS336's signature."""

from __future__ import annotations

import inspect
import pickle
from pathlib import Path

import pytest

import core
from core import MergeBatch, MergeEvent, ReadOptions, TrainOptions
from core.errors import InvalidPatternError, InvalidSpecialTokensError
from core.training.reference import train_bpe_reference

EOT = "<|endoftext|>"
DOCS = ["low low lower lowest", "newer newest wider widest", "the lower the newer"]


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "c.txt"
    path.write_text(EOT.join(DOCS), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"vocab_size": "300"}, TypeError, "vocab_size must be an integer"),
        ({"vocab_size": 300.0}, TypeError, "vocab_size must be an integer"),
        ({"vocab_size": True}, TypeError, "vocab_size must be an integer"),
        ({"vocab_size": 255}, ValueError, "vocab_size 255 is too small"),
        ({"vocab_size": 256, "special_tokens": [EOT]}, ValueError, "at least 256 byte tokens \\+ 1 special"),
        ({"special_tokens": EOT}, InvalidSpecialTokensError,
         "special_tokens must be a list of strings, not a str; did you mean \\['<\\|endoftext\\|>'\\]\\?"),
        ({"special_tokens": b"<s>"}, InvalidSpecialTokensError, "not a bytes"),
        ({"special_tokens": ["a", "a"]}, InvalidSpecialTokensError, "given twice"),
        ({"special_tokens": [""]}, InvalidSpecialTokensError, "empty"),
        ({"special_tokens": [1]}, InvalidSpecialTokensError, "must be strings"),
        ({"pattern": ""}, InvalidPatternError, "pattern is empty"),
        ({"pattern": "("}, InvalidPatternError, "invalid pre-tokenization pattern"),
        ({"pattern": "a*"}, InvalidPatternError, "matches the empty string"),
        ({"pattern": None}, TypeError, "pattern must be"),
        ({"max_token_length": 1}, ValueError, "max_token_length must be at least 2"),
        ({"max_token_length": 2.5}, TypeError, "max_token_length must be an integer"),
        ({"min_frequency": 0}, ValueError, "min_frequency must be at least 1"),
        ({"min_frequency": "1"}, TypeError, "min_frequency must be an integer"),
        ({"workers": 0}, ValueError, "workers must be at least 1"),
        ({"workers": 1.5}, TypeError, "workers must be an integer"),
        ({"initial": 42}, TypeError, "initial must be a Tokenizer or the path of one"),
        ({"initial": ""}, ValueError, "initial is an empty path"),
    ],
)
def test_bad_options_are_refused_when_made(kwargs: dict, error: type, message: str) -> None:
    values = {"vocab_size": 300, **kwargs}
    with pytest.raises(error, match=message):
        TrainOptions(values.pop("vocab_size"), **values)


def test_options_are_frozen_normalised_and_pickle() -> None:
    options = TrainOptions(300, [EOT], pattern="gpt4", max_token_length=8, workers=2)
    assert options.special_tokens == (EOT,)
    with pytest.raises(AttributeError):
        options.vocab_size = 400  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(options)) == options
    with pytest.raises(TypeError):
        TrainOptions(300, [EOT], "gpt4")  # type: ignore[misc] - the rest are keywords
    with pytest.raises(ValueError, match="sample must be a fraction"):
        ReadOptions(sample=0)


def test_train_bpe_keeps_cs336_signature_and_refuses_non_paths(corpus: Path) -> None:
    assert list(inspect.signature(core.train_bpe).parameters)[:3] == ["input_path", "vocab_size", "special_tokens"]
    assert core.train_bpe(corpus, 280, [EOT]) == train_bpe_reference(corpus, 280, [EOT])
    with pytest.raises(TypeError, match="input_path must be the path of a corpus file, got NoneType"):
        core.train_bpe(None, 300)  # type: ignore[arg-type]
    with pytest.raises(InvalidSpecialTokensError, match="did you mean"):
        core.train_bpe(corpus, 300, EOT)  # type: ignore[arg-type]


def test_every_input_form_gives_the_same_merges(corpus: Path, tmp_path: Path) -> None:
    options = TrainOptions(290, [EOT], workers=1)
    expected = train_bpe_reference(corpus, 290, [EOT])
    assert core.train(corpus, options).result() == expected
    assert core.train(str(corpus), options).result() == expected
    assert core.train([corpus], options).result() == expected
    assert core.train(str(tmp_path / "*.txt"), options).result() == expected
    assert core.train(iter([EOT.join(DOCS)]), options).result() == expected
    assert core.train((t for t in [EOT.join(DOCS)]), options).result() == expected
    counts = core.count_pretokens(corpus, [EOT])
    assert core.train(counts, options).result() == expected
    # each text is a document, as if a special token stood between them
    assert core.train(iter(DOCS), options).result() == expected


@pytest.mark.parametrize("bad", [None, b"bytes", 42, object()])
def test_bad_input_is_a_type_error_before_any_work(bad: object) -> None:
    with pytest.raises(TypeError, match="the input must be a path"):
        core.train(bad, TrainOptions(300))  # type: ignore[arg-type]


def test_bad_input_and_options_are_refused_at_the_call(corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        core.train(tmp_path / "missing.txt", TrainOptions(300))
    with pytest.raises(TypeError, match="options must be TrainOptions"):
        core.train(corpus, 300)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="read must be ReadOptions"):
        core.train(corpus, TrainOptions(300), read={"field": "x"})  # type: ignore[arg-type]
    counts = core.count_pretokens(corpus, [EOT])
    with pytest.raises(ValueError, match="read options apply when reading a corpus"):
        core.train(counts, TrainOptions(300, [EOT]), read=ReadOptions(sample=0.5))
    with pytest.raises(ValueError, match="made with the special tokens"):
        core.train(counts, TrainOptions(300))
    with pytest.raises(ValueError, match="made with another pattern"):
        core.train(counts, TrainOptions(300, [EOT], pattern="gpt4"))


def test_a_run_iterates_then_gives_its_result(corpus: Path) -> None:
    run = core.train(corpus, TrainOptions(290, [EOT], workers=1))
    assert run.special_tokens == (EOT,)
    events = list(run)
    kinds = [type(e).__name__ for e in events]
    assert kinds[0] == "PretokenizeProgress" and "CountingDone" in kinds and kinds[-1] == "Finished"
    assert any(isinstance(e, MergeBatch) for e in events)
    assert run.result() == (events[-1].vocab, events[-1].merges) == train_bpe_reference(corpus, 290, [EOT])
    assert list(run) == []  # one pass: the run is its own iterator


def test_merge_events_give_one_event_per_merge(corpus: Path) -> None:
    run = core.train(corpus, TrainOptions(290, [EOT], workers=1))
    merges = [e for e in run.merge_events() if isinstance(e, MergeEvent)]
    assert [(e.left, e.right) for e in merges] == run.result()[1]
    assert [e.token_id for e in merges] == list(range(257, 257 + len(merges)))


def test_a_closed_run_has_no_result(corpus: Path) -> None:
    with core.train(corpus, TrainOptions(290, [EOT], workers=1)) as run:
        next(run)
    with pytest.raises(RuntimeError, match="closed before it finished"):
        run.result()
    assert list(run) == []


def test_chunk_size_is_uniform_and_changes_nothing(corpus: Path) -> None:
    expected = train_bpe_reference(corpus, 290, [EOT])
    for chunk in (1, 7, 64):
        assert core.train(corpus, TrainOptions(290, [EOT], workers=1), chunk_size=chunk).result() == expected
        counts = core.count_pretokens(corpus, [EOT], workers=1, chunk_size=chunk)
        assert core.train(counts, TrainOptions(290, [EOT])).result() == expected


def test_count_pretokens_refuses_a_str_of_special_tokens(corpus: Path) -> None:
    with pytest.raises(InvalidSpecialTokensError, match="did you mean"):
        core.count_pretokens(corpus, EOT)  # type: ignore[arg-type]
