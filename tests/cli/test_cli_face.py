"""The command line's face: ``--help`` lists every subcommand, ``--version``, one way to give
a tokenizer, help on every option, and empty values refused before any work."""

from __future__ import annotations

import argparse
import importlib.metadata
from pathlib import Path

import pytest

from bpe_studio.cli import COMMANDS, _command_parser, _gui_parser
from bpe_studio.cli.checks import TOKENIZER_HELP
from core.formats import save_tokenizer
from core.training.reference import train_bpe_reference
from tests.cli_run import run_cli_here

TOKENIZER_COMMANDS = ("encode", "eval", "shrink", "health", "lm")


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in _command_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_help_lists_every_subcommand_with_a_line_each() -> None:
    result = run_cli_here("--help")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for name in COMMANDS:
        line = next((x for x in lines if x.split()[:2] == ["bpe-studio", name]), None)
        assert line is not None, f"{name} missing from --help:\n{result.stdout}"
        assert len(line.split()) > 3, f"{name} has no description: {line!r}"
    assert any(x.split()[:2] == ["bpe-studio", "[CORPUS]"] and "window" in x for x in lines)
    assert set(_subparsers()) == set(COMMANDS)


def test_version_prints_the_installed_version() -> None:
    result = run_cli_here("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"bpe-studio {importlib.metadata.version('bpe-studio')}"


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_and_argument_has_help(name: str) -> None:
    parser = _subparsers()[name]
    for action in parser._actions:
        if action.help == argparse.SUPPRESS:  # hidden older spellings
            continue
        assert action.help and action.help.strip(), f"{name}: {action.option_strings or action.dest} has no help"
    assert all(a.help for a in _gui_parser()._actions)


@pytest.mark.parametrize("name", TOKENIZER_COMMANDS)
def test_the_tokenizer_is_the_first_positional_everywhere(name: str) -> None:
    parser = _subparsers()[name]
    positionals = [a for a in parser._actions if not a.option_strings]
    assert positionals[0].metavar == "TOKENIZER"
    assert positionals[0].help.startswith(TOKENIZER_HELP)
    usage = parser.format_usage()
    assert "TOKENIZER" in usage and "--tokenizer" not in usage


@pytest.fixture(scope="module")
def tokenizer_and_text(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("face")
    text = "the cat sat on the mat, the dog sat on the log.\n" * 30
    vocab, merges = train_bpe_reference(text, 280, ["<|endoftext|>"])
    save_tokenizer(root / "tok", vocab, merges, ["<|endoftext|>"], "gpt2")
    (root / "text.txt").write_text(text, encoding="utf-8")
    return root / "tok", root / "text.txt"


def test_each_subcommand_takes_the_tokenizer_first(tokenizer_and_text: tuple[Path, Path], tmp_path: Path) -> None:
    tok, text = tokenizer_and_text
    runs = {
        "encode": ["encode", tok, text, "--out", tmp_path / "ids.npy"],
        "eval": ["eval", tok, "--on", text],
        "shrink": ["shrink", tok, "--vocab-size", "270", "--out", tmp_path / "small"],
        "health": ["health", tok],
        "lm": ["lm", tok, "--train", text, "--on", text],
    }
    assert set(runs) == set(TOKENIZER_COMMANDS)
    for name, args in runs.items():
        result = run_cli_here(*args)
        assert result.returncode == 0, f"{name}: {result.stderr}"
    assert (tmp_path / "ids.npy").stat().st_size > 0 and (tmp_path / "small" / "vocab.json").exists()


def test_encode_still_understands_the_older_tokenizer_option(tokenizer_and_text: tuple[Path, Path],
                                                              tmp_path: Path) -> None:
    tok, text = tokenizer_and_text
    new = run_cli_here("encode", tok, text, "--out", tmp_path / "a.npy")
    old = run_cli_here("encode", text, "--tokenizer", tok, "--out", tmp_path / "b.npy")
    assert new.returncode == old.returncode == 0, new.stderr + old.stderr
    assert (tmp_path / "a.npy").read_bytes() == (tmp_path / "b.npy").read_bytes()
    alone = run_cli_here("encode", tok, "--out", tmp_path / "c.npy")
    assert alone.returncode == 2 and "at least one SOURCE" in alone.stderr
    assert not (tmp_path / "c.npy").exists()


@pytest.mark.parametrize("args", [
    ["train", "{text}", "--vocab-size", "300", "--out", ""],
    ["train", "{text}", "--vocab-size", "300", "--out", "{tmp}/o", "--pattern", ""],
    ["count", "{text}", "--out", ""],
    ["count", "{text}", "--out", "{tmp}/c.bpc", "--pattern", ""],
    ["encode", "{tok}", "{text}", "--out", ""],
    ["shrink", "{tok}", "--vocab-size", "270", "--out", ""],
])
def test_empty_out_and_pattern_are_one_error_and_nothing_is_written(
        args: list[str], tokenizer_and_text: tuple[Path, Path], tmp_path: Path) -> None:
    tok, text = tokenizer_and_text
    work = tmp_path / "cwd"
    work.mkdir()
    filled = [a.format(text=text, tok=tok, tmp=tmp_path) for a in args]
    result = run_cli_here(*filled, cwd=work)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "is empty" in lines[0], result.stderr
    assert list(work.iterdir()) == [] and not (tmp_path / "o").exists()
