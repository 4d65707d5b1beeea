"""The Instances page says what a stopped machine bills, in its cloud's own word (clicked
against the Tencent stand-in, real SDK): a machine shut down from inside is "stopped (still
billing)" and costs its hourly price, a stop that cannot end the bill asks first, and the
settle message says the stop's own StopChargingMode."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from PySide6.QtWidgets import QMessageBox
from tencent_standin import TencentStandin

from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.tencent import STOP_CHARGING
from gpudesk.services.cloud.providers.tencent import STOP_KEEP_CHARGING
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.ui.machines.instances_model import COL
from gpudesk.ui.machines.instances_page import InstancesPage
from gpudesk.ui.watch.budget_alerts import BudgetAlerts
from gpudesk.ui.widgets.tray import BillingTray

WAIT_MS = 20000
REGION = "ap-guangzhou"
ZONE = "ap-guangzhou-3"
T4 = "GN7.2XLARGE32"
PRICE = 1.25  # USD/hour in the ledger
PUBLIC_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQgpudeskTestKeyOnlyForTheStandinServer00 me@lap"


@pytest.fixture
def ledger() -> Iterator[Ledger]:
    with Ledger() as led:
        yield led


def _factory(cloud: TencentStandin, creds: Credentials, mode: str) -> Any:
    def providers(_name: str) -> TencentProvider:
        return TencentProvider(creds, endpoint=cloud.endpoint, protocol="http",
                               stopped_mode=mode, sleep=lambda _s: None)
    return providers


def _running(cloud: TencentStandin, creds: Credentials, ledger: Ledger) -> Machine:
    p = TencentProvider(creds, endpoint=cloud.endpoint, protocol="http")
    key = p.ensure_key_pair(REGION, "gpudesk_test", PUBLIC_KEY)
    group = p.ensure_security_group(REGION, "203.0.113.7")
    inst = p.run_instance(LaunchRequest(ledger_id="m-bill000001", region=REGION,
                                        instance_type=T4, zone=ZONE, key_name=key,
                                        security_group=group))
    p.describe(REGION, [inst.cloud_id])  # PENDING → RUNNING
    p.close()
    now = time.time() - 600
    return ledger.add(Machine(
        id="m-bill000001", name="bill-1", provider="tencent", region=REGION, zone=ZONE,
        instance_type=T4, cloud_id=inst.cloud_id, state="running", price_per_hour=PRICE,
        disk_gb=50.0, launched_at=now, running_since=now, created_at=now))


def _page(qtbot: Any, ledger: Ledger, providers: Any) -> InstancesPage:
    page = InstancesPage(ledger, providers)
    qtbot.addWidget(page)
    page.settle_poll_s = 0.05
    page.show()
    return page


def _state_cell(page: InstancesPage, ledger_id: str) -> str:
    row = [m.id for m in page.model.machines].index(ledger_id)
    return str(page.model.index(row, COL["state"]).data())


def test_a_machine_shut_down_inside_is_shown_stopped_still_billing(
        qtbot: Any, loop: Any, tencent: TencentStandin, tencent_creds: Credentials,
        ledger: Ledger) -> None:
    m = _running(tencent, tencent_creds, ledger)
    tencent.shutdown_inside(m.cloud_id)
    # the ledger records what the cloud says (StopChargingMode=KEEP_CHARGING)
    (seen,) = _factory(tencent, tencent_creds, STOP_CHARGING)("tencent").describe(
        REGION, [m.cloud_id])
    assert (seen.state, seen.stopped_mode) == ("stopped", "KEEP_CHARGING")
    ledger.update(m.id, state=seen.state, stopped_mode=seen.stopped_mode, step="state",
                  detail="stopped (KEEP_CHARGING)")
    page = _page(qtbot, ledger, _factory(tencent, tencent_creds, STOP_CHARGING))
    assert _state_cell(page, m.id) == "stopped (still billing)"
    assert page.model.billing_states() == {"stopped (still billing)": 1}
    assert page.model.billing_summary() == (1, PRICE)  # charged in full: its hourly price
    banner = page.banner.text()
    assert "1 stopped (still billing" in banner and "starting" not in banner
    assert page.model.money(PRICE) in banner
    tray = BillingTray(page.windowIcon(), lambda: None, lambda: None)
    tray.update([r for r in ledger.machines() if r.billing])
    assert page.model.money(PRICE) in tray.icon.toolTip()
    assert "stopped (still billing)" in tray.machine_actions[0].text()


def test_a_stop_that_keeps_charging_asks_first_and_says_so(
        qtbot: Any, loop: Any, tencent: TencentStandin, tencent_creds: Credentials,
        ledger: Ledger) -> None:
    m = _running(tencent, tencent_creds, ledger)
    page = _page(qtbot, ledger, _factory(tencent, tencent_creds, STOP_KEEP_CHARGING))
    page.select_machine(m.id)
    page.stop_button.click()
    found: list[QMessageBox] = []

    def asked() -> bool:
        found[:] = [b for b in page.findChildren(QMessageBox, "confirmStop") if b.isVisible()]
        return bool(found)

    qtbot.waitUntil(asked, timeout=WAIT_MS)
    assert "KEEP_CHARGING" in found[0].text()
    assert tencent.calls.get("StopInstances", 0) == 0  # nothing stopped before the answer
    yes = next(b for b in found[0].buttons() if b.objectName() == "confirmStopYes")
    yes.click()
    qtbot.waitUntil(lambda: ledger.get(m.id).state == "stopped",  # type: ignore[union-attr]
                    timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not page.settle_runner.busy and not page.action_runner.busy,
                    timeout=WAIT_MS)
    assert tencent.params("StopInstances")[-1]["StoppedMode"] == "KEEP_CHARGING"
    assert "keeps billing it in full (KEEP_CHARGING)" in page.status.text()
    assert _state_cell(page, m.id) == "stopped (still billing)"


def test_a_stop_charging_stop_asks_nothing_and_says_without_charge(
        qtbot: Any, loop: Any, tencent: TencentStandin, tencent_creds: Credentials,
        ledger: Ledger) -> None:
    m = _running(tencent, tencent_creds, ledger)
    page = _page(qtbot, ledger, _factory(tencent, tencent_creds, STOP_CHARGING))
    page.select_machine(m.id)
    page.stop_button.click()
    qtbot.waitUntil(lambda: ledger.get(m.id).state == "stopped",  # type: ignore[union-attr]
                    timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not page.settle_runner.busy and not page.action_runner.busy,
                    timeout=WAIT_MS)
    assert not page.findChildren(QMessageBox, "confirmStop")
    assert tencent.params("StopInstances")[-1]["StoppedMode"] == "STOP_CHARGING"
    text = page.status.text()
    assert "stopped without charge (STOP_CHARGING)" in text and "KEEP_CHARGING" not in text
    assert _state_cell(page, m.id) == "stopped"
    assert text.count("STOP_CHARGING") == 1  # one sentence, the cloud's word once (issue 31)
    # its disk still bills: never "Nothing is billing" (issue 31)
    assert "Nothing is billing" not in page.banner.text()
    assert "still bill their disks" in page.banner.text()


def test_over_budget_a_machine_shut_down_inside_ends_stopped_without_charge(
        qtbot: Any, loop: Any, tencent: TencentStandin, tencent_creds: Credentials,
        ledger: Ledger) -> None:
    """The budget's stop of a CVM shut down from inside (KEEP_CHARGING, so a plain stop is
    refused: already stopped) starts it and stops it again with STOP_CHARGING."""
    m = _running(tencent, tencent_creds, ledger)
    ledger.update(m.id, budget=0.05, on_budget="stop", step="guard", detail="stop")
    tencent.shutdown_inside(m.cloud_id)
    ledger.update(m.id, state="stopped", stopped_mode="KEEP_CHARGING", step="state",
                  detail="stopped (KEEP_CHARGING)")
    settings = Settings()
    alerts = BudgetAlerts.for_ledger(ledger, lambda: settings, None, interval_ms=60_000,
                                     tray_available=lambda: True,
                                     providers=_factory(tencent, tencent_creds, STOP_CHARGING))
    with qtbot.waitSignal(alerts.acted, timeout=WAIT_MS) as blocker:
        alerts.check_now()
    assert blocker.args == ["stop", m.id]
    raw = tencent.state.instances[m.cloud_id]
    assert raw["InstanceState"] in ("STOPPING", "STOPPED")
    assert raw["StopChargingMode"] == "STOP_CHARGING"
    assert tencent.calls["StartInstances"] == 1
    assert tencent.params("StopInstances")[-1]["StoppedMode"] == "STOP_CHARGING"
    row = ledger.get(m.id)
    assert row is not None and row.stopped_mode == "STOP_CHARGING" and not row.compute_billing
    assert "stop-charging" in [e.step for e in ledger.events(m.id)]
