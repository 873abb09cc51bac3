"""`UsageError`: a mistake in the command line, shown as one line (`bpe_studio.cli.main`).

Its own module, below the subcommands and `bpe_studio.cli` itself, so that they raise it
without importing the package that imports them.
"""

from __future__ import annotations

from core.errors import BpeStudioError

__all__ = ["UsageError"]


class UsageError(BpeStudioError):
    """A mistake in the command line; the message is shown as is."""
