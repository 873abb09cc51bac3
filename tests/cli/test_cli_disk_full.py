"""A full disk is one line naming the file being written, and leaves no empty ``--out``
folder: on a real 1 MB tmpfs where one can be mounted, and with the writes made to fail."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import bpe_studio.cli.encode as encode_cli
import bpe_studio.cli.train as train_cli
from bpe_studio.cli import main

REPO = Path(__file__).resolve().parents[2]
CORPUS = "the cat sat on the mat; the dog sat on the log.\n" * 40_000  # 2 MB


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text(CORPUS, encoding="utf-8")
    return path


def test_train_with_a_full_disk_says_so_and_leaves_no_folder(
        tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "tok"

    def full(args: object, stream: object = None) -> int:
        os.makedirs(out)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(train_cli, "run_train", full)
    assert main(["train", str(corpus), "--vocab-size", "300", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"bpe-studio: error: no space left on device writing {out}; free some space or write elsewhere"]
    assert not out.exists()


def test_encode_with_a_full_disk_is_not_numpys_short_write(
        tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ids.npy"

    def full(args: object, stream: object = None, err: object = None) -> int:
        raise OSError("185736 requested and 115090 written")  # what numpy's tofile says

    monkeypatch.setattr(encode_cli, "run_encode", full)
    assert main(["encode", str(tmp_path), str(corpus), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"bpe-studio: error: no space left on device writing {out}; free some space or write elsewhere"]


def test_an_existing_out_folder_is_never_removed(
        tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "tok"
    out.mkdir()

    def full(args: object, stream: object = None) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(train_cli, "run_train", full)
    assert main(["train", str(corpus), "--vocab-size", "300", "--out", str(out)]) == 2
    assert out.is_dir()


@pytest.fixture()
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "tiny"
    mount.mkdir()
    if shutil.which("mount") is None or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                                                       capture_output=True).returncode != 0:
        pytest.skip("no tmpfs can be mounted here (the in-process tests above cover the messages)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


def test_a_real_full_disk(tmp_path: Path, corpus: Path, tiny_disk: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "QT_QPA_PLATFORM": "offscreen"}

    def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "bpe_studio", *map(str, args)], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=300)

    tok = tmp_path / "tok"
    assert run("train", corpus, "--vocab-size", "400", "--out", tok).returncode == 0
    ids = tiny_disk / "ids.npy"
    result = run("encode", tok, corpus, "--out", ids)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"bpe-studio: error: no space left on device writing {ids}; free some space or write elsewhere")
    assert list(tiny_disk.iterdir()) == []
    (tiny_disk / "filler").write_bytes(bytes(1_040_000))  # leaves about a page
    result = run("train", corpus, "--vocab-size", "400", "--out", tiny_disk / "tok")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("bpe-studio: error: no space left on device writing ")
    assert list(tiny_disk.iterdir()) == [tiny_disk / "filler"]
