"""core.evaluate: the measures against values counted by hand, on files, folders and JSONL groups."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.encode.tokenizer import Tokenizer
from core.errors import CorpusError
from core.evaluate import count_text, evaluate


def tiny() -> Tokenizer:
    """Single bytes and one merge, "a" + "b" -> "ab" (id 256)."""
    vocab = {i: bytes([i]) for i in range(256)}
    vocab[256] = b"ab"
    return Tokenizer(vocab, [(b"a", b"b")])


def bytes_only() -> Tokenizer:
    return Tokenizer({i: bytes([i]) for i in range(256)}, [])


def test_measures_by_hand(tmp_path: Path) -> None:
    # pieces "ab", " ab", "\n", "c", " é": tokens ab | " " ab | "\n" | c | " " é(2 bytes) = 8
    (tmp_path / "t.txt").write_text("ab ab\nc é", encoding="utf-8")
    result = evaluate({"tiny": tiny(), "bytes": bytes_only()}, [tmp_path / "t.txt"], baseline="bytes")
    tiny_row, bytes_row = result.rows
    assert (tiny_row.tokens, tiny_row.bytes, tiny_row.chars, tiny_row.words) == (8, 10, 9, 4)
    # distinct: ab, " ", "\n", c, 0xC3, 0xA9
    assert tiny_row.distinct == 6
    assert tiny_row.vocab_size == 257
    assert tiny_row.bytes_per_token == 10 / 8
    assert tiny_row.chars_per_token == 9 / 8
    assert tiny_row.fertility == 8 / 4
    assert tiny_row.vocab_used == 6 / 257
    assert bytes_row.tokens == 10
    assert tiny_row.vs_baseline == 8 / 10
    assert bytes_row.vs_baseline == 1.0
    assert result.counts["tiny"][256] == 2


def test_invalid_bytes_count_once(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_bytes(b"ab\xff")
    row = evaluate({"b": bytes_only()}, tmp_path / "t.txt").rows[0]
    assert (row.tokens, row.bytes, row.chars, row.words) == (3, 3, 3, 1)


def test_words_across_blocks() -> None:
    assert count_text(["hel", "lo wor", "ld"], stream=True).words == 2
    assert count_text(["a ", "b"], stream=True).words == 2
    assert count_text(["a", " b"], stream=True).words == 2
    # separate documents: a word never spans two
    assert count_text(["hel", "lo"], stream=False).words == 2
    assert count_text(["a\u3000b\u00a0c"], stream=False).words == 3  # Unicode spaces


def test_folder_gives_a_row_per_file_and_jsonl_groups(tmp_path: Path) -> None:
    folder = tmp_path / "held"
    folder.mkdir()
    (folder / "x.txt").write_text("ab ab", encoding="utf-8")
    (folder / "y.txt").write_text("abc", encoding="utf-8")
    records = [{"text": "ab", "lang": "en"}, {"text": "é", "lang": "fr"}, {"text": "ab ab", "lang": "en"},
               {"text": "x"}]
    (tmp_path / "d.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    rows = evaluate({"tiny": tiny()}, [folder, tmp_path / "d.jsonl"], group_by="lang").rows
    assert [Path(r.source.split(" [")[0]).name + (" [" + r.source.split(" [")[1] if " [" in r.source else "")
            for r in rows] == ["x.txt", "y.txt", "d.jsonl [lang=(none)]", "d.jsonl [lang=en]", "d.jsonl [lang=fr]"]
    by = {r.source.rsplit("=", 1)[-1]: r for r in rows}
    # en: "ab" -> 1 token; "ab ab" -> ab, " ", ab: 3 tokens (documents encoded one by one)
    assert (by["en]"].tokens, by["en]"].bytes, by["en]"].words) == (1 + 3, 2 + 5, 1 + 2)
    assert (by["fr]"].tokens, by["fr]"].bytes, by["fr]"].chars) == (2, 2, 1)
    assert rows[0].tokens == 3 and rows[1].tokens == 2


def test_evaluate_agrees_with_plain_encoding(tmp_path: Path, shared_dir: Path) -> None:
    gpt2 = Tokenizer.load(shared_dir / "fixtures" / "gpt2_vocab.json")
    text = (shared_dir / "fixtures" / "tinystories_sample.txt").read_text(encoding="utf-8")
    (tmp_path / "t.txt").write_text(text, encoding="utf-8")
    row = evaluate({"gpt2": gpt2}, tmp_path / "t.txt").rows[0]
    ids = gpt2.encode(text)
    assert row.tokens == len(ids)
    assert row.distinct == len(set(ids))
    assert row.words == len(text.split())
    assert row.bytes == len(text.encode("utf-8"))


def test_bad_input(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("ab", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="nope"):
        evaluate([tmp_path / "nope"], tmp_path / "t.txt")
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        evaluate({"t": tiny()}, tmp_path / "missing.txt")
    (tmp_path / "empty.txt").write_bytes(b"")
    with pytest.raises(CorpusError, match="empty.txt is empty"):
        evaluate({"t": tiny()}, tmp_path / "empty.txt")
    (tmp_path / "d.jsonl").write_text('{"body": "x"}\n', encoding="utf-8")
    with pytest.raises(CorpusError, match="d.jsonl"):
        evaluate({"t": tiny()}, tmp_path / "d.jsonl")
    with pytest.raises(ValueError, match="baseline 'gpt2' is not one of the tokenizers"):
        evaluate({"t": tiny()}, tmp_path / "t.txt", baseline="gpt2")


def test_workers_give_the_same_figures(tmp_path: Path, shared_dir: Path) -> None:
    folder = tmp_path / "held"
    folder.mkdir()
    fixtures = shared_dir / "fixtures"
    for name in ("tinystories_sample.txt", "german.txt", "address.txt"):
        (folder / name).write_bytes((fixtures / name).read_bytes())
    (folder / "bad.txt").write_bytes(b"caf\xe9 ok \xff<|endoftext|>x")
    records = [{"text": t, "lang": lang} for t, lang in (("Hello there", "en"), ("Grüß Gott", "de"), ("Bye", "en"))]
    (tmp_path / "d.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    tokenizers = {"gpt2": Tokenizer.load(fixtures / "gpt2_vocab.json"), "tiny": tiny()}
    one = evaluate(tokenizers, [folder, tmp_path / "d.jsonl"], group_by="lang", workers=1)
    two = evaluate(tokenizers, [folder, tmp_path / "d.jsonl"], group_by="lang", workers=2)
    assert one.rows == two.rows
    assert all((one.counts[k] == two.counts[k]).all() for k in tokenizers)
    assert len(one.rows) == 2 * (4 + 2)
