"""`bpe-studio eval / shrink` run as a user would: the table, CSV/JSON export, the ladder,
the cut tokenizer, and one line on stderr with exit status 2 for every mistake."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from core.encode.tokenizer import Tokenizer
from core.formats import save_tokenizer
from core.training.reference import train_bpe_reference
from tests.cli_run import run_cli_here

TEXT = "The cat sat on the mat. ========== ----------\nThe dog sat on the log, didn't it?\n" * 20 + "naïve café 123\n"
HELD = "A cat and a dog sat on a log. Der Hund sass auf dem Teppich.\n" * 5


@pytest.fixture()
def setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    vocab, merges = train_bpe_reference(TEXT, 320, ["<|endoftext|>"])
    tok = tmp_path / "tok"
    save_tokenizer(tok, vocab, merges, ["<|endoftext|>"], "gpt2")
    small = tmp_path / "small"
    v, m = train_bpe_reference(TEXT, 270, ["<|endoftext|>"])
    save_tokenizer(small, v, m, ["<|endoftext|>"], "gpt2")
    held = tmp_path / "held.txt"
    held.write_text(HELD, encoding="utf-8")
    return tok, small, held


def test_eval_table_and_exports(tmp_path: Path, setup: tuple[Path, Path, Path]) -> None:
    tok, small, held = setup
    result = run_cli_here("eval", tok, small, "--on", held, "--csv", tmp_path / "o.csv", "--json", tmp_path / "o.json")
    assert result.returncode == 0, result.stderr
    header, *lines = result.stdout.splitlines()
    assert header.split()[:3] == ["tokenizer", "source", "vocab"]
    assert [line.split()[0] for line in lines] == ["tok", "small"]
    rows = list(csv.DictReader((tmp_path / "o.csv").read_text(encoding="utf-8").splitlines()))
    data = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))
    expected = {"tok": len(Tokenizer.load(tok).encode(HELD)), "small": len(Tokenizer.load(small).encode(HELD))}
    assert {r["tokenizer"]: int(r["tokens"]) for r in rows} == expected
    assert {r["tokenizer"]: r["tokens"] for r in data} == expected
    # the baseline is the last tokenizer unless said
    assert {r["tokenizer"]: r["vs_baseline"] for r in data} == {"tok": expected["tok"] / expected["small"], "small": 1.0}


def test_eval_ladder_and_shrink(tmp_path: Path, setup: tuple[Path, Path, Path]) -> None:
    tok, small, held = setup
    result = run_cli_here("eval", tok, "--on", held, "--sizes", "270,303", "--json", tmp_path / "o.json")
    assert result.returncode == 0, result.stderr
    data = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))
    assert [r["vocab_size"] for r in data] == [270, 303]
    assert data[0]["tokens"] == len(Tokenizer.load(small).encode(HELD))
    out = tmp_path / "cut"
    result = run_cli_here("shrink", tok, "--vocab-size", "270", "--out", out)
    assert result.returncode == 0, result.stderr
    for name in ("vocab.json", "merges.txt", "tokenizer.json"):
        assert (out / name).read_bytes() == (small / name).read_bytes()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["eval", "nope/", "--on", "{held}"], "nope does not exist"),
        (["eval", "{tok}", "--on", "{tmp}/missing.txt"], "missing.txt"),
        (["eval", "{tok}", "--on", "{tmp}/empty.txt"], "empty.txt is empty"),
        (["eval", "{tok}", "--on", "{held}", "--baseline", "gpt9"], "baseline 'gpt9'"),
        (["eval", "{tok}", "--on", "{held}", "--sizes", "1k,x"], "--sizes"),
        (["eval", "{tok}", "--on", "{held}", "--csv", "{tmp}/no/such/o.csv"], "folder does not exist"),
        (["eval", "{tok}", "--on", "{held}", "--csv", "{tok}"], "is a folder; give a file name"),
        (["eval", "{tok}", "--on", "{held}", "--csv", "{tmp}/t.csv", "--json", "{tmp}/t.csv"], "are the same file"),
        (["eval", "{tok}", "--on", "{held}", "--csv", "{held}"], "is one of the inputs"),
        (["eval", "{tok}", "--on", "{held}", "--json", "{tok}/tokenizer.json"], "is one of the inputs"),
        (["shrink", "{tok}", "--vocab-size", "5000", "--out", "{tmp}/o"], "above the tokenizer's vocabulary"),
    ],
)
def test_mistakes_are_one_line(tmp_path: Path, setup: tuple[Path, Path, Path], args: list[str], message: str) -> None:
    tok, _, held = setup
    (tmp_path / "empty.txt").write_bytes(b"")
    result = run_cli_here(*[a.format(tok=tok, held=held, tmp=tmp_path) for a in args])
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("bpe-studio: error: ") and message in lines[0], result.stderr
    assert not (tmp_path / "o").exists()


def test_eval_never_writes_over_its_inputs(tmp_path: Path, setup: tuple[Path, Path, Path]) -> None:
    tok, _, held = setup
    before = {path: path.read_bytes() for path in [held, *tok.iterdir()]}
    for option, target in (("--csv", held), ("--json", tok / "tokenizer.json"), ("--csv", tok / "vocab.json")):
        result = run_cli_here("eval", tok, "--on", held, option, target)
        assert result.returncode == 2 and "is one of the inputs" in result.stderr, result.stderr
    assert {path: path.read_bytes() for path in [held, *tok.iterdir()]} == before


def test_health_lists_planted_tokens(tmp_path: Path) -> None:
    vocab = {i: bytes([i]) for i in range(256)}
    merges = [(b"a", b"b"), (b"a", b" "), (b"-", b"-"), (b"--", b"--"), (b"----", b"-")]
    for i, (left, right) in enumerate(merges):
        vocab[256 + i] = left + right
    save_tokenizer(tmp_path / "tok", vocab, merges, [], "gpt2")
    (tmp_path / "held.txt").write_text("ab ab", encoding="utf-8")
    (tmp_path / "other").mkdir()
    save_tokenizer(tmp_path / "other", {**{i: bytes([i]) for i in range(256)}, 256: b"ab"}, [(b"a", b"b")], [], "gpt2")
    result = run_cli_here("health", tmp_path / "tok", "--on", tmp_path / "held.txt", "--compare", tmp_path / "other")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "tok: 261 tokens"
    assert "1  unreachable" in lines[1] and lines[2].split()[0] == "257"
    assert any("1  repetitive" in line for line in lines)
    unused = lines.index(next(line for line in lines if "unused on held-out text" in line))
    assert lines[unused].split()[0] == "4"
    assert "overlap with other: 257 shared, 4 only in tok, 0 only in other" in result.stdout


def test_lm_bits_per_byte(tmp_path: Path, setup: tuple[Path, Path, Path]) -> None:
    import numpy as np

    from core.evaluate.ngram import bits_per_byte, train_ngram

    tok, small, held = setup
    train = tmp_path / "train.txt"
    train.write_text(TEXT, encoding="utf-8")
    result = run_cli_here("lm", tok, small, "--train", train, "--on", held, "--samples", "1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["tokenizer", "vocab", "train", "tokens", "held-out", "tokens", "bits/token", "bits/byte"]
    for line, path in zip(lines[1:3], (tok, small)):
        t = Tokenizer.load(path)
        model = train_ngram(np.array(t.encode(TEXT)), len(t))
        expected = bits_per_byte(model, np.array(t.encode(HELD)), len(HELD.encode("utf-8")))
        assert line.split()[-1] == f"{expected:.4f}"
    assert lines[3].startswith("tok: ") and lines[4].startswith("small: ")
    short = tmp_path / "short.txt"
    short.write_text("ab", encoding="utf-8")
    bad = run_cli_here("lm", tok, "--train", short, "--on", held)
    assert bad.returncode == 2 and "too little text" in bad.stderr and len(bad.stderr.splitlines()) == 1


def test_eval_reference_gives_premium_renyi_and_gini(tmp_path: Path) -> None:
    import core

    dev = tmp_path / "dev"
    dev.mkdir()
    texts = {"en": "the newest lower widest " * 3, "el": "καλημέρα κόσμε " * 3}
    for name, text in texts.items():
        (dev / f"{name}.txt").write_text(text, encoding="utf-8")
    tokenizer = core.train(iter(list(texts.values()) * 20), core.TrainOptions(290)).tokenizer()
    tokenizer.save(tmp_path / "tok")
    result = run_cli_here("eval", tmp_path / "tok", "--on", dev, "--reference", "en", "--csv", tmp_path / "out.csv")
    assert result.returncode == 0, result.stderr
    assert "premium" in result.stdout.splitlines()[0] and "gini" in result.stdout.splitlines()[0]
    with open(tmp_path / "out.csv", encoding="utf-8") as f:
        rows = {Path(row["source"]).stem: row for row in csv.DictReader(f)}
    en, el = len(tokenizer.encode(texts["en"])), len(tokenizer.encode(texts["el"]))
    assert float(rows["el"]["premium"]) == pytest.approx(el / en) and float(rows["en"]["premium"]) == 1.0
    assert float(rows["el"]["gini"]) == pytest.approx(abs(el - en) * 2 / (2 * 4 * (el + en) / 2))
    assert 0 < float(rows["en"]["renyi_efficiency"]) < 1
    bad = run_cli_here("eval", tmp_path / "tok", "--on", dev, "--reference", "fr")
    assert bad.returncode == 2 and "'fr' is not a row" in bad.stderr
