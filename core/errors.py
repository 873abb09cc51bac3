"""The errors `core` raises for user mistakes: each says what is wrong and what to do.

All are `ValueError` subclasses, so a front end can catch user mistakes as ``ValueError``
(with ``OSError`` for files that cannot be read or written) and show the message as is:
the CLI prints it on one line and exits with status 2, the GUI puts it in its banner.
Anything else that escapes `core` is a bug.
"""

from __future__ import annotations

__all__ = [
    "CorpusError", "FormatError", "InvalidPatternError", "InvalidSpecialTokensError", "PatternTimeoutError",
    "TokenizerError", "WorkerDiedError",
]


class CorpusError(ValueError):
    """The corpus cannot be used (empty, binary, ...); the message names the file and says why."""


class InvalidPatternError(ValueError):
    """The pre-tokenization pattern is not a valid regular expression, or matches the empty string."""


class PatternTimeoutError(InvalidPatternError):
    """A custom pre-tokenization pattern took too long on some text (catastrophic
    backtracking, e.g. ``(a|a)+$``): the regex work is bounded, never a hang."""


class InvalidSpecialTokensError(ValueError):
    """The special tokens are empty strings, not strings, or repeat."""


class FormatError(ValueError):
    """A tokenizer file is malformed, or a tokenizer cannot be written in a format.

    The message starts with the file (and line or key) it is about.
    """


class TokenizerError(ValueError):
    """The vocabulary and merges do not fit together, or an id is not in the vocabulary."""


class WorkerDiedError(OSError):
    """A worker process ended in the middle of the work (killed: most often by the system
    for lack of memory). Not a user mistake, but reported the same way, never a hang."""
