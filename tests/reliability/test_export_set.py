"""Issue 13.3: the files of an export change together.

Several processes export different tokenizers into one folder at the same moment, over
and over, while another loads it: every load, and the folder at the end, is exactly one
writer's tokenizer — never one writer's vocab.json with another's merges.txt.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import core
from core.formats.load import load_tokenizer_files

WRITERS = 4
ROUNDS = 150

# Writer k: merges that make tokens no other writer has (and its own vocab.json).
SCRIPT = textwrap.dedent(
    """
    import sys, time
    import core
    folder, k, rounds, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    vocab = {i: bytes([i]) for i in range(256)}
    letters = b"abcdefghijklmnop"
    merges = [(letters[k:k + 1], letters[j:j + 1]) for j in range(16)]
    for n, (a, b) in enumerate(merges):
        vocab[256 + n] = a + b
    vocab[256 + len(merges)] = f"<|writer{k}|>".encode()
    while time.time() < start:
        time.sleep(0.001)
    for _ in range(rounds):
        core.save_tokenizer(folder, vocab, merges, [f"<|writer{k}|>"], "gpt2")
    """
)

READER = textwrap.dedent(
    """
    import os, sys, time
    from core.formats.load import load_tokenizer_files
    folder, start, until, stop = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    while time.time() < start:
        time.sleep(0.001)
    seen = 0
    while time.time() < until and not (seen and os.path.exists(stop)):  # until the writers are done
        try:
            files = load_tokenizer_files(folder)
        except FileNotFoundError:
            continue
        except Exception as e:  # a mixed export fails to load: report it
            print("ERROR", e, flush=True)
            continue
        firsts = {left for left, _ in files.merges}
        print("OK" if len(firsts) == 1 and files.special_tokens == ["<|writer%d|>" % (b"abcdefghijklmnop".index(next(iter(firsts))))] else f"MIXED {sorted(firsts)} {files.special_tokens}", flush=True)
        seen += 1
    """
)


def _expected(k: int) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    letters = b"abcdefghijklmnop"
    merges = [(letters[k : k + 1], letters[j : j + 1]) for j in range(16)]
    vocab = {i: bytes([i]) for i in range(256)} | {256 + n: a + b for n, (a, b) in enumerate(merges)}
    vocab[256 + len(merges)] = f"<|writer{k}|>".encode()
    return vocab, merges


def test_concurrent_exports_never_mix(tmp_path: Path) -> None:
    import time

    folder = tmp_path / "tok"
    start = time.time() + 1.0  # every writer has imported core by then
    stop = tmp_path / "writers-done"
    repo = Path(__file__).resolve().parents[2]
    writers = [
        subprocess.Popen([sys.executable, "-c", SCRIPT, str(folder), str(k), str(ROUNDS), str(start)], cwd=repo)
        for k in range(WRITERS)
    ]
    reader = subprocess.Popen([sys.executable, "-c", READER, str(folder), str(start), str(start + 60), str(stop)],
                              cwd=repo, stdout=subprocess.PIPE, text=True)
    for writer in writers:
        assert writer.wait(timeout=300) == 0
    stop.touch()
    out, _ = reader.communicate(timeout=300)
    lines = out.splitlines()
    bad = [line for line in lines if line != "OK"]
    assert lines and not bad, f"{len(bad)} of {len(lines)} loads saw a mixed export, e.g. {bad[:3]}"

    files = load_tokenizer_files(folder)
    assert any((files.vocab, files.merges) == _expected(k) for k in range(WRITERS))
    assert sorted(p.name for p in folder.iterdir()) == [
        "merges.txt", "tokenizer.json", "tokenizer.tiktoken", "tokenizer_config.json", "vocab.json"
    ], "temporary files were left behind"


def test_a_folder_that_appears_while_loading_is_read_again_under_its_lock(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The path is no folder when the lock is chosen (its parent's is taken); a first export
    creates it before the files are read, so they were read without the folder's lock: the
    load is done again, under it."""
    import core.formats.load as load

    folder = tmp_path / "tok"
    vocab, merges = _expected(1)
    real = load._load_files
    reads: list[bool] = []

    def first_export_lands_meanwhile(p, *args):  # type: ignore[no-untyped-def]
        if not folder.exists():
            core.save_tokenizer(folder, vocab, merges, ["<|writer1|>"], "gpt2")
        reads.append(folder.is_dir())
        return real(p, *args)

    monkeypatch.setattr(load, "_load_files", first_export_lands_meanwhile)
    files = load.load_tokenizer_files(folder)
    assert (files.vocab, files.merges) == (vocab, merges)
    assert reads == [True, True], "the read made without the folder's lock was not done again"
