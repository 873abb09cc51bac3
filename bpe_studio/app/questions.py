"""The questions the window asks before doing something that cannot be undone (Yes/No message boxes)."""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox, QWidget

YES, NO = QMessageBox.StandardButton.Yes, QMessageBox.StandardButton.No


def quit_during_training(parent: QWidget) -> bool:
    """Quitting while training runs loses the merges so far: True to quit anyway (default No)."""
    return QMessageBox.question(
        parent, "Quit while training?",
        "Training is running. Quit anyway? The run is stopped and its merges so far are not kept "
        "(cancel first to keep them as a partial result).", YES | NO, NO) == YES


def export_empty_result(parent: QWidget) -> bool:
    """A cancelled run without a single merge: True to export it anyway."""
    return QMessageBox.question(
        parent, "Export an empty result?",
        "Training was cancelled before its first merge: this tokenizer has only the 256 byte "
        "tokens and the special tokens. Export it anyway?") == YES
