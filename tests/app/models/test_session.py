"""Session files: round trip of any bytes, atomic writes, clear errors for damaged files. No Qt."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


# ------------------------------------------------------------------ issue 23.7: damaged files

def rich_session_json() -> dict:
    """A valid session's JSON with every field the window writes, stats lists included."""
    session = make_session()
    session.stats.update(total=120, corpus_bytes=400, invalid_bytes=0, documents=3, input_bytes=410,
                         frequency_ranks=[1, 2, 5], frequency_counts=[9, 4, 1])
    return session_to_json(session)


def paths_of(node: object, prefix: tuple = ()) -> list[tuple]:
    """Every place in a JSON tree (the root excluded), as a tuple of keys and indexes."""
    found = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for key, child in items:
        found.append(prefix + (key,))
        found.extend(paths_of(child, prefix + (key,)))
    return found


DEEP = "\0deep\0"
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6) | st.sampled_from(["AA==", "", "!!", "é", "YWI="]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=6,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_damage_is_a_session_error_naming_the_file(tmp_path, data) -> None:  # noqa: ANN001
    """Type swaps, deletions and deep nesting anywhere: a `SessionError` naming the file,
    or a session the window can show (its state loads and summarises)."""
    from bpe_studio.app.models.training_state import TrainingState

    doc = rich_session_json()
    depth = 0
    for _ in range(data.draw(st.integers(1, 3))):
        # a field first, then a place in it: the 260 vocabulary entries do not drown the settings
        paths = paths_of(doc)
        field_name = data.draw(st.sampled_from(sorted({p[0] for p in paths})))
        paths = [p for p in paths if p[0] == field_name]
        path = paths[data.draw(st.integers(0, len(paths) - 1))]
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        op = data.draw(st.sampled_from(["delete", "replace", "replace", "deep"]))
        if op == "delete":
            del parent[path[-1]]
        elif op == "replace":
            parent[path[-1]] = data.draw(json_values)
        else:
            parent[path[-1]] = DEEP
            depth = data.draw(st.sampled_from([50, 900, 5_000, 200_000]))
    text = json.dumps(doc)
    if DEEP in text:
        text = text.replace(json.dumps(DEEP), "[" * depth + "1" + "]" * depth, 1)
    file = tmp_path / "damaged.bpesession"
    file.write_text(text, encoding="utf-8")
    try:
        session = load_session(file)
    except SessionError as e:
        assert str(file) in str(e) and "\n" not in str(e) and len(str(e)) < 600
        return
    state = TrainingState()
    state.load(session)
    state.summary()
    session.merge_counts_by_id()
    assert load_session(save_session(tmp_path / "again.bpesession", session)) == session


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["merges"][0].__setitem__(0, 4), r"merges\[0\] should be \[base64 text, base64 text\], not"),
        (lambda d: d["vocab"][3].__setitem__(1, 12), r"vocab\[3\] should be \[id, base64 text\], not \[3, 12\]; save"),
        (lambda d: d["vocab"][3].__setitem__(0, "3"), r"vocab\[3\] should be \[id, base64 text\]"),
        (lambda d: d["vocab"][3].__setitem__(0, 2), r"id 2 is in the vocabulary twice"),
        (lambda d: d["settings"].__setitem__("vocab_size", "260"), r'settings\.vocab_size should be a whole number, not "260"'),
        (lambda d: d["settings"].__setitem__("special_tokens", "<|endoftext|>"), r'settings\.special_tokens should be a list of texts, not "<\|endoftext\|>"'),
        (lambda d: d["settings"].__setitem__("workers", 2.5), r"settings\.workers should be a whole number or null, not 2\.5"),
        (lambda d: d["settings"].pop("corpus"), r"settings\.corpus is missing"),
        (lambda d: d.__setitem__("partial", "false"), r"partial should be true or false"),
        (lambda d: d["stats"].__setitem__("elapsed", "soon"), r"stats\.elapsed should be a number"),
        (lambda d: d["stats"].__setitem__("frequency_counts", [1, "x"]), r"stats\.frequency_counts should be a list of counts"),
        (lambda d: d["merge_counts"].__setitem__(1, 2**70), r"merge_counts\[1\] should be a count"),
        (lambda d: d["stats"].__setitem__("x", [[[[1]]]]), r"stats\.x should be a number or text, not \[\[\[…\]\]\]"),
    ],
)
def test_each_damage_says_which_field(tmp_path, change, message: str) -> None:  # noqa: ANN001
    data = session_to_json(make_session())
    change(data)
    path = tmp_path / "bad.bpesession"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SessionError, match=rf"bad\.bpesession is damaged: {message}"):
        load_session(path)


@pytest.mark.parametrize("damage", ["nested", "nested_inside", "nan", "infinity", "huge_int"])
def test_deep_nesting_and_odd_numbers_are_session_errors(tmp_path, damage: str) -> None:  # noqa: ANN001
    valid = json.dumps(session_to_json(make_session()))
    assert '"elapsed": 1.5' in valid
    text = {
        "nested": "[" * 100_000,
        "nested_inside": valid.replace('"elapsed": 1.5', '"elapsed": ' + "[" * 50_000, 1),
        "nan": valid.replace('"elapsed": 1.5', '"elapsed": NaN', 1),
        "infinity": valid.replace('"elapsed": 1.5', '"elapsed": -Infinity', 1),
        "huge_int": valid.replace('"elapsed": 1.5', '"elapsed": ' + "9" * 5000, 1),
    }[damage]
    path = tmp_path / "deep.bpesession"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SessionError, match=r"deep\.bpesession"):
        load_session(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_without_waiting(tmp_path) -> None:  # noqa: ANN001
    """Open session on a FIFO must not hang the window waiting for a writer."""
    import subprocess
    import sys

    fifo = tmp_path / "pipe.bpesession"
    os.mkfifo(fifo)
    code = ("from bpe_studio.app.models.session import load_session, SessionError\n"
            f"try:\n    load_session({str(fifo)!r})\nexcept SessionError as e:\n    print(e)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])})
    assert result.stdout.strip() == f"{fifo} is not a regular file (a FIFO); choose a session file"
