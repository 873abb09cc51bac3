"""The Train tab: settings and result on the left; progress, the live merges table and the charts on the right
(with named sources, their legend above the merges).

The left column scrolls. The Train (Cancel) button follows the settings when the column has
room for them all, and is pinned below the scrolling column when not (at 1024×700): always
in view without scrolling.

Adds `TrainTab`, which assembles the panels around the run's one `TrainingState` and
brings them all up to date at once (`show_now`, `show_end`): when a run ends every view
says so in the same pass of the event loop, not each at its own timer's next tick.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QSettings, Qt, QTimer
from PySide6.QtWidgets import QVBoxLayout, QWidget

from bpe_studio.app.models.training_state import TrainingState
from bpe_studio.app.train.charts import ChartsPanel
from bpe_studio.app.train.merges_table import MergesTable
from bpe_studio.app.train.progress_panel import ProgressPanel
from bpe_studio.app.train.settings_panel import SettingsPanel
from bpe_studio.app.train.source_legend import SourceLegend
from bpe_studio.app.train.summary_panel import SummaryPanel
from bpe_studio.app.widgets.side_scroll import SideScrollArea
from bpe_studio.app.widgets.splitters import splitter


class TrainTab(QWidget):
    """The panels of the Train tab, each reading ``state``."""

    def __init__(self, state: TrainingState, qsettings: QSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.settings_panel = SettingsPanel(qsettings)
        self.summary_panel = SummaryPanel(state)
        self.progress_panel = ProgressPanel(state)
        self.merges_table = MergesTable(state)
        self.charts = ChartsPanel(state)
        self.source_legend = SourceLegend(state)

        left = QWidget()
        self._left_layout = QVBoxLayout(left)
        self._left_layout.setContentsMargins(10, 10, 6, 10)
        self._left_layout.addWidget(self.settings_panel)
        self._left_layout.addWidget(self.settings_panel.train_button)
        self._left_layout.addWidget(self.summary_panel)
        self._left_layout.addStretch(1)
        self.left_scroll = SideScrollArea(left)  # never narrower than its controls need
        self._column = column = QWidget()
        column_layout = QVBoxLayout(column)
        column_layout.setContentsMargins(0, 0, 0, 0)
        column_layout.setSpacing(0)
        column_layout.addWidget(self.left_scroll, 1)
        self._pinned = QVBoxLayout()  # Train, when the settings do not all fit
        self._pinned.setContentsMargins(10, 6, 6, 10)
        column_layout.addLayout(self._pinned)
        self._placing = QTimer(self)
        self._placing.setSingleShot(True)
        self._placing.timeout.connect(self._place_train_button)
        left.installEventFilter(self)
        column.installEventFilter(self)
        # The legend over the merges, whose height gives way: above the charts too, it would
        # raise the window's minimum height (at 1024×700 the charts already take it all).
        merges = QWidget()
        merges_layout = QVBoxLayout(merges)
        merges_layout.setContentsMargins(0, 0, 0, 0)
        merges_layout.setSpacing(4)
        merges_layout.addWidget(self.source_legend)
        merges_layout.addWidget(self.merges_table, 1)
        work = splitter(Qt.Orientation.Horizontal, [merges, self.charts],
                        stretch=[2, 3], sizes=[430, 620], collapsible=False)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(6, 10, 10, 10)
        right_layout.addWidget(self.progress_panel)
        right_layout.addWidget(work, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter(Qt.Orientation.Horizontal, [column, right], stretch=[0, 1],
                                  sizes=[360, 1000], collapsible=False))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() in (QEvent.Type.Resize, QEvent.Type.LayoutRequest):
            self._placing.start()  # once the layouts settle (a result shown, the window resized)
        return super().eventFilter(watched, event)

    def _place_train_button(self) -> None:
        """Train under the settings if the column holds them all, else pinned below the column.

        The test is the same wherever the button is now (the content without it, plus the
        button), so moving it never changes the answer: no back and forth."""
        button = self.settings_panel.train_button
        inside = self._left_layout.indexOf(button) >= 0
        block = button.sizeHint().height() + self._left_layout.spacing()
        content = self.left_scroll.widget().sizeHint().height() - (block if inside else 0)
        fits = content + block <= self._column.height()
        if fits == inside:
            return
        if fits:
            self._pinned.removeWidget(button)
            self._left_layout.insertWidget(1, button)
        else:
            self._left_layout.removeWidget(button)
            self._pinned.addWidget(button)
        button.show()  # (a widget moved to another parent is hidden)

    def show_now(self) -> None:
        """Progress (and the status line it sends), merges and result from the state now."""
        for panel in (self.progress_panel, self.merges_table, self.summary_panel, self.source_legend):
            panel.refresh()

    def show_end(self) -> None:
        """The run ended: every panel says so now, Train is offered again, and the pair-count
        chart shows the last merges (the other charts catch up one per tick: drawing all four
        at once queued their repaints into one long stretch of the GUI thread)."""
        self.settings_panel.set_running(False)
        self.show_now()
        self.charts.refresh_pairs()
