"""Issue 13.2: SIGTERM and SIGHUP clean up like Ctrl+C; a SIGKILLed run's debris is removed.

The command line runs in a subprocess; the test waits for a chosen stage (the temporary
file exists, worker processes run), sends a real signal, and checks: the exit status
says so, no traceback, no temporary or partial file, and no worker process left alive.
A run killed outright (SIGKILL) cannot clean up, but its workers end by themselves and
the next run into the same place removes its temporary file.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import core

pytestmark = pytest.mark.skipif(not Path("/proc/self").exists(), reason="finds worker processes through /proc")


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.update(int(c) for c in (task / "children").read_text().split())
        except OSError:
            pass
    return found


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except OSError:
        return ""


def _cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) process ``pid`` has used; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_for(condition: Callable[[], object], what: str, process: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(f"the command ended (status {process.returncode}) before {what}: {err}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.005)


def _temporaries(folder: Path) -> list[Path]:
    return sorted(folder.glob(".*.tmp"))


def _assert_workers_gone(workers: set[int]) -> None:
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in workers if _alive(pid)], "a worker process outlived its parent"


def _stopped_cleanly(process: subprocess.Popen[str], signum: int, workers: set[int]) -> str:
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signum, (process.returncode, err)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert f"stopped by {signal.Signals(signum).name}" in err
    _assert_workers_gone(workers)
    return err


@pytest.fixture()
def tokenizer_dir(tmp_path: Path) -> Path:
    vocab = {i: bytes([i]) for i in range(256)}
    merges = [(b"t", b"h"), (b"th", b"e"), (b" ", b"a"), (b"e", b"r")]
    for n, (a, b) in enumerate(merges):
        vocab[256 + n] = a + b
    folder = tmp_path / "tok"
    core.save_tokenizer(folder, vocab, merges, [], "gpt2")
    return folder


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_encode_stopped_by_a_signal_leaves_nothing(
    tmp_path: Path, big_corpus: Path, tokenizer_dir: Path, start_cli, signum: int  # type: ignore[no-untyped-def]
) -> None:
    out_dir = tmp_path / "npy"
    out_dir.mkdir()
    # the Python encoder, whose workers are processes (the native encoder's are threads,
    # and would finish these 24 MB within a second)
    process = start_cli("encode", big_corpus, "--tokenizer", tokenizer_dir, "--out", out_dir / "ids.npy",
                        "--workers", "2", env={**os.environ, "QT_QPA_PLATFORM": "offscreen", "BPE_STUDIO_PURE_PYTHON": "1"})
    _wait_for(lambda: _temporaries(out_dir) and _children(process.pid), "the .npy temporary and the workers", process)
    time.sleep(0.2)  # the workers are encoding chunks
    workers = _children(process.pid)
    process.send_signal(signum)
    _stopped_cleanly(process, signum, workers)
    assert list(out_dir.iterdir()) == [], "a temporary or partial .npy was left"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_train_stopped_while_counting_leaves_no_worker(
    tmp_path: Path, big_corpus: Path, start_cli, signum: int  # type: ignore[no-untyped-def]
) -> None:
    out = tmp_path / "tok"
    # the regex path (~5 MB/s a core), so counting lasts seconds: the native scanner would
    # finish these 24 MB before a spawned worker has started
    process = start_cli("train", big_corpus, "--vocab-size", "2000", "--out", out, "--workers", "2",
                        env={**os.environ, "QT_QPA_PLATFORM": "offscreen", "BPE_STUDIO_PURE_PYTHON": "1"})
    _wait_for(lambda: _children(process.pid), "the counting workers", process)
    time.sleep(0.5)  # spawned workers have started and count chunks
    workers = _children(process.pid)
    process.send_signal(signum)
    _stopped_cleanly(process, signum, workers)
    assert not out.exists()


def test_train_stopped_while_counting_in_threads_leaves_nothing(
    tmp_path: Path, big_corpus: Path, start_cli  # type: ignore[no-untyped-def]
) -> None:
    # The native scanner counts plain text in worker threads of the run's own process:
    # 8 x 24 MB keep them busy for a second or more; a signal stops the run and the threads.
    corpus = tmp_path / "bigger.txt"
    block = big_corpus.read_bytes()
    with corpus.open("wb") as f:
        for _ in range(8):
            f.write(block)
    out = tmp_path / "tok"
    process = start_cli("train", corpus, "--vocab-size", "2000", "--out", out, "--workers", "2")
    _wait_for(lambda: len(list(Path(f"/proc/{process.pid}/task").iterdir())) > 2, "the counting threads", process)
    time.sleep(0.2)  # they count
    assert not _children(process.pid), "no worker process for native counting"
    process.send_signal(signal.SIGTERM)
    _stopped_cleanly(process, signal.SIGTERM, set())
    assert not out.exists()


def test_train_stopped_while_writing_leaves_no_temporary(tmp_path: Path, start_cli, merge_kernel: None) -> None:  # type: ignore[no-untyped-def]
    # One 8 MB pre-token: merging is quick, the files (~80 MB of long tokens) take a while.
    corpus = tmp_path / "a.txt"
    corpus.write_bytes(b"a" * (8 << 20))
    out = tmp_path / "tok"
    out.mkdir()
    (out / "vocab.json").write_text("old\n", encoding="utf-8")
    process = start_cli("train", corpus, "--vocab-size", "300", "--out", out, "--workers", "1")
    _wait_for(lambda: _temporaries(out), "a temporary file of the export", process)
    process.send_signal(signal.SIGTERM)
    _stopped_cleanly(process, signal.SIGTERM, set())
    assert sorted(p.name for p in out.iterdir()) == ["vocab.json"], "a temporary or partial file was left"
    assert (out / "vocab.json").read_text(encoding="utf-8") == "old\n"


def test_sigkilled_encode_is_cleaned_up_by_the_next_run(
    tmp_path: Path, big_corpus: Path, tokenizer_dir: Path, start_cli, run_cli  # type: ignore[no-untyped-def]
) -> None:
    out_dir = tmp_path / "npy"
    out_dir.mkdir()
    out = out_dir / "ids.npy"
    # the Python encoder's workers are processes (the native encoder's are threads)
    process = start_cli("encode", big_corpus, "--tokenizer", tokenizer_dir, "--out", out, "--workers", "2",
                        env={**os.environ, "QT_QPA_PLATFORM": "offscreen", "BPE_STUDIO_PURE_PYTHON": "1"})
    _wait_for(lambda: _temporaries(out_dir) and _children(process.pid), "the temporary and the workers", process)
    time.sleep(0.2)
    workers = _children(process.pid)
    process.kill()
    process.communicate()
    _assert_workers_gone(workers)  # orphaned workers notice and end, silently
    stale = _temporaries(out_dir)
    assert stale, "SIGKILL cannot clean up: the temporary file is expected to be there"
    # Another writer's temporary file, whose process is alive, is not touched.
    live = out_dir / f".ids.npy.{os.getpid()}.abcdefgh.tmp"
    live.write_bytes(b"in progress")

    small = tmp_path / "small.txt"
    small.write_text("the other run\n", encoding="utf-8")
    result = run_cli("encode", small, "--tokenizer", tokenizer_dir, "--out", out, "--workers", "1")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out_dir.iterdir()) == sorted([live.name, "ids.npy"])


def test_sigkilled_train_export_is_cleaned_up_by_the_next_export(
    tmp_path: Path, start_cli, run_cli, merge_kernel: None  # type: ignore[no-untyped-def]
) -> None:
    corpus = tmp_path / "a.txt"
    corpus.write_bytes(b"a" * (8 << 20))
    out = tmp_path / "tok"
    process = start_cli("train", corpus, "--vocab-size", "300", "--out", out, "--workers", "1")
    _wait_for(lambda: out.is_dir() and _temporaries(out), "a temporary file of the export", process)
    process.kill()
    process.communicate()
    assert _temporaries(out), "SIGKILL cannot clean up: a temporary file is expected to be there"

    small = tmp_path / "small.txt"
    small.write_text("the next run\n" * 10, encoding="utf-8")
    result = run_cli("train", small, "--vocab-size", "260", "--out", out, "--workers", "1")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["merges.txt", "tokenizer.json", "tokenizer.tiktoken", "tokenizer_config.json", "vocab.json"]


@pytest.mark.parametrize("command", ["encode", "train"])
def test_a_worker_killed_mid_run_is_one_clear_error_not_a_hang(
    tmp_path: Path, big_corpus: Path, tokenizer_dir: Path, start_cli, command: str  # type: ignore[no-untyped-def]
) -> None:
    # The system's out-of-memory killer ends workers with SIGKILL: their chunks never come back.
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    if command == "encode":
        args = ["encode", big_corpus, "--tokenizer", tokenizer_dir, "--out", out_dir / "ids.npy"]
    else:
        args = ["train", big_corpus, "--vocab-size", "2000", "--out", out_dir / "tok"]
    # the Python paths count and encode in worker processes (the native ones in threads,
    # which cannot be killed alone)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "BPE_STUDIO_PURE_PYTHON": "1"}
    process = start_cli(*args, "--workers", "2", env=env)
    _wait_for(lambda: _children(process.pid), "the workers", process)
    time.sleep(0.3)  # they are at work
    workers = {pid for pid in _children(process.pid) if "resource_tracker" not in _command_line(pid)}
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    _, err = process.communicate(timeout=60)  # never a hang
    assert "Traceback" not in err
    if command == "train" and process.returncode == 0:
        # Spawned workers killed before they took a chunk lose nothing: the run may finish.
        assert (out_dir / "tok" / "vocab.json").is_file()
        return
    assert process.returncode == 2, (process.returncode, err)
    assert "bpe-studio: error: a worker process ended in the middle of the work (killed by signal 9" in err
    _assert_workers_gone(_children(process.pid) | workers)
    assert list(out_dir.iterdir()) == []


def test_an_evaluation_worker_killed_mid_run_is_one_clear_error_not_a_hang(
    tmp_path: Path, big_corpus: Path, tokenizer_dir: Path, start_cli  # type: ignore[no-untyped-def]
) -> None:
    # Evaluating several rows with --workers 2 measures them in worker processes.
    text = big_corpus.read_bytes()[: 24 << 20]
    rows = []
    for k in range(8):
        rows.append(tmp_path / f"row{k}.txt")
        rows[-1].write_bytes(text[k * (3 << 20) : (k + 1) * (3 << 20)].rpartition(b"\n")[0])
    env = {**os.environ, "BPE_STUDIO_PURE_PYTHON": "1"}
    process = start_cli("eval", tokenizer_dir, "--on", *rows, "--workers", "2", env=env)

    def workers() -> set[int]:
        return {pid for pid in _children(process.pid) if "resource_tracker" not in _command_line(pid)}

    _wait_for(lambda: len(workers()) == 2, "the workers", process)
    # at work: more CPU than starting takes (a worker killed before it took a row loses
    # nothing, and the pool starts another); a row takes seconds in Python
    _wait_for(lambda: any(_cpu_seconds(pid) > 1.0 for pid in workers()), "a worker at work", process)
    killed = workers()
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    _, err = process.communicate(timeout=120)  # never a hang
    assert "Traceback" not in err
    assert process.returncode == 2, (process.returncode, err)
    assert "bpe-studio: error: a worker process ended in the middle of the work (killed by signal 9" in err
    _assert_workers_gone(_children(process.pid) | killed)
