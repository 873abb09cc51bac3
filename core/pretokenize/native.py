"""When the native pre-tokenizer (``_native.c``, ``_scanner.h``) may stand in for the `regex` module.

The C scanner knows the built-in GPT-2 and GPT-4 patterns and SuperBPE's stage-2 cut only, and its Unicode classes
come from tables generated from one version of `regex` (``tools/gen_unicode_tables.py``).
`scanner_for` gives the scanner's pattern number for a `Pattern`, or ``None`` when the
`regex` path must run:

- a custom pattern, ``BPE_STUDIO_PURE_PYTHON=1``, or the extension not built;
- the installed `regex` classifies some code point differently from the tables (another
  Unicode version): checked once per process, only when `regex`'s version is not the one
  the tables came from, and said once with a `NativeScannerWarning`.
"""

from __future__ import annotations

import os
import warnings
from functools import lru_cache
from types import ModuleType

import regex

from core.pretokenize.patterns import Pattern

_native: ModuleType | None
try:
    from core.pretokenize import _native
except ImportError:  # built without a C compiler: the regex path does everything
    _native = None

__all__ = ["NativeScannerWarning", "native_module", "python_forced", "scanner_for"]

GPT2 = 1
GPT4 = 2
SUPERBPE = 3
_PATTERN_IDS = {"gpt2": GPT2, "gpt4": GPT4, "superbpe": SUPERBPE}


class NativeScannerWarning(UserWarning):
    """The native pre-tokenizer stands down (its tables differ from the installed `regex`)."""


# os.environ keeps this dict in step with itself; reading it directly costs a tenth of
# os.environ.get, which matters for encoding short texts one by one.
_ENVIRON: dict[object, object] | None = getattr(os.environ, "_data", None)
_PURE_KEY: object = os.environ.encodekey("BPE_STUDIO_PURE_PYTHON") if _ENVIRON is not None else None
_PURE_ON: object = os.environ.encodevalue("1") if _ENVIRON is not None else None


def python_forced() -> bool:
    """``BPE_STUDIO_PURE_PYTHON=1``: the Python paths must run (checked at each call)."""
    if _ENVIRON is not None:
        return _ENVIRON.get(_PURE_KEY) == _PURE_ON
    return os.environ.get("BPE_STUDIO_PURE_PYTHON") == "1"


def native_module() -> ModuleType | None:
    """The compiled module when it may be used (built, not forced off, tables current)."""
    if _native is None or python_forced():
        return None
    return _native if _tables_current() else None


def scanner_for(pattern: Pattern) -> int | None:
    """The native scanner's number for ``pattern`` (1: GPT-2, 2: GPT-4, 3: SuperBPE's stage 2), or ``None``."""
    number = _PATTERN_IDS.get(pattern.name)
    if number is None or native_module() is None:
        return None
    return number


@lru_cache(maxsize=1)
def _tables_current() -> bool:
    assert _native is not None
    version, digest = _native.tables_info()
    if version == regex.__version__:
        return True
    from core.pretokenize.unicode_classes import class_flags, flags_digest

    if flags_digest(class_flags()) == digest:
        return True
    warnings.warn(
        f"the native pre-tokenizer's Unicode tables come from regex {version}, whose classes "
        f"differ from the installed regex {regex.__version__}; pre-tokenizing with regex "
        "(slower). Run tools/gen_unicode_tables.py and reinstall to use the fast path again.",
        NativeScannerWarning,
        stacklevel=3,
    )
    return False
