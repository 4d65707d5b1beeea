"""The pyqtgraph parts of the dashboard: four stacked GPU plots and the spend plot.

``GpuPlots`` draws one curve per GPU in each of utilisation, memory, temperature
and power, with a shared local-time axis (``DateAxisItem``) and a crosshair.
It never downsamples on its own: the page calls ``redraw(history)`` from a
throttled timer and only the visible time range is binned to the plot's pixel
width (``ring_buffer.span``), so a day of 8 GPUs costs the same to draw as a
minute. Each line is two curves: a body, binned again only when the range
moves or a backfill rewrites what it shows, and a short live tail from its last
column to now, the only part a new sample changes: a second's redraw hands
pyqtgraph a few points per curve instead of a whole view. Colours come from
the widget palette, so light and dark both work.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent
from PySide6.QtCore import QPointF
from PySide6.QtCore import Qt
from PySide6.QtCore import Signal
from PySide6.QtGui import QColor
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QWidget

from gpudesk.ui.watch.ring_buffer import SERIES
from gpudesk.ui.watch.ring_buffer import Downsampled
from gpudesk.ui.watch.ring_buffer import History
from gpudesk.ui.watch.ring_buffer import bin_edges
from gpudesk.ui.watch.ring_buffer import count_in
from gpudesk.ui.watch.ring_buffer import span
from gpudesk.ui.widgets.local_date_axis import LocalDateAxis
from gpudesk.ui.widgets.local_date_axis import relabel_all

PANELS: tuple[str, ...] = SERIES  # util, mem_used_mib, temp_c, power_w: one plot each
MIB_PER_GIB = 1024.0
FOLLOW_STEP = 0.05  # following: the range jumps ahead by this part of the window
TAIL_MAX_POINTS = 256  # a live tail longer than this is folded into the body


@dataclass(frozen=True)
class _Body:
    """What the body curves show: all but the newest column, re-binned only when needed."""

    key: tuple[int, float, float, int, int, bool]  # history, t0, t1, width, GPUs, binned
    before: float  # the body holds the samples before this time
    tail_from: float  # the tail starts here: the body's last column, drawn by both
    lows: tuple[float, ...]  # per panel, the smallest finite value shown (NaN: none)
    highs: tuple[float, ...]
    points: int  # x points per body curve


def gpu_colour(index: int) -> QColor:
    """The colour of GPU ``index`` everywhere on the page (curves and the table swatch)."""
    return QColor(pg.intColor(index, hues=8, values=1, maxValue=255, minValue=150, sat=200))


def _palette_colours(widget: QWidget) -> tuple[QColor, QColor, QColor]:
    pal = widget.palette()
    return (pal.color(QPalette.ColorRole.Base), pal.color(QPalette.ColorRole.Text),
            pal.color(QPalette.ColorRole.Mid))


class GpuPlots(pg.GraphicsLayoutWidget):  # type: ignore[misc]
    """Utilisation, memory, temperature and power over time; x axes linked."""

    hovered = Signal(float)  # unix time under the mouse
    hover_left = Signal()
    follow_changed = Signal(bool)  # False once the user pans or zooms by hand

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("gpuPlots")
        self.ci.layout.setSpacing(2)
        self.plots: list[pg.PlotItem] = []
        self.cross: list[pg.InfiniteLine] = []
        self.limit_lines: list[pg.InfiniteLine] = []
        for row, _name in enumerate(PANELS):
            axis = LocalDateAxis(orientation="bottom")
            plot = self.addPlot(row=row, col=0, axisItems={"bottom": axis})
            plot.setMenuEnabled(False)
            plot.hideButtons()
            plot.showGrid(x=True, y=False, alpha=0.25)  # a y grid costs ~5 ms per plot frame
            plot.getAxis("left").setWidth(56)
            vb = plot.getViewBox()
            vb.setMouseEnabled(x=True, y=False)
            vb.disableAutoRange()  # the page sets both ranges: no bounds pass per frame
            if row:
                plot.setXLink(self.plots[0])
            if row < len(PANELS) - 1:
                axis.setStyle(showValues=False)
                axis.setHeight(4)
            line = pg.InfiniteLine(angle=90, movable=False)
            line.setVisible(False)
            plot.addItem(line, ignoreBounds=True)
            limit = pg.InfiniteLine(angle=0, movable=False)
            limit.setVisible(False)
            plot.addItem(limit, ignoreBounds=True)
            self.plots.append(plot)
            self.cross.append(line)
            self.limit_lines.append(limit)
        self.plots[0].setYRange(0, 100, padding=0.04)
        self.curves: list[list[pg.PlotCurveItem]] = []  # [gpu][panel]: the bodies
        self.tails: list[list[pg.PlotCurveItem]] = []  # [gpu][panel]: the live tails
        self._body: _Body | None = None
        self.body_draws = 0  # how often the bodies were binned again (tests, benchmarks)
        self.window_s = 3600.0
        self.follow = True
        self._setting_range = False
        self._limits: dict[int, tuple[float, float]] = {}
        self._followed: tuple[float, ...] | None = None
        self.last_points = 0  # points handed to pyqtgraph by the last redraw (all curves)
        self.plots[0].getViewBox().sigRangeChangedManually.connect(self._manual_range)
        self.scene().sigMouseMoved.connect(self._mouse_moved)
        self.apply_palette()
        self.retranslate()

    # ------------------------------------------------------------------ look

    def retranslate(self) -> None:
        labels = (self.tr("Utilisation (%)"), self.tr("Memory (GiB)"),
                  self.tr("Temperature (°C)"), self.tr("Power (W)"))
        for plot, text in zip(self.plots, labels, strict=True):
            plot.setLabel("left", text)
        self.plots[-1].setLabel("bottom", self.tr("Local time"))

    def apply_palette(self) -> None:
        base, text, mid = _palette_colours(self)
        self.setBackground(base)
        for plot, cross, limit in zip(self.plots, self.cross, self.limit_lines, strict=True):
            for name in ("left", "bottom"):
                ax = plot.getAxis(name)
                ax.setPen(pg.mkPen(mid))
                ax.setTextPen(pg.mkPen(text))
            cross.setPen(pg.mkPen(text, width=1, style=Qt.PenStyle.DotLine))
            limit.setPen(pg.mkPen(text, width=1, style=Qt.PenStyle.DashLine))

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt API
        if not hasattr(self, "curves"):  # called from pyqtgraph's __init__
            pass
        elif event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            self.apply_palette()
        elif event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
            relabel_all(plot.getAxis("bottom") for plot in self.plots)
        super().changeEvent(event)

    def _ensure_curves(self, n_gpus: int) -> None:
        while len(self.curves) < n_gpus:
            g = len(self.curves)
            pen = pg.mkPen(gpu_colour(g), width=1)  # 1 px: the raster engine's fast path
            row: list[pg.PlotCurveItem] = []
            tails: list[pg.PlotCurveItem] = []
            for plot in self.plots:
                for out in (row, tails):
                    curve = pg.PlotCurveItem(pen=pen, connect="finite")
                    plot.addItem(curve)
                    out.append(curve)
            self.curves.append(row)
            self.tails.append(tails)
            self._body = None

    def curve_data(self, gpu: int, panel: int) -> tuple[np.ndarray, np.ndarray]:
        """The whole line of ``gpu`` in ``panel`` as drawn: body then tail, once each."""
        bx, by = self.curves[gpu][panel].getData()
        tx, ty = self.tails[gpu][panel].getData()
        bx = np.asarray(bx if bx is not None else [], dtype=np.float64)
        by = np.asarray(by if by is not None else [], dtype=np.float64)
        tx = np.asarray(tx if tx is not None else [], dtype=np.float64)
        ty = np.asarray(ty if ty is not None else [], dtype=np.float64)
        if self._body is not None and len(tx):
            keep = ~(bx >= self._body.tail_from)  # NaN (a break) stays
            bx, by = bx[keep], by[keep]
        return np.concatenate([bx, tx]), np.concatenate([by, ty])

    # ------------------------------------------------------------------ range

    def set_window(self, seconds: float) -> None:
        """Show the last ``seconds`` and follow new samples."""
        self.window_s = float(seconds)
        self.set_follow(True)

    def set_follow(self, follow: bool) -> None:
        if follow != self.follow:
            self.follow = follow
            self.follow_changed.emit(follow)

    def _manual_range(self, *_args: object) -> None:
        if not self._setting_range:
            self.set_follow(False)

    def x_range(self) -> tuple[float, float]:
        lo, hi = self.plots[0].getViewBox().viewRange()[0]
        return float(lo), float(hi)

    def pixel_width(self) -> int:
        return max(50, int(self.plots[0].getViewBox().width()))

    # ------------------------------------------------------------------ data

    def redraw(self, history: History, mem_total_mib: float | None = None,
               power_limit_w: float | None = None) -> None:
        """Draw the visible range of ``history``, binned to the plot's pixel width."""
        self._ensure_curves(history.n_gpus)
        last = history.last_time
        if self.follow and last is not None:
            self._follow_to(last, history.first_time or last)
        t0, t1 = self.x_range()
        width = self.pixel_width()
        g, s = history.n_gpus, history.n_series
        pieces = [(t, v.reshape(g * s, -1)) for t, v in history.pieces(t0, t1)]  # views
        rewritten = history.take_rewritten_from()
        binned = count_in(pieces, t0, t1) > 2 * width
        key = (id(history), t0, t1, width, g, binned)
        body = self._body
        if body is None or body.key != key or (rewritten is not None
                                               and rewritten < body.before):
            body = self._draw_body(pieces, key)
        tail = span(pieces, t0, t1, width, binned, start=body.tail_from)
        if tail.x.size > TAIL_MAX_POINTS:  # not following, data arriving in view
            body = self._draw_body(pieces, key)
            tail = span(pieces, t0, t1, width, binned, start=body.tail_from)
        ty = self._in_units(tail, g, s)
        for gi in range(g):
            for si in range(s):
                self.tails[gi][si].setData(tail.x, ty[gi, si])
        self.last_points = (body.points + int(tail.x.size)) * g * s
        limits = {"mem_used_mib": None if mem_total_mib is None else mem_total_mib / MIB_PER_GIB,
                  "power_w": power_limit_w}
        t_lo, t_hi = _extremes(ty)
        for si, name in enumerate(PANELS):
            lo = float(np.fmin(body.lows[si], t_lo[si]))
            hi = float(np.fmax(body.highs[si], t_hi[si]))
            self._set_y(si, lo, hi, limits.get(name))

    @staticmethod
    def _in_units(ds: Downsampled, g: int, s: int) -> np.ndarray:
        y = ds.y.reshape(g, s, -1)
        y[:, PANELS.index("mem_used_mib")] /= MIB_PER_GIB
        return y

    def _draw_body(self, pieces: list[tuple[np.ndarray, np.ndarray]],
                   key: tuple[int, float, float, int, int, bool]) -> _Body:
        """Bin everything but the newest column and hand it to the body curves."""
        _, t0, t1, width, g, binned = key
        newest = max((float(t[-1]) for t, _ in pieces if len(t) and t[-1] <= t1), default=None)
        if newest is None:
            before = tail_from = t0
        else:
            edges = bin_edges(t0, t1, width)

            def column_start(t: float) -> float:
                return float(edges[max(0, int(np.searchsorted(edges, t, "right")) - 1)])

            # The newest sample's column goes to the tail.
            before = column_start(newest) if binned else newest
            older = [t[: int(np.searchsorted(t, before, "left"))] for t, _ in pieces]
            last_body = max((float(t[-1]) for t in older if len(t) and t[-1] >= t0),
                            default=None)
            if last_body is None:
                tail_from = t0
            else:  # the tail repeats the body's last column (or sample): one joined line
                tail_from = column_start(last_body) if binned else last_body
        ds = span(pieces, t0, t1, width, binned, before=before)
        y = self._in_units(ds, g, len(PANELS))
        for gi in range(g):
            for si in range(len(PANELS)):
                self.curves[gi][si].setData(ds.x, y[gi, si])
        lows, highs = _extremes(y)
        self._body = _Body(key, before, tail_from, tuple(lows), tuple(highs), int(ds.x.size))
        self.body_draws += 1
        return self._body

    def _set_y(self, panel: int, data_lo: float, data_hi: float, limit: float | None) -> None:
        """A y range from the limit or the shown data, in round steps; set only on change.

        Fixed ranges keep pyqtgraph from autoranging (a bounds pass over every
        curve) and the axis from re-laying out its labels on every frame.
        """
        name = PANELS[panel]
        if name == "util":
            lo, hi = 0.0, 100.0
        elif limit is not None and math.isfinite(limit) and limit > 0:
            lo, hi = 0.0, float(limit)
        elif math.isnan(data_lo) or math.isnan(data_hi):
            lo, hi = 0.0, 1.0
        elif name == "temp_c":
            lo = 5.0 * math.floor(data_lo / 5.0 - 0.2)
            hi = 5.0 * math.ceil(data_hi / 5.0 + 0.2)
        else:
            top = data_hi
            step = 10.0 ** math.floor(math.log10(top)) if top > 0 else 1.0
            lo, hi = 0.0, step * math.ceil(top * 1.05 / step)
        line = self.limit_lines[panel]
        line.setVisible(limit is not None and name != "util" and hi == limit)
        if line.isVisible():
            line.setPos(hi)
        if self._limits.get(panel) != (lo, hi):
            self._limits[panel] = (lo, hi)
            self.plots[panel].setYRange(lo, hi, padding=0.04)

    def _follow_to(self, last: float, first: float) -> None:
        """Keep the newest sample in view, moving the range in steps of ``FOLLOW_STEP``.

        Shifting the axes every second re-lays out every tick label (~20 ms for
        the four plots); a step of 5 % of the window does it once in 20 samples.
        """
        lo, hi = self.x_range()
        wanted_lo = max(hi - self.window_s, min(first, last - 60))
        if (self._followed == (self.window_s, lo, hi) and last <= hi
                and abs(lo - wanted_lo) < 1e-3 * self.window_s):
            return
        right = last + FOLLOW_STEP * self.window_s
        left = max(right - self.window_s, min(first, last - 60))
        self._setting_range = True
        try:
            self.plots[0].setXRange(left, right, padding=0)
        finally:
            self._setting_range = False
        self._followed = (self.window_s, *self.x_range())

    # ------------------------------------------------------------------ hover

    def _mouse_moved(self, pos: QPointF) -> None:
        for plot in self.plots:
            if plot.sceneBoundingRect().contains(pos):
                t = float(plot.getViewBox().mapSceneToView(pos).x())
                self.show_cross(t)
                self.hovered.emit(t)
                return
        self.hide_cross()
        self.hover_left.emit()

    def show_cross(self, t: float) -> None:
        for line in self.cross:
            line.setPos(t)
            line.setVisible(True)

    def hide_cross(self) -> None:
        for line in self.cross:
            line.setVisible(False)

    def leaveEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt API
        self.hide_cross()
        self.hover_left.emit()
        super().leaveEvent(event)


def _extremes(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per panel (axis 1 of ``y[gpu, panel, k]``) the finite min and max; NaN if none."""
    if not y.size:
        return np.full(y.shape[1], np.nan), np.full(y.shape[1], np.nan)
    return np.fmin.reduce(y, axis=(0, 2)), np.fmax.reduce(y, axis=(0, 2))


class SpendPlot(pg.PlotWidget):  # type: ignore[misc]
    """Cumulative cost (solid), its projection (dashed), the cap (dashed, red)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, axisItems={"bottom": LocalDateAxis(orientation="bottom")})
        self.setObjectName("spendPlot")
        self.setMenuEnabled(False)
        self.hideButtons()
        self.showGrid(x=True, y=False, alpha=0.25)
        self.getPlotItem().getAxis("left").setWidth(56)
        self.setMouseEnabled(x=False, y=False)
        self.curve = pg.PlotCurveItem(connect="finite")
        self.projection = pg.PlotCurveItem()
        self.cap_line = pg.InfiniteLine(angle=0, movable=False)
        self.cap_mark = pg.ScatterPlotItem(size=8, symbol="o")
        for item in (self.curve, self.projection, self.cap_line, self.cap_mark):
            self.addItem(item)
        self.cap_line.setVisible(False)
        self.apply_palette()

    def apply_palette(self) -> None:
        base, text, mid = _palette_colours(self)
        self.setBackground(base)
        for name in ("left", "bottom"):
            ax = self.getPlotItem().getAxis(name)
            ax.setPen(pg.mkPen(mid))
            ax.setTextPen(pg.mkPen(text))
        accent = self.palette().color(QPalette.ColorRole.Highlight)
        self.curve.setPen(pg.mkPen(accent, width=2.5))
        fill = QColor(accent)
        fill.setAlpha(50)
        self.curve.setBrush(pg.mkBrush(fill))
        self.curve.setFillLevel(0)
        faint = QColor(accent)
        faint.setAlpha(170)
        self.projection.setPen(pg.mkPen(faint, width=1.5, style=Qt.PenStyle.DashLine))
        red = QColor(220, 60, 60)
        self.cap_line.setPen(pg.mkPen(red, width=1, style=Qt.PenStyle.DashLine))
        self.cap_mark.setBrush(pg.mkBrush(red))
        self.cap_mark.setPen(pg.mkPen(red))

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt API
        if hasattr(self, "cap_mark") and event.type() in (
                QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            self.apply_palette()
        elif hasattr(self, "cap_mark") and event.type() == QEvent.Type.LanguageChange:
            relabel_all([self.getPlotItem().getAxis("bottom")])
        super().changeEvent(event)

    def draw(self, points: Sequence[tuple[float, float]], projection: Sequence[tuple[float, float]],
             cap: float | None, cap_at: float | None) -> None:
        if points:
            arr = np.asarray(points, dtype=np.float64)
            self.curve.setData(arr[:, 0], arr[:, 1])
        else:
            self.curve.setData([], [])
        if projection:
            proj = np.asarray(projection, dtype=np.float64)
            self.projection.setData(proj[:, 0], proj[:, 1])
        else:
            self.projection.setData([], [])
        self.cap_line.setVisible(cap is not None)
        if cap is not None:
            self.cap_line.setPos(cap)
        if cap is not None and cap_at is not None:
            self.cap_mark.setData([cap_at], [cap])
        else:
            self.cap_mark.setData([], [])
        xs = [t for t, _ in (*points, *projection)] + ([cap_at] if cap_at is not None else [])
        ys = [c for _, c in (*points, *projection)] + ([cap] if cap is not None else [])
        if xs:
            lo, hi = min(xs), max(xs)
            self.setXRange(lo, hi if hi > lo else lo + 60, padding=0.03)
            top = max(ys)
            self.setYRange(0, top if top > 0 else 1, padding=0.06)
