"""The tokenizer Export, Save session and Encode act on, and how a training result is named. No Qt.

Adds `CurrentTokenizer` (what the window's file actions act on, whichever came last: the
result last trained or opened as a session, or a tokenizer opened from files in Explore)
and `trained_title` (``"Trained on pydocs.txt (10,000 tokens)"``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from bpe_studio.app.models.session import Session


@dataclass(frozen=True)
class CurrentTokenizer:
    """The tokenizer Export, Save session and Encode act on.

    Attributes:
        tokenizer: the `core.Tokenizer` (None while a trained one is still being built).
        title: its name in menus, dialogs and messages ("Trained on pydocs.txt", "gpt2 (50,257 tokens)").
        session: the training result it comes from (None for one opened from files).
    """

    tokenizer: Any = None
    title: str = ""
    session: Session | None = None

    @property
    def exists(self) -> bool:
        return self.tokenizer is not None or self.session is not None

    @property
    def empty_partial(self) -> bool:
        """A cancelled run without a single merge (exported only when confirmed)."""
        return self.session is not None and self.session.partial and not self.session.merges


def trained_title(session: Session) -> str:
    """``"Trained on pydocs.txt (10,000 tokens)"``, ``"… partial"`` for a cancelled run; on
    named sources ``"Trained on en + el (…)"`` (``"en + el + 14 more"`` past three)."""
    names = session.settings.names
    if names:
        name = " + ".join(names) if len(names) <= 3 else f"{' + '.join(names[:2])} + {len(names) - 2} more"
    else:
        name = os.path.basename(session.settings.corpus) or "a corpus"
    partial = ", partial" if session.partial else ""
    return f"Trained on {name} ({len(session.vocab):,} tokens{partial})"
