"""Issue 23 (1, 5, 8, 13) and 24 (11): hostile or mismatched tokenizer files are refused
with one line naming the file, quickly and in bounded memory; nothing else is read.

- a ``.tiktoken`` rank of ``99999999999999999999`` made every loader build ``range(rank)``
  (9 GB in 30 s): the loads here run in a child process limited to 1 GB of address space,
  so a regression fails instead of eating the machine;
- every id of every file is an integer in ``0 .. tokens + UNUSED_IDS_ALLOWED - 1`` and
  given once (a ``tokenizer.json`` added token with id -1 became 65535 in a ``uint16`` .npy);
- a ``tokenizer_config.json`` whose special-token id contradicts ``vocab.json`` or
  ``tokenizer.json`` is refused, both ids named;
- ``/dev/zero`` and a FIFO are "not a regular file", never opened for reading;
- some other JSON or text file is "not a tokenizer file", not "not valid JSON".
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import core
from bpe_studio.cli import main
from core.encode.tokenizer import Tokenizer
from core.formats import FormatError, save_tokenizer
from core.formats.base import UNUSED_IDS_ALLOWED
from core.formats.load import load_tokenizer_files

ROOT = Path(__file__).resolve().parents[3]
EOT = "<|endoftext|>"
NOT_A_TOKENIZER = r"is not a tokenizer file \(expected vocab\.json \+ merges\.txt, tokenizer\.json or a \.tiktoken rank file\)"


def rank_lines(ranks: dict[bytes, object]) -> str:
    return "".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in ranks.items())


def byte_ranks() -> dict[bytes, object]:
    return {bytes([b]): b for b in range(256)}


def run_limited(code: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run ``code`` in a child process with at most 1 GB of address space; its wall time."""
    prelude = textwrap.dedent(
        """
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout, env=env
    )
    return result, time.perf_counter() - started


# ----------------------------------------------------------------- 1. a rank that sizes memory

@pytest.mark.parametrize("rank", ["99999999999999999999", "1000000000", "9" * 5000])
@pytest.mark.parametrize("how", ["load", "list_specials", "config", "folder", "ranks_only"])
def test_a_huge_rank_is_refused_fast_in_bounded_memory(tmp_path: Path, rank: str, how: str) -> None:
    folder = tmp_path / "tok"
    folder.mkdir()
    name = "tokenizer.tiktoken" if how == "folder" else "bomb.tiktoken"
    path = folder / name
    path.write_text(rank_lines(byte_ranks() | {b"ab": rank}), encoding="ascii")
    if how in ("config", "folder"):
        config = {"special_tokens": [EOT], "special_token_ids": {EOT: 256}}  # no pattern: GPT-2's
        (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    call = {
        "load": f"core.Tokenizer.load({str(path)!r}, pattern='gpt2')",
        "list_specials": f"core.Tokenizer.load({str(path)!r}, pattern='gpt2', special_tokens=['<s>', '</s>'])",
        "config": f"core.Tokenizer.load({str(path)!r})",
        "folder": f"core.Tokenizer.load({str(folder)!r})",
        "ranks_only": f"core.formats.load_tiktoken_ranks({str(path)!r})",
    }[how]
    result, seconds = run_limited(
        f"""
        import core, core.formats
        try:
            {call}
        except core.formats.FormatError as e:
            print("REFUSED", e)
        """
    )
    assert result.returncode == 0, result.stderr[-2000:]
    # the load itself takes milliseconds (measured in the next test); this bound is for a
    # busy machine starting Python and importing numpy — the old code hit 1 GB in 3.5 s
    assert seconds < 20
    message = result.stdout.strip()
    assert message.startswith("REFUSED") and f"{name}:257: token b'ab' has id" in message
    assert "ids must be integers from 0 to" in message and "\n" not in message
    assert len(message) < 400


def test_a_huge_rank_is_refused_within_two_seconds_of_loading(tmp_path: Path) -> None:
    path = tmp_path / "bomb.tiktoken"
    path.write_text(rank_lines(byte_ranks() | {b"ab": "99999999999999999999"}), encoding="ascii")
    result, _ = run_limited(
        f"""
        import resource, time, core
        started = time.perf_counter()
        try:
            core.Tokenizer.load({str(path)!r}, pattern="gpt2")
        except core.formats.FormatError:
            pass
        print(time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        """
    )
    assert result.returncode == 0, result.stderr[-2000:]
    seconds, peak_kb = map(float, result.stdout.split())
    assert seconds < 2.0
    assert peak_kb < 300_000  # the interpreter, numpy and the 257 lines: well under 300 MB


def test_a_huge_special_id_of_a_rank_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tok" / "tokenizer.tiktoken"
    path.parent.mkdir()
    path.write_text(rank_lines(byte_ranks() | {b"ab": 256}), encoding="ascii")
    config = {"special_tokens": [EOT], "special_token_ids": {EOT: 10**12}}
    (path.parent / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(FormatError, match=r"tokenizer_config\.json: token '<\|endoftext\|>' has id 1000000000000; ids must"):
        Tokenizer.load(path.parent)
    with pytest.raises(FormatError, match=r"the special_tokens argument: token '<s>' has id -1"):
        Tokenizer.load(path, pattern="gpt2", special_tokens={"<s>": -1})
    config["special_token_ids"] = {EOT: -1}
    (path.parent / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(FormatError, match=r"tokenizer_config\.json: key 'special_token_ids': token '<\|endoftext\|>' has id -1"):
        Tokenizer.load(path.parent)
    # a known encoding's ids are constants, not the file's: cl100k_base leaves 100256 unused
    assert Tokenizer.load(path, encoding="cl100k_base").special_ids[EOT] == 100257


# ----------------------------------------------------------------- 5. every id in range, once

def tiny_json(tmp_path: Path) -> tuple[Path, dict]:
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: EOT.encode()}
    data = core.formats.tokenizer_json_dict(vocab, [(b"a", b"b")], [EOT], "gpt2")
    return tmp_path / "tokenizer.json", data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["added_tokens"][0].update(id=-1), r"key added_tokens\[0\]: token '<\|endoftext\|>' has id -1; ids must be integers from 0 to"),
        (lambda d: d["added_tokens"][0].update(id=10**20), r"key added_tokens\[0\]: token '<\|endoftext\|>' has id 100000000000000000000"),
        (lambda d: d["added_tokens"][0].update(id="7"), r"key added_tokens\[0\]: token '<\|endoftext\|>' has id '7'"),
        (lambda d: d["added_tokens"][0].update(id=True), r"key added_tokens\[0\]: token '<\|endoftext\|>' has id True"),
        (lambda d: d["added_tokens"].append({**d["added_tokens"][0], "id": 300}), r"key added_tokens\[1\]: the token '<\|endoftext\|>' is added twice"),
        (lambda d: d["added_tokens"].append({**d["added_tokens"][0], "content": "<|pad|>"}), r"key added_tokens\[1\]: '<\|pad\|>' has id 257, which model\.vocab gives another token \('<\|endoftext\|>'\)"),
        (lambda d: (d["model"]["vocab"].pop(EOT), d["added_tokens"].append({**d["added_tokens"][0], "content": "<|pad|>"})), r"key added_tokens\[1\]: tokens '<\|endoftext\|>' and '<\|pad\|>' both have id 257"),
        (lambda d: d["added_tokens"][0].update(id=256), r"key added_tokens\[0\]: '<\|endoftext\|>' has id 256, which model\.vocab gives another token \('ab'\)"),
        (lambda d: d["model"]["vocab"].update(ab=258 + UNUSED_IDS_ALLOWED), rf"key model\.vocab\['ab'\]: token 'ab' has id {258 + UNUSED_IDS_ALLOWED}; ids must be integers from 0 to {257 + UNUSED_IDS_ALLOWED:,}"),
        (lambda d: d["model"]["vocab"].update(ab=0), r"key model\.vocab\['ab'\]: tokens 'Ā' and 'ab' both have id 0"),
    ],
)
def test_every_id_of_a_tokenizer_json_is_in_range_and_once(tmp_path: Path, change, message: str) -> None:  # noqa: ANN001
    path, data = tiny_json(tmp_path)
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(FormatError, match=rf"tokenizer\.json: {message}"):
        Tokenizer.load(path)


def test_ids_may_leave_a_few_unused_as_tiktokens_own_do(tmp_path: Path) -> None:
    """A cl100k-style gap (special tokens after unused ids) still loads, from every format."""
    path, data = tiny_json(tmp_path)
    data["added_tokens"][0]["id"] = data["model"]["vocab"][EOT] = 257 + 20
    path.write_text(json.dumps(data), encoding="utf-8")
    assert Tokenizer.load(path).special_ids == {EOT: 277}
    vocab = json.dumps({**{k: v for k, v in data["model"]["vocab"].items()}})
    (tmp_path / "vocab.json").write_text(vocab, encoding="utf-8")
    (tmp_path / "merges.txt").write_text("a b\n", encoding="utf-8")
    assert Tokenizer.load(tmp_path / "vocab.json").special_ids == {EOT: 277}


@pytest.mark.parametrize(
    ("token_id", "message"),
    [(-1, "has id -1"), (10**20, "has id 100000000000000000000"), (258 + UNUSED_IDS_ALLOWED, f"has id {258 + UNUSED_IDS_ALLOWED}"),
     (1.0, "has id 1.0")],
)
def test_every_id_of_a_vocab_json_is_in_range(tmp_path: Path, token_id: object, message: str) -> None:
    vocab = {chr(c): i for i, c in enumerate(core.formats.bytes_to_unicode())} | {"ab": token_id}
    (tmp_path / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False, indent=0), encoding="utf-8")
    (tmp_path / "merges.txt").write_text("a b\n", encoding="utf-8")
    with pytest.raises(FormatError, match=rf"vocab\.json:258: token 'ab' {message}"):
        Tokenizer.load(tmp_path)


def test_encode_refuses_a_negative_added_token_instead_of_writing_65535(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, data = tiny_json(tmp_path)
    data["added_tokens"][0]["id"] = -1
    del data["model"]["vocab"][EOT]
    path.write_text(json.dumps(data), encoding="utf-8")
    corpus = tmp_path / "c.txt"
    corpus.write_text("ab<|endoftext|>ab\n", encoding="utf-8")
    out = tmp_path / "ids.npy"
    assert main(["encode", str(corpus), "--tokenizer", str(path), "--out", str(out), "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert "tokenizer.json: key added_tokens[0]: token '<|endoftext|>' has id -1" in err and len(err.splitlines()) == 1
    assert not out.exists()
    data["added_tokens"][0]["id"] = 257  # the same file with a valid id encodes
    path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["encode", str(corpus), "--tokenizer", str(path), "--out", str(out), "--workers", "1"]) == 0
    assert np.load(out).tolist()[:3] == [256, 257, 256]


# ----------------------------------------------------------------- 8. the files agree

@pytest.fixture
def export(tmp_path: Path) -> Path:
    vocab = {i: bytes([i]) for i in range(256)} | {256: EOT.encode(), 257: b"ab"}
    save_tokenizer(tmp_path / "tok", vocab, [(b"a", b"b")], [EOT], "gpt2")
    return tmp_path / "tok"


def set_config_id(folder: Path, token_id: int) -> None:
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["special_token_ids"][EOT] = token_id
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")


def test_a_config_contradicting_vocab_json_is_refused_naming_both_ids(export: Path) -> None:
    assert Tokenizer.load(export).special_ids == {EOT: 256}
    set_config_id(export, 257)
    pattern = (r"tokenizer_config\.json: the special token '<\|endoftext\|>' has id 257 there, "
               r"but vocab\.json gives it id 256 \(.*vocab\.json\); the files do not belong together")
    for path in (export, export / "vocab.json", export / "merges.txt"):
        with pytest.raises(FormatError, match=pattern):
            Tokenizer.load(path)


def test_a_config_contradicting_tokenizer_json_is_refused(export: Path) -> None:
    (export / "vocab.json").unlink()
    (export / "merges.txt").unlink()
    assert Tokenizer.load(export).special_ids == {EOT: 256}
    set_config_id(export, 5)
    with pytest.raises(FormatError, match=r"has id 5 there, but tokenizer\.json gives it id 256"):
        Tokenizer.load(export)


def test_a_config_naming_a_token_vocab_json_lacks_is_refused(export: Path) -> None:
    vocab = json.loads((export / "vocab.json").read_text(encoding="utf-8"))
    del vocab[EOT]
    (export / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    with pytest.raises(FormatError, match=r"'<\|endoftext\|>' has id 256 there, but vocab\.json does not have it"):
        Tokenizer.load(export)


# ----------------------------------------------------------------- 13. devices and FIFOs

@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_dev_zero_is_not_a_regular_file() -> None:
    with pytest.raises(FormatError, match=r"^/dev/zero is not a regular file \(a character device\); give a tokenizer folder or file$"):
        Tokenizer.load("/dev/zero")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("name", ["fifo", "x.tiktoken", "vocab.json", "tokenizer.json"])
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path, name: str) -> None:
    fifo = tmp_path / name
    os.mkfifo(fifo)
    if name == "vocab.json":
        (tmp_path / "merges.txt").write_text("", encoding="utf-8")
    # a regression that opens the FIFO blocks forever: the child is killed by the timeout
    result, seconds = run_limited(
        f"""
        import core
        try:
            core.Tokenizer.load({str(fifo)!r})
        except core.formats.FormatError as e:
            print(e)
        """,
        timeout=30,
    )
    assert result.stdout.strip() == f"{fifo} is not a regular file (a FIFO); give a tokenizer folder or file"
    assert seconds < 10


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_link_to_a_device_is_refused_too(tmp_path: Path) -> None:
    link = tmp_path / "zero.tiktoken"
    link.symlink_to("/dev/zero")
    with pytest.raises(FormatError, match=r"zero\.tiktoken is not a regular file \(a character device\)"):
        load_tokenizer_files(link, pattern="gpt2")


# ----------------------------------------------------------------- issue 24.11: other files

@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("notes.txt", "just some text\nover two lines\n"),
        ("package.json", '{"name": "x", "version": "1.0"}'),
        ("list.json", "[1, 2, 3]"),
        ("config.yaml", "model: {}\n"),
        ("data.bin", b"\xff\xfe\x00binary"),
        ("deep.json", "[" * 100_000),
    ],
)
def test_another_file_is_not_a_tokenizer_file(tmp_path: Path, name: str, content: str | bytes) -> None:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(FormatError, match=rf"^{re.escape(str(path))} {NOT_A_TOKENIZER}$"):
        Tokenizer.load(path)


def test_a_broken_tokenizer_json_still_says_where(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text('{"model":\n {"vocab": }', encoding="utf-8")
    with pytest.raises(FormatError, match=r"tokenizer\.json:2: not valid JSON"):
        Tokenizer.load(path)
    other = tmp_path / "my.json"  # a tokenizer.json under another name is still read as one
    other.write_text(json.dumps(tiny_json(tmp_path)[1]), encoding="utf-8")
    assert Tokenizer.load(other).special_ids == {EOT: 257}


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
@pytest.mark.parametrize("tokenizer", ["/dev/zero", "notes"])
def test_the_encode_command_says_it_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], tokenizer: str) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello\n", encoding="utf-8")
    if tokenizer == "notes":
        tokenizer = str(tmp_path / "notes.md")
        Path(tokenizer).write_text("# my notes\n", encoding="utf-8")
    out = tmp_path / "ids.npy"
    assert main(["encode", str(corpus), "--tokenizer", tokenizer, "--out", str(out), "--workers", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and ("is not a regular file (a character device)" in err or "is not a tokenizer file" in err)
    assert tokenizer in err and not out.exists()
