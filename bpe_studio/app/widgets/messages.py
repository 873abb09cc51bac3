"""A message shown as a sentence, without changing a file name it starts with.

Messages from the library and the jobs often start in lower case ("encoding failed
unexpectedly …", "add a tokenizer first") and are shown as sentences. Capitalising the
first character blindly turned ``stdlib_all.txt is 32 MB …`` into ``Stdlib_all.txt is
32 MB …``: a file that does not exist. `as_sentence` capitalises only a plain word.
"""

from __future__ import annotations

import re

_PLAIN_WORD = re.compile(r"[a-z][a-z]*(?=[\s,;:]|$)")
"""Lower-case letters up to a space or punctuation: not a path, a file name, an identifier."""


def as_sentence(message: str) -> str:
    """``message`` with its first word capitalised when it is a plain lower-case word.

    ``as_sentence("add a tokenizer first") -> "Add a tokenizer first"``;
    ``as_sentence("stdlib_all.txt is 32 MB") -> "stdlib_all.txt is 32 MB"`` (a file name
    stays as written, as do ``./data``, ``gpt2``, ``<|endoftext|>`` and ``iPhone``).
    """
    if _PLAIN_WORD.match(message):
        return message[:1].upper() + message[1:]
    return message
