"""The pre-tokenization pattern of the settings panel: a built-in choice or a custom regex.

`PatternField` holds the chooser (GPT-2, GPT-4, custom), the regex line shown for a custom
pattern and the line under it that says whether it is valid (checked as you type by
``core.resolve_pattern``; a built-in name typed in any case is that pattern). It adds its
rows to the panel's form.
"""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QFormLayout, QLineEdit, QWidget

import core
from bpe_studio.app.widgets.wrapped_hint import WrappedHint

PATTERN_CHOICES = [("GPT-2", "gpt2"), ("GPT-4 (cl100k)", "gpt4"), ("Custom regex", "custom")]


class PatternField:
    """The pattern rows: ``combo``, ``regex_edit`` and ``regex_status`` (not a widget itself)."""

    def __init__(self, parent: QWidget) -> None:
        self._running = False
        self.combo = QComboBox(parent)
        for label, value in PATTERN_CHOICES:
            self.combo.addItem(label, value)
        self.combo.currentIndexChanged.connect(self.on_choice)
        self.regex_edit = QLineEdit(parent)
        self.regex_edit.setPlaceholderText(r"a regex, e.g. \p{L}+|\p{N}+|\s+|[^\s\p{L}\p{N}]+")
        self.regex_edit.textChanged.connect(self._validate)
        self.regex_status = WrappedHint(parent)  # a long error wraps: a plain label was cut off

    def add_rows(self, form: QFormLayout) -> None:
        form.addRow("Pattern", self.combo)
        form.addRow("", self.regex_edit)
        form.addRow("", self.regex_status)

    def pattern(self) -> str:
        """A built-in pattern's name, or the custom regex."""
        choice = self.combo.currentData()
        return self.regex_edit.text() if choice == "custom" else str(choice)

    def set_pattern(self, pattern: str) -> None:
        """Show ``pattern``: a built-in name selects it, anything else is a custom regex."""
        builtin = [value for _, value in PATTERN_CHOICES]
        if pattern in builtin:
            self.combo.setCurrentIndex(builtin.index(pattern))
        else:
            self.combo.setCurrentIndex(builtin.index("custom"))
            self.regex_edit.setText(pattern)

    def set_running(self, running: bool) -> None:
        self._running = running
        self.combo.setEnabled(not running)
        self.on_choice()

    def on_choice(self) -> None:
        custom = self.combo.currentData() == "custom"
        self.regex_edit.setVisible(custom)
        self.regex_status.setVisible(custom)
        self.regex_edit.setEnabled(custom and not self._running)
        self._validate()

    def _validate(self) -> None:
        if self.combo.currentData() != "custom":
            self.regex_edit.setProperty("invalid", False)
            return
        try:
            name = core.resolve_pattern(self.regex_edit.text()).name
        except core.InvalidPatternError as e:
            message, ok = str(e), False
        else:  # a name typed here (any case) is the built-in pattern
            message, ok = ("✓ valid pattern" if name == "custom" else f"✓ the built-in {name} pattern"), True
        self.regex_status.setText(message)
        self.regex_status.setProperty("invalid", not ok)
        self.regex_edit.setProperty("invalid", not ok)
        for widget in (self.regex_edit, self.regex_status):
            widget.style().unpolish(widget)
            widget.style().polish(widget)
