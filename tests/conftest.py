"""Fixtures shared by all tests: the shared reference data and GPT-2 file decoding.

Helpers are offered as fixtures (not imported from here) so that test modules never depend
on how pytest names conftest modules.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

SHARED_DIR = Path(__file__).resolve().parents[1].parent / "shared"

# The suite starts hundreds of Python processes (the command line, worker processes, the
# training process), each importing the package from its source tree. Where the environment
# says not to write bytecode (PYTHONDONTWRITEBYTECODE), each would compile it again: the
# tests' processes write it, as a user's would.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The read-only reference data next to the repository (``../shared``): skip the test
    if it is absent — but fail under CI (``CI=true``), which must run every test."""
    if not (SHARED_DIR / "fixtures").is_dir():
        message = f"reference data not found: {SHARED_DIR} (the repository's sibling 'shared')"
        if os.environ.get("CI") == "true":
            pytest.fail(message + "; CI runs every test")
        pytest.skip(message)
    return SHARED_DIR


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character map, written out from its definition.

    Printable Latin-1 bytes (``!``..``~``, ``¡``..``¬``, ``®``..``ÿ``) stand for themselves;
    the other 68 bytes, in increasing order, get ``chr(256)``, ``chr(257)``, ...
    (so the space 0x20 becomes ``Ġ`` U+0120 and the newline 0x0A becomes ``Ċ`` U+010A).
    """
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    mapping = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


BYTE_TO_CHAR = _bytes_to_unicode()
CHAR_TO_BYTE = {c: b for b, c in BYTE_TO_CHAR.items()}


def gpt2_token_bytes(token: str) -> bytes:
    """Bytes of a token written in GPT-2's byte-to-unicode form: ``"Ġthe" -> b" the"``."""
    return bytes(CHAR_TO_BYTE[c] for c in token)


def load_gpt2_vocab(path: Path, special_tokens: list[str] = ()) -> dict[int, bytes]:
    """``vocab.json`` as ``{id: bytes}``; special tokens are stored as their plain text."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {
        i: token.encode("utf-8") if token in special_tokens else gpt2_token_bytes(token)
        for token, i in raw.items()
    }


def load_gpt2_merges(path: Path) -> list[tuple[bytes, bytes]]:
    """``merges.txt`` as ``[(left, right)]``; an optional ``#version`` first line is skipped."""
    merges = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#version") or not line.strip():
            continue
        left, right = line.split(" ")
        merges.append((gpt2_token_bytes(left), gpt2_token_bytes(right)))
    return merges


@pytest.fixture(scope="session")
def gpt2_files() -> tuple[Callable[..., dict[int, bytes]], Callable[[Path], list[tuple[bytes, bytes]]]]:
    """``(load_vocab, load_merges)`` for GPT-2 format files, decoded independently of core."""
    return load_gpt2_vocab, load_gpt2_merges


# The modules holding the suite's longest tests, longest first. They run first: the test
# processes share the work by handing each other tests from the end of their queues, so a
# long test left for the end would keep one process busy while the other waits.
SLOW_FIRST = (
    "tests/core/test_typing.py",
    "tests/core/pretokenize/test_native_scanner.py",
    "tests/core/corpus/test_counts_threads.py",
    "tests/reliability/test_memory.py",
    "tests/packaging/test_wheel.py",
    "tests/reliability/test_signals.py",
    "tests/app/explore/test_no_freeze.py",
    "tests/core/encode/test_long_pretokens.py",
    "tests/reliability/test_export_set.py",
    "tests/app/train/test_small_window.py",
    "tests/core/training/test_train_equivalence.py",
    "tests/app/explore/test_vocab_model.py",
    "tests/core/training/test_conformance_cs336.py",
    "tests/app/test_window_files.py",
    "tests/reliability/test_workers_cap.py",
    "tests/app/controllers/test_controllers.py",
    "tests/reliability/test_hostile_files.py",
    "tests/app/models/test_session.py",
    "tests/core/encode/test_tokenizer_tiktoken.py",
    "tests/app/test_window_errors.py",
)


@pytest.hookimpl(trylast=True)  # after pytest's own grouping by fixture, which keeps modules whole
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the modules of `SLOW_FIRST` first, in that order; the others keep their order."""
    root = config.rootpath

    def rank(item: pytest.Item) -> int:
        module = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""
        return SLOW_FIRST.index(module) if module in SLOW_FIRST else len(SLOW_FIRST)

    items.sort(key=rank)  # stable


@pytest.fixture(scope="session")
def slow_first() -> tuple[str, ...]:
    """The modules the suite runs first (`SLOW_FIRST`)."""
    return SLOW_FIRST
