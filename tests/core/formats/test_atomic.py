"""The one atomic writer: temporary files named with the writer's pid, stale ones removed,
files streamed from pieces, an output folder checked without leaving anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.formats.atomic import atomic_output, check_output_dir, remove_stale_temporaries, write_atomically


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_temporary_names_carry_the_pid(tmp_path: Path) -> None:
    target = tmp_path / "ids.npy"
    with atomic_output(target) as f:
        names = [p.name for p in tmp_path.iterdir()]
        f.write(b"x")
    assert len(names) == 1 and names[0].startswith(f".ids.npy.{os.getpid()}.") and names[0].endswith(".tmp")
    assert [p.name for p in tmp_path.iterdir()] == ["ids.npy"]


def test_stale_temporaries_of_dead_writers_are_removed(tmp_path: Path) -> None:
    dead = tmp_path / f".vocab.json.{_dead_pid()}.k2j4h5g6.tmp"
    live = tmp_path / f".vocab.json.{os.getppid()}.k2j4h5g6.tmp"  # a running process
    other_name = tmp_path / f".merges.txt.{_dead_pid()}.k2j4h5g6.tmp"  # not this target's
    unrelated = tmp_path / ".vocab.json.k2j4h5g6.tmp"  # no pid: not ours to judge
    for path in (dead, live, other_name, unrelated):
        path.write_text("debris", encoding="utf-8")
    assert remove_stale_temporaries(tmp_path / "vocab.json") == [dead]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in (live, other_name, unrelated))
    write_atomically([(tmp_path / "vocab.json", "{}\n"), (tmp_path / "merges.txt", "#version: 0.2\n")])
    assert not other_name.exists()  # the next write into that place removes it
    assert live.exists() and unrelated.exists()


def test_files_are_written_from_pieces(tmp_path: Path) -> None:
    # small pieces filling several blocks, then a huge piece between small ones
    pieces = ["naïve ", *(["日本", "ab"] * 400_000), "x" * 3_000_000, "\n", "end"]
    write_atomically([(tmp_path / "a.txt", iter(pieces))])
    assert (tmp_path / "a.txt").read_bytes() == "".join(pieces).encode()


def test_a_failing_piece_leaves_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n", encoding="utf-8")

    def pieces():  # type: ignore[no-untyped-def]
        yield "new"
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_atomically([(tmp_path / "b.txt", "fine\n"), (tmp_path / "a.txt", pieces())])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "old\n"


def test_check_output_dir_leaves_nothing(tmp_path: Path) -> None:
    check_output_dir(tmp_path / "new" / "deeper")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(NotADirectoryError, match="is a file"):
        check_output_dir(tmp_path / "file" / "out")
    with pytest.raises(NotADirectoryError, match="not a folder"):
        check_output_dir(tmp_path / "file")


def test_an_interruption_while_probing_the_output_folder_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM (an exception from the CLI's handler) between making the probe file and
    removing it: the probe goes too (CI saw one left when a signal came at that moment)."""
    import core.formats.atomic as atomic

    real_mkstemp = atomic.tempfile.mkstemp

    def made_then_interrupted(*args: object, **kwargs: object) -> tuple[int, str]:
        fd, _name = real_mkstemp(*args, **kwargs)  # type: ignore[call-overload]
        os.close(fd)
        raise KeyboardInterrupt  # the signal lands as the probe is made

    monkeypatch.setattr(atomic.tempfile, "mkstemp", made_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        check_output_dir(tmp_path)
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("writer", ["write_atomically", "atomic_output"])
def test_an_interruption_right_after_the_temporary_is_created_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writer: str
) -> None:
    """SIGTERM (raised as an exception) can land between mkstemp creating the file and the
    writer keeping its name; the clean-up still finds it."""
    import tempfile

    real_mkstemp = tempfile.mkstemp

    def mkstemp_then_interrupted(*args, **kwargs):  # type: ignore[no-untyped-def]
        fd, name = real_mkstemp(*args, **kwargs)
        os.close(fd)
        raise KeyboardInterrupt  # as the signal handler's exception would

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp_then_interrupted)
    target = tmp_path / "vocab.json"
    with pytest.raises(KeyboardInterrupt):
        if writer == "write_atomically":
            write_atomically([(target, "{}")])
        else:
            with atomic_output(target) as f:
                f.write(b"{}")
    assert list(tmp_path.iterdir()) == []
