"""Judging a tokenizer: held-out evaluation, vocabulary size ladder, vocabulary health and
a tiny n-gram language model (docs/evaluate.md). No Qt.

    evaluate(tokenizers, sources, *, field="text", group_by=None, baseline=None) -> Evaluation
"""

from __future__ import annotations

from core.evaluate.measures import (
    COLUMNS, Evaluation, Row, count_text, evaluate, evaluate_steps, load_tokenizers, rows_csv, rows_json,
)

__all__ = [
    "COLUMNS", "Evaluation", "Row", "count_text", "evaluate", "evaluate_steps", "load_tokenizers", "rows_csv", "rows_json",
]
