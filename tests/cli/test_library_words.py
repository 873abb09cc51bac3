"""The library speaks of its arguments, the command line of its flags (issue 38, item 21).

`core` messages said ``--field``, ``--sample``, ``--max-bytes``, ``--out``,
``--doc-separator``, ``--pattern``: flags a library user has never seen. They now name the
argument (``field=``); the command line turns that into its flag (``--field``), so its
one-line errors read as before.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import core
from bpe_studio.cli.checks import in_cli_words

REPO = Path(__file__).resolve().parents[2]
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]+")


def _raised_strings(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string written into a ``raise`` (f-strings' literal parts too)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            for part in ast.walk(node.exc):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    found.append((part.lineno, part.value))
    return found


def test_no_library_error_names_a_command_line_flag() -> None:
    offenders = []
    for path in sorted((REPO / "core").rglob("*.py")):
        for line, text in _raised_strings(ast.parse(path.read_text(encoding="utf-8"))):
            if FLAG.search(text) and "pip install" not in text:
                offenders.append(f"{path.relative_to(REPO)}:{line}: {text!r}")
    assert not offenders, "\n".join(offenders)


def test_the_library_names_its_arguments(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_text("hello world " * 50, encoding="utf-8")
    tokenizer = core.Tokenizer({i: bytes([i]) for i in range(256)}, [])
    with pytest.raises(ValueError, match=r"the separator '<\|nope\|>' \(doc_separator=\) is not one token") as info:
        core.encode_corpus(tmp_path / "c.txt", tokenizer, tmp_path / "ids.npy", doc_separator="<|nope|>")
    assert "--" not in str(info.value)
    with pytest.raises(IsADirectoryError, match=r"is a directory \(out=\)"):
        core.encode_corpus(tmp_path / "c.txt", tokenizer, tmp_path, doc_separator=None)
    (tmp_path / "e.jsonl").write_text('{"text": ""}\n', encoding="utf-8")
    with pytest.raises(core.CorpusError, match=r"the corpus holds no text.*\(field=\)$"):
        core.count_pretokens(tmp_path / "e.jsonl")


@pytest.mark.parametrize(("library", "cli"), [
    ("check the files and the field (field=)", "check the files and the field (--field)"),
    ("give a larger fraction (sample=) or a larger corpus", "give a larger fraction (--sample) or a larger corpus"),
    ("cap it with max_bytes=, or split the text", "cap it with --max-bytes, or split the text"),
    ("x is a directory (out=); give a file name", "x is a directory (--out); give a file name"),
    ("the separator 'z' (doc_separator=) is not", "the separator 'z' (--doc-separator) is not"),
    ("sampling kept no document (sample=0.5)", "sampling kept no document (sample=0.5)"),  # a value: kept
    ("a field_x= or xfield= stays", "a field_x= or xfield= stays"),
])
def test_the_command_line_says_its_flags(library: str, cli: str) -> None:
    assert in_cli_words(library) == cli


def test_a_cli_error_from_the_library_names_the_flag(tmp_path: Path) -> None:
    (tmp_path / "e.jsonl").write_text('{"text": ""}\n', encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "bpe_studio", "count", str(tmp_path / "e.jsonl"), "--out",
                           str(tmp_path / "c.bpc")], cwd=REPO, env=dict(os.environ), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.rstrip().endswith("(--field)"), done.stderr
