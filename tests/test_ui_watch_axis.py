"""The Watch page's time axes name days in the window's language (issue 31: "Sun 06")."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("PySide6")

from gpudesk.ui.shell.i18n import install_translator  # noqa: E402
from gpudesk.ui.watch.gpu_plots import GpuPlots  # noqa: E402
from gpudesk.ui.watch.gpu_plots import SpendPlot  # noqa: E402

START = 1_796_515_200.0  # 2026-12-06 00:00 UTC, a Sunday; no test reads the clock
ENGLISH_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _labels(axis: Any, days: float = 2.0, width: int = 1200) -> list[str]:
    lo, hi = START, START + days * 86400
    axis.setZoomLevelForDensity((hi - lo) / width)
    out: list[str] = []
    for spacing, values in axis.tickValues(lo, hi, width):
        out += axis.tickStrings(values, 1.0, spacing)
    return out


@pytest.mark.parametrize("kind", [SpendPlot, GpuPlots])
def test_day_ticks_follow_the_language(qapp: Any, qtbot: Any, kind: Any) -> None:
    view = kind()
    axis = (view.getPlotItem() if kind is SpendPlot else view.plots[-1]).getAxis("bottom")
    qtbot.addWidget(view)
    view.resize(640, 400)
    view.show()
    qtbot.waitExposed(view)
    qtbot.waitUntil(lambda: hasattr(axis, "fontMetrics"))  # set by its first paint
    try:
        english = _labels(axis)
        assert any(d in label for label in english for d in ENGLISH_DAYS), english
        install_translator(qapp, "zh_CN")
        chinese = _labels(axis)
        assert any("周" in label for label in chinese), chinese
        assert not any(d in label for label in chinese for d in ENGLISH_DAYS), chinese
        assert any(label[-1].isdigit() for label in chinese)  # the hours stay numbers
    finally:
        install_translator(qapp, "en")
