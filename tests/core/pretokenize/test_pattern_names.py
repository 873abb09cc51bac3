"""Pattern names are case-insensitive; a word that names no pattern, and a pattern that
matches the empty string, are refused with the reason, by every entry point."""

from __future__ import annotations

import pytest

import core
from core.errors import InvalidPatternError
from core.pretokenize.patterns import (
    EMPTY_MATCH_PROBE,
    GPT2_PATTERN,
    GPT4_PATTERN,
    SUPERBPE_PATTERN,
    pattern_name,
    resolve_pattern,
)


@pytest.mark.parametrize(("given", "name"),
                         [("GPT2", "gpt2"), ("Gpt4", "gpt4"), (" gpt4 ", "gpt4"), ("gpt2\n", "gpt2")])
def test_names_ignore_case_and_surrounding_space(given: str, name: str) -> None:
    pattern = resolve_pattern(given)
    assert pattern.name == name and pattern.source == {"gpt2": GPT2_PATTERN, "gpt4": GPT4_PATTERN}[name]
    assert pattern_name(given) == name


@pytest.mark.parametrize("word", ["gpt3", "GPT-4", "cl100k", "o200k", "r50k_base", "superbpe", "abc", "x"])
def test_a_word_that_names_no_pattern_lists_the_names(word: str) -> None:
    with pytest.raises(InvalidPatternError, match=rf"pattern={word!r} is not a known pattern name; "
                                                  r"the names are 'gpt2', 'gpt4' \(any case\)"):
        resolve_pattern(word)


@pytest.mark.parametrize(
    ("source", "where"),
    [("(?=a)", "before .a"), (r"\b", "before .Hello"), ("x*", "on the empty text"), ("a|", "on the empty text"),
     (r"\w+|\b", "before ., World"), (r"(?<=\d)", "before ..14"), (r"\p{L}+|(?<= )\Z", "at the end of a text")],
)
def test_a_pattern_that_matches_the_empty_string_is_refused(source: str, where: str) -> None:
    with pytest.raises(InvalidPatternError, match=rf"matches the empty string \({where}"):
        resolve_pattern(source)


@pytest.mark.parametrize("source", [r"\p{L}+", r"\w+|\s+|[^\w\s]+", r"(?i:the)", GPT2_PATTERN, GPT4_PATTERN,
                                    SUPERBPE_PATTERN, r"x(?=y)", r"gpt2\d"])
def test_patterns_that_always_consume_are_accepted(source: str) -> None:
    resolve_pattern(source)
    assert "" not in resolve_pattern(source).findall(EMPTY_MATCH_PROBE)


@pytest.mark.parametrize("make", [
    lambda p: core.TrainOptions(300, pattern=p),
    lambda p: core.count_pretokens(iter(["some text"]), pattern=p),
    lambda p: core.Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern=p),
])
def test_every_entry_point_checks_the_same_way(make) -> None:  # noqa: ANN001
    for bad, message in (("gpt3", "not a known pattern name"), (r"\b", "matches the empty string")):
        with pytest.raises(InvalidPatternError, match=message):
            make(bad)
    make("GPT4")  # a name in capitals is the name


def test_training_with_a_name_in_capitals_is_training_with_the_name() -> None:
    text = ["Hello world, hello there! 123 4567"] * 5
    upper = core.train(iter(text), core.TrainOptions(270, pattern="GPT4")).result()
    lower = core.train(iter(text), core.TrainOptions(270, pattern="gpt4")).result()
    assert upper == lower
