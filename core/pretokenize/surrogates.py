"""The one rule for lone surrogates in a str: each becomes U+FFFD, as tiktoken and
`Tokenizer.encode` take it; a pair of surrogates is the one character it stands for.

Training on texts given as strs, a JSON escape such as ``"\\ud83d"`` in a JSONL record,
and encoding a str all follow it, so training counts what encoding will see. (A file's
invalid bytes are another matter: read with surrogateescape, they stay those bytes.)
"""

from __future__ import annotations

__all__ = ["replace_lone_surrogates"]


def replace_lone_surrogates(text: str) -> str:
    """``text`` with each lone surrogate as U+FFFD: ``replace_lone_surrogates("a\\ud800") == "a\\ufffd"``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text
