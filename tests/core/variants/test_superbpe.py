"""SuperBPE: the stage-2 cut equals the literal per-line, isolated split; training equals the
oracle (`core.variants.superbpe_reference`) merge by merge on generated text, at 1, 2 and 3
workers, from files and texts; its tokenizer.json gives Hugging Face's ids exactly."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import core
from core.pretokenize.patterns import SUPERBPE_PATTERN, resolve_pattern
from core.variants import SuperBPE
from core.variants.superbpe import allowed
from core.variants.superbpe_reference import stage2_pretokens, superbpe_reference
from core.pretokenize.surrogates import replace_lone_surrogates

FRAGMENTS = ["of the", " of the", "in order to", " ", "  ", "   ", "\n", "\n\n", "\r\n", "\r", "\t", " \t",
             "a", "aaaa", "é", "漢字", "🙂", "1", "12", "12345", "3.14", "!!", "!!!\n\n", "...", "?!/", " --",
             "/", "key: value", "x:y", ":", "<|e|>", "\udcff", "\x0b", "\u3000", "\u2028", "ab cd ef gh ij"]
SPECIALS = ["<|e|>"]
texts = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=3).filter(lambda t: "\x00" not in t)), min_size=1,
                 max_size=60).map("".join).filter(lambda t: t.strip("\x00"))


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4)), max_size=30).map("".join))
def test_stage2_pattern_is_the_per_line_isolated_split(text):
    assert resolve_pattern(SUPERBPE_PATTERN).findall(text) == stage2_pretokens(text)


def write(tmp_path, text: str):
    path = tmp_path / "corpus.txt"
    path.write_bytes(text.encode("utf-8", errors="surrogateescape"))
    return path


def fast(input, vocab_size, transition, max_words=4, **kw):
    run = core.train(input, core.TrainOptions(vocab_size, SPECIALS, variant=SuperBPE(transition, max_words), **kw))
    run.result()
    return run


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, extra=st.integers(1, 60), transition=st.integers(0, 30),
       max_words=st.sampled_from([1, 2, 4, None]))
def test_merges_equal_the_oracle(tmp_path, text, extra, transition, max_words):
    want, stage1 = superbpe_reference(text, 257 + extra, SPECIALS, transition, max_words)
    run = fast(write(tmp_path, text), 257 + extra, transition, max_words, workers=1)
    assert run.finished.merges == want
    assert run.finished.stage1_merges == stage1


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_every_worker_count_and_input_form(tmp_path, workers):
    text = "".join(FRAGMENTS) * 3 + "the cat sat on the mat. " * 30 + "key: value\n" * 9
    # (a file keeps its invalid bytes; a str's lone surrogates are U+FFFD, as Tokenizer.encode takes them)
    for input, seen in ((write(tmp_path, text), text), (iter(text.split("<|e|>")), replace_lone_surrogates(text))):
        want, stage1 = superbpe_reference(seen, 360, SPECIALS, 40)
        run = core.train(input, core.TrainOptions(360, SPECIALS, variant=SuperBPE(40), workers=workers))
        stages = [e.stage for e in run.merge_events() if isinstance(e, core.MergeEvent)]
        assert run.finished.merges == want
        assert stages == [1] * stage1 + [2] * (len(want) - stage1)
    with pytest.raises(ValueError, match="not on counts"):
        core.train(core.count_pretokens(write(tmp_path, text), SPECIALS), core.TrainOptions(
            300, SPECIALS, variant=SuperBPE(40)))


@pytest.mark.parametrize("workers", [2, 3])
def test_long_lines_counted_by_many_workers(tmp_path, workers):
    """Stage-2 pre-tokens are whole lines of words: hundreds of bytes, each in one chunk's
    table only. Counted in chunks by several workers, whose tables are added, they stay whole
    (they were cut at byte 255 once) and the merges are the oracle's."""
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    lines = [" ".join(words[(i + k) % 8] for k in range(40 + 9 * i)) + "\n" for i in range(12)]
    text = "".join(line * (1 + i % 3) + "the cat sat.\n" for i, line in enumerate(lines))
    assert max(map(len, stage2_pretokens(text))) > 600
    want, stage1 = superbpe_reference(text, 330, SPECIALS, 30)
    run = core.train(write(tmp_path, text), core.TrainOptions(330, SPECIALS, variant=SuperBPE(30), workers=workers),
                     chunk_size=700)
    run.result()
    assert run.finished.merges == want
    assert run.finished.stage1_merges == stage1


def test_transition_past_the_merges_is_plain_bpe_stage_one(tmp_path):
    path = write(tmp_path, "".join(FRAGMENTS) * 3 + "the quick brown fox jumps over the lazy dog. " * 30)
    run = fast(path, 300, 10_000)
    assert run.finished.stage1_merges == 300 - 257
    assert run.result() == core.train_bpe(path, 300, SPECIALS)
    assert run.tokenizer().pattern.source == SUPERBPE_PATTERN


def test_stage_two_tokens_span_spaces_and_follow_the_rule(tmp_path):
    path = write(tmp_path, "in order to do it, key: value and in order to see it\n" * 40)
    run = fast(path, 330, 20, max_words=3)
    stage2 = [a + b for a, b in run.finished.merges[run.finished.stage1_merges:]]
    assert any(b" " in t.strip(b" ") for t in stage2)
    assert all(allowed(t, 3) for t in stage2)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sample=texts)
def test_tokenizer_json_gives_hugging_faces_ids(tmp_path_factory, sample):
    tokenizers = pytest.importorskip("tokenizers")
    tmp = tmp_path_factory.mktemp("superbpe")
    corpus = ("in order to do it, of the people\n\n\tkey: value 12345 !!!\r\n" * 20 + "".join(FRAGMENTS))
    run = fast(write(tmp, corpus), 400, 60)
    tok = run.tokenizer()
    tok.save(tmp / "out")
    hf = tokenizers.Tokenizer.from_file(str(tmp / "out" / "tokenizer.json"))
    clean = sample.encode("utf-8", errors="replace").decode("utf-8")
    assert hf.encode(clean).ids == tok.encode(clean)
    assert tok.decode(tok.encode(clean)) == clean
    again = core.Tokenizer.load(tmp / "out")
    assert again.encode(clean) == tok.encode(clean)
    assert again.pattern.name == "superbpe"


@pytest.mark.parametrize("kw", [{"transition": -1}, {"transition": 1.5}, {"transition": 5, "max_words": 0}])
def test_bad_parameters(kw):
    with pytest.raises((TypeError, ValueError), match="transition|max_words"):
        SuperBPE(**kw)
