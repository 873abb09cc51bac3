"""Fixtures shared by the library's tests."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["native", "pure"])
def path_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test twice: on the native pre-tokenizer, and on the `regex` path
    (``BPE_STUDIO_PURE_PYTHON=1``, whose workers are processes)."""
    if request.param == "pure":
        monkeypatch.setenv("BPE_STUDIO_PURE_PYTHON", "1")
    else:
        pytest.importorskip("core.pretokenize._native", reason="the native pre-tokenizer is not built")
        monkeypatch.delenv("BPE_STUDIO_PURE_PYTHON", raising=False)
    return str(request.param)
