"""Session files: round trip of any bytes, atomic writes, clear errors for damaged files. No Qt."""

from __future__ import annotations

import json

import pytest

from core import TrainOptions
from bpe_studio.app.models.session import (
    Session,
    SessionError,
    TrainSettings,
    load_session,
    save_session,
    session_to_json,
)


def make_session() -> Session:
    vocab = {i: bytes([i]) for i in range(256)}
    vocab[256] = b"<|endoftext|>"
    merges = [(b"\xe2", b"\x80"), (b"\xe2\x80", b"\x99"), (b" ", b"t")]
    for i, (a, b) in enumerate(merges):
        vocab[257 + i] = a + b
    settings = TrainSettings("/data/c.txt", TrainOptions(260, ("<|endoftext|>",), pattern=r"\p{L}+|\s+|.", workers=3))
    return Session(settings, vocab, merges, [10, 9, 4], [100, 90, 86], True, {"elapsed": 1.5, "distinct": 7})


def test_round_trip_keeps_everything(tmp_path):
    session = make_session()
    path = save_session(tmp_path / "s.bpesession", session)
    loaded = load_session(path)
    assert loaded == session
    assert loaded.merge_counts_by_id() == {257: 10, 258: 9, 259: 4}
    assert [p.name for p in tmp_path.iterdir()] == ["s.bpesession"]  # no temporary left


def test_damaged_files_are_named_in_the_error(tmp_path):
    path = tmp_path / "bad.bpesession"
    path.write_text("[1, 2", encoding="utf-8")
    with pytest.raises(SessionError, match=r"bad.bpesession, line 1"):
        load_session(path)
    path.write_text(json.dumps({"format": "something else"}), encoding="utf-8")
    with pytest.raises(SessionError, match="not a BPE Studio session"):
        load_session(path)
    data = session_to_json(make_session())
    data["merges"][0][0] = "!!not base64!!"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SessionError, match="damaged"):
        load_session(path)
    data = session_to_json(make_session())
    data["vocab"] = data["vocab"][:258]  # merges now lack their tokens
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SessionError, match="has no token"):
        load_session(path)
    data = session_to_json(make_session())
    data["merges"][:2] = data["merges"][1::-1]  # the second merge now comes first
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SessionError, match="no earlier merge made"):
        load_session(path)
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(SessionError, match="not UTF-8"):
        load_session(path)


def test_session_files_get_the_same_permissions_as_exports(tmp_path):
    """One atomic writer: a session is not left 0600 (its temporary file's mode) while
    exports get the mode of any new file."""
    import os
    import stat

    from core.formats import save_tokenizer

    session = make_session()
    saved = save_session(tmp_path / "run.bpesession", session)
    exported = save_tokenizer(tmp_path / "tok", session.vocab, session.merges, ["<|endoftext|>"], "gpt2")
    umask = os.umask(0o022)
    os.umask(umask)
    expected = 0o666 & ~umask
    modes = {stat.S_IMODE(p.stat().st_mode) for p in [saved, *exported]}
    assert modes == {expected}
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
