"""The live dashboard of one machine, and the overview of all of them.

``DashboardPage.feed(record)`` takes the agent's records (see
``gpudesk/agent/metrics.py``) as they stream in; ``feed_many`` a backfill.
Feeding only stores: a 4 Hz timer redraws what changed (plots, the GPU and
process tables, the "last sample" line), so a burst of samples costs one
frame, and the plots bin just the visible range to their pixel width.
Hovering the plots shows the values under the mouse in the GPU table.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtCore import QDateTime
from PySide6.QtCore import Qt
from PySide6.QtCore import QTimer
from PySide6.QtCore import Signal
from PySide6.QtGui import QFont
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import QAbstractItemView
from PySide6.QtWidgets import QComboBox
from PySide6.QtWidgets import QGridLayout
from PySide6.QtWidgets import QGroupBox
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QHeaderView
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QSplitter
from PySide6.QtWidgets import QTableWidget
from PySide6.QtWidgets import QTableWidgetItem
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.services.remote.telemetry import NO_GPU_SRC
from gpudesk.ui.watch.gpu_plots import MIB_PER_GIB
from gpudesk.ui.watch.gpu_plots import GpuPlots
from gpudesk.ui.watch.gpu_plots import SpendPlot
from gpudesk.ui.watch.gpu_plots import gpu_colour
from gpudesk.ui.watch.ring_buffer import SERIES
from gpudesk.ui.watch.ring_buffer import History
from gpudesk.ui.watch.ring_buffer import Values
from gpudesk.ui.watch.ring_buffer import as_samples
from gpudesk.ui.watch.ring_buffer import record_values
from gpudesk.ui.widgets.retranslate import Retranslating

BACKFILL_CHUNK = 256  # records parsed per event-loop turn during a backfill
REDRAW_MS = 250  # 4 Hz: fast enough to look live, cheap enough to idle at <2% of a core
DASH = "—"  # a value the driver did not give: never shown as 0
WINDOWS_S: tuple[int, ...] = (15 * 60, 3600, 6 * 3600, 24 * 3600)
CURRENCY_SYMBOLS = {"USD": "$", "CNY": "¥", "EUR": "€"}


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def amount(value: float, currency: str) -> str:
    symbol = CURRENCY_SYMBOLS.get(currency)
    return f"{symbol}{value:,.2f}" if symbol else f"{value:,.2f} {currency}"


def clock_text(t: float, now: float) -> str:
    """Local time: ``HH:mm`` today, with the date otherwise."""
    dt = QDateTime.fromMSecsSinceEpoch(int(t * 1000))
    today = QDateTime.fromMSecsSinceEpoch(int(now * 1000)).date()
    return dt.toString("HH:mm" if dt.date() == today else "yyyy-MM-dd HH:mm")


@dataclass(frozen=True)
class SpendForecast:
    """Where the cost curve goes at the current rate."""

    so_far: float
    at_end: float | None  # cost at ``run_end``
    cap_at: float | None  # when the cap is reached, if before the run ends (or no end)
    cap_reached: bool
    projection: list[tuple[float, float]]


def forecast(points: list[tuple[float, float]], rate_per_hour: float, cap: float | None,
             run_end: float | None, horizon_s: float = 3600.0) -> SpendForecast:
    """Project the last point at ``rate_per_hour`` to the run's end and to the cap."""
    if not points:
        return SpendForecast(0.0, None, None, False, [])
    t_last, c_last = points[-1]
    per_s = max(0.0, rate_per_hour) / 3600.0
    cap_reached = cap is not None and c_last >= cap
    cap_at = None
    if cap is not None and not cap_reached and per_s > 0:
        cap_at = t_last + (cap - c_last) / per_s
    at_end = None
    if run_end is not None:
        at_end = c_last + per_s * max(0.0, run_end - t_last)
    ends = [t for t in (run_end, cap_at) if t is not None and t > t_last]
    if run_end is not None and cap_at is not None and cap_at > run_end:
        cap_at = None  # the run ends first: the cap is not reached
        ends = [run_end] if run_end > t_last else []
    t_to = max(ends) if ends else t_last + horizon_s
    return SpendForecast(c_last, at_end, cap_at, cap_reached,
                         [(t_last, c_last), (t_to, c_last + per_s * (t_to - t_last))])


@dataclass(frozen=True)
class MachineSummary:
    """One overview row."""

    key: str
    name: str
    n_gpus: int
    mean_util: float | None
    mem_used_mib: float | None
    mem_total_mib: float | None
    rate_per_hour: float | None
    currency: str
    last_t: float | None


@dataclass
class GpuInfo:
    name: str = ""
    mem_total_mib: float | None = None
    power_limit_w: float | None = None


def _put(table: QTableWidget, row: int, col: int, text: str,
         align: Qt.AlignmentFlag = Qt.AlignmentFlag.AlignRight) -> QTableWidgetItem:
    """Set a cell's text, reusing its item: an unchanged cell costs no repaint.

    A text longer than before marks the table for ``_fit``.
    """
    item = table.item(row, col)
    if item is None:
        item = QTableWidgetItem(text)
        item.setTextAlignment(align | Qt.AlignmentFlag.AlignVCenter)
        item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
        table.setItem(row, col, item)
        table.setProperty("needsFit", True)
    elif item.text() != text:
        if len(text) > len(item.text()):
            table.setProperty("needsFit", True)
        item.setText(text)
    return item


def _fit(table: QTableWidget, force: bool = False) -> None:
    """Columns as wide as their contents (the stretching one takes the rest)."""
    if not (force or table.property("needsFit")):
        return
    table.setProperty("needsFit", False)
    header = table.horizontalHeader()
    for col in range(table.columnCount()):
        if header.sectionResizeMode(col) != QHeaderView.ResizeMode.Stretch:
            table.resizeColumnToContents(col)


def _table(parent: QWidget, name: str, columns: int, stretch: int) -> QTableWidget:
    """A read-only table; column ``stretch`` (a name) takes the spare width."""
    t = QTableWidget(0, columns, parent)
    t.setObjectName(name)
    t.verticalHeader().setVisible(False)
    t.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    t.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    # Sized to contents when rows come or go (``_fit``), not on every cell change:
    # ResizeToContents would measure every cell each time a value ticks.
    t.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    t.horizontalHeader().setSectionResizeMode(stretch, QHeaderView.ResizeMode.Stretch)
    t.setAlternatingRowColors(True)
    t.verticalHeader().setDefaultSectionSize(t.fontMetrics().height() + 6)
    return t


class DashboardPage(Retranslating, QWidget):
    """GPUs and spend of one machine, live."""

    summary_changed = Signal(object)  # MachineSummary, at most once per redraw
    backfilled = Signal()  # a feed_many has been merged
    GPU_COLS = 6  # GPU, name, util, memory, temperature, power
    PROC_COLS = 4  # PID, GPU, process, memory

    def __init__(self, name: str = "", key: str = "", parent: QWidget | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(parent)
        self.setObjectName("dashboardPage")
        self.key = key or name
        self.machine_name = name
        self.clock = clock
        self.history = History()
        self.gpus: dict[int, GpuInfo] = {}
        self.procs: list[Mapping[str, Any]] = []
        self.hover_t: float | None = None
        self.redraws = 0
        self._dirty = False
        self.no_gpu = False  # the agent said: no NVIDIA GPU or driver on this machine
        self._backlog: list[Mapping[str, Any]] = []
        self._parsed: list[tuple[float, Values]] = []
        self._backfill_latest: Mapping[str, Any] | None = None
        self._drainer = QTimer(self)
        self._drainer.setInterval(0)
        self._drainer.timeout.connect(self._drain)
        self._spend: tuple[list[tuple[float, float]], float, str, float | None,
                           float | None] | None = None
        self._compute_only = False

        self.title = QLabel(self)
        self.title.setObjectName("machineName")
        font = QFont(self.title.font())
        font.setPointSizeF(font.pointSizeF() * 1.3)
        font.setBold(True)
        self.title.setFont(font)
        self.status = QLabel(self)
        self.status.setObjectName("lastSample")
        self.window_box = QComboBox(self)
        self.window_box.setObjectName("window")
        self.follow_button = QPushButton(self)
        self.follow_button.setObjectName("followLive")
        self.follow_button.setEnabled(False)
        header = QHBoxLayout()
        header.addWidget(self.title)
        header.addSpacing(12)
        header.addWidget(self.status, 1)
        header.addWidget(self.window_box)
        header.addWidget(self.follow_button)

        self.plots = GpuPlots(self)
        self.readout = QLabel(self)
        self.readout.setObjectName("readout")
        self.gpu_table = _table(self, "gpuTable", self.GPU_COLS, 1)
        self.proc_table = _table(self, "procTable", self.PROC_COLS, 2)
        self.proc_title = QLabel(self)

        self.spend_box = QGroupBox(self)
        self.spend_box.setObjectName("spend")
        self.rate_label = QLabel(self.spend_box)
        self.rate_label.setObjectName("spendRate")
        self.so_far_label = QLabel(self.spend_box)
        self.so_far_label.setObjectName("spendSoFar")
        self.end_label = QLabel(self.spend_box)
        self.end_label.setObjectName("spendAtEnd")
        self.cap_label = QLabel(self.spend_box)
        self.cap_label.setObjectName("spendCap")
        self.spend_plot = SpendPlot(self.spend_box)
        self.spend_plot.setMinimumHeight(140)
        grid = QGridLayout(self.spend_box)
        grid.addWidget(self.rate_label, 0, 0)
        grid.addWidget(self.so_far_label, 0, 1)
        grid.addWidget(self.end_label, 1, 0)
        grid.addWidget(self.cap_label, 1, 1)
        grid.addWidget(self.spend_plot, 2, 0, 1, 2)

        side = QWidget(self)
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        side_layout.addWidget(self.readout)
        side_layout.addWidget(self.gpu_table)
        side_layout.addWidget(self.proc_title)
        side_layout.addWidget(self.proc_table, 2)
        side_layout.addWidget(self.spend_box, 3)
        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.splitter.addWidget(self.plots)
        self.splitter.addWidget(side)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setSizes([760, 500])
        layout = QVBoxLayout(self)
        layout.addLayout(header)
        layout.addWidget(self.splitter, 1)

        self.window_box.currentIndexChanged.connect(self._window_chosen)
        self.follow_button.clicked.connect(lambda: self.plots.set_follow(True))
        self.plots.follow_changed.connect(self._follow_changed)
        self.plots.hovered.connect(self.show_at)
        self.plots.hover_left.connect(lambda: self.show_at(None))
        for plot in self.plots.plots[:1]:
            plot.getViewBox().sigXRangeChanged.connect(self._range_changed)
        self.timer = QTimer(self)
        self.timer.setInterval(REDRAW_MS)
        self.timer.timeout.connect(self.tick)
        self.timer.start()
        self._seconds = QTimer(self)  # the "N s ago" line, even when nothing arrives
        self._seconds.setInterval(1000)
        self._seconds.timeout.connect(self._show_status)
        self._seconds.start()
        self.retranslate()
        self.window_box.setCurrentIndex(1)

    # ------------------------------------------------------------------ text

    def retranslate(self) -> None:
        self.title.setText(self.machine_name or self.tr("Machine"))
        labels = (self.tr("15 min"), self.tr("1 hour"), self.tr("6 hours"), self.tr("24 hours"))
        current = max(0, self.window_box.currentIndex())
        self.window_box.blockSignals(True)
        self.window_box.clear()
        for seconds, text in zip(WINDOWS_S, labels, strict=True):
            self.window_box.addItem(text, seconds)
        self.window_box.setCurrentIndex(current)
        self.window_box.blockSignals(False)
        self.follow_button.setText(self.tr("Follow live"))
        self.gpu_table.setHorizontalHeaderLabels([
            self.tr("GPU"), self.tr("Name"), self.tr("Util"), self.tr("Memory"),
            self.tr("Temp"), self.tr("Power")])
        self.proc_table.setHorizontalHeaderLabels([
            self.tr("PID"), self.tr("GPU"), self.tr("Process"), self.tr("GPU memory")])
        self.proc_title.setText(self.tr("Processes"))
        for table in (self.gpu_table, self.proc_table):
            table.setProperty("needsFit", True)  # new header texts
        self.spend_box.setTitle(self.tr("Spend"))
        self._show_status()
        self._show_tables()
        self._show_spend()


    def set_machine_name(self, name: str) -> None:
        self.machine_name = name
        self.title.setText(name or self.tr("Machine"))

    # ------------------------------------------------------------------ data in

    def _take_info(self, record: Mapping[str, Any]) -> None:
        for k, g in enumerate(record.get("gpus") or []):
            if not isinstance(g, Mapping):
                continue
            index = g.get("index")
            index = index if isinstance(index, int) and not isinstance(index, bool) else k
            info = self.gpus.setdefault(index, GpuInfo())
            info.name = str(g.get("name") or info.name)
            info.mem_total_mib = _finite(g.get("mem_total_mib"))
            info.power_limit_w = _finite(g.get("power_limit_w"))
        procs = record.get("procs")
        self.procs = [p for p in procs if isinstance(p, Mapping)] if isinstance(procs, list) else []

    def _note_no_gpu(self, records: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """The agent's "no GPU here" record (no GPUs, src "no-gpu"); a GPU sample undoes it.
        Returns the records that hold GPUs (the others have nothing to plot)."""
        for rec in records:
            if rec.get("src") == NO_GPU_SRC and not rec.get("gpus"):
                self.no_gpu, self._dirty = True, True
            elif rec.get("gpus") and self.no_gpu:
                self.no_gpu, self._dirty = False, True
        self.plots.setVisible(not self.no_gpu)
        return [rec for rec in records if rec.get("gpus")]

    def feed(self, record: Mapping[str, Any]) -> None:
        """One live record. Stored now, drawn at the next tick."""
        if not self._note_no_gpu([record]):
            return
        sample = record_values(record)
        if sample is None:
            return
        newest = self.history.last_time
        self.history.append(*sample)
        if newest is None or sample[0] >= newest:
            self._take_info(record)
        self._dirty = True

    def feed_many(self, records: Iterable[Mapping[str, Any]]) -> None:
        """A backfill (any order, may overlap what is here): one merge, one redraw.

        Up to ``BACKFILL_CHUNK`` records are taken at once; a longer backfill is
        parsed that many per event-loop turn (~6 ms each) and merged once at the
        end, so an hour of catching up never stalls the window. ``backfilling``
        is True until then; ``backfilled`` is emitted after.
        """
        self._backlog.extend(self._note_no_gpu(list(records)))
        if len(self._backlog) <= BACKFILL_CHUNK and not self._parsed:
            self._drain()
        elif not self._drainer.isActive():
            self._drainer.start()

    @property
    def backfilling(self) -> bool:
        return bool(self._backlog or self._parsed)

    def _drain(self) -> None:
        chunk, self._backlog = self._backlog[:BACKFILL_CHUNK], self._backlog[BACKFILL_CHUNK:]
        self._parsed.extend(as_samples(chunk))
        for rec in chunk:
            t = _finite(rec.get("t"))
            if t is not None and (self._backfill_latest is None
                                  or t >= float(self._backfill_latest["t"])):
                self._backfill_latest = rec
        if self._backlog:
            return  # more next turn
        self._drainer.stop()
        samples, latest = self._parsed, self._backfill_latest
        self._parsed, self._backfill_latest = [], None
        if samples and latest is not None:
            newest = self.history.last_time
            self.history.extend(samples)
            if newest is None or float(latest["t"]) >= newest:
                self._take_info(latest)
            self._dirty = True
        self.backfilled.emit()

    # ------------------------------------------------------------------ drawing

    def _window_chosen(self, index: int) -> None:
        seconds = self.window_box.itemData(index)
        if seconds:
            self.plots.set_window(float(seconds))
            self._dirty = True

    def _follow_changed(self, follow: bool) -> None:
        self.follow_button.setEnabled(not follow)
        self._dirty = True

    def _range_changed(self, *_args: object) -> None:
        if not self.plots._setting_range:
            self._dirty = True  # zoom/pan: bin the new range at the next tick

    def _max_info(self, attr: str) -> float | None:
        values = [getattr(i, attr) for i in self.gpus.values() if getattr(i, attr) is not None]
        return max(values) if values else None

    def tick(self) -> None:
        """The throttled redraw: only if something arrived or the view moved."""
        if not self._dirty:
            return
        self._dirty = False
        self.redraw()

    def redraw(self) -> None:
        self.redraws += 1
        if self.history.size:
            self.plots.redraw(self.history, self._max_info("mem_total_mib"),
                              self._max_info("power_limit_w"))
        self._show_status()
        self._show_tables()
        self.summary_changed.emit(self.summary())

    def _show_status(self) -> None:
        last = self.history.last_time
        if self.no_gpu:
            self.status.setText(self.tr("No NVIDIA GPU or driver on this machine"))
            return
        if last is None:
            self.status.setText(self.tr("no data yet"))
            return
        ago = max(0, int(self.clock() - last))
        self.status.setText(self.tr("last sample {n} s ago").format(n=ago))

    # ------------------------------------------------------------------ tables

    def _values_at(self) -> tuple[float | None, Values | None]:
        if self.hover_t is not None:
            hit = self.history.at(self.hover_t)
            return (self.hover_t, None) if hit is None else hit
        if not self.history.size:
            return None, None
        t, v = self.history.window(self.history.last_time, None)
        return float(t[-1]), v[:, :, -1]

    def show_at(self, t: float | None) -> None:
        """Show the values at time ``t`` (the hover readout); None: the latest."""
        self.hover_t = t
        if t is None:
            self.plots.hide_cross()
        else:
            self.plots.show_cross(t)
        self._show_tables()

    @staticmethod
    def _fmt(value: float | None, fmt: str) -> str:
        return DASH if value is None or not math.isfinite(value) else fmt.format(value)

    def gpu_texts(self, values: Values | None, gpu: int) -> list[str]:
        """The GPU table row for ``gpu``: util, memory, temperature, power."""
        info = self.gpus.get(gpu, GpuInfo())
        row = [math.nan] * len(SERIES)
        if values is not None and gpu < values.shape[0]:
            row = [float(x) for x in values[gpu]]
        util, mem, temp, power = row
        total = info.mem_total_mib
        mem_text = self._fmt(mem / MIB_PER_GIB if math.isfinite(mem) else None, "{:.1f}")
        if total is not None:
            mem_text += " / " + self.tr("{v:.1f} GiB").format(v=total / MIB_PER_GIB)
        elif mem_text != DASH:
            mem_text += " " + self.tr("GiB")
        power_text = self._fmt(power, "{:.0f}")
        if info.power_limit_w is not None:
            power_text += " / " + self.tr("{v:.0f} W").format(v=info.power_limit_w)
        elif power_text != DASH:
            power_text += " " + self.tr("W")
        return [self._fmt(util, self.tr("{:.0f} %")), mem_text,
                self._fmt(temp, self.tr("{:.0f} °C")), power_text]

    def _show_tables(self) -> None:
        t, values = self._values_at()
        if t is None:
            self.readout.setText(self.tr("Latest values"))
        elif self.hover_t is None:
            self.readout.setText(self.tr("Latest values ({time})").format(
                time=QDateTime.fromMSecsSinceEpoch(int(t * 1000)).toString("HH:mm:ss")))
        else:
            when = QDateTime.fromMSecsSinceEpoch(int(t * 1000)).toString("HH:mm:ss")
            text = (self.tr("Values at {time}") if values is not None
                    else self.tr("No sample at {time}"))
            self.readout.setText(text.format(time=when))
        indices = sorted(set(self.gpus) | set(range(self.history.n_gpus)))
        if self.gpu_table.rowCount() != len(indices):
            self.gpu_table.setRowCount(len(indices))
            # As tall as its rows (up to 8), so the processes get the rest of the column.
            rows = min(max(1, len(indices)), 8)
            self.gpu_table.setFixedHeight(
                self.gpu_table.horizontalHeader().height() + 4
                + rows * self.gpu_table.verticalHeader().defaultSectionSize())
        left = Qt.AlignmentFlag.AlignLeft
        for row, gpu in enumerate(indices):
            first = _put(self.gpu_table, row, 0, str(gpu), left)
            if first.icon().isNull():
                swatch = QPixmap(10, 10)
                swatch.fill(gpu_colour(gpu))
                first.setIcon(swatch)
            _put(self.gpu_table, row, 1, self.gpus.get(gpu, GpuInfo()).name, left)
            for col, text in enumerate(self.gpu_texts(values, gpu), start=2):
                _put(self.gpu_table, row, col, text)
        procs = sorted(self.procs, key=lambda p: (
            p.get("gpu_index") if isinstance(p.get("gpu_index"), int) else 1 << 30,
            -(_finite(p.get("mem_used_mib")) or 0.0)))
        if self.proc_table.rowCount() != len(procs):
            self.proc_table.setRowCount(len(procs))
        for row, p in enumerate(procs):
            mem = _finite(p.get("mem_used_mib"))
            gpu_index = p.get("gpu_index")
            cells = [str(p.get("pid", DASH)),
                     str(gpu_index) if isinstance(gpu_index, int) else DASH,
                     str(p.get("name") or DASH),
                     self._fmt(mem, self.tr("{:,.0f} MiB"))]
            for col, text in enumerate(cells):
                _put(self.proc_table, row, col, text, left if col == 2 else
                     Qt.AlignmentFlag.AlignRight)
        _fit(self.gpu_table)
        _fit(self.proc_table)

    # ------------------------------------------------------------------ spend

    def set_spend(self, points: list[tuple[float, float]], rate_per_hour: float, currency: str,
                  cap: float | None, run_end: float | None, *,
                  compute_only: bool = False) -> None:
        """The cumulative cost of this run (``(unix time, amount)``), rate, cap and end.
        ``compute_only``: the provider's disk and traffic prices are unknown to gpudesk."""
        self._spend = (list(points), float(rate_per_hour), currency, cap, run_end)
        self._compute_only = compute_only
        self._show_spend()
        self.summary_changed.emit(self.summary())

    def _show_spend(self) -> None:
        if self._spend is None:
            for label in (self.rate_label, self.so_far_label, self.end_label, self.cap_label):
                label.setText("")
            self.rate_label.setText(self.tr("No spend data yet"))
            return
        points, rate, currency, cap, run_end = self._spend
        f = forecast(points, rate, cap, run_end)
        now = self.clock()
        self.rate_label.setText(self.tr("Rate: {rate} per hour").format(
            rate=amount(rate, currency)))
        so_far = (self.tr("This run so far: {cost} (compute only)") if self._compute_only
                  else self.tr("This run so far: {cost}"))
        self.so_far_label.setText(so_far.format(cost=amount(f.so_far, currency)))
        self.so_far_label.setToolTip(self.tr(
            "gpudesk has no disk or traffic prices for this provider (Tencent Cloud's depend "
            "on region and disk type), so only compute is counted.") if self._compute_only
            else "")
        if run_end is None or f.at_end is None:
            self.end_label.setText(self.tr("No end time set"))
        else:
            self.end_label.setText(self.tr("By the end ({time}): {cost}").format(
                time=clock_text(run_end, now), cost=amount(f.at_end, currency)))
        if cap is None:
            self.cap_label.setText(self.tr("No budget cap"))
        elif f.cap_reached:
            self.cap_label.setText(self.tr("Cap {cap} reached").format(cap=amount(cap, currency)))
        elif f.cap_at is not None:
            self.cap_label.setText(self.tr("Cap {cap} at {time}").format(
                cap=amount(cap, currency), time=clock_text(f.cap_at, now)))
        elif run_end is not None:
            self.cap_label.setText(self.tr("Cap {cap} not reached by the end").format(
                cap=amount(cap, currency)))
        else:  # no end time: say what is left, not when an end it does not know comes
            self.cap_label.setText(self.tr("Cap {cap}: {left} left").format(
                cap=amount(cap, currency), left=amount(max(0.0, cap - f.so_far), currency)))
        self.spend_plot.setLabel("left", CURRENCY_SYMBOLS.get(currency, currency))
        self.spend_plot.draw(points, f.projection, cap, f.cap_at)

    # ------------------------------------------------------------------ summary

    def summary(self) -> MachineSummary:
        latest = None
        if self.history.size:
            latest = self.history.window(self.history.last_time, None)[1][:, :, -1]
        mean_util = mem_used = None
        if latest is not None:
            util = latest[:, SERIES.index("util")]
            mem = latest[:, SERIES.index("mem_used_mib")]
            if np.isfinite(util).any():
                mean_util = float(np.nanmean(util))
            if np.isfinite(mem).any():
                mem_used = float(np.nansum(mem))
        totals = [i.mem_total_mib for i in self.gpus.values() if i.mem_total_mib is not None]
        rate = self._spend[1] if self._spend else None
        currency = self._spend[2] if self._spend else "USD"
        return MachineSummary(self.key, self.machine_name, len(self.gpus), mean_util, mem_used,
                              sum(totals) if totals else None, rate, currency,
                              self.history.last_time)


class OverviewPage(Retranslating, QWidget):
    """All watched machines, one row each; a click opens that machine's dashboard."""

    machine_selected = Signal(str)  # the machine's key
    COLS = 6

    def __init__(self, parent: QWidget | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(parent)
        self.setObjectName("overviewPage")
        self.clock = clock
        self.rows: dict[str, MachineSummary] = {}
        self.table = _table(self, "overviewTable", self.COLS, 0)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.empty = QLabel(self)
        self.empty.setObjectName("overviewEmpty")
        layout = QVBoxLayout(self)
        layout.addWidget(self.empty)
        layout.addWidget(self.table, 1)
        self.table.cellClicked.connect(self._clicked)
        self.table.cellActivated.connect(self._clicked)
        self.retranslate()

    def retranslate(self) -> None:
        self.table.setHorizontalHeaderLabels([
            self.tr("Machine"), self.tr("GPUs"), self.tr("Mean util"), self.tr("Memory"),
            self.tr("Spend rate"), self.tr("Last sample")])
        self.table.setProperty("needsFit", True)
        self.empty.setText(self.tr("No machine is being watched. Connect to a running "
                                   "machine to see its GPUs here."))
        self._show()


    def set_summary(self, summary: MachineSummary) -> None:
        self.rows[summary.key] = summary
        self._show()

    def remove_machine(self, key: str) -> None:
        self.rows.pop(key, None)
        self._show()

    def watch(self, page: DashboardPage) -> None:
        """Keep this page's row up to date."""
        page.summary_changed.connect(self.set_summary)
        self.set_summary(page.summary())

    def _clicked(self, row: int, _col: int) -> None:
        item = self.table.item(row, 0)
        if item is not None:
            self.machine_selected.emit(str(item.data(Qt.ItemDataRole.UserRole)))

    def row_texts(self, s: MachineSummary) -> list[str]:
        util = DASH if s.mean_util is None else self.tr("{:.0f} %").format(s.mean_util)
        if s.mem_used_mib is None:
            mem = DASH
        elif s.mem_total_mib:
            mem = self.tr("{used:.0f} / {total:.0f} GiB").format(
                used=s.mem_used_mib / MIB_PER_GIB, total=s.mem_total_mib / MIB_PER_GIB)
        else:
            mem = self.tr("{used:.0f} GiB").format(used=s.mem_used_mib / MIB_PER_GIB)
        rate = DASH if s.rate_per_hour is None else self.tr("{rate} per hour").format(
            rate=amount(s.rate_per_hour, s.currency))
        last = (self.tr("never") if s.last_t is None else
                self.tr("{n} s ago").format(n=max(0, int(self.clock() - s.last_t))))
        return [s.name or s.key, str(s.n_gpus) if s.n_gpus else DASH, util, mem, rate, last]

    def _show(self) -> None:
        self.empty.setVisible(not self.rows)
        if self.table.rowCount() != len(self.rows):
            self.table.setRowCount(len(self.rows))
        for row, s in enumerate(sorted(self.rows.values(), key=lambda s: (s.name, s.key))):
            for col, text in enumerate(self.row_texts(s)):
                item = _put(self.table, row, col, text, Qt.AlignmentFlag.AlignLeft if col == 0
                            else Qt.AlignmentFlag.AlignRight)
                if col == 0:
                    item.setData(Qt.ItemDataRole.UserRole, s.key)
        _fit(self.table)
