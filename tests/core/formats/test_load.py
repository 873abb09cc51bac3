"""The one tokenizer loader (`core.formats.load`): every form the GUI opens, the CLI opens too."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import core
from bpe_studio.cli import main
from core.encode.tokenizer import Tokenizer
from core.formats import save_tokenizer
from core.formats.load import load_tokenizer_files

EOT = "<|endoftext|>"
TEXT = "the cat sat on the mat; the cat ate the rat.<|endoftext|>naïve café, the end.\n" * 30


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Tokenizer]:
    folder = tmp_path_factory.mktemp("export")
    corpus = folder / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    vocab, merges = core.train_bpe(corpus, 300, [EOT], workers=1)
    out = folder / "tok"
    save_tokenizer(out, vocab, merges, [EOT], "gpt4")
    return out, Tokenizer(vocab, merges, [EOT], pattern="gpt4")


def prefixed_pair(export: Path, folder: Path, prefix: str = "x_") -> Path:
    """Only the two GPT-2 files, named like GPT-2's own (``gpt2_vocab.json``), no config."""
    folder.mkdir(exist_ok=True)
    (folder / f"{prefix}vocab.json").write_bytes((export / "vocab.json").read_bytes())
    (folder / f"{prefix}merges.txt").write_bytes((export / "merges.txt").read_bytes())
    return folder


@pytest.mark.parametrize("name", ["", "vocab.json", "merges.txt", "tokenizer.json"])
def test_every_form_of_an_export_loads_the_same_tokenizer(export: tuple[Path, Tokenizer], name: str) -> None:
    out, tok = export
    loaded = Tokenizer.load(out / name if name else out)
    assert (loaded.vocab, loaded.merges, loaded.special_tokens, loaded.pattern.name) == (
        tok.vocab, tok.merges, [EOT], "gpt4"
    )


@pytest.mark.parametrize("which", ["folder", "x_vocab.json", "x_merges.txt"])
def test_prefixed_pairs_load_from_the_folder_or_either_file(
    export: tuple[Path, Tokenizer], tmp_path: Path, which: str
) -> None:
    folder = prefixed_pair(export[0], tmp_path / "gpt2ish")
    loaded = load_tokenizer_files(folder if which == "folder" else folder / which)
    assert loaded.merges == export[1].merges
    # No tokenizer_config.json: the special tokens are the tokens no merge makes.
    assert loaded.special_tokens == [EOT]
    assert loaded.pattern.name == "gpt2"


def test_a_folder_with_two_prefixed_pairs_asks_which(export: tuple[Path, Tokenizer], tmp_path: Path) -> None:
    folder = prefixed_pair(export[0], tmp_path / "two")
    prefixed_pair(export[0], folder, prefix="y_")
    with pytest.raises(FileNotFoundError, match="several tokenizers .*x_vocab.json, y_vocab.json"):
        Tokenizer.load(folder)


def test_a_missing_partner_or_an_empty_folder_says_what_is_expected(tmp_path: Path) -> None:
    (tmp_path / "x_vocab.json").write_text("{}", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="x_merges.txt is missing"):
        Tokenizer.load(tmp_path / "x_vocab.json")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="holds no tokenizer"):
        Tokenizer.load(tmp_path / "empty")


def test_a_key_outside_the_byte_map_is_a_special_token_without_config(
    export: tuple[Path, Tokenizer], tmp_path: Path
) -> None:
    folder = prefixed_pair(export[0], tmp_path / "extra")
    vocab_path = folder / "x_vocab.json"
    keys = json.loads(vocab_path.read_text(encoding="utf-8"))
    keys["<｜begin▁of▁sentence｜>"] = max(keys.values()) + 1
    vocab_path.write_text(json.dumps(keys, ensure_ascii=False), encoding="utf-8")
    tok = Tokenizer.load(folder)
    assert tok.special_tokens == [EOT, "<｜begin▁of▁sentence｜>"]
    assert tok.encode("<｜begin▁of▁sentence｜>") == [max(keys.values())]


def test_encode_command_opens_a_folder_of_prefixed_gpt2_files(
    export: tuple[Path, Tokenizer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The GUI opened gpt2_vocab.json/gpt2_merges.txt; `encode --tokenizer` on their folder failed."""
    folder = prefixed_pair(export[0], tmp_path / "gpt2")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    out = tmp_path / "ids.npy"
    assert main(["encode", str(corpus), "--tokenizer", str(folder), "--out", str(out), "--workers", "1"]) == 0, capsys.readouterr().err
    tokenizer = Tokenizer.load(folder)
    # the file is one document: the separator (<|endoftext|> when the tokenizer has it) follows it
    expected = tokenizer.encode(TEXT) + [tokenizer.special_ids[t] for t in ["<|endoftext|>"] if t in tokenizer.special_ids]
    assert np.load(out).tolist() == expected
