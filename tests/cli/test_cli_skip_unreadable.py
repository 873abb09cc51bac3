"""``--skip-unreadable``: without it, what a folder's walk cannot read is one error line that
names it and the flag; with it, one warning line lists what was left out."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import core

REPO = Path(__file__).resolve().parents[2]


def _cli(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bpe_studio", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})


def test_the_cli_says_which_flag_skips_and_warns_when_it_does(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "b").mkdir(parents=True)
    (corpus / "a.txt").write_text("the cat sat on the mat\n")
    (corpus / "b" / "two.txt").write_text("the dog sat on the log\n")
    (corpus / "b" / "loop").symlink_to(corpus / "b" / "loop")
    out = tmp_path / "c.bpc"
    refused = _cli("count", corpus, "--out", out)
    assert refused.returncode == 2 and not out.exists()
    assert refused.stderr.splitlines() == [
        f"bpe-studio: error: {corpus / 'b' / 'loop'} (a link in a loop of links) inside the corpus cannot be read, "
        "so the corpus would be read without it; give read permission or fix the links, leave it out, or skip "
        "what cannot be read (--skip-unreadable)"], refused.stderr
    done = _cli("count", corpus, "--out", out, "--skip-unreadable")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[:1] == [
        f"bpe-studio: warning: skipped what cannot be read in the corpus: {corpus / 'b' / 'loop'} "
        "(a link in a loop of links)"]
    assert core.PretokenCounts.load(out).documents == 2
