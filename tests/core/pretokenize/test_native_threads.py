"""One native count table used by several threads at once never crashes the interpreter:
`scan` releases the GIL and grows the table, so a table in use raises RuntimeError."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core.pretokenize.native import native_module

REPO = Path(__file__).resolve().parents[3]

SCRIPT = textwrap.dedent("""
    import threading
    from core.pretokenize._native import Counts

    table = Counts()
    other = Counts()
    # distinct words, so the table keeps growing (and moving) while other threads look at it
    texts = [" ".join(f"w{t}x{i}" for i in range(i0, i0 + 40000)).encode() for t, i0 in enumerate(range(0, 4))]
    refused = []
    errors = []

    def work(data):
        for round in range(6):
            for call in (lambda: table.scan(data, 1), lambda: len(table), lambda: table.items(),
                         lambda: table.packed(), lambda: other.add(table), lambda: table.add(other),
                         lambda: table.invalid, lambda: table.arrays(), lambda: table.columns(other)):
                try:
                    call()
                except RuntimeError as e:
                    refused.append(str(e))
                except BaseException as e:
                    errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(texts[t],)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert all("another thread" in r for r in refused), refused[:3]
    print("refused", len(refused))
""")


@pytest.mark.skipif(native_module() is None, reason="the native pre-tokenizer is not built")
def test_four_threads_on_one_table_do_not_crash() -> None:
    for _ in range(3):
        result = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, capture_output=True, text=True,
                                timeout=300)
        assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
        assert result.stdout.startswith("refused")


@pytest.mark.skipif(native_module() is None, reason="the native pre-tokenizer is not built")
def test_a_table_is_usable_again_after_a_scan() -> None:
    from core.pretokenize._native import Counts

    table = Counts()
    table.scan(b"a b a", 1)
    table.scan(b"a", 1)
    assert dict(zip(*table.items())) == {b"a": 2, b" b": 1, b" a": 1}
    assert len(table) == 3 and table.invalid == 0
