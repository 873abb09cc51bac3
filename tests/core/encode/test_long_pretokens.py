"""One enormous pre-token (a run of one character): exact ids, memory bounded per byte.

Issue 23 point 6: 50 MB of one character peaked at 3 GB when encoded (~56 bytes per byte
in the long-word merge: 32-byte heap entries and 64-bit links). The bound checked here is
35 bytes per input byte of peak memory above the process's state before encoding.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from core.encode.merge import merge_word
from core.encode.tokenizer import Tokenizer


def run_tokenizer() -> Tokenizer:
    vocab = {i: bytes([i]) for i in range(256)}
    merges = [(b"a", b"a"), (b"aa", b"aa"), (b"aaaa", b"aaaa"), (b"b", b"a"), (b"ba", b"aa")]
    for i, (a, b) in enumerate(merges):
        vocab[256 + i] = a + b
    return Tokenizer(vocab, merges)


@pytest.mark.parametrize("text", ["a" * 1001, "b" + "a" * 5000, "ab" * 3000 + "a" * 777, "a" * 300 + "ba" * 200])
def test_long_runs_merge_as_the_reference(text: str) -> None:
    tok = run_tokenizer()
    pieces = tok._pieces
    want = merge_word([ord(c) for c in text], pieces._pair_rank, pieces._new_id)
    assert tok.encode(text.encode()) == want


MEASURE = textwrap.dedent("""
    import re
    from core.encode.tokenizer import Tokenizer

    def peak_kb():  # VmHWM, not ru_maxrss: Linux carries the parent's peak into ru_maxrss across exec
        with open("/proc/self/status") as status:
            return int(re.search(r"VmHWM:\\s+(\\d+)", status.read()).group(1))

    vocab = {i: bytes([i]) for i in range(256)}
    merges = [(b"a", b"a"), (b"aa", b"aa"), (b"aaaa", b"aaaa")]
    vocab |= {256 + i: a + b for i, (a, b) in enumerate(merges)}
    tok = Tokenizer(vocab, merges)
    data = b"a" * (16 << 20)
    tok.encode(b"a" * 1000)  # everything built
    before = peak_kb()
    ids = tok.encode_to_array(data)
    assert len(ids) == (16 << 20) // 8, len(ids)
    print((peak_kb() - before) * 1024 / len(data))
""")


def test_memory_of_one_huge_pretoken_is_bounded_per_byte() -> None:
    pytest.importorskip("core.encode._bpe_kernel", reason="the native encoder is not built")
    run = subprocess.run([sys.executable, "-c", MEASURE], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert float(run.stdout) < 35, f"{float(run.stdout):.1f} bytes of memory per input byte"
