"""The Plan page's spot panel: rate with source, expected cost with its range, and the
price history fetched from the ECS stand-in with the account in the keyring."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")
qasync = pytest.importorskip("qasync")

import pyqtgraph as pg  # noqa: E402
from aliyun_standin import AliyunStandin  # noqa: E402
from fixtures_aliyun import aliyun  # noqa: E402, F401
from fixtures_aliyun import aliyun_creds  # noqa: E402, F401
from fixtures_aliyun import aliyun_server  # noqa: E402, F401
from fixtures_keyring import memory_keyring  # noqa: E402, F401
from PySide6.QtCore import Qt  # noqa: E402

from gpudesk.services.cloud import credentials  # noqa: E402
from gpudesk.services.cloud.accounts import ALIYUN_ENDPOINT_ENV  # noqa: E402
from gpudesk.services.cloud.catalog import load_catalog  # noqa: E402
from gpudesk.services.cloud.providers.base import Credentials  # noqa: E402
from gpudesk.services.cloud.spot_rates import SpotRate  # noqa: E402
from gpudesk.services.core.settings import Settings  # noqa: E402
from gpudesk.ui.plan.offers_model import COL  # noqa: E402
from gpudesk.ui.plan.offers_model import format_money  # noqa: E402
from gpudesk.ui.plan.plan_form import combo_key  # noqa: E402
from gpudesk.ui.plan.plan_page import PlanPage  # noqa: E402


@pytest.fixture
def page(qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PlanPage:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GPUDESK_HOME", str(tmp_path / "home"))
    p = PlanPage(Settings(), load_catalog())
    qtbot.addWidget(p)
    p.resize(1280, 800)
    p.show()
    qtbot.waitExposed(p)
    return p


def _row_of(page: PlanPage, provider: str, skip: str = "") -> int:
    for i in range(page.proxy.rowCount()):
        r = page.proxy.ranked_at(i)
        if r.offer.provider == provider and r.fits and r.offer.instance_type != skip:
            return i
    raise AssertionError(provider)


def test_spot_rows_show_rate_source_and_expected_cost(qtbot, page: PlanPage) -> None:  # type: ignore[no-untyped-def]
    page.spot_rates = {("aws", o.region, o.instance_type): SpotRate(
        "aws", o.region, o.instance_type, 0.075, 0.05, 0.10, "5-10%",
        "AWS Spot Instance Advisor (test data), read 2026-03-01", "2026-03-01")
        for o in load_catalog().offers if o.provider == "aws"}
    assert not page.spot_panel.isVisibleTo(page)
    qtbot.mouseClick(page.spot, Qt.MouseButton.LeftButton)
    assert page.spot.isChecked() and page.spot_panel.isVisibleTo(page)
    page.select_row(_row_of(page, "aws"))
    r = page.selected_offer()
    assert r is not None and r.risk is not None and r.risk.outlook is not None
    panel = page.spot_panel
    assert "5-10%" in panel.rate.text() and "Spot Instance Advisor" in panel.rate.text()
    assert format_money(r.risk.outlook.expected_cost) in panel.expected.text()
    assert "(assumed)" in panel.checkpoint.text()
    assert "expected" in page.summary_values["cost"].text()
    # the table's cost column and its order are the expected figures too
    row = page.table.selectionModel().selectedRows()[0].row()
    shown = page.proxy.index(row, COL["cost"]).data()
    assert shown == format_money(r.risk.outlook.expected_cost)
    fitting = [page.proxy.ranked_at(i) for i in range(page.proxy.rowCount())
               if page.proxy.ranked_at(i).fits and page.proxy.ranked_at(i).priced]
    assert [x.expected_cost for x in fitting] == sorted(x.expected_cost for x in fitting)
    page.select_row(_row_of(page, "tencent"))
    assert "not published" in panel.rate.text()


def test_history_button_draws_the_zones_and_hour_bands(  # type: ignore[no-untyped-def]
        qtbot, loop, page: PlanPage, aliyun: AliyunStandin,  # noqa: F811
        aliyun_creds: Credentials, memory_keyring, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setenv(ALIYUN_ENDPOINT_ENV, f"http://{aliyun.endpoint}")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    credentials.save_credentials(aliyun_creds)
    qtbot.mouseClick(page.spot, Qt.MouseButton.LeftButton)
    page.provider.setCurrentIndex(page.provider.findData("aliyun"))
    assert combo_key(page.provider) == "aliyun"
    page.select_row(_row_of(page, "aliyun", skip="ecs.gn7e-c16g1.4xlarge"))  # A100: no spot
    panel = page.spot_panel
    assert "not fetched" in panel.history_note.text()
    button = panel.history_button
    # the panel has just been shown: click once it is laid out, as a person would
    qtbot.waitUntil(lambda: button.isEnabled() and not button.visibleRegion().isEmpty())
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.history is not None or page.runner.last_box is not None,
                    timeout=10000)
    assert page.runner.last_box is None, page.runner.last_box.text()
    assert panel.history is not None and panel.history.zones
    curves = [i for i in panel.plot.getPlotItem().items if isinstance(i, pg.PlotDataItem)]
    assert len(curves) == len(panel.history.zones)
    bars = [i for i in panel.bands.getPlotItem().items if isinstance(i, pg.BarGraphItem)]
    assert len(bars) == 1
    assert "ECS DescribeSpotPriceHistory, 30 days" in panel.history_note.text()
    assert "CNY" in panel.history_note.text()
    assert aliyun.limit_refusals == [] and aliyun.internal_errors == []
