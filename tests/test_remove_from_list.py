"""Remove from list on a stopped machine (issue 29, item 9), clicked in the window against
moto and the Tencent stand-in: the question says the machine still exists and bills its
disk; Check clouds finds it again with the budget it had (never "none"), so Start does
not run it unguarded; and a CVM's timer is read back from the cloud, not remembered."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from cloud_window import open_cloud_window
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton
from PySide6.QtWidgets import QMessageBox
from PySide6.QtWidgets import QPushButton
from tencent_standin import TencentStandin

from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.forget import forget
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.cloud.reconcile import ReconcileReport
from gpudesk.services.cloud.reconcile import reconcile_provider
from gpudesk.services.money.ledger import Account
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.ui.machines.instances_page import InstancesPage
from gpudesk.ui.shell.main_window import MainWindow

WAIT_MS = 20000
LEDGER_ID = "m-forget01"


@pytest.fixture
def aws_window(qtbot, loop, aws, memory_keyring, monkeypatch, banner_port  # type: ignore[no-untyped-def]
               ) -> Iterator[MainWindow]:
    credentials.save_credentials(aws.credentials)
    with open_cloud_window(qtbot, monkeypatch, banner_port, "AWS_ENDPOINT_URL",
                           aws.endpoint.removeprefix("http://")) as w:
        w.ledger.save_account(Account("aws", "AKIA…0001", account="123456789012",
                                      can_launch=True))
        yield w


def _click(qtbot: Any, button: QAbstractButton) -> None:
    assert button.isVisible() and button.isEnabled(), button.objectName()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def _box(qtbot: Any, page: InstancesPage) -> QMessageBox:
    qtbot.waitUntil(lambda: any(b.isVisible() for b in page.findChildren(
        QMessageBox, "confirmForget")), timeout=WAIT_MS)
    return next(b for b in page.findChildren(QMessageBox, "confirmForget") if b.isVisible())


def _stopped_ec2(aws: MotoAws, ledger: Ledger) -> Machine:
    """A g5.xlarge gpudesk launched (tagged with its ledger id), with a $20 budget, stopped."""
    aws.publish_dlami("us-east-1")
    provider = aws.provider()
    inst = provider.run_instance(LaunchRequest(LEDGER_ID, "us-east-1", "g5.xlarge",
                                               allow_from="203.0.113.7/32"))
    aws.client("ec2").stop_instances(InstanceIds=[inst.cloud_id])
    since = time.time() - 3600
    return ledger.add(Machine(
        id=LEDGER_ID, provider="aws", region="us-east-1", zone=inst.zone, name="trainer",
        instance_type="g5.xlarge", cloud_id=inst.cloud_id, state="stopped",
        launched_at=since, price_per_hour=1.006, budget=20.0, on_budget="stop",
        enforced_by="agent,shutdown-behavior", ssh_user="ubuntu",
        host_key_fingerprint="SHA256:pinnedbeforethefirstlogin", disk_gb=100))


def test_remove_asks_and_check_clouds_brings_it_back_with_its_budget(  # type: ignore[no-untyped-def]
        aws_window, qtbot, aws) -> None:
    window: MainWindow = aws_window
    ledger = window.ledger
    page: InstancesPage = window.instances
    window.show_page("instances")
    qtbot.waitUntil(lambda: not page.sync_runner.busy, timeout=WAIT_MS)  # the first check
    m = _stopped_ec2(aws, ledger)
    page.reload()
    page.select_machine(m.id)
    remove = page.findChild(QPushButton, "forget")
    assert remove is not None

    # asked first, and Cancel keeps the row
    _click(qtbot, remove)
    box = _box(qtbot, page)
    text = box.text()
    assert "This does not delete it" in text and m.cloud_id in text
    assert "still exists in AWS (stopped)" in text and "its disk bills" in text
    assert "with its budget ($20.00, then stop)" in text
    assert box.defaultButton() == box.button(QMessageBox.StandardButton.Cancel)
    _click(qtbot, box.button(QMessageBox.StandardButton.Cancel))
    assert ledger.get(m.id) is not None

    # asked again, and Remove removes it
    page.select_machine(m.id)
    _click(qtbot, remove)
    box = _box(qtbot, page)
    _click(qtbot, next(b for b in box.buttons() if b.objectName() == "confirmForgetYes"))
    assert ledger.get(m.id) is None
    assert m.id not in [x.id for x in page.model.machines]

    # Check clouds finds it in EC2 and it comes back guarded as before
    _click(qtbot, page.findChild(QPushButton, "refresh"))
    qtbot.waitUntil(lambda: ledger.get(m.id) is not None, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not page.sync_runner.busy, timeout=WAIT_MS)
    back = ledger.get(m.id)
    assert back is not None
    assert (back.budget, back.on_budget, back.enforced_by) == (20.0, "stop",
                                                               "agent,shutdown-behavior")
    assert (back.name, back.ssh_user, back.origin, back.price_per_hour) == (
        "trainer", "ubuntu", "launched", 1.006)
    assert back.host_key_fingerprint == "SHA256:pinnedbeforethefirstlogin"
    assert (back.cloud_id, back.state) == (m.cloud_id, "stopped")
    assert "back, with the budget they had" in page.status.text()
    assert "did not know" not in page.status.text()
    row = [x.id for x in page.model.machines].index(m.id)
    assert page.model.budget_text(page.model.machines[row]) == "$20.00, then stop"

    # Start runs it with that budget
    page.select_machine(m.id)
    _click(qtbot, page.findChild(QPushButton, "start"))
    qtbot.waitUntil(lambda: (ledger.get(m.id) or back).state in ("pending", "running"),
                    timeout=WAIT_MS)
    started = ledger.get(m.id)
    assert started is not None and (started.budget, started.on_budget) == (20.0, "stop")


def test_a_removed_cvm_comes_back_with_the_timer_the_cloud_holds(
        tencent: TencentStandin, tencent_creds: Credentials) -> None:
    """The kept row remembered a timer an hour on; the cloud holds none now, and the ledger
    says only what the cloud holds."""
    p = TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http")
    try:
        group = p.ensure_security_group("ap-guangzhou", "203.0.113.7")
        inst = p.run_instance(LaunchRequest("m-forget02", "ap-guangzhou", "GN7.2XLARGE32",
                                            zone="ap-guangzhou-3", security_group=group))
        p.describe("ap-guangzhou", [inst.cloud_id])  # PENDING → RUNNING
        p.stop("ap-guangzhou", inst.cloud_id, stopped_mode="STOP_CHARGING")
        p.describe("ap-guangzhou", [inst.cloud_id])  # STOPPING → STOPPED
        (seen,) = p.describe("ap-guangzhou", [inst.cloud_id])
        assert (seen.state, seen.stopped_mode) == ("stopped", "STOP_CHARGING")
        with Ledger() as ledger:
            ledger.add(Machine(
                id="m-forget02", provider="tencent", region="ap-guangzhou",
                zone="ap-guangzhou-3", instance_type="GN7.2XLARGE32", cloud_id=inst.cloud_id,
                state="stopped", stopped_mode=seen.stopped_mode, price_per_hour=1.03,
                budget=12.0, on_budget="terminate", enforced_by="agent,cloud-timer",
                cloud_timer_at=time.time() + 3600, name="cvm"))
            forget(ledger, "m-forget02")
            assert ledger.get("m-forget02") is None
            report = ReconcileReport()
            reconcile_provider(ledger, "tencent", p, ["ap-guangzhou"], report)
            back = ledger.get("m-forget02")
            assert back is not None and report.restored == ["m-forget02"]
            assert (back.budget, back.on_budget, back.name) == (12.0, "terminate", "cvm")
            assert p.guard_at("ap-guangzhou", inst.cloud_id) is None  # no timer there
            assert back.cloud_timer_at is None and "cloud-timer" not in back.enforced_by
    finally:
        p.close()


def test_a_row_that_may_bill_is_never_forgotten() -> None:
    with Ledger() as ledger:
        ledger.add(Machine(id="m-bills", provider="aws", region="us-east-1", cloud_id="i-1",
                           state="running", price_per_hour=1.0))
        with pytest.raises(ValueError):
            forget(ledger, "m-bills")
        assert ledger.get("m-bills") is not None
