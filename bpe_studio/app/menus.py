"""The main window's actions, shortcuts and File and Training menus.

Adds `build_menus(window)`: every action calls one of the window's methods, and is kept on
the window as ``window.<name>_action`` (tests and `_set_current` rename some of them).
Help is `bpe_studio.app.help_menu`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtGui import QAction, QKeySequence


def _action(window: Any, text: str, slot: Callable[[], object], shortcuts: list[str] | None = None,
            tip: str = "") -> QAction:
    action = QAction(text, window)
    if shortcuts:
        action.setShortcuts([QKeySequence(s) for s in shortcuts])
    if tip:
        action.setStatusTip(tip)
    action.triggered.connect(lambda _checked=False: slot())
    window.addAction(action)
    return action


def build_menus(w: Any) -> None:
    """Make ``w``'s actions and its File and Training menus."""
    panel = w.settings_panel
    w.open_corpus_action = _action(w, "&Open corpus…", panel.browse, ["Ctrl+O"])
    w.sample_action = _action(w, "Use the &sample corpus", panel.use_sample_corpus)
    w.open_counts_action = _action(
        w, "Open pre-token &counts…", w.open_counts_dialog, [],
        "Train from .bpc files of pre-token counts (bpe-studio count, core.PretokenCounts), added up")
    w.open_session_action = _action(w, "Open &session…", w.open_session_dialog, ["Ctrl+Shift+O"])
    w.save_session_action = _action(w, "Sa&ve session…", w.save_session_dialog, ["Ctrl+S"])
    w.export_action = _action(w, "&Export tokenizer…", w.export_dialog, ["Ctrl+E"],
                              "Write vocab.json, merges.txt, tokenizer.json and tokenizer.tiktoken")
    w.encode_action = _action(w, "Encode a &corpus to .npy…", w.encode_corpus_dialog, ["Ctrl+Shift+E"],
                              "Encode a corpus with the current tokenizer into a .npy of token ids")
    w.encode_action.setEnabled(False)  # until there is a tokenizer
    w.quit_action = _action(w, "&Quit", w.close, ["Ctrl+Q"])
    # Ctrl+Shift+O is Open session, so the tokenizer gets Ctrl+Shift+T.
    w.open_tokenizer_action = _action(
        w, "Open &tokenizer…", w.open_tokenizer_dialog, ["Ctrl+Shift+T"],
        "Browse and inspect GPT-2 vocab.json + merges.txt, a tokenizer.json or a .tiktoken file without training")
    w.train_action = _action(w, "&Train", w.start_training, ["Ctrl+Return", "Ctrl+Enter"])
    w.cancel_action = _action(w, "&Cancel", w.cancel_running, ["Esc"],
                              "Stop the training (keeping the merges so far) or the encoding")

    file_menu = w.menuBar().addMenu("&File")
    file_menu.addAction(w.open_corpus_action)
    w.recent_menu = file_menu.addMenu("Recent corpora")
    w.recent_menu.aboutToShow.connect(lambda: panel.recent.fill_menu(w.recent_menu, panel.set_corpus))
    for item in (w.sample_action, w.open_counts_action, w.open_tokenizer_action, None, w.open_session_action,
                 w.save_session_action, w.export_action, w.encode_action, None, w.quit_action):
        if item is None:
            file_menu.addSeparator()
        else:
            file_menu.addAction(item)
    train_menu = w.menuBar().addMenu("&Training")
    train_menu.addAction(w.train_action)
    train_menu.addAction(w.cancel_action)
