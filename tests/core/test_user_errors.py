"""Issue 39: a user's mistake raises one of `core.errors`' types; a bare ``ValueError`` or
``TypeError`` is left only where it never reaches the user (each listed here, with why).

The front ends show `core.errors.BpeStudioError` as the user's mistake (the CLI: one line,
status 2) and anything else as a bug, so a check of the user's input that raised a plain
``ValueError`` would now read as a bug, and a bug must not read as bad input.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import core
import core.errors
from core.errors import BpeStudioError, OptionsError, OptionsTypeError

REPO = Path(__file__).resolve().parents[2]

DELIBERATE = {
    ("core/corpus/bpc_file.py", 'raise ValueError("no metadata")'): 1,  # caught in decode: FormatError naming the file
    ("core/corpus/bpc_file.py", 'raise ValueError("truncated")'): 3,  # the same
    ("core/corpus/counts_checks.py", "raise TypeError"): 1,  # caught at once: the OptionsTypeError below it
}
"""The plain raises left in `core`: (file, statement) -> how many."""


def _plain_raises(root: str) -> dict[tuple[str, str], int]:
    found: dict[tuple[str, str], int] = {}
    for path in sorted((REPO / root).rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id in ("ValueError", "TypeError"):
                key = (str(path.relative_to(REPO)), ast.get_source_segment(source, node) or "")
                found[key] = found.get(key, 0) + 1
    return found


def test_every_plain_value_or_type_error_left_in_core_is_deliberate() -> None:
    assert _plain_raises("core") == DELIBERATE


def test_the_command_lines_own_checks_raise_usage_errors() -> None:
    assert _plain_raises("bpe_studio/cli") == {}


def test_every_error_type_is_a_bpe_studio_error_and_keeps_its_old_base() -> None:
    olds = {"CorpusError": ValueError, "FormatError": ValueError, "InvalidPatternError": ValueError,
            "InvalidSpecialTokensError": ValueError, "PatternTimeoutError": ValueError, "TokenizerError": ValueError,
            "OptionsError": ValueError, "OptionsTypeError": TypeError, "WorkerDiedError": OSError}
    assert set(core.errors.__all__) == {"BpeStudioError", *olds}
    for name, base in olds.items():
        error = getattr(core.errors, name)
        assert issubclass(error, BpeStudioError) and issubclass(error, base), name
    assert core.BpeStudioError is BpeStudioError
    assert len(core.__all__) <= 30


@pytest.mark.parametrize(("make", "error", "words"), [
    (lambda: core.TrainOptions(100), OptionsError, "vocab_size 100 is too small"),
    (lambda: core.TrainOptions(300, min_frequency=0), OptionsError, "min_frequency must be at least 1"),
    (lambda: core.TrainOptions(300, pattern=3), OptionsTypeError, "pattern must be"),
    (lambda: core.ReadOptions(sample=2), OptionsError, r"sample must be a fraction in \(0, 1\]"),
    (lambda: core.ReadOptions(seed="1"), OptionsTypeError, "seed must be an integer"),
    (lambda: core.ReadOptions(skip_unreadable=1), OptionsTypeError, "skip_unreadable must be True or False"),
    (lambda: core.Tokenizer({i: bytes([i]) for i in range(256)}, []).decode("ab"), OptionsTypeError,
     r"decode\(\) takes"),
    (lambda: core.count_pretokens(["a"], workers=0), OptionsError, "workers must be at least 1"),
    (lambda: core.PretokenCounts.add_all([]), OptionsError, "parts is empty"),
])
def test_a_bad_argument_raises_our_type(make: object, error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        make()  # type: ignore[operator]
