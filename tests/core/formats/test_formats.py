"""File formats: GPT-2 vocab.json/merges.txt, the sidecar and tokenizer.json, atomic writes, malformed files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from core import formats
from core.formats.bytes_unicode import bytes_to_string, bytes_to_unicode, string_to_bytes
from core.formats import (
    FormatError,
    load_gpt2_files,
    load_tokenizer_config,
    load_tokenizer_json,
    save_gpt2_files,
    save_tokenizer,
)
from core.pretokenize.patterns import GPT4_PATTERN



def tiny_tokenizer() -> tuple[dict[int, bytes], list[tuple[bytes, bytes]], list[str]]:
    """A hand-made vocabulary: bytes, two specials, then merges building ' hello' and 'll'."""
    vocab = {i: bytes([i]) for i in range(256)}
    specials = ["<|endoftext|>", "<|pad é|>"]
    vocab[256] = specials[0].encode()
    vocab[257] = specials[1].encode()
    merges = [(b"l", b"l"), (b" ", b"h"), (b"e", b"ll"), (b" h", b"ell"), (b" hell", b"o")]
    for i, (a, b) in enumerate(merges):
        vocab[258 + i] = a + b
    return vocab, merges, specials


def test_bytes_to_unicode_is_gpt2s_map() -> None:
    table = bytes_to_unicode()
    assert len(table) == 256 and len(set(table.values())) == 256
    assert all(c.isprintable() and not c.isspace() for c in table.values())
    assert table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[0] == "Ā"
    assert list(table)[:3] == [ord("!"), ord('"'), ord("#")]  # GPT-2's id order
    data = bytes(range(256))
    assert string_to_bytes(bytes_to_string(data)) == data


def test_gpt2_files_round_trip(tmp_path: Path, gpt2_files, shared_dir: Path) -> None:  # noqa: ANN001
    vocab_path, merges_path = shared_dir / "fixtures" / "gpt2_vocab.json", shared_dir / "fixtures" / "gpt2_merges.txt"
    vocab, merges = load_gpt2_files(vocab_path, merges_path)
    independent_vocab, independent_merges = gpt2_files
    assert vocab == independent_vocab(vocab_path) and merges == independent_merges(merges_path)
    assert len(vocab) == 50257 and len(merges) == 50000
    assert vocab[50256] == b"<|endoftext|>" and vocab[0] == b"!" and merges[0] == (b" ", b"t")
    written = save_gpt2_files(tmp_path / "out", vocab, merges, ["<|endoftext|>"])
    assert [p.name for p in written] == ["vocab.json", "merges.txt"]
    assert (tmp_path / "out" / "merges.txt").read_text().startswith("#version: 0.2\nĠ t\n")
    # The written vocab.json is the original mapping, key for key.
    assert json.loads(written[0].read_text("utf-8")) == json.loads(vocab_path.read_text("utf-8"))
    assert load_gpt2_files(*written) == (vocab, merges)


def test_single_bytes_are_written_in_gpt2_order(tmp_path: Path) -> None:
    vocab, merges, specials = tiny_tokenizer()
    save_gpt2_files(tmp_path, vocab, merges, specials)
    keys = list(json.loads((tmp_path / "vocab.json").read_text("utf-8")))
    assert keys[:256] == list(bytes_to_unicode().values())
    assert keys[256:258] == specials  # special tokens as their own text


def test_save_tokenizer_writes_five_loadable_files(tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    vocab, merges, specials = tiny_tokenizer()
    out = tmp_path / "new" / "dir"
    paths = save_tokenizer(out, vocab, merges, specials, "gpt4")
    assert sorted(p.name for p in paths) == sorted(
        ["vocab.json", "merges.txt", "tokenizer_config.json", "tokenizer.json", "tokenizer.tiktoken"]
    )
    assert sorted(os.listdir(out)) == sorted(p.name for p in paths)  # no temporary files left
    assert load_gpt2_files(out / "vocab.json", out / "merges.txt", specials) == (vocab, merges)
    config_specials, pattern = load_tokenizer_config(out / "tokenizer_config.json")
    assert config_specials == specials and pattern.name == "gpt4" and pattern.source == GPT4_PATTERN
    v, m, s, p = load_tokenizer_json(out / "tokenizer.json")
    assert (v, m, s, p.source) == (vocab, merges, specials, GPT4_PATTERN)
    hf = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    # " hello" is built by the merges; the specials are single ids.
    assert hf.encode(" hello<|pad é|>hello<|endoftext|>").ids == [262, 257, 104, 260, 111, 256]


def test_custom_pattern_travels_in_sidecar_and_tokenizer_json(tmp_path: Path) -> None:
    vocab, merges, _ = tiny_tokenizer()
    save_tokenizer(tmp_path, vocab, merges, [], r"\w+|\s+|[^\w\s]+")
    _, pattern = load_tokenizer_config(tmp_path / "tokenizer_config.json")
    assert pattern.name == "custom" and pattern.source == r"\w+|\s+|[^\w\s]+"
    assert load_tokenizer_json(tmp_path / "tokenizer.json")[3].source == r"\w+|\s+|[^\w\s]+"


def test_failed_save_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vocab, merges, specials = tiny_tokenizer()
    with pytest.raises(FormatError, match="not in the vocabulary"):
        save_tokenizer(tmp_path / "a", vocab, merges + [(b"q", b"zz")], specials, "gpt2")
    assert not (tmp_path / "a").exists() or os.listdir(tmp_path / "a") == []
    with pytest.raises(FormatError, match="special token"):
        save_tokenizer(tmp_path / "b", vocab, merges, ["<|missing|>"], "gpt2")

    # An OS failure while renaming: the temporary files are removed, no target appears.
    calls = []

    def failing_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        calls.append(dst)
        raise OSError("disk full")

    monkeypatch.setattr(formats.os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        save_tokenizer(tmp_path / "c", vocab, merges, specials, "gpt2")
    assert calls and os.listdir(tmp_path / "c") == []


def test_existing_files_survive_a_failed_save(tmp_path: Path) -> None:
    vocab, merges, specials = tiny_tokenizer()
    save_tokenizer(tmp_path, vocab, merges, specials, "gpt2")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(FormatError):
        save_tokenizer(tmp_path, vocab, merges + [(b"q", b"zz")], specials, "gpt2")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("vocab_text", "message"),
    [
        ('{"a": 0,\n"b": 1,\n', r"vocab\.json:3: not valid JSON"),
        ("[1, 2]", r"vocab\.json:1: expected a JSON object"),
        ('{"a": 0,\n"b": "one"\n}', r"vocab\.json:2: token 'b' has id 'one'"),
        ('{"a": 0,\n"b": 0\n}', r"vocab\.json:2: tokens 'a' and 'b' both have id 0"),
        ('{"a": 0,\n\n"a b": 1\n}', r"vocab\.json:3: token 'a b' has the character ' '"),
    ],
)
def test_malformed_vocab_names_file_and_line(tmp_path: Path, vocab_text: str, message: str) -> None:
    merges = write(tmp_path / "merges.txt", "")
    with pytest.raises(FormatError, match=message):
        load_gpt2_files(write(tmp_path / "vocab.json", vocab_text), merges)


@pytest.mark.parametrize(
    ("merges_text", "message"),
    [
        ("#version: 0.2\na b\na  b\n", r"merges\.txt:3: expected two tokens"),
        ("a b\nab a b\n", r"merges\.txt:2: expected two tokens"),
        ("a b\nab c\n", r"merges\.txt:2: the merge 'ab c' needs the token 'c'"),
        ("a b\nb b\n", r"merges\.txt:2: the merge 'b b' needs the token 'bb'"),
        ("a é€\n", r"merges\.txt:1: token 'é€' has the character '€'"),
    ],
)
def test_malformed_merges_names_file_and_line(tmp_path: Path, merges_text: str, message: str) -> None:
    vocab = write(tmp_path / "vocab.json", json.dumps({"a": 0, "b": 1, "ab": 2, "aba": 3}))
    with pytest.raises(FormatError, match=message):
        load_gpt2_files(vocab, write(tmp_path / "merges.txt", merges_text))


def test_merges_without_version_line_and_with_crlf(tmp_path: Path) -> None:
    vocab = write(tmp_path / "vocab.json", json.dumps({"a": 0, "b": 1, "ab": 2}))
    for text in ("a b\n", "#version: 0.2\r\na b\r\n", "a b"):
        assert load_gpt2_files(vocab, write(tmp_path / "merges.txt", text))[1] == [(b"a", b"b")]


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "merges.txt").write_bytes(b"a b\n\xff b\n")
    vocab = write(tmp_path / "vocab.json", json.dumps({"a": 0, "b": 1, "ab": 2}))
    with pytest.raises(FormatError, match=r"merges\.txt:2: not valid UTF-8"):
        load_gpt2_files(vocab, tmp_path / "merges.txt")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(model={"type": "WordPiece"}), "key model: expected a BPE model"),
        (lambda d: d["model"]["vocab"].update(x=-1), r"key model\.vocab\['x'\]: token 'x' has id -1; ids must be integers from 0 to"),
        (lambda d: d["model"]["merges"].append("a"), r"key model\.merges\[5\]: expected"),
        (lambda d: d["model"]["merges"].append(["q", "zz"]), r"key model\.merges\[5\]: token 'zz' is not in model\.vocab"),
        (lambda d: d.update(pre_tokenizer={"type": "Whitespace"}), "key pre_tokenizer"),
        (lambda d: d["added_tokens"].append({"content": 3}), r"key added_tokens\[2\]"),
    ],
)
def test_malformed_tokenizer_json_names_the_key(tmp_path: Path, mutate, message: str) -> None:  # noqa: ANN001
    vocab, merges, specials = tiny_tokenizer()
    data = formats.tokenizer_json_dict(vocab, merges, specials, "gpt2")
    mutate(data)
    path = write(tmp_path / "tokenizer.json", json.dumps(data))
    with pytest.raises(FormatError, match=message):
        load_tokenizer_json(path)


def test_tokenizer_json_with_string_merges_loads(tmp_path: Path) -> None:
    vocab, merges, specials = tiny_tokenizer()
    data = formats.tokenizer_json_dict(vocab, merges, specials, "gpt2")
    data["model"]["merges"] = [" ".join(pair) for pair in data["model"]["merges"]]
    path = write(tmp_path / "tokenizer.json", json.dumps(data))
    assert load_tokenizer_json(path)[:3] == (vocab, merges, specials)


def test_malformed_sidecar(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="key 'special_tokens'"):
        load_tokenizer_config(write(tmp_path / "c.json", '{"special_tokens": "<|x|>"}'))
    with pytest.raises(FormatError, match="key 'pattern'"):
        load_tokenizer_config(write(tmp_path / "c.json", '{"pattern": "(unclosed"}'))
    assert load_tokenizer_config(write(tmp_path / "c.json", "{}"))[1].name == "gpt2"


def test_possessive_intervals_are_rewritten_for_oniguruma() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    assert formats.oniguruma_source(r"\p{N}{1,3}+|[ab]{2}+|x{3}") == r"(?>\p{N}{1,3})|(?>[ab]{2})|x{3}"
    split = tokenizers.pre_tokenizers.Split(
        tokenizers.Regex(formats.oniguruma_source(GPT4_PATTERN)), behavior="isolated"
    )
    assert [t for t, _ in split.pre_tokenize_str("x 1234567")] == ["x", " ", "123", "456", "7"]
