"""The live dashboard fed with agent records (the a100x8 stand-in's values), offscreen."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import QPoint  # noqa: E402
from PySide6.QtCore import QPointF  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QPalette  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402

from gpudesk.ui.shell.theme import apply_theme  # noqa: E402
from gpudesk.ui.watch.dashboard_page import DASH  # noqa: E402
from gpudesk.ui.watch.dashboard_page import DashboardPage  # noqa: E402
from gpudesk.ui.watch.dashboard_page import OverviewPage  # noqa: E402
from gpudesk.ui.watch.dashboard_page import forecast  # noqa: E402
from gpudesk.ui.watch.ring_buffer import DAY_SAMPLES  # noqa: E402
from gpudesk.ui.watch.ring_buffer import bytes_for  # noqa: E402

T0 = 1_767_000_000.0  # a fixed start: the pages get a fake clock
NAME = "NVIDIA A100-SXM4-40GB"
UTIL = (97, 98, 96, 99, 97, 98, 95, 99)  # tests/fake_nvidia_smi.py, scenario a100x8


def a100x8(k: int, t: float | None = None) -> dict[str, Any]:
    """Record k of the a100x8 scenario as the agent writes it."""
    return {
        "seq": k + 1, "t": T0 + k if t is None else t, "src": "nvidia-smi",
        "gpus": [{"index": i, "uuid": f"GPU-4d2b3c1e-6a0f-2b7e-93c1-0e5f2a7d8b{10 + i}",
                  "name": NAME, "util": UTIL[(i + k) % 8], "mem_used_mib": 30994 + 16 * i,
                  "mem_total_mib": 40960, "temp_c": 60 + i, "power_w": 330.25 + 3 * i + k % 3,
                  "power_limit_w": 400} for i in range(8)],
        "procs": [{"pid": 41000 + i, "gpu_uuid": f"GPU-…{i}", "gpu_index": i, "name": "python3",
                   "mem_used_mib": 30800 + 16 * i} for i in range(8)],
    }


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock(T0 + 120)


@pytest.fixture
def page(qtbot, clock: Clock) -> DashboardPage:  # type: ignore[no-untyped-def]
    p = DashboardPage("train-a100x8", clock=clock)
    qtbot.addWidget(p)
    p.resize(1280, 800)
    p.show()
    qtbot.waitExposed(p)
    return p


def cells(table, row: int) -> list[str]:  # type: ignore[no-untyped-def]
    return [table.item(row, c).text() for c in range(table.columnCount())]


def drawn(page: DashboardPage, qtbot) -> None:  # type: ignore[no-untyped-def]
    before = page.redraws
    qtbot.waitUntil(lambda: page.redraws > before, timeout=3000)


def test_no_data_yet_then_latest_values(page: DashboardPage, qtbot, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    assert page.status.text() == "no data yet"
    assert page.gpu_table.rowCount() == 0
    for k in range(100):
        page.feed(a100x8(k))
    drawn(page, qtbot)
    assert page.status.text() == "last sample 21 s ago"  # clock T0+120, last sample T0+99
    assert page.gpu_table.rowCount() == 8
    # k = 99: util index (i + 99) % 8, power 330.25 + 3i + 0
    assert cells(page.gpu_table, 0) == ["0", NAME, "99 %", "30.3 / 40.0 GiB", "60 °C",
                                        "330 / 400 W"]
    assert cells(page.gpu_table, 7)[2:] == ["96 %", "30.4 / 40.0 GiB", "67 °C", "351 / 400 W"]
    assert page.title.text() == "train-a100x8"
    clock.now += 5
    page._show_status()
    assert page.status.text() == "last sample 26 s ago"


def test_process_table_has_the_fed_rows(page: DashboardPage, qtbot) -> None:  # type: ignore[no-untyped-def]
    rec = a100x8(0)
    rec["procs"].append({"pid": 5150, "gpu_uuid": "x", "gpu_index": 2, "name": "VLLM::EngineCore",
                         "mem_used_mib": None})
    page.feed(rec)
    drawn(page, qtbot)
    assert page.proc_table.rowCount() == 9
    rows = [cells(page.proc_table, r) for r in range(9)]
    assert rows[0] == ["41000", "0", "python3", "30,800 MiB"]
    assert rows[2] == ["41002", "2", "python3", "30,832 MiB"]
    assert rows[3] == ["5150", "2", "VLLM::EngineCore", DASH]  # unknown memory is not 0
    assert rows[8] == ["41007", "7", "python3", "30,912 MiB"]
    page.feed({**a100x8(1), "procs": []})
    drawn(page, qtbot)
    assert page.proc_table.rowCount() == 0


def test_missing_values_show_a_dash_not_zero(page: DashboardPage, qtbot) -> None:  # type: ignore[no-untyped-def]
    page.feed({"seq": 1, "t": T0, "gpus": [
        {"index": 0, "name": "Tesla K80", "util": 37, "mem_used_mib": 2048,
         "mem_total_mib": 11441, "temp_c": None, "power_w": None, "power_limit_w": None},
        {"index": 1, "name": "NVIDIA GeForce RTX 3090", "util": None, "mem_used_mib": None,
         "mem_total_mib": None, "temp_c": 45, "power_w": None, "power_limit_w": None},
    ], "procs": []})
    drawn(page, qtbot)
    assert cells(page.gpu_table, 0)[2:] == ["37 %", "2.0 / 11.2 GiB", DASH, DASH]
    assert cells(page.gpu_table, 1)[2:] == [DASH, DASH, "45 °C", DASH]
    s = page.summary()
    assert s.mean_util == 37.0 and s.n_gpus == 2  # the unknown one is not averaged in as 0
    # The plotted util of GPU 1 is NaN (a break), not 0.
    _, y = page.plots.curve_data(1, 0)
    assert len(y) == 1 and math.isnan(y[0])


def test_plots_carry_the_fed_samples_and_redraw_is_throttled(page: DashboardPage, qtbot) -> None:  # type: ignore[no-untyped-def]
    drawn(page, qtbot)  # the first tick after show
    start = page.redraws
    for k in range(300):
        page.feed(a100x8(k))
    drawn(page, qtbot)
    assert page.redraws == start + 1  # 300 samples, one redraw
    x, y = page.plots.curve_data(3, 0)  # GPU 3 utilisation
    assert len(x) == 300 and x[0] == T0 and x[-1] == T0 + 299
    assert y.tolist() == [UTIL[(3 + k) % 8] for k in range(300)]
    _, mem = page.plots.curve_data(5, 1)  # GPU 5 memory, in GiB
    assert mem[0] == pytest.approx((30994 + 80) / 1024)
    lo, hi = page.plots.x_range()
    # Follows the newest sample; a run shorter than the 1 h window fills the width.
    assert T0 - 60 <= lo <= T0 and hi >= T0 + 299
    page.tick()
    assert page.redraws == start + 1  # nothing new: no redraw


def test_a_gap_in_time_is_a_break_in_the_line(page: DashboardPage, qtbot) -> None:  # type: ignore[no-untyped-def]
    for k in list(range(50)) + list(range(200, 250)):
        page.feed(a100x8(k))
    drawn(page, qtbot)
    x, y = page.plots.curve_data(0, 2)
    breaks = np.flatnonzero(np.isnan(x))
    assert len(breaks) == 1
    assert x[breaks[0] - 1] == T0 + 49 and x[breaks[0] + 1] == T0 + 200
    assert math.isnan(y[breaks[0]])


def test_hover_readout_shows_the_values_under_the_mouse(page: DashboardPage, qtbot) -> None:  # type: ignore[no-untyped-def]
    for k in range(600):
        page.feed(a100x8(k))
    drawn(page, qtbot)
    page.show_at(T0 + 101.2)  # nearest sample k = 101
    assert page.readout.text().startswith("Values at ")
    assert cells(page.gpu_table, 2)[2:] == [f"{UTIL[(2 + 101) % 8]} %", "30.3 / 40.0 GiB",
                                            "62 °C", "338 / 400 W"]
    assert page.plots.cross[0].isVisible() and page.plots.cross[0].value() == T0 + 101.2
    page.show_at(None)
    assert page.readout.text().startswith("Latest values")
    assert not page.plots.cross[0].isVisible()
    # A real mouse move over the utilisation plot: the time under the pointer is shown.
    vb = page.plots.plots[0].getViewBox()
    scene_pt = vb.mapViewToScene(QPointF(T0 + 300, 50))
    view_pt = page.plots.mapFromScene(scene_pt)
    with qtbot.waitSignal(page.plots.hovered, timeout=3000):
        QTest.mouseMove(page.plots.viewport(), view_pt)
        QTest.mouseMove(page.plots.viewport(), view_pt + QPoint(1, 0))
    t = page.hover_t
    assert t is not None
    k = round(t - T0)
    assert abs(t - (T0 + 300)) <= 3 * vb.viewPixelSize()[0]  # a pixel or two from the pointer
    assert page.readout.text().startswith("Values at ")
    assert cells(page.gpu_table, 4)[2] == f"{UTIL[(4 + k) % 8]} %"


def test_out_of_order_backfill_fills_the_hole(page: DashboardPage, qtbot) -> None:  # type: ignore[no-untyped-def]
    for k in list(range(10)) + list(range(30, 40)):
        page.feed(a100x8(k))
    page.feed_many(a100x8(k) for k in range(10, 30))  # the reconnect backfill, arriving late
    assert not page.backfilling  # a short one is taken at once
    drawn(page, qtbot)
    x, _ = page.plots.curve_data(0, 0)
    assert x.tolist() == [T0 + k for k in range(40)]  # no hole, no break
    assert page.history.last_time == T0 + 39


def test_spend_labels_and_projection(page: DashboardPage) -> None:
    # $2/h; 30 min run so far cost $1.00; run ends 2 h after start; cap $3 reached at 1.5 h.
    points = [(T0, 0.0), (T0 + 900, 0.5), (T0 + 1800, 1.0)]
    f = forecast(points, 2.0, 3.0, T0 + 7200)
    assert f.so_far == 1.0 and f.at_end == pytest.approx(4.0)
    assert f.cap_at == pytest.approx(T0 + 5400)
    assert f.projection[-1] == (pytest.approx(T0 + 7200), pytest.approx(4.0))
    page.set_spend(points, 2.0, "USD", 3.0, T0 + 7200)
    assert page.rate_label.text() == "Rate: $2.00 per hour"
    assert page.so_far_label.text() == "This run so far: $1.00"
    assert page.end_label.text().endswith(": $4.00")
    assert page.cap_label.text().startswith("Cap $3.00 at ")
    x, y = page.spend_plot.projection.getData()
    assert x.tolist() == [T0 + 1800, T0 + 7200] and y.tolist() == [1.0, 4.0]
    assert page.spend_plot.cap_line.isVisible() and page.spend_plot.cap_line.value() == 3.0
    # The run ends before a higher cap; no cap at all; a cap already passed.
    assert forecast(points, 2.0, 10.0, T0 + 7200).cap_at is None
    page.set_spend(points, 2.0, "CNY", 10.0, T0 + 7200)
    assert page.cap_label.text() == "Cap ¥10.00 not reached by the end"
    page.set_spend(points, 2.0, "USD", None, None)
    assert page.cap_label.text() == "No budget cap" and page.end_label.text() == "No end time set"
    assert not page.spend_plot.cap_line.isVisible()
    page.set_spend(points, 2.0, "USD", 0.8, None)
    assert page.cap_label.text() == "Cap $0.80 reached"
    assert page.so_far_label.toolTip() == ""
    page.set_spend(points, 2.0, "USD", None, None, compute_only=True)  # a Tencent machine
    assert page.so_far_label.text() == "This run so far: $1.00 (compute only)"
    assert "no disk or traffic prices" in page.so_far_label.toolTip()


def test_overview_lists_machines_and_a_click_selects(qtbot, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    a = DashboardPage("alpha", key="m-1", clock=clock)
    b = DashboardPage("beta", key="m-2", clock=clock)
    overview = OverviewPage(clock=clock)
    for w in (a, b, overview):
        qtbot.addWidget(w)
    overview.resize(900, 300)
    overview.show()
    qtbot.waitExposed(overview)
    assert overview.empty.isVisibleTo(overview)
    overview.watch(a)
    overview.watch(b)
    for k in range(5):
        a.feed(a100x8(k))
    b.feed({"seq": 1, "t": T0 + 100, "gpus": [
        {"index": 0, "name": "Tesla T4", "util": None, "mem_used_mib": 3012,
         "mem_total_mib": 15360, "temp_c": 51, "power_w": 31.1, "power_limit_w": 70}],
        "procs": []})
    a.set_spend([(T0, 0.0)], 32.77, "USD", None, None)
    a.redraw()
    b.redraw()
    assert overview.table.rowCount() == 2
    assert cells(overview.table, 0) == ["alpha", "8", "97 %", "243 / 320 GiB",
                                        "$32.77 per hour", "116 s ago"]
    assert cells(overview.table, 1) == ["beta", "1", DASH, "3 / 15 GiB", DASH, "20 s ago"]
    assert not overview.empty.isVisibleTo(overview)
    rect = overview.table.visualItemRect(overview.table.item(1, 2))
    with qtbot.waitSignal(overview.machine_selected, timeout=3000) as picked:
        QTest.mouseClick(overview.table.viewport(), Qt.MouseButton.LeftButton,
                         pos=rect.center())
    assert picked.args == ["m-2"]


def test_manual_zoom_stops_following_until_asked(page: DashboardPage, qtbot) -> None:  # type: ignore[no-untyped-def]
    for k in range(100):
        page.feed(a100x8(k))
    drawn(page, qtbot)
    assert not page.follow_button.isEnabled()
    vb = page.plots.plots[0].getViewBox()
    vb.setXRange(T0 + 10, T0 + 40, padding=0)
    vb.sigRangeChangedManually.emit(vb.state["mouseEnabled"])  # what a drag/wheel emits
    assert page.follow_button.isEnabled()
    page.feed(a100x8(100))
    drawn(page, qtbot)
    lo, hi = page.plots.x_range()
    assert (lo, hi) == (pytest.approx(T0 + 10), pytest.approx(T0 + 40))  # stays put
    x, _ = page.plots.curve_data(0, 0)
    assert x[0] >= T0 + 10 and x[-1] <= T0 + 40  # only the visible range is drawn
    QTest.mouseClick(page.follow_button, Qt.MouseButton.LeftButton)
    drawn(page, qtbot)
    assert page.plots.x_range()[1] >= T0 + 100


def test_dark_theme_uses_the_palette(page: DashboardPage, qtbot, qapp) -> None:  # type: ignore[no-untyped-def]
    try:
        apply_theme(qapp, "dark")
        base = qapp.palette().color(QPalette.ColorRole.Base)
        assert base.lightness() < 80
        qtbot.waitUntil(lambda: page.plots.backgroundBrush().color() == base, timeout=3000)
        assert page.spend_plot.backgroundBrush().color() == base
    finally:
        apply_theme(qapp, "light")
    qtbot.waitUntil(lambda: page.plots.backgroundBrush().color().lightness() > 200, timeout=3000)


def test_a_day_of_8_gpus_stays_in_bounds(page: DashboardPage, qtbot) -> None:  # type: ignore[no-untyped-def]
    n = DAY_SAMPLES + 600
    t = T0 + np.arange(n, dtype=np.float64)
    for k in range(0, n, 20_000):  # backfill in parts, as after a long disconnect
        page.feed_many(a100x8(j, float(t[j])) for j in range(k, min(n, k + 20_000)))
    qtbot.waitUntil(lambda: not page.backfilling, timeout=60_000)
    page.window_box.setCurrentIndex(3)  # 24 hours
    drawn(page, qtbot)
    assert page.history.size == DAY_SAMPLES and page.history.nbytes == bytes_for(8)
    x, y = page.plots.curve_data(0, 0)
    width = page.plots.pixel_width()
    assert len(x) <= 2 * width + 2  # binned to the pixel width, not 86 400 points
    assert np.nanmax(y) == 99 and np.nanmin(y) == 95


def test_a_long_backfill_is_parsed_across_event_loop_turns(page: DashboardPage, qtbot) -> None:  # type: ignore[no-untyped-def]
    from gpudesk.ui.watch.dashboard_page import BACKFILL_CHUNK

    page.feed(a100x8(5000))
    n = 4 * BACKFILL_CHUNK + 7
    with qtbot.waitSignal(page.backfilled, timeout=10_000):
        page.feed_many(a100x8(k) for k in range(n))
        assert page.backfilling and page.history.size == 1  # nothing merged yet
    assert page.history.size == n + 1 and not page.backfilling
    assert page.history.first_time == T0 and page.history.last_time == T0 + 5000
    drawn(page, qtbot)
    assert cells(page.proc_table, 0)[0] == "41000"  # info from the newest record stays


def test_a_new_sample_rebins_only_the_tail(page: DashboardPage, qtbot) -> None:  # type: ignore[no-untyped-def]
    from gpudesk.ui.watch.ring_buffer import downsample_pieces

    n = 2 * 3600  # two hours of one GPU; the 1 h view holds 3 samples per pixel column
    t = T0 + np.arange(n, dtype=np.float64)
    rng = np.random.default_rng(3)
    block = np.full((n, 1, 4), np.nan, dtype=np.float32)
    block[:, 0, 0] = rng.integers(0, 101, n)
    block[:, 0, 1:] = [30000.0, 60.0, 300.0]
    page.history.merge(t, block)
    page.feed(a100x8(n))
    drawn(page, qtbot)
    plots = page.plots

    def whole_view() -> tuple[np.ndarray, np.ndarray]:
        t0, t1 = plots.x_range()
        h = page.history
        pieces = [(tt, v.reshape(h.n_gpus * h.n_series, -1)) for tt, v in h.pieces(t0, t1)]
        full = downsample_pieces(pieces, t0, t1, plots.pixel_width())
        assert full.binned
        return full.x, full.y[0]  # GPU 0 utilisation

    bodies = plots.body_draws
    for k in range(1, 6):
        page.feed(a100x8(n + k))
        drawn(page, qtbot)
        x, y = plots.curve_data(0, 0)
        want_x, want_y = whole_view()
        assert np.array_equal(x, want_x, equal_nan=True)
        assert np.array_equal(y, want_y, equal_nan=True)
    assert plots.body_draws == bodies  # five samples: five tails, the body drawn once
    assert plots.tails[0][0].getData()[0].size < 20
    body_x, tail_x = plots.curves[0][0].getData()[0], plots.tails[0][0].getData()[0]
    assert tail_x[0] == body_x[-1]  # the tail repeats the body's last column: one line

    # A backfill rewriting ten minutes inside the view bins the body again.
    fix = [a100x8(j) for j in range(n - 1800, n - 1200)]
    for rec in fix:
        rec["gpus"][0]["util"] = 0
    page.feed_many(fix)
    drawn(page, qtbot)
    assert plots.body_draws == bodies + 1
    x, y = plots.curve_data(0, 0)
    want_x, want_y = whole_view()
    assert np.array_equal(y, want_y, equal_nan=True)
    inside = (x > T0 + n - 1780) & (x < T0 + n - 1220)
    assert inside.any() and np.nanmax(y[inside]) == 0
