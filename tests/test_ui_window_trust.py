"""What the window shows can be relied on (issue 31), clicked against the Tencent stand-in
(real SDK over HTTP): a machine that bills is on the Instances page and in the status bar
while its launch still waits for SSH in the background, and "Stop and quit" acts on every
machine — one that refuses is named, the others are stopped all the same — offering "stop"
only for what can be stopped."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import time
from typing import Any

from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QMessageBox
from tencent_standin import TencentStandin
from test_ui_launch_honest import Gate  # noqa: F401
from test_ui_launch_honest import button  # noqa: F401
from test_ui_launch_honest import gone  # noqa: F401
from test_ui_launch_honest import open_launch  # noqa: F401
from test_ui_launch_honest import shown_box  # noqa: F401
from test_ui_launch_honest import window  # noqa: F401

from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.money.ledger import Machine
from gpudesk.ui.shell.main_window import MainWindow

WAIT_MS = 20000
REGION = "ap-guangzhou"
ZONE = "ap-guangzhou-3"


def _billing_status(window: MainWindow) -> str:
    label = window.findChild(QLabel, "billingStatus")
    assert label is not None
    return label.text()


def test_a_machine_waiting_for_ssh_in_the_background_is_listed_and_counted(
        window: MainWindow, qtbot: Any, tencent: TencentStandin, banner_port: int) -> None:
    gate = Gate(banner_port)  # SSH silent: the machine runs and bills, the launch waits
    dialog = open_launch(window, gate)
    window.show_page("instances")
    assert window.instances.model.rowCount() == 0 and _billing_status(window) == ""
    dialog.launch_button.click()
    qtbot.waitUntil(lambda: gate.asked > 0, timeout=WAIT_MS)
    dialog.close_button.click()
    box = shown_box(qtbot, dialog, "launchCloseQuestion")
    # the machine runs already: said so, and no "Cancel" beside "Cancel the launch"
    assert "already runs and bills" in box.text() and "from then on" not in box.text()
    words = sorted(b.text() for b in box.buttons())
    assert words == ["Back to the launch", "Keep launching in the background",
                     "Stop the launch and terminate"]
    button(box, "launchKeepBackground").click()
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=WAIT_MS)
    assert dialog.runner.busy  # still waiting for SSH: no Check clouds, no launch end
    (m,) = window.ledger.machines()
    assert m.state == "running" and m.billing
    model = window.instances.model
    assert [x.id for x in model.machines] == [m.id]
    assert "Nothing is billing" not in window.instances.banner.text()
    assert _billing_status(window).startswith("● 1 billing")
    gate.open = True
    qtbot.waitUntil(lambda: gone(dialog), timeout=WAIT_MS)
    assert _billing_status(window).startswith("● 1 billing")


def _cvm(window: MainWindow, tencent: TencentStandin, creds: Credentials, name: str,
         **extra: Any) -> Machine:
    """A running CVM on the stand-in, in the ledger as gpudesk launched it."""
    p = TencentProvider(creds, endpoint=tencent.endpoint, protocol="http")
    try:
        group = p.ensure_security_group(REGION, "203.0.113.7")
        inst = p.run_instance(LaunchRequest(name, REGION, "GN7.2XLARGE32", zone=ZONE,
                                            security_group=group))
        p.describe(REGION, [inst.cloud_id])  # PENDING → RUNNING
    finally:
        p.close()
    since = time.time() - 600
    return window.ledger.add(Machine(
        id=name, provider="tencent", region=REGION, zone=ZONE, name=name,
        instance_type="GN7.2XLARGE32", cloud_id=inst.cloud_id, state="running",
        running_since=since, launched_at=since, price_per_hour=1.0, **extra))


def test_stop_and_quit_stops_every_machine_and_names_each_that_refused(
        window: MainWindow, qtbot: Any, tencent: TencentStandin,
        tencent_creds: Credentials) -> None:
    # first in the list, a machine the cloud no longer knows: its stop is refused
    gone_one = window.ledger.add(Machine(
        id="m-aaagone", provider="tencent", region=REGION, zone=ZONE, name="m-aaagone",
        instance_type="GN7.2XLARGE32", cloud_id="ins-notthere", state="running",
        running_since=time.time() - 600, price_per_hour=1.0))
    first = _cvm(window, tencent, tencent_creds, "m-bbbfirst")
    second = _cvm(window, tencent, tencent_creds, "m-cccsecond")
    window.instances.reload()
    assert _billing_status(window).startswith("● 3 billing")
    window.quit_action.trigger()
    box = shown_box(qtbot, window, "quitQuestion")
    assert button(box, "quitStop").text() == "Stop and quit"
    button(box, "quitStop").click()
    failed = shown_box(qtbot, window, "quitFailed")
    assert window.isVisible()  # not everything stopped: gpudesk stays open
    assert "2 of 3 machine(s) stopped" in failed.text()
    assert "m-aaagone" in failed.text()
    assert "m-bbbfirst" not in failed.text() and "m-cccsecond" not in failed.text()
    assert tencent.calls["StopInstances"] >= 2
    for m in (first, second):
        assert window.ledger.get(m.id).state in ("stopping", "stopped")  # type: ignore[union-attr]
    assert window.ledger.get(gone_one.id).billing  # type: ignore[union-attr]
    assert "Stopping" not in window.statusBar().currentMessage()  # not stuck on "stopping"
    failed.button(QMessageBox.StandardButton.Ok).click()


def test_a_kept_alive_group_is_not_offered_stop(
        window: MainWindow, qtbot: Any, tencent: TencentStandin,
        tencent_creds: Credentials) -> None:
    kept = _cvm(window, tencent, tencent_creds, "m-keptalive", market="spot",
                group_id="gpudesk-run-m-keptalive", group_state="live")
    window.instances.reload()
    window.quit_action.trigger()
    box = shown_box(qtbot, window, "quitQuestion")
    assert not [b for b in box.buttons() if b.objectName() == "quitStop"]
    assert "m-keptalive" in box.text() and "cannot be stopped" in box.text()
    box.button(QMessageBox.StandardButton.Cancel).click()
    qtbot.waitUntil(lambda: not box.isVisible())
    # with a machine that can be stopped next to it, "stop" is offered for that one only
    other = _cvm(window, tencent, tencent_creds, "m-plainone")
    window.instances.reload()
    window.quit_action.trigger()
    box = shown_box(qtbot, window, "quitQuestion")
    assert button(box, "quitStop").text() == "Stop 1 of them and quit"
    button(box, "quitStop").click()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=WAIT_MS)
    assert window.ledger.get(other.id).state in ("stopping", "stopped")  # type: ignore[union-attr]
    assert window.ledger.get(kept.id).state == "running"  # type: ignore[union-attr]


def test_after_terminate_the_row_and_the_status_line_agree(
        window: MainWindow, qtbot: Any, tencent: TencentStandin,
        tencent_creds: Credentials) -> None:
    m = _cvm(window, tencent, tencent_creds, "m-ending01")
    window.ledger.update(m.id, public_ip="203.0.113.50")
    window.show_page("instances")
    page = window.instances
    page.reload()
    page.show_ended.setChecked(True)  # the ended row stays in view
    page.select_machine(m.id)
    assert page.ssh_button.isEnabled()
    page.terminate_button.click()
    box = page.findChild(QMessageBox, "confirmTerminate")
    assert box is not None
    next(b for b in box.buttons() if b.objectName() == "confirmTerminateYes").click()
    qtbot.waitUntil(lambda: "is terminated" in page.status.text(), timeout=WAIT_MS)
    assert "Terminating" not in page.status.text()
    assert window.ledger.get(m.id).state == "terminated"  # type: ignore[union-attr]
    page.select_machine(m.id)
    assert page.selected() is not None and page.selected().id == m.id  # type: ignore[union-attr]
    assert not page.ssh_button.isEnabled()  # nothing to connect to
