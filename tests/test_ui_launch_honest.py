"""Launching and machines, said as they are (issue 25), clicked in the window against the
Tencent stand-in (real SDK): closing the Launch dialog mid-launch, an SSH time-out on a
machine that bills, refusals that are history, quitting with a machine billing, a stop
followed until the cloud says stopped, budgets on the Instances page."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest
import shiboken6
from cloud_window import fill_launch_dialog
from cloud_window import open_cloud_window
from cloud_window import select_offer
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton
from PySide6.QtWidgets import QMessageBox
from PySide6.QtWidgets import QWidget

from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.accounts import TENCENT_ENDPOINT_ENV
from gpudesk.services.cloud.launcher import probe_ssh
from gpudesk.services.money.ledger import Account
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.ui.machines.instances_model import COL
from gpudesk.ui.machines.instances_model import COLUMNS
from gpudesk.ui.machines.instances_model import header_text
from gpudesk.ui.machines.instances_page import InstancesPage
from gpudesk.ui.machines.launch_dialog import LaunchDialog
from gpudesk.ui.shell.main_window import MainWindow

WAIT_MS = 20000


@pytest.fixture
def window(qtbot, loop, tencent, tencent_creds, memory_keyring, monkeypatch,  # type: ignore[no-untyped-def]  # noqa: F811
           banner_port):
    credentials.save_credentials(tencent_creds)
    with open_cloud_window(qtbot, monkeypatch, banner_port, TENCENT_ENDPOINT_ENV,
                           tencent.endpoint) as w:
        w.ledger.save_account(Account("tencent", "AKID…abcd"))
        yield w


class Gate:
    """An SSH probe that says "no answer" until opened, then asks the banner server."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.open = False
        self.asked = 0

    async def __call__(self, _address: str) -> bool:
        self.asked += 1
        if not self.open:
            await asyncio.sleep(0.01)
            return False
        return await probe_ssh("127.0.0.1", self.port, 2)


def open_launch(window: MainWindow, gate: Gate) -> LaunchDialog:
    window.launcher.ssh_probe = gate
    select_offer(window, "GN7.2XLARGE32", "ap-guangzhou")
    window.plan.launch_button.click()
    dialog = window.launch_dialog
    assert isinstance(dialog, LaunchDialog)
    fill_launch_dialog(dialog, "203.0.113.7/32", fallbacks=False)
    return dialog


def shown_box(qtbot: Any, parent: QWidget, name: str) -> QMessageBox:
    found: list[QMessageBox] = []

    def visible() -> bool:
        found[:] = [b for b in parent.findChildren(QMessageBox, name) if b.isVisible()]
        return bool(found)

    qtbot.waitUntil(visible, timeout=WAIT_MS)
    return found[0]


def gone(widget: QWidget) -> bool:
    """Closed and deleted (the dialogs delete themselves on close)."""
    return not shiboken6.isValid(widget)


def button(box: QMessageBox, name: str) -> QAbstractButton:
    (found,) = [b for b in box.buttons() if b.objectName() == name]
    return found


def launch_running(window: MainWindow, qtbot: Any, banner_port: int) -> Machine:
    """Launch GN7.2XLARGE32 through the dialog, then close it: a machine that bills."""
    gate = Gate(banner_port)
    gate.open = True
    dialog = open_launch(window, gate)
    with qtbot.waitSignal(dialog.launched, timeout=WAIT_MS):
        dialog.launch_button.click()
    dialog.close_button.click()
    (m,) = window.ledger.machines()
    assert m.state == "running"
    return m


# ------------------------------------------------------------------ 10. closing mid-launch


def test_closing_the_launch_dialog_mid_launch_asks_and_keeps_launching(  # type: ignore[no-untyped-def]
        window, qtbot, tencent, banner_port) -> None:  # noqa: F811
    gate = Gate(banner_port)
    dialog = open_launch(window, gate)
    dialog.launch_button.click()
    qtbot.waitUntil(lambda: gate.asked > 0, timeout=WAIT_MS)  # waiting for SSH: it bills
    dialog.close_button.click()
    box = shown_box(qtbot, dialog, "launchCloseQuestion")
    assert dialog.isVisible() and dialog.runner.busy  # nothing happened without an answer
    assert box.defaultButton() == box.button(QMessageBox.StandardButton.Cancel)
    button(box, "launchKeepBackground").click()
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=WAIT_MS)
    assert dialog.runner.busy and "TerminateInstances" not in tencent.calls
    (m,) = window.ledger.machines()
    assert m.billing
    gate.open = True
    qtbot.waitUntil(lambda: gone(dialog), timeout=WAIT_MS)  # it runs: the dialog goes
    (m,) = window.ledger.machines()
    assert m.state == "running" and "TerminateInstances" not in tencent.calls
    assert window.instances.selected() is not None  # shown on the Instances page
    assert window.instances.selected().id == m.id  # type: ignore[union-attr]


def test_closing_the_launch_dialog_mid_launch_can_cancel_it(  # type: ignore[no-untyped-def]
        window, qtbot, tencent, banner_port) -> None:  # noqa: F811
    gate = Gate(banner_port)
    dialog = open_launch(window, gate)
    dialog.launch_button.click()
    qtbot.waitUntil(lambda: gate.asked > 0, timeout=WAIT_MS)
    dialog.reject()  # Escape
    box = shown_box(qtbot, dialog, "launchCloseQuestion")
    button(box, "launchCancelAndClose").click()
    qtbot.waitUntil(lambda: gone(dialog), timeout=WAIT_MS)
    (m,) = window.ledger.machines()
    assert m.state == "terminated" and not m.billing
    assert tencent.calls["TerminateInstances"] == 1


# ------------------------------------------------------------------ 11. SSH time-out


def ssh_times_out(window: MainWindow, qtbot: Any, banner_port: int
                  ) -> tuple[LaunchDialog, QMessageBox, Gate]:
    window.launcher.ssh_timeout_s = 0.05
    gate = Gate(banner_port)
    dialog = open_launch(window, gate)
    dialog.launch_button.click()
    box = shown_box(qtbot, dialog, "launchNotReady")
    return dialog, box, gate


def test_an_ssh_time_out_says_the_machine_runs_and_waits_longer(  # type: ignore[no-untyped-def]
        window, qtbot, banner_port) -> None:
    dialog, box, gate = ssh_times_out(window, qtbot, banner_port)
    (m,) = window.ledger.machines()
    assert "not launched" not in box.windowTitle()
    assert box.windowTitle() == "The machine runs, but SSH does not answer yet"
    assert f"{m.cloud_id} runs (and bills)" in box.text()
    assert "per hour until you terminate it" in box.text()
    assert not dialog.launch_button.isEnabled()  # never a second billing machine by accident
    assert {b.objectName() for b in box.buttons() if b.objectName()} == {
        "launchWaitLonger", "launchOpenInstances", "launchTerminate"}
    window.launcher.ssh_timeout_s = 60.0
    gate.open = True
    with qtbot.waitSignal(dialog.launched, timeout=WAIT_MS):
        button(box, "launchWaitLonger").click()
    assert "is running" in dialog.log.text()
    assert window.ledger.machines()[0].state == "running"
    assert not dialog.launch_button.isEnabled()


def test_an_ssh_time_out_can_terminate_the_machine(window, qtbot, tencent,  # type: ignore[no-untyped-def]  # noqa: F811
                                                   banner_port) -> None:
    dialog, box, _gate = ssh_times_out(window, qtbot, banner_port)
    button(box, "launchTerminate").click()
    qtbot.waitUntil(lambda: window.ledger.machines()[0].state == "terminated", timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not dialog.runner.busy, timeout=WAIT_MS)
    assert tencent.calls["TerminateInstances"] == 1
    assert "billing stopped" in dialog.log.text()
    assert dialog.launch_button.isEnabled()  # nothing bills now: launching again is fine


def test_an_ssh_time_out_can_open_instances(window, qtbot, banner_port) -> None:  # type: ignore[no-untyped-def]
    dialog, box, _gate = ssh_times_out(window, qtbot, banner_port)
    button(box, "launchOpenInstances").click()
    qtbot.waitUntil(lambda: gone(dialog), timeout=WAIT_MS)
    (m,) = window.ledger.machines()
    assert window.pages.currentWidget() is window.instances
    assert window.instances.selected() is not None
    assert window.instances.selected().id == m.id  # type: ignore[union-attr]
    assert m.billing


# ------------------------------------------------------------------ 14. refusals are history


def test_a_refusal_is_replaced_once_another_zone_takes_the_machine(  # type: ignore[no-untyped-def]
        window, qtbot, tencent, banner_port) -> None:  # noqa: F811
    tencent.sell_out("ap-guangzhou-3", "GN7.2XLARGE32")
    gate = Gate(banner_port)
    dialog = open_launch(window, gate)
    dialog.launch_button.click()
    qtbot.waitUntil(lambda: gate.asked > 0, timeout=WAIT_MS)  # another zone took it
    assert "Refused" not in dialog.log.text()
    assert "1 place(s) refused first" in dialog.log.text()
    assert "ap-guangzhou-3" in dialog.log.toolTip()
    with qtbot.waitSignal(dialog.launched, timeout=WAIT_MS):
        gate.open = True
    assert "Refused" not in dialog.log.text() and "is running" in dialog.log.text()


# ------------------------------------------------------------------ 12. quitting while billing


def test_quitting_with_a_machine_billing_says_what_and_can_stop_it(  # type: ignore[no-untyped-def]
        window, qtbot, tencent, banner_port) -> None:  # noqa: F811
    m = launch_running(window, qtbot, banner_port)
    window.quit_action.trigger()
    box = shown_box(qtbot, window, "quitQuestion")
    assert window.isVisible()  # nothing quit without an answer
    text = box.text()
    assert m.name in text and "GN7.2XLARGE32" in text and "running" in text
    assert f"${m.price_per_hour:,.3f}/h" in text
    # its guard, in words: the default budget (issue 29) and who stops it there
    assert m.budget is not None
    assert f"it also stops the machine through the cloud's API at {m.budget:.2f} USD" in text
    assert box.defaultButton() == box.button(QMessageBox.StandardButton.Cancel)
    button(box, "quitStop").click()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=WAIT_MS)
    assert tencent.calls["StopInstances"] == 1
    assert window.ledger.get(m.id).state in ("stopping", "stopped")  # type: ignore[union-attr]


def test_quitting_with_a_machine_billing_can_keep_it_or_stay(  # type: ignore[no-untyped-def]
        window, qtbot, tencent, banner_port) -> None:  # noqa: F811
    m = launch_running(window, qtbot, banner_port)
    window.close()
    box = shown_box(qtbot, window, "quitQuestion")
    box.button(QMessageBox.StandardButton.Cancel).click()
    qtbot.waitUntil(lambda: not box.isVisible())
    assert window.isVisible()
    window.tray.quit_app()  # the tray's Quit asks the same
    box = shown_box(qtbot, window, "quitQuestion")
    button(box, "quitKeep").click()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=WAIT_MS)
    assert window.ledger.get(m.id).state == "running"  # type: ignore[union-attr]
    assert "StopInstances" not in tencent.calls and "TerminateInstances" not in tencent.calls


# ------------------------------------------------------------------ 16. stop, followed


def test_a_stop_is_followed_until_the_cloud_says_stopped(  # type: ignore[no-untyped-def]
        window, qtbot, tencent, banner_port) -> None:  # noqa: F811
    m = launch_running(window, qtbot, banner_port)
    page = window.instances
    page.settle_poll_s = 0.3
    window.show_page("instances")
    page.select_machine(m.id)
    banners: list[str] = []
    page.billing_changed.connect(lambda *_: banners.append(page.banner.text()))
    page.stop_button.click()
    # the cloud said "stopping": asked again, with a progress bar and the state in words
    qtbot.waitUntil(lambda: page.settle_runner.busy and page.progress.isVisible(),
                    timeout=WAIT_MS)
    assert "the cloud says stopping" in page.status.text()
    qtbot.waitUntil(lambda: window.ledger.get(m.id).state == "stopped",  # type: ignore[union-attr]
                    timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not page.settle_runner.busy, timeout=WAIT_MS)
    # the bar is the page's, shared by its runners: gone once the last of them ends
    qtbot.waitUntil(lambda: not page.progress.isVisible(), timeout=WAIT_MS)
    stopping = [b for b in banners if "stopping" in b]
    assert stopping and all("$0.00" not in b for b in stopping), banners
    assert "1 stopping (billed until the cloud says stopped)" in stopping[0]
    row = next(r for r, x in enumerate(page.model.machines) if x.id == m.id)
    assert page.model.index(row, COL["state"]).data() == "stopped"
    # the app's stop asks STOP_CHARGING: the settle message says the cloud's own word
    assert "is stopped without charge (STOP_CHARGING)" in page.status.text()
    assert tencent.calls["StopInstances"] == 1


# ------------------------------------------------------------------ 17. budgets in view


def test_budgets_are_in_view_on_the_instances_page(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    import time

    page = window.instances
    now = time.time()
    window.ledger.add(Machine(id="m-budget0001", provider="tencent", region="ap-guangzhou",
                              instance_type="GN7.2XLARGE32", cloud_id="ins-b1", state="running",
                              price_per_hour=1.2, name="m-budget0001", budget=50.0,
                              on_budget="stop", launched_at=now - 3600,
                              running_since=now - 3600))
    window.ledger.add(Machine(id="m-budget0002", provider="tencent", region="ap-guangzhou",
                              instance_type="GN7.2XLARGE32", cloud_id="ins-b2",
                              state="running", price_per_hour=1.2, name="m-budget0002"))
    page.reload()
    assert "budget" in COLUMNS and header_text("budget") == "Budget"
    shown = {m.id: page.model.index(r, COL["budget"]).data()
             for r, m in enumerate(page.model.machines)}
    assert shown == {"m-budget0001": "$50.00, then stop", "m-budget0002": "none"}
    row = [m.id for m in page.model.machines].index("m-budget0001")
    tip = page.model.index(row, COL["budget"]).data(Qt.ItemDataRole.ToolTipRole)
    assert tip  # who enforces it, in words
    assert "No monthly budget" in page.banner.text()
    window.apply_settings(replace(window.settings, monthly_budget_usd=100.0))
    text = page.banner.text()
    assert "This month: $" in text and "of the $100.00 budget" in text


# ------------------------------------------------------------------ 7. no account to check


def test_check_clouds_with_no_account_says_so(qtbot, loop, memory_keyring,  # type: ignore[no-untyped-def]  # noqa: F811
                                              tmp_path) -> None:
    with Ledger(tmp_path / "ledger.sqlite3") as ledger:
        page = InstancesPage(ledger)
        qtbot.addWidget(page)
        page.refresh_button.click()
        qtbot.waitUntil(lambda: page.last_report is not None, timeout=WAIT_MS)
        assert "Up to date" not in page.status.text()
        assert "No cloud account to check" in page.status.text()
