"""Change a machine's budget from the Instances page (issue 21), clicked in the window against
the Tencent stand-in and moto (real SDKs over HTTP): bad amounts refused under the field with
nothing changed, then the ledger, the agent and the cloud say what holds the machine now, and
the cloud's cap is read back from the cloud's own state."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC
from datetime import datetime
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
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QComboBox
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QLineEdit
from PySide6.QtWidgets import QPushButton
from tencent_standin import TencentStandin
from tencent_standin import timer_at as _at
from tencent_standin import undo_timers as _timers

from gpudesk.services.cloud import credentials
from gpudesk.services.cloud import guard
from gpudesk.services.cloud.accounts import TENCENT_ENDPOINT_ENV
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.money.ledger import Account
from gpudesk.services.money.ledger import Machine
from gpudesk.services.money.spend import machine_spend
from gpudesk.ui.machines.budget_dialog import BudgetDialog
from gpudesk.ui.machines.instances_model import COL
from gpudesk.ui.machines.instances_page import InstancesPage
from gpudesk.ui.shell.main_window import MainWindow

WAIT_MS = 20000
HOUR = 3600.0
REGION = "ap-guangzhou"
ZONE = "ap-guangzhou-3"
QUOTED_CNY = 7.43  # what CVM quoted at launch, per hour
RATE = 7.2  # Preferences' CNY per USD (the default)


@pytest.fixture
def tencent_window(qtbot, loop, tencent, tencent_creds, memory_keyring, monkeypatch,  # type: ignore[no-untyped-def]
                   banner_port) -> Iterator[MainWindow]:
    credentials.save_credentials(tencent_creds)
    with open_cloud_window(qtbot, monkeypatch, banner_port, TENCENT_ENDPOINT_ENV,
                           tencent.endpoint) as w:
        w.ledger.save_account(Account("tencent", "AKID…abcd"))
        yield w


@pytest.fixture
def aws_window(qtbot, loop, aws, memory_keyring, monkeypatch, banner_port  # type: ignore[no-untyped-def]
               ) -> Iterator[MainWindow]:
    credentials.save_credentials(aws.credentials)
    with open_cloud_window(qtbot, monkeypatch, banner_port, "AWS_ENDPOINT_URL",
                           aws.endpoint.removeprefix("http://")) as w:
        w.ledger.save_account(Account("aws", "AKIA…0001", account="123456789012",
                                      can_launch=True))
        yield w


def _cvm_machine(window: MainWindow, tencent: TencentStandin, creds: Credentials) -> Machine:
    """A running CVM with a $12 "terminate" budget and its launch's cap an hour on, quoted
    7.43 CNY/h at launch; no address known yet (its agent gets rules at the next connect)."""
    p = TencentProvider(creds, endpoint=tencent.endpoint, protocol="http")
    try:
        group = p.ensure_security_group(REGION, "203.0.113.7")
        inst = p.run_instance(LaunchRequest("m-uibudget01", REGION, "GN7.2XLARGE32", zone=ZONE,
                                            security_group=group,
                                            cloud_timer_at=time.time() + HOUR))
        p.describe(REGION, [inst.cloud_id])  # PENDING → RUNNING
    finally:
        p.close()
    since = time.time() - 600
    m = window.ledger.add(Machine(
        id="m-uibudget01", provider="tencent", region=REGION, zone=ZONE, name="m-uibudget01",
        instance_type="GN7.2XLARGE32", cloud_id=inst.cloud_id, state="running",
        running_since=since, launched_at=since, price_per_hour=round(QUOTED_CNY / RATE, 6),
        budget=12.0, on_budget="terminate", enforced_by="agent,cloud-timer",
        cloud_timer_at=time.time() + HOUR))
    guard.record_quote(window.ledger, m.id, guard.Quote(QUOTED_CNY, "CNY",
                                                        "InquiryPriceRunInstances", RATE,
                                                        REGION, ZONE))
    return m


def _open_dialog(window: MainWindow, machine_id: str, qtbot: Any) -> BudgetDialog:
    page: InstancesPage = window.instances
    window.show_page("instances")
    page.reload()
    page.select_machine(machine_id)
    button = page.findChild(QPushButton, "changeBudget")
    assert button is not None and button.isEnabled()
    button.click()
    dialog = page.findChild(BudgetDialog, "budgetDialog")
    assert dialog is not None
    qtbot.waitUntil(dialog.isVisible, timeout=WAIT_MS)
    return dialog


def _type(qtbot: Any, field: QLineEdit, text: str) -> None:
    field.selectAll()
    qtbot.keyClick(field, Qt.Key.Key_Delete)
    qtbot.keyClicks(field, text)


def test_a_cvm_budget_changed_in_the_window_moves_the_clouds_timer(  # type: ignore[no-untyped-def]
        tencent_window, qtbot, tencent, tencent_creds) -> None:
    window = tencent_window
    m = _cvm_machine(window, tencent, tencent_creds)
    page = window.instances
    # the same dialog is on the table's context menu
    (menu_action,) = [a for a in page.table.actions() if a.objectName() == "changeBudgetAction"]
    assert isinstance(menu_action, QAction) and menu_action.text() == "Change budget…"
    dialog = _open_dialog(window, m.id, qtbot)
    amount = dialog.findChild(QLineEdit, "budgetAmount")
    currency = dialog.findChild(QComboBox, "budgetCurrency")
    action = dialog.findChild(QComboBox, "budgetAction")
    apply = dialog.findChild(QPushButton, "budgetApply")
    error = dialog.findChild(QLabel, "budgetError")
    result = dialog.findChild(QLabel, "budgetResult")
    assert None not in (amount, currency, action, apply, error, result)
    assert amount.text() == "12.00" and action.currentData() == "terminate"
    (before,) = _timers(tencent, m.cloud_id)

    # not an amount, then not more than 0: refused under the field, nothing asked or written
    for typed, words in (("abc", "Budget: “abc” is not an amount"),
                         ("-5", "Budget: A budget must be more than 0 (got -5)")):
        _type(qtbot, amount, typed)
        apply.click()
        assert error.isVisible() and words in error.text()
        assert not dialog.runner.busy
    assert "budget" not in [e.step for e in window.ledger.events(m.id)]
    assert _timers(tencent, m.cloud_id) == [before]

    # 100 CNY, terminate: the ledger first, then CVM's own timer at 100 CNY ÷ its 7.43 CNY/h
    _type(qtbot, amount, "100")
    assert not error.isVisible()
    currency.setCurrentIndex(currency.findData("CNY"))
    action.setCurrentIndex(action.findData("terminate"))
    asked = time.time()
    apply.click()
    qtbot.waitUntil(lambda: dialog.result_change is not None, timeout=WAIT_MS)
    done = time.time()
    row = window.ledger.get(m.id)
    assert row is not None and row.budget == pytest.approx(100 / RATE)
    assert row.on_budget == "terminate"
    (timer,) = _timers(tencent, m.cloud_id)
    spent_cny = machine_spend(window.ledger, row, asked).total * RATE
    at = _at(timer["ActionTime"])
    assert asked + (100 - spent_cny) / QUOTED_CNY * HOUR - 2 <= at
    assert at <= done + (100 - spent_cny) / QUOTED_CNY * HOUR + 2

    # what each one now says, in its own words
    text = result.text()
    assert "Ledger: 13.89 USD, then terminate (was 12.00 USD, then terminate)." in text
    clock = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M")
    assert f"Cloud: Tencent Cloud says: it terminates the machine itself at {clock} UTC." in text
    assert "Agent: gpudesk knows no address of the machine yet" in text
    assert "gpudesk: $" in text and "spent of $13.89" in text
    # the page shows the new budget
    shown = {x.id: page.model.index(r, COL["budget"]).data()
             for r, x in enumerate(page.model.machines)}
    assert shown[m.id] == "$13.89, then terminate"
    assert "budget now $13.89, then terminate" in page.status.text()

    # "stop": CVM's timer can only terminate, so it goes; the cloud says no time is set
    action.setCurrentIndex(action.findData("stop"))
    apply.click()
    qtbot.waitUntil(lambda: dialog.result_change is not None
                    and dialog.result_change.action == "stop", timeout=WAIT_MS)
    assert _timers(tencent, m.cloud_id) == []
    assert "Tencent Cloud says: no time is set at which it ends the machine itself." \
        in result.text()
    dialog.findChild(QPushButton, "budgetClose").click()
    qtbot.waitUntil(lambda: page.budget_dialog is None, timeout=WAIT_MS)


def test_a_cloud_that_refuses_keeps_its_cap_and_the_dialog_says_so(  # type: ignore[no-untyped-def]
        tencent_window, qtbot, tencent, tencent_creds) -> None:
    window = tencent_window
    m = _cvm_machine(window, tencent, tencent_creds)
    (before,) = _timers(tencent, m.cloud_id)
    dialog = _open_dialog(window, m.id, qtbot)
    _type(qtbot, dialog.amount, "50")
    tencent.fail_next("DescribeInstancesActionTimer", "UnauthorizedOperation",
                      "CAM denies cvm:DescribeInstancesActionTimer.")
    dialog.apply_button.click()
    qtbot.waitUntil(lambda: dialog.result_change is not None, timeout=WAIT_MS)
    assert _timers(tencent, m.cloud_id) == [before]  # the cloud kept its cap
    text = dialog.result_label.text()
    assert "Ledger: 50.00 USD, then terminate" in text
    assert "The cloud's cap did not change and stays as it was" in text
    assert "DescribeInstancesActionTimer" in text


def test_an_ec2_budget_changed_in_the_window_sets_the_shutdown_behaviour(  # type: ignore[no-untyped-def]
        aws_window, qtbot, aws) -> None:
    window = aws_window
    ec2 = aws.client("ec2")
    ami = aws.publish_dlami("us-east-1")
    (inst,) = ec2.run_instances(ImageId=ami, MinCount=1, MaxCount=1,
                                InstanceType="g5.xlarge")["Instances"]
    since = time.time() - 600
    m = window.ledger.add(Machine(
        id="m-uibudget02", provider="aws", region="us-east-1", name="m-uibudget02",
        instance_type="g5.xlarge", cloud_id=inst["InstanceId"], state="running",
        running_since=since, launched_at=since, price_per_hour=1.006))
    dialog = _open_dialog(window, m.id, qtbot)
    assert dialog.amount.text() == ""  # no budget yet
    _type(qtbot, dialog.amount, "25")
    dialog.action.setCurrentIndex(dialog.action.findData("terminate"))
    dialog.apply_button.click()
    qtbot.waitUntil(lambda: dialog.result_change is not None, timeout=WAIT_MS)
    behaviour = ec2.describe_instance_attribute(
        InstanceId=m.cloud_id, Attribute="instanceInitiatedShutdownBehavior")
    assert behaviour["InstanceInitiatedShutdownBehavior"]["Value"] == "terminate"
    text = dialog.result_label.text()
    assert "Ledger: 25.00 USD, then terminate (was none)." in text
    assert "Cloud: EC2 says: an OS shutdown terminates the machine (shutdown behaviour)." \
        in text
    row = window.ledger.get(m.id)
    assert row is not None and (row.budget, row.on_budget) == (25.0, "terminate")


def test_the_launch_dialog_says_why_when_the_cloud_gives_no_price(  # type: ignore[no-untyped-def]
        tencent_window, qtbot, tencent) -> None:
    """Issue 21, item 3, clicked: CVM's InquiryPriceRunInstances fails, so nothing is made and
    the dialog says why, with no step marked as started."""
    from cloud_window import fill_launch_dialog
    from cloud_window import select_offer

    from gpudesk.ui.machines.launch_dialog import LaunchDialog

    window = tencent_window
    select_offer(window, "GN7.2XLARGE32", "ap-guangzhou")
    window.plan.launch_button.click()
    dialog = window.launch_dialog
    assert isinstance(dialog, LaunchDialog)
    fill_launch_dialog(dialog, "203.0.113.7/32", fallbacks=False)
    tencent.fail_next("InquiryPriceRunInstances", "InternalError", "The price service failed.")
    dialog.launch_button.click()
    qtbot.waitUntil(lambda: dialog.failure_box is not None and dialog.failure_box.isVisible(),
                    timeout=WAIT_MS)
    box = dialog.failure_box
    assert box is not None and box.windowTitle() == "The machine was not launched"
    assert "gave no price for GN7.2XLARGE32 in ap-guangzhou" in box.text()
    assert "nothing was started" in box.text() and "nothing was started" in dialog.log.text()
    assert all(mark.text() == "○" for mark in dialog.step_marks.values())
    assert window.ledger.machines() == []
    assert "RunInstances" not in tencent.calls and tencent.state.instances == {}
    assert dialog.launch_button.isEnabled()  # a second try may get its price
