"""`bpe-studio train` / `encode` on corpus sources, through the command line's `main` (`run_cli_here`).

Several sources, folders and globs, ``--field``, sizes such as ``500KB``/``2GiB``,
``--sample``/``--seed``, ``--doc-separator``; and every bad source gives one line on
stderr, exit status 2, and writes nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import zstandard

from core.training.reference import train_bpe_reference
from tests.cli_run import run_cli_here

EOT = "<|endoftext|>"


def _assert_user_error(result: subprocess.CompletedProcess[str], *words: str) -> str:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("bpe-studio: error: ")
    for word in words:
        assert word in lines[0]
    return lines[0]


def _docs(n: int, offset: int = 0) -> list[str]:
    return [f"record {i + offset}: the cat sat on the mat " + "ab " * (i % 7) for i in range(n)]


@pytest.fixture()
def shards(tmp_path: Path) -> tuple[Path, list[str]]:
    root = tmp_path / "corpus"
    (root / "part").mkdir(parents=True)
    a, b = _docs(300), _docs(300, 300)
    (root / "a.jsonl").write_text("".join(json.dumps({"body": d}) + "\n" for d in a))
    raw = "".join(json.dumps({"body": d}) + "\n" for d in b).encode()
    (root / "part" / "b.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(raw))
    return root, a + b


def test_train_on_a_folder_and_a_glob_with_a_field(tmp_path: Path, shards, gpt2_files) -> None:
    root, docs = shards
    out = tmp_path / "tok"
    result = run_cli_here("train", root / "a.jsonl", str(root / "part" / "*.zst"), "--field", "body",
                     "--vocab-size", "330", "--special-token", EOT, "--out", out, "--workers", "2")
    assert result.returncode == 0, result.stderr
    assert "read: 600 documents" in result.stdout
    load_vocab, load_merges = gpt2_files
    assert load_merges(out / "merges.txt") == train_bpe_reference(EOT.join(docs), 330, [EOT])[1]
    folder = run_cli_here("train", root, "--field", "body", "--vocab-size", "330", "--special-token", EOT,
                     "--out", tmp_path / "tok2")
    assert folder.returncode == 0, folder.stderr
    assert (tmp_path / "tok2" / "merges.txt").read_text() == (out / "merges.txt").read_text()


def test_sizes_and_samples_on_the_command_line(tmp_path: Path, shards) -> None:
    root, _ = shards
    runs = [run_cli_here("train", root, "--field", "body", "--vocab-size", "300", "--out", tmp_path / name, *extra)
            for name, extra in (("a", ["--max-bytes", "5KB", "--sample", "50%", "--seed", "3"]),
                                ("b", ["--max-bytes", "5000", "--sample", "0.5", "--seed", "3", "--workers", "1"]))]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert (tmp_path / "a" / "merges.txt").read_text() == (tmp_path / "b" / "merges.txt").read_text()


@pytest.mark.parametrize(("option", "value", "words"), [
    ("--max-bytes", "5XB", "is not a size"),
    ("--max-bytes", "0", "at least 1 byte"),
    ("--sample", "1.5", "not a fraction"),
    ("--doc-max-chars", "-3", "not a positive whole number"),
])
def test_bad_option_values(tmp_path: Path, shards, option: str, value: str, words: str) -> None:
    result = run_cli_here("train", shards[0], "--vocab-size", "300", "--out", tmp_path / "o", option, value)
    _assert_user_error(result, words)
    assert not (tmp_path / "o").exists()


def test_mixed_good_and_bad_shards_write_nothing(tmp_path: Path, shards) -> None:
    root, _ = shards
    bad = [json.dumps({"body": "fine"})] * 2000 + ['{"body": 12}']
    (root / "z.jsonl").write_text("\n".join(bad) + "\n")
    out = tmp_path / "tok"
    result = run_cli_here("train", root, "--field", "body", "--vocab-size", "300", "--out", out)
    _assert_user_error(result, "z.jsonl, line 2001", "'body'", "not a string")
    assert not out.exists()


@pytest.mark.parametrize(("setup", "words"), [
    ("missing-field", "line 1: no field 'text' (its fields: body)"),
    ("empty-folder", "holds no files"),
    ("no-match", "no file matches"),
    ("corrupt", "is corrupt or truncated"),
    ("fifo", "is a FIFO (pipe), not a regular file"),
])
def test_bad_sources(tmp_path: Path, shards, setup: str, words: str) -> None:
    root, _ = shards
    source: Path | str = root / "a.jsonl"
    if setup == "empty-folder":
        source = tmp_path / "empty"
        source.mkdir()
    elif setup == "no-match":
        source = str(tmp_path / "*.parquet")
    elif setup == "corrupt":
        source = tmp_path / "c.txt.gz"
        source.write_bytes(b"\x1f\x8b\x08 then garbage")
    elif setup == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        source = tmp_path / "pipe"
        os.mkfifo(source)
    for command in (["train", source, "--vocab-size", "300", "--out", tmp_path / "o"],
                    ["encode", source, "--tokenizer", tmp_path / "no-tokenizer", "--out", tmp_path / "o.npy"]):
        _assert_user_error(run_cli_here(*command), words)
    assert not (tmp_path / "o").exists() and not (tmp_path / "o.npy").exists()


def test_encode_several_sources_with_separators(tmp_path: Path, shards) -> None:
    root, docs = shards
    tok = tmp_path / "tok"
    assert run_cli_here("train", root, "--field", "body", "--vocab-size", "320", "--special-token", EOT,
                   "--special-token", "<|sep|>", "--out", tok).returncode == 0
    import core

    tokenizer = core.Tokenizer.load(tok)
    for extra, sep in (([], tokenizer.special_ids[EOT]), (["--doc-separator", "<|sep|>"], tokenizer.special_ids["<|sep|>"]),
                       (["--no-doc-separator"], None)):
        out = tmp_path / "ids.npy"
        result = run_cli_here("encode", root / "a.jsonl", root / "part", "--field", "body", "--tokenizer", tok,
                         "--out", out, *extra)
        assert result.returncode == 0, result.stderr
        expected: list[int] = []
        for doc in docs:
            expected += tokenizer.encode(doc) + ([sep] if sep is not None else [])
        assert np.load(out).tolist() == expected
    bad = run_cli_here("encode", root, "--field", "body", "--tokenizer", tok, "--out", tmp_path / "x.npy",
                  "--doc-separator", "<|nope|>")
    _assert_user_error(bad, "<|nope|>", "not one token")


@pytest.mark.parametrize("device", ["/dev/zero", "/bin/ls"])
def test_encode_refuses_what_train_refuses(tmp_path: Path, device: str) -> None:
    if not Path(device).exists():
        pytest.skip(f"no {device}")
    for command in (["train", device, "--vocab-size", "300", "--out", tmp_path / "o"],
                    ["encode", device, "--tokenizer", tmp_path, "--out", tmp_path / "o.npy"]):
        _assert_user_error(run_cli_here(*command), device)
    assert not list(tmp_path.iterdir())


def test_a_corpus_folder_holding_the_output_is_read_without_it(tmp_path: Path) -> None:
    """``train . --out tok`` run twice in the corpus folder: the second run reads the text,
    not the first run's vocab.json and merges.txt, and trains the same tokenizer; ``count``
    likewise leaves out its own file."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    text = "<|endoftext|>".join(_docs(40))
    (folder / "text.txt").write_text(text, encoding="utf-8")
    out = folder / "tok"
    merges = []
    for run in range(2):
        result = run_cli_here("train", folder, "--vocab-size", "300", "--special-token", "<|endoftext|>", "--out", out)
        assert result.returncode == 0, result.stderr
        assert ("not reading 5 files of the output" in result.stderr) == (run == 1), result.stderr
        merges.append((out / "merges.txt").read_text(encoding="utf-8"))
    assert merges[0] == merges[1]
    assert merges[0].splitlines()[1:] == [" ".join(map(_gpt2_text, pair))
                                          for pair in train_bpe_reference(text, 300, ["<|endoftext|>"])[1]]
    (out / "extra.txt").write_text("not the corpus", encoding="utf-8")  # under --out: not read either
    for run in range(2):  # the counts file in the folder counted is not read as text (it was: "binary")
        result = run_cli_here("count", folder, "--out", folder / "c.bpc")
        assert result.returncode == 0, result.stderr
        assert ("not reading 1 file of the output" in result.stderr) == (run == 1), result.stderr
    result = run_cli_here("train", out, "--vocab-size", "300", "--out", out)
    _assert_user_error(result, "the sources hold only the output of an earlier run")


def _gpt2_text(token: bytes) -> str:
    from core.formats.bytes_unicode import bytes_to_string

    return bytes_to_string(token)


def test_encode_says_when_documents_get_no_separator(tmp_path: Path) -> None:
    """A tokenizer without <|endoftext|> on several documents: the ids of one follow the
    other's with nothing between, and a note says so (and how to choose a separator)."""
    from core.formats import save_tokenizer

    vocab, merges = train_bpe_reference("the cat sat on the mat " * 20, 270, [])
    save_tokenizer(tmp_path / "tok", vocab, merges, [], "gpt2")
    docs = tmp_path / "d.jsonl"
    docs.write_text('{"text": "the cat"}\n{"text": "sat"}\n', encoding="utf-8")
    result = run_cli_here("encode", tmp_path / "tok", docs, "--out", tmp_path / "ids.npy")
    assert result.returncode == 0, result.stderr
    assert "note: the tokenizer has no <|endoftext|>" in result.stderr and "--doc-separator" in result.stderr
    one = tmp_path / "one.txt"
    one.write_text("the cat sat", encoding="utf-8")
    result = run_cli_here("encode", tmp_path / "tok", one, "--out", tmp_path / "one.npy")  # one document: no note
    assert result.returncode == 0 and "note" not in result.stderr, result.stderr


@pytest.mark.parametrize("command", ["train", "count", "encode", "eval", "health", "lm"])
def test_a_field_given_for_plain_text_gets_a_note(tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """JSON lines in a file named .txt are read as plain text, JSON and all: a --field given
    for a corpus with no JSONL or Parquet file says it is not used; given with a JSONL
    file among the sources, or not given, there is no such note."""
    from bpe_studio.cli import main
    from core.formats import save_tokenizer

    vocab, merges = train_bpe_reference("the cat sat on the mat " * 20, 270, [EOT])
    save_tokenizer(tmp_path / "tok", vocab, merges, [EOT], "gpt2")
    lines = tmp_path / "records.txt"
    lines.write_text("".join(json.dumps({"body": d}) + "\n" for d in _docs(40)), encoding="utf-8")
    records = tmp_path / "records.jsonl"
    records.write_text(lines.read_text(encoding="utf-8"), encoding="utf-8")

    def run(*sources: Path, field: bool) -> str:
        out = tmp_path / ("out.npy" if command == "encode" else "out.bpc" if command == "count" else "out")
        on = [str(s) for s in sources]
        argv = {
            "train": ["train", *on, "--vocab-size", "270", "--out", str(out)],
            "count": ["count", *on, "--out", str(out)],
            "encode": ["encode", str(tmp_path / "tok"), *on, "--out", str(out)],
            "eval": ["eval", str(tmp_path / "tok"), "--on", *on],
            "health": ["health", str(tmp_path / "tok"), "--on", *on],
            "lm": ["lm", str(tmp_path / "tok"), "--train", *on, "--on", *on, "--samples", "0"],
        }[command]
        assert main([*argv, *(["--field", "body"] if field else [])]) == 0
        return capsys.readouterr().err

    note = "note: --field body is not used: the corpus (records.txt) is plain text, read whole"
    assert note in run(lines, field=True)
    assert "--field" not in run(lines, field=False)
    assert "--field" not in run(lines, records, field=True)


def test_named_sources_train_together_and_write_provenance(tmp_path: Path) -> None:
    en, el = tmp_path / "en.txt", tmp_path / "el.txt"
    en.write_text("the lower newest widest\n" * 200, encoding="utf-8")
    el.write_text("καλημέρα κόσμε\n" * 200, encoding="utf-8")
    named = run_cli_here("train", f"en={en}", f"el={el}", "--vocab-size", 300, "--out", tmp_path / "named")
    plain = run_cli_here("train", en, el, "--vocab-size", 300, "--out", tmp_path / "plain")
    assert named.returncode == 0 and plain.returncode == 0, named.stderr + plain.stderr
    assert (tmp_path / "named" / "merges.txt").read_bytes() == (tmp_path / "plain" / "merges.txt").read_bytes()
    assert not (tmp_path / "plain" / "provenance.tsv").exists()
    lines = (tmp_path / "named" / "provenance.tsv").read_text(encoding="utf-8").splitlines()
    merges = (tmp_path / "named" / "merges.txt").read_text(encoding="utf-8").splitlines()[1:]
    assert lines[0] == "rank\ttoken\tcount\ten\tel" and len(lines) == 1 + len(merges) > 20
    for line in lines[1:]:
        _rank, _token, count, from_en, from_el = line.split("\t")
        assert int(from_en) + int(from_el) == int(count)
    # counted with names, trained from the counts: the same provenance
    assert run_cli_here("count", f"en={en}", f"el={el}", "--out", tmp_path / "c.bpc").returncode == 0
    again = run_cli_here("train", "--from-counts", tmp_path / "c.bpc", "--vocab-size", 300, "--out", tmp_path / "again")
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "again" / "provenance.tsv").read_bytes() == (tmp_path / "named" / "provenance.tsv").read_bytes()


def test_named_and_unnamed_sources_together_are_refused(tmp_path: Path) -> None:
    en = tmp_path / "en.txt"
    en.write_text("low lower\n", encoding="utf-8")
    result = run_cli_here("train", f"en={en}", en, "--vocab-size", 300, "--out", tmp_path / "out")
    _assert_user_error(result, "NAME=SOURCE", "has no name")
    assert not (tmp_path / "out").exists()


def test_parity_aware_training_from_the_command_line(tmp_path: Path) -> None:
    import core
    from core.variants import ParityAware

    en, el, dev = tmp_path / "en.txt", tmp_path / "el.txt", tmp_path / "dev"
    en.write_text("the lower newest widest\n" * 200, encoding="utf-8")
    el.write_text("καλημέρα κόσμε\n" * 20, encoding="utf-8")
    dev.mkdir()
    (dev / "en.txt").write_text("the newest\n", encoding="utf-8")
    (dev / "el.txt").write_text("καλημέρα κόσμε καλημέρα\n", encoding="utf-8")
    result = run_cli_here("train", f"en={en}", f"el={el}", "--vocab-size", 290, "--variant", "parity", "--dev", dev,
                     "--window", 4, "--out", tmp_path / "tok")
    assert result.returncode == 0, result.stderr
    run = core.train({"en": en, "el": el}, core.TrainOptions(290, [], variant=ParityAware(
        dev={"en": dev / "en.txt", "el": dev / "el.txt"}, window=4)))
    chosen = [record.chosen for record in run.provenance()]
    lines = (tmp_path / "tok" / "provenance.tsv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "rank\ttoken\tcount\ten\tel\tchosen"
    assert [line.split("\t")[-1] for line in lines[1:]] == chosen and "el" in chosen and "en" in chosen
    assert len(run.result()[1]) == len(lines) - 1
    for args, words in [(["--dev", f"en={dev / 'en.txt'}"], ["--dev", "missing el"]),
                        (["--ratio", "en=1,el=-2"], ["--ratio", "positive"]),
                        ([], ["--dev", "--ratio"])]:
        bad = run_cli_here("train", f"en={en}", f"el={el}", "--vocab-size", 290, "--variant", "parity", *args,
                      "--out", tmp_path / "bad")
        _assert_user_error(bad, *words)
    _assert_user_error(run_cli_here("train", en, "--vocab-size", 290, "--variant", "parity", "--ratio", "en=1",
                               "--out", tmp_path / "bad"), "NAME=SOURCE")
    assert not (tmp_path / "bad").exists()
