"""The Train tab: settings and result on the left; progress, the live merges table and the charts on the right
(with named sources, their legend above the merges).

Adds `TrainTab`, which assembles the panels around the run's one `TrainingState` and
brings them all up to date at once (`show_now`, `show_end`): when a run ends every view
says so in the same pass of the event loop, not each at its own timer's next tick.
"""

from __future__ import annotations

from PySide6.QtCore import QSettings, Qt
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
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(10, 10, 6, 10)
        left_layout.addWidget(self.settings_panel)
        left_layout.addWidget(self.summary_panel)
        left_layout.addStretch(1)
        self.left_scroll = SideScrollArea(left)  # never narrower than its controls need
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
        layout.addWidget(splitter(Qt.Orientation.Horizontal, [self.left_scroll, right], stretch=[0, 1],
                                  sizes=[360, 1000], collapsible=False))

    def show_now(self) -> None:
        """Progress (and the status line it sends), merges and result from the state now."""
        for panel in (self.progress_panel, self.merges_table, self.summary_panel, self.source_legend):
            panel.refresh()

    def show_end(self) -> None:
        """The run ended: every panel says so now, Train is offered again, and the pair-count
        chart shows the last merges (the other charts catch up one per tick: drawing all four
        at once queued 60-120 ms of repaints into one stretch of the GUI thread)."""
        self.settings_panel.set_running(False)
        self.show_now()
        self.charts.refresh_pairs()
