"""The Evaluate tab: tokenizers measured on held-out sources, as a table and a chart.

What is measured: the tokenizers and held-out sources of `inputs.py` (one row per file;
a JSONL file one row, or one per value of the group-by field). Run measures them in a `ThreadJob` (`core.evaluate.
evaluate_steps`: a progress step per row, cancellable between rows; `work.py`); the table
(`results_table.py`) and the chart (`chart.py`) follow; Export writes CSV or JSON. The Reference (a row's name:
a file's stem such as ``en``, or a group value; ``en`` by default when there is one) gives
each row's premium over it; the table adds each row's Rényi efficiency and each
tokenizer's Gini coefficient over its rows (docs/evaluate.md), and the chart draws bytes
per token, the premium or the tokens per row, one bar series per tokenizer. Health, the
language model and Shrink act on the first tokenizer listed, and name it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from bpe_studio.app.evaluate.chart import MEASURES, EvaluateChart, source_labels
from bpe_studio.app.evaluate.health_lm import HealthView, LmPanel
from bpe_studio.app.evaluate.inputs import EvaluateInputs
from bpe_studio.app.evaluate.results_table import HEADER_TIPS, ResultsTable
from bpe_studio.app.evaluate.work import DEFAULT_REFERENCE, evaluation_work, reference_names, shrink_work
from bpe_studio.app.file_dialogs import dialogs_for
from bpe_studio.app.widgets.elided_label import OneLineLabel
from bpe_studio.app.widgets.splitters import splitter
from bpe_studio.app.widgets.wheel_guard import guard_wheel
from bpe_studio.app.workers.thread_job import ThreadJob
from core.evaluate.measures import Evaluation, Row, rows_csv, rows_json

NONE = "(none)"


class EvaluatePanel(QWidget):
    """The Evaluate tab (see the module docstring).

    Signals:
        error(str): a run failed; one line for the user.
        finished(): a run ended (done, failed or cancelled) and the buttons are up to date.
    """

    error = Signal(str)
    finished = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.training_curve: tuple[Any, Any] | None = None
        self.job: ThreadJob | None = None
        self.result: Evaluation | None = None
        self._shown: list[Row] = []  # the rows in the table and the chart
        self._measured_against: str | None = None  # the reference of the run going or last done

        self.inputs = EvaluateInputs()
        self.tokenizer_list = self.inputs.tokenizer_list
        self.inputs.changed.connect(self._on_inputs_changed)
        self.group_by = QLineEdit()
        self.group_by.setPlaceholderText("field, e.g. lang")
        self.baseline = QComboBox()
        self.baseline.setMinimumContentsLength(8)  # a long tokenizer name must not squeeze the fields beside it
        self.baseline.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.reference = QComboBox()
        self.reference.setEditable(True)  # a JSONL group's value is only listed once read: it can be typed
        self.reference.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.reference.setMinimumContentsLength(6)
        self.reference.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self._reference_auto = True  # not chosen by the user: follows the sources (en when there is one)
        self.reference.currentTextChanged.connect(self._on_reference_chosen)
        self.sizes = QLineEdit()
        self.sizes.setPlaceholderText("1k,2k,4k or auto")
        for edit in (self.group_by, self.sizes):
            edit.setMinimumWidth(edit.fontMetrics().horizontalAdvance(edit.placeholderText()[:10]) + 16)
        self.run_button = QPushButton("Evaluate")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.progress.setRange(0, 1)  # idle, it says so (an empty bar looks like a text field)
        self.progress.setValue(0)
        self.progress.setFormat("not evaluated yet")
        self.progress.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.status = OneLineLabel("Add tokenizers and held-out sources, then Evaluate.")
        self.export_csv_button = QPushButton("Export CSV…")
        self.export_json_button = QPushButton("Export JSON…")
        self.shrink_button = QPushButton("Shrink…")
        self.shrink_button.setToolTip("Write the first tokenizer cut to a smaller vocabulary (= trained at that size)")
        self.shrink_job: ThreadJob | None = None
        self.table = ResultsTable()
        self.chart = EvaluateChart()
        self.measure = QComboBox()
        for key, (title, _axis) in MEASURES.items():
            self.measure.addItem(title, key)
        self.measure.setToolTip("What the bars show for each row: one bar series per tokenizer")
        self.measure.currentIndexChanged.connect(self._redraw)
        self.gini_label = OneLineLabel("")
        self.gini_label.setObjectName("hint")
        self.gini_label.setToolTip(HEADER_TIPS["Gini"])

        options = QHBoxLayout()
        for text, box, tip in (
            ("&Group by", self.group_by, "One row per value of this JSONL/Parquet field (bpe-studio eval --group-by)"),
            ("&Baseline", self.baseline, "The tokenizer the others are compared to (“vs base”); in a size ladder, "
                                         "its largest size"),
            ("&Reference", self.reference, "The row each row's premium is over: a file's stem (en for dev/en.txt) "
                                           "or a group value (bpe-studio eval --reference)"),
            ("Size &ladder", self.sizes, "Measure each tokenizer cut to these sizes (bpe-studio eval --sizes)"),
        ):
            label = QLabel(text)
            label.setBuddy(box)
            label.setToolTip(tip)
            box.setToolTip(tip)
            options.addWidget(label)
            options.addWidget(box, 1)
        options.addWidget(self.run_button)
        options.addWidget(self.cancel_button)
        exports = QHBoxLayout()
        exports.addWidget(self.progress, 1)
        exports.addWidget(self.export_csv_button)
        exports.addWidget(self.export_json_button)
        exports.addWidget(self.shrink_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.inputs)
        layout.addLayout(options)
        layout.addLayout(exports)
        layout.addWidget(self.status)
        measures = QWidget()
        measures_layout = QVBoxLayout(measures)
        measures_layout.setContentsMargins(0, 0, 0, 0)
        chart_box = QWidget()
        chart_layout = QVBoxLayout(chart_box)
        chart_layout.setContentsMargins(0, 0, 0, 0)
        chart_bar = QHBoxLayout()
        chart_label = QLabel("&Chart")
        chart_label.setBuddy(self.measure)
        chart_bar.addWidget(chart_label)
        chart_bar.addWidget(self.measure)
        chart_bar.addWidget(self.gini_label, 1)
        chart_layout.addLayout(chart_bar)
        chart_layout.addWidget(self.chart, 1)
        # The user shares the height between the table and the chart (a row per language and
        # tokenizer can be many rows).
        measures_layout.addWidget(splitter(Qt.Orientation.Vertical, [self.table, chart_box], stretch=[1, 1],
                                           sizes=[300, 300], collapsible=False), 1)
        self.health_view = HealthView()
        self.lm_panel = LmPanel()
        self.views = QTabWidget()
        self.views.addTab(measures, "Measures")
        self.views.addTab(self.health_view, "Health")
        self.views.addTab(self.lm_panel, "Language model")
        layout.addWidget(self.views, 1)
        self.health_view.check_button.clicked.connect(self.check_health)
        self.health_view.error.connect(self.error)
        self.lm_panel.run_button.clicked.connect(self.run_lm)
        self.lm_panel.error.connect(self.error)

        self.shrink_button.clicked.connect(self._shrink_dialog)
        self.run_button.clicked.connect(self.run)
        self.cancel_button.clicked.connect(self.cancel)
        self.export_csv_button.clicked.connect(lambda: self._export_dialog("csv"))
        self.export_json_button.clicked.connect(lambda: self._export_dialog("json"))
        self._refresh_references()
        self._update_buttons()
        guard_wheel(self)

    # -- inputs ----------------------------------------------------------------------------------

    def set_current_tokenizer(self, tokenizer: object | None, training_curve: tuple[Any, Any] | None = None) -> None:
        """The tokenizer just trained or opened, listed as "current".

        ``training_curve``: (vocabulary sizes, bytes per token) on its training corpus when
        it is the trained one; the size ladder draws it as a dashed "training corpus" line.
        """
        self.training_curve = training_curve if tokenizer is not None else None
        self.inputs.set_current(tokenizer)

    @property
    def current(self) -> object | None:
        return self.inputs.current

    def add_tokenizer(self, path: str) -> None:
        self.inputs.add_tokenizer(path)

    def add_source(self, path: str) -> None:
        self.inputs.add_source(path)

    def tokenizers(self) -> dict[str, Any]:
        return self.inputs.tokenizers()

    def sources(self) -> list[str]:
        return self.inputs.sources()

    def _on_inputs_changed(self) -> None:
        self._refresh_baselines()
        self._refresh_references()
        self._update_buttons()

    def reference_name(self) -> str | None:
        """The chosen reference row (None: no premium)."""
        text = self.reference.currentText().strip()
        return None if text in ("", NONE) else text

    def _refresh_references(self) -> None:
        """The rows' names as reference choices: ``en`` chosen when there is one and the user
        chose nothing (else none), the user's choice kept."""
        rows = self.result.rows if self.result is not None else []
        names = reference_names(self.sources(), rows)
        chosen = self.reference.currentText().strip()
        self.reference.blockSignals(True)
        self.reference.clear()
        self.reference.addItem(NONE)
        self.reference.addItems(names)
        if not self._reference_auto:
            self.reference.setCurrentText(chosen)
        else:
            self.reference.setCurrentText(DEFAULT_REFERENCE if DEFAULT_REFERENCE in names else NONE)
        self.reference.blockSignals(False)

    def _on_reference_chosen(self, _text: str) -> None:
        self._reference_auto = False  # (the panel's own changes block the signal)

    def _refresh_baselines(self) -> None:
        chosen = self.baseline.currentText()
        self.baseline.clear()
        self.baseline.addItem(NONE)
        names = list(self.tokenizers())
        self.baseline.addItems(names)
        if chosen in names:
            self.baseline.setCurrentText(chosen)
        elif len(names) > 1:
            self.baseline.setCurrentText(names[-1])
        self._update_buttons()

    def _update_buttons(self) -> None:
        running = self.job is not None and self.job.running
        ready = self.inputs.ready()
        self.run_button.setEnabled(ready and not running)
        self.cancel_button.setEnabled(running)
        has_rows = self.result is not None and bool(self.result.rows)
        self.export_csv_button.setEnabled(has_rows)
        self.export_json_button.setEnabled(has_rows)

    # -- running ---------------------------------------------------------------------------------

    def run(self) -> None:
        """Measure every tokenizer on every source in a worker thread."""
        if self.job is not None and self.job.running:
            return
        baseline = self.baseline.currentText()
        group_by = self.group_by.text().strip() or None
        self._measured_against = self.reference_name()
        job = ThreadJob(evaluation_work, self.tokenizers(), self.sources(), group_by,
                        None if baseline in ("", NONE) else baseline, self.sizes.text().strip().lower() or None,
                        self._measured_against, what="evaluation", name="bpe-studio-evaluate", interval_ms=50)
        job.yielded.connect(self._on_progress)
        job.returned.connect(self._on_result)
        job.failed.connect(self._on_failed)
        job.stopped.connect(self._on_stopped)
        self.job = job
        self.progress.setFormat("%p%")
        self.progress.setRange(0, 0)
        self.status.setText("Evaluating…")
        job.start()
        self._update_buttons()

    def cancel(self) -> None:
        if self.job is not None:
            self.job.cancel()

    def shutdown(self) -> None:
        """Stop every run (the window is closing)."""
        for job in (self.job, self.shrink_job):
            if job is not None:
                job.shutdown()
        self.health_view.shutdown()
        self.lm_panel.shutdown()

    def first_tokenizer(self) -> tuple[str, Any] | None:
        """(name, tokenizer or path) of the first tokenizer listed — what Health, the
        language model and Shrink act on — or None (then the user is told to add one)."""
        specs = list(self.tokenizers().items())
        if not specs:
            self.error.emit("add a tokenizer first")
            return None
        return specs[0]

    def shrink_prompt(self) -> tuple[str, str] | None:
        """The Shrink dialog's title and question, naming the tokenizer it cuts."""
        first = self.first_tokenizer()
        if first is None:
            return None
        name, spec = first
        size = f" ({len(spec):,} tokens)" if hasattr(spec, "vocab") else ""
        return f"Shrink “{name}”", f"Cut “{name}”{size} to a vocabulary of (= trained at that size):"

    def _shrink_dialog(self) -> None:
        from PySide6.QtWidgets import QInputDialog

        prompt = self.shrink_prompt()
        if prompt is None:
            return
        size, ok = QInputDialog.getInt(self, *prompt, 4096, 257, 10_000_000)
        if not ok:
            return
        out_dir = dialogs_for(self).choose_folder(f"Folder for {prompt[0][7:]} cut to {size:,} tokens",
                                                  "paths/export_folder")
        if out_dir:
            self.shrink_to(size, out_dir)

    def shrink_to(self, size: int, out_dir: str) -> None:
        """Write the first tokenizer cut to ``size`` tokens into ``out_dir`` (in the background)."""
        first = self.first_tokenizer()
        if first is None or (self.shrink_job is not None and self.shrink_job.running):
            return
        name, spec = first
        job = ThreadJob(shrink_work, spec, name, size, out_dir, what="shrinking", name="bpe-studio-shrink")
        job.returned.connect(self.status.setText)
        job.failed.connect(self._on_failed)
        job.stopped.connect(lambda _cancelled: self.finished.emit())
        self.shrink_job = job
        job.start()

    def check_health(self) -> None:
        """The Health view on the first tokenizer (unused tokens from the held-out sources)."""
        first = self.first_tokenizer()
        if first is not None:
            self.health_view.check(first[1], self.sources(), name=first[0])

    def run_lm(self) -> None:
        """The language model on the first tokenizer, measured on the held-out sources."""
        first = self.first_tokenizer()
        if first is not None:
            self.lm_panel.run(first[1], self.sources(), name=first[0])

    def _on_progress(self, step: tuple[int, int, str]) -> None:
        done, total, label = step
        self.progress.setRange(0, total)
        self.progress.setValue(done)
        self.status.setText(f"Evaluating… {done}/{total}: {label}")

    def _on_result(self, result: Evaluation) -> None:
        self.result = result
        self._refresh_references()  # a JSONL file's group values are known now
        premium = any(row.premium is not None for row in result.rows)
        if premium != (self.measure.currentData() == "premium"):  # the premium when there is one
            self.measure.blockSignals(True)
            self.measure.setCurrentIndex(self.measure.findData("premium" if premium else "bytes_per_token"))
            self.measure.blockSignals(False)
        self.show_rows(result.rows, result.gini)
        against = f"; premium over {self._measured_against}" if premium else ""
        self.status.setText(f"{len(result.rows)} rows{against}.")

    def _on_failed(self, message: str) -> None:
        self.status.setText(message)
        self.error.emit(message)

    def _on_stopped(self, cancelled: bool) -> None:
        self.progress.setRange(0, 1)
        self.progress.setValue(1 if not cancelled else 0)
        if cancelled:
            self.status.setText("Cancelled.")
        self._update_buttons()
        self.finished.emit()

    # -- results ---------------------------------------------------------------------------------

    def show_rows(self, rows: list[Row], ginis: dict[str, float] | None = None) -> None:
        """The table and the chart of ``rows`` (``ginis``: each tokenizer's Gini, said under the table)."""
        self._shown = rows
        self.table.show_rows(rows, source_labels(list(dict.fromkeys(row.source for row in rows))))
        self.gini_label.setText("Gini of the rows' tokens: " + " · ".join(f"{name} {value:.3f}"
                                                                          for name, value in ginis.items())
                                if ginis and rows else "")
        self.measure.setEnabled(bool(rows) and not all(" @ " in r.tokenizer for r in rows))
        self._redraw()
        self._update_buttons()

    def _redraw(self, *_args: object) -> None:
        """The chart of the rows shown, in the chosen measure."""
        measure = self.measure.currentData()
        self.chart.draw(self._shown, self.training_curve, measure if measure in MEASURES else "bytes_per_token",
                        self._measured_against)

    @property
    def training_line(self) -> Any:
        """The dashed "training corpus" curve of the ladder, when drawn."""
        return self.chart.training_line

    def _export_dialog(self, kind: str) -> None:
        path = dialogs_for(self).save_file(f"Export the table as {kind.upper()}", "paths/table_folder",
                                           f"evaluation.{kind}", f"{kind.upper()} (*.{kind})")
        if path:
            self.export(path, kind)

    def export(self, path: str, kind: str) -> None:
        """Write the table to ``path`` as ``"csv"`` or ``"json"`` (atomically)."""
        from core.formats.atomic import atomic_output

        if self.result is None:
            return
        text = rows_csv(self.result.rows) if kind == "csv" else rows_json(self.result.rows)
        try:
            with atomic_output(Path(path)) as f:
                f.write(text.encode("utf-8"))
        except OSError as e:
            self._on_failed(f"could not write {path}: {e.strerror or e}")
            return
        self.status.setText(f"Wrote {path}.")
