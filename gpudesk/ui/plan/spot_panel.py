"""The Plan page's spot panel: the selected spot offer's interruption rate (with its
source and date), expected cost and time to finish with their range, the checkpoint
interval that minimises them, and a small plot of its spot price history.

The history plot is a step curve per zone over the days the cloud keeps, and beside
it the time-weighted mean price per UTC hour of day, for the "is it cheaper at
night?" question. The history needs the cloud's account; it is fetched on request.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import QEvent
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox
from PySide6.QtWidgets import QGroupBox
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.services.plan.planner import RankedOffer
from gpudesk.ui.plan.offers_model import format_hours
from gpudesk.ui.plan.offers_model import format_money
from gpudesk.ui.widgets.qt_early import set_keys
from gpudesk.ui.widgets.retranslate import Retranslating

if TYPE_CHECKING:  # pyqtgraph (~0.3 s) loads when a history is first drawn, not at start-up
    import pyqtgraph as pg

    from gpudesk.services.cloud.spot_history import SpotHistory  # and the providers' base

ZONE_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")


class SpotPanel(Retranslating, QGroupBox):
    """Shown while the offers are spot; ``show_offer`` follows the selected row."""

    history_requested = Signal(object)  # the RankedOffer whose history to fetch
    run_chosen = Signal(str)  # a run's id: its own checkpoint and restart times; "": defaults

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("spotPanel")
        self.offer: RankedOffer | None = None
        self.history: SpotHistory | None = None
        self.rate = QLabel(self)
        self.rate.setObjectName("spotRate")
        self.expected = QLabel(self)
        self.expected.setObjectName("spotExpected")
        self.checkpoint = QLabel(self)
        self.checkpoint.setObjectName("spotCheckpoint")
        self.history_note = QLabel(self)
        self.history_note.setObjectName("spotHistoryNote")
        for label in (self.rate, self.expected, self.checkpoint, self.history_note):
            label.setWordWrap(True)
            set_keys(label, textInteractionFlags="TextSelectableByMouse")  # see qt_early
        self.history_button = QPushButton(self)
        self.history_button.setObjectName("spotHistoryButton")
        self.history_button.clicked.connect(self._request_history)
        # the checkpoint and restart times: gpudesk's defaults, or a run's own (issue 33)
        self.run_label = QLabel(self)
        self.run_choice = QComboBox(self)
        self.run_choice.setObjectName("spotRunChoice")
        self.run_choice.addItem("", "")
        self.run_choice.currentIndexChanged.connect(
            lambda _i: self.run_chosen.emit(str(self.run_choice.currentData() or "")))
        self.run_label.setBuddy(self.run_choice)
        # The plots are made with the first history: a page that never shows one (most,
        # and every page a test leaves behind) holds no pyqtgraph view, whose deletion by
        # Qt before Python's collection crashes PySide6 now and then.
        self.plot: pg.PlotWidget | None = None
        self.bands: pg.PlotWidget | None = None
        text = QVBoxLayout()
        runs = QHBoxLayout()
        runs.addWidget(self.run_label)
        runs.addWidget(self.run_choice, 1)
        text.addLayout(runs)
        for widget in (self.rate, self.expected, self.checkpoint, self.history_button,
                       self.history_note):
            text.addWidget(widget)
        text.addStretch(1)
        self._layout = QHBoxLayout(self)
        self._layout.addLayout(text, 2)
        self.retranslate()

    def _make_plots(self) -> tuple[pg.PlotWidget, pg.PlotWidget]:
        import pyqtgraph as pg

        from gpudesk.ui.widgets.local_date_axis import LocalDateAxis

        if self.plot is None or self.bands is None:
            self.plot = pg.PlotWidget(self, axisItems={"bottom": LocalDateAxis()})
            self.plot.setObjectName("spotHistoryPlot")
            self.plot.setMinimumHeight(150)
            self.plot.addLegend(offset=(5, 5))
            self.bands = pg.PlotWidget(self)
            self.bands.setObjectName("spotHourBands")
            self.bands.setMinimumHeight(150)
            self.bands.setMaximumWidth(320)
            self._layout.addWidget(self.plot, 3)
            self._layout.addWidget(self.bands, 2)
            self.apply_palette()
            self._label_plots()
        return self.plot, self.bands

    def _label_plots(self) -> None:
        if self.plot is not None and self.bands is not None:
            self.plot.setLabel("left", self.tr("spot price per hour"))
            self.bands.setLabel("bottom", self.tr("hour of day (UTC)"))
            self.bands.setLabel("left", self.tr("mean price"))

    def apply_palette(self) -> None:
        """The plots in the window's colours (pyqtgraph draws black by default)."""
        if self.plot is None or self.bands is None:
            return
        import pyqtgraph as pg  # loaded already: the plots exist

        pal = self.palette()
        base, text = pal.base().color(), pal.text().color()
        for widget in (self.plot, self.bands):
            widget.setBackground(base)
            for name in ("left", "bottom"):
                ax = widget.getPlotItem().getAxis(name)
                ax.setPen(pg.mkPen(pal.mid().color()))
                ax.setTextPen(pg.mkPen(text))

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt API
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "_layout"):
            self.apply_palette()
        super().changeEvent(event)

    def retranslate(self) -> None:
        self.setTitle(self.tr("Spot: interruption risk and price history"))
        self.history_button.setText(self.tr("Show price history"))
        self.run_label.setText(self.tr("Checkpoint and restart times from"))
        self.run_choice.setItemText(0, self.tr("gpudesk's defaults"))
        self.run_choice.setToolTip(self.tr(
            "A run's own history: the gaps between its checkpoints, how long each took to "
            "write, and how long it took to go on after each reclaim."))
        self._label_plots()
        self.show_offer(self.offer)
        self._draw()

    # ----------------------------------------------------------------- the offer

    def show_offer(self, r: RankedOffer | None) -> None:
        if r is None or self.offer is None or _key(r) != _key(self.offer):
            self.history = None
            self._draw()
        self.offer = r
        self.history_button.setEnabled(r is not None and r.spot)
        if r is None or r.risk is None:
            for label in (self.rate, self.expected, self.checkpoint):
                label.setText("—")
            return
        rate, risk = r.risk.rate, r.risk.to_json()
        if rate.known:
            self.rate.setText(self.tr("Interruption rate: {label} over 30 days "
                                      "({source})").format(label=rate.label, source=rate.source))
        else:
            self.rate.setText(QCoreApplication.translate("SpotRates", rate.label) + " ("
                              + QCoreApplication.translate("SpotRates", rate.source) + ")")
        if rate.placement_score is not None:
            self.rate.setText(self.rate.text() + "\n" + self.tr(
                "Spot placement score: {score} of 10 ({source})").format(
                score=rate.placement_score, source=rate.placement_source))
        o = r.risk.outlook
        if o is None or not o.finite:
            self.expected.setText(self.tr("Expected cost: not known without a rate; at least "
                                          "{cost}").format(cost=format_money(r.cost))
                                  if o is None else
                                  self.tr("Expected cost: never finishes at this rate with "
                                          "these checkpoints"))
            self.checkpoint.setText("")
            return
        self.expected.setText(self.tr(
            "Expected cost {cost} ({low}–{high}), {hours} with {n} interruptions on average; "
            "uninterrupted {plain}").format(
            cost=format_money(o.expected_cost), low=format_money(o.low_cost),
            high=format_money(o.high_cost), hours=format_hours(o.expected_hours),
            n=f"{o.expected_interruptions:.2g}", plain=format_money(r.cost)))
        best = risk["best_checkpoint_minutes"]
        assumed = self.tr(" (assumed)") if r.risk.assumptions.assumed else ""
        self.checkpoint.setText(self.tr(
            "Checkpoint every {every} min, restart {restart} min{assumed}; cheapest interval: "
            "{best}").format(every=f"{r.risk.assumptions.checkpoint_minutes:g}",
                             restart=f"{r.risk.assumptions.restart_minutes:g}", assumed=assumed,
                             best=self.tr("{m} min").format(m=f"{best:,.0f}")
                             if best is not None else self.tr("only at the end")))
        # where each figure came from (a run's measurement, the user, or the default)
        self.checkpoint.setToolTip("\n".join(
            f"{name.replace('_', ' ')}: {source}" for name, source in
            r.risk.assumptions.sources))

    def set_runs(self, run_ids: list[str]) -> None:
        """The runs whose times can be chosen, newest first; the choice kept if listed."""
        chosen = str(self.run_choice.currentData() or "")
        self.run_choice.blockSignals(True)
        while self.run_choice.count() > 1:
            self.run_choice.removeItem(1)
        for run_id in run_ids:
            self.run_choice.addItem(run_id, run_id)
        self.run_choice.setCurrentIndex(max(0, self.run_choice.findData(chosen)))
        self.run_choice.blockSignals(False)

    def _request_history(self) -> None:
        if self.offer is not None:
            self.history_requested.emit(self.offer)

    # ----------------------------------------------------------------- the plot

    def set_history(self, history: SpotHistory) -> None:
        self.history = history
        self._draw()

    def _draw(self) -> None:
        h = self.history
        if self.plot is not None and self.bands is not None:
            self.plot.clear()
            self.bands.clear()
        if h is None:
            self.history_note.setText(self.tr("Price history: not fetched (needs the cloud's "
                                              "account)"))
            return
        plot, bands = self._make_plots()
        import pyqtgraph as pg  # loaded by _make_plots

        currency = next((pts[-1].currency for pts in h.zones.values() if pts), "")
        self.history_note.setText(self.tr("Price history: {source}, {zones} zones, in "
                                          "{currency}").format(
            source=h.source, zones=len(h.zones), currency=currency))
        for i, (zone, points) in enumerate(sorted(h.zones.items())):
            xs = [max(p.at, h.since) for p in points] + [h.until]
            ys = [p.price for p in points]
            plot.plot(xs, ys, stepMode="center", name=zone,
                      pen=pg.mkPen(ZONE_COLOURS[i % len(ZONE_COLOURS)], width=2))
        means = h.hour_of_day()
        known = [(hour, v) for hour, v in enumerate(means) if v is not None]
        if known:
            low = min(v for _, v in known)
            bars = pg.BarGraphItem(x=[hour for hour, _ in known], height=[v for _, v in known],
                                   width=0.8, brush=pg.mkBrush("#1f77b4"))
            bands.addItem(bars)
            top = max(v for _, v in known)
            if math.isfinite(low) and top > 0:
                bands.setYRange(low * 0.9, top * 1.02)


def _key(r: RankedOffer) -> tuple[str, str, str]:
    return (r.offer.provider, r.offer.instance_type, r.offer.region)
