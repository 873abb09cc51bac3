"""The errors `core` raises for user mistakes: each says what is wrong and what to do.

All derive from `BpeStudioError`, so a front end catches user mistakes as that one type
(with ``OSError`` for files that cannot be read or written) and shows the message as is:
the CLI prints it on one line and exits with status 2, the GUI puts it in its banner.
Each is also a ``ValueError`` (``OptionsTypeError`` a ``TypeError``, ``WorkerDiedError``
an ``OSError``), so callers that catch those still work. Anything else that escapes `core`
is a bug.
"""

from __future__ import annotations

__all__ = [
    "BpeStudioError", "CorpusError", "FormatError", "InvalidPatternError", "InvalidSpecialTokensError",
    "OptionsError", "OptionsTypeError", "PatternTimeoutError", "TokenizerError", "WorkerDiedError",
]


class BpeStudioError(Exception):
    """A user mistake (or a failure the user can act on); the message says what to do."""


class OptionsError(BpeStudioError, ValueError):
    """An argument of a `core` function or options class has a value it cannot take; the
    message names the argument (``workers=``, ``sample``) and what it accepts."""


class OptionsTypeError(BpeStudioError, TypeError):
    """An argument of a `core` function or options class has a type it cannot take; the
    message names the argument and what to give instead."""


class CorpusError(BpeStudioError, ValueError):
    """The corpus cannot be used (empty, binary, ...); the message names the file and says why."""


class InvalidPatternError(BpeStudioError, ValueError):
    """The pre-tokenization pattern is not a valid regular expression, or matches the empty string."""


class PatternTimeoutError(InvalidPatternError):
    """A custom pre-tokenization pattern took too long on some text (catastrophic
    backtracking, e.g. ``(a|a)+$``): the regex work is bounded, never a hang."""


class InvalidSpecialTokensError(BpeStudioError, ValueError):
    """The special tokens are empty strings, not strings, or repeat."""


class FormatError(BpeStudioError, ValueError):
    """A tokenizer file is malformed, or a tokenizer cannot be written in a format.

    The message starts with the file (and line or key) it is about.
    """


class TokenizerError(BpeStudioError, ValueError):
    """The vocabulary and merges do not fit together, or an id is not in the vocabulary."""


class WorkerDiedError(BpeStudioError, OSError):
    """A worker process ended in the middle of the work (killed: most often by the system
    for lack of memory). Not a user mistake, but reported the same way, never a hang."""
