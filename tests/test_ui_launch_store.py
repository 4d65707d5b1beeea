"""The Launch dialog's "Run data" field (issue 22) and the role words after a launch (issue 21),
clicked and typed in the real window: against moto over HTTP for AWS and the ECS stand-in
(real SDK, signatures checked) for Alibaba Cloud.

A bucket address is checked as it is typed (red field, the reason, no Launch while bad),
and the bucket itself before anything is launched (issue 30: one that does not exist is
said next to the field); the choice reaches the ledger's row of the machine launched. A
machine that could not get a role to stop itself says, in the dialog and the Instances
page's tooltip, what stays unprotected."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from aliyun_standin import AliyunStandin
from cloud_window import fill_launch_dialog
from cloud_window import open_cloud_window
from cloud_window import select_offer
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_storage import oss_server  # noqa: F401
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QLineEdit

from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.accounts import ALIYUN_ENDPOINT_ENV
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.money.ledger import Account
from gpudesk.services.storage.clients import PROXY_ENV
from gpudesk.services.storage.clients import make_client
from gpudesk.ui.machines.instances_model import COL
from gpudesk.ui.machines.launch_dialog import LaunchDialog
from gpudesk.ui.shell.main_window import MainWindow

WAIT_MS = 30000
A10 = "ecs.gn7i-c8g1.2xlarge"


@pytest.fixture
def aws_window(qtbot: Any, loop: Any, aws: MotoAws, memory_keyring: Any,
               monkeypatch: pytest.MonkeyPatch, banner_port: int) -> Iterator[MainWindow]:
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami("us-east-1")
    with open_cloud_window(qtbot, monkeypatch, banner_port, "AWS_ENDPOINT_URL",
                           aws.endpoint.removeprefix("http://")) as w:
        w.ledger.save_account(Account("aws", "AKIA…0001", account="123456789012",
                                      can_launch=True))
        yield w


def _open(window: MainWindow, instance_type: str, region: str) -> LaunchDialog:
    select_offer(window, instance_type, region)
    window.plan.launch_button.click()
    dialog = window.launch_dialog
    assert isinstance(dialog, LaunchDialog)
    fill_launch_dialog(dialog, "203.0.113.7/32", fallbacks=False)
    return dialog


def _pick(qtbot: Any, combo: QComboBox, text: str) -> None:
    """Choose ``text`` in ``combo`` with the keyboard, as a user does."""
    combo.setFocus()
    target = combo.findText(text)
    assert target >= 0, text
    key = Qt.Key.Key_Down if target > combo.currentIndex() else Qt.Key.Key_Up
    while combo.currentIndex() != target:
        qtbot.keyClick(combo, key)


def _retype(qtbot: Any, field: QLineEdit, text: str) -> None:
    field.selectAll()
    qtbot.keyClick(field, Qt.Key.Key_Backspace)
    qtbot.keyClicks(field, text)


def test_a_bucket_address_is_checked_as_typed_and_reaches_the_ledger(
        aws_window: MainWindow, qtbot: Any, aws: MotoAws) -> None:
    dialog = _open(aws_window, "g4dn.xlarge", "us-east-1")
    choice = dialog.findChild(QComboBox, "storeChoice")
    field = dialog.findChild(QLineEdit, "storeUri")
    error = dialog.findChild(QLabel, "storeError")
    assert choice is not None and field is not None and error is not None
    assert choice.currentText() == "The account's gpudesk bucket (auto)"
    assert [choice.itemText(i) for i in range(choice.count())] == [
        "The account's gpudesk bucket (auto)", "No bucket (copies on this computer only)",
        "Another bucket…"]
    assert not field.isVisible() and dialog.launch_button.isEnabled()

    _pick(qtbot, choice, "Another bucket…")
    assert field.isVisible() and field.placeholderText() == "s3://bucket/prefix"
    # empty: not an address yet, so no launch
    assert not dialog.launch_button.isEnabled() and field.property("invalid") == "true"
    qtbot.keyClicks(field, "s3://Lab_Data/exp1")
    assert error.isVisible() and "'Lab_Data' is not a valid S3 bucket name" in error.text()
    assert field.property("invalid") == "true" and field.toolTip() == error.text()
    assert not dialog.launch_button.isEnabled()
    _retype(qtbot, field, "oss://lab-data/exp1")  # a bucket on another cloud
    assert "is on another cloud than the machine (AWS)" in error.text()
    assert not dialog.launch_button.isEnabled()
    _retype(qtbot, field, "s3://missing-lab-bucket/exp1")  # well formed, but not there
    assert not error.isVisible() and dialog.launch_button.isEnabled()
    dialog.launch_button.click()
    qtbot.waitUntil(error.isVisible, timeout=WAIT_MS)
    assert "The bucket missing-lab-bucket does not exist" in error.text()
    assert aws_window.ledger.machines() == [] and aws.instance_count() == 0
    aws.client("s3").create_bucket(Bucket="lab-data")
    _retype(qtbot, field, "s3://lab-data/exp1")
    assert not error.isVisible() and field.property("invalid") == "false"
    qtbot.waitUntil(dialog.launch_button.isEnabled, timeout=WAIT_MS)

    with qtbot.waitSignal(dialog.launched, timeout=WAIT_MS):
        dialog.launch_button.click()
    assert not choice.isEnabled() and not field.isEnabled()  # what was launched stays said
    (m,) = aws_window.ledger.machines()
    assert (m.state, m.store) == ("running", "s3://lab-data/exp1/")
    assert aws.instance_count() == 1
    # AWS gave the machine its role: nothing unprotected to say
    role = dialog.findChild(QLabel, "roleText")
    assert role is not None and not role.isVisible() and role.text() == ""


def test_no_bucket_is_launched_as_none(aws_window: MainWindow, qtbot: Any) -> None:
    dialog = _open(aws_window, "g4dn.xlarge", "us-east-1")
    choice = dialog.findChild(QComboBox, "storeChoice")
    assert choice is not None
    _pick(qtbot, choice, "Another bucket…")
    field = dialog.findChild(QLineEdit, "storeUri")
    assert field is not None
    qtbot.keyClicks(field, "nonsense")
    assert not dialog.launch_button.isEnabled()
    _pick(qtbot, choice, "No bucket (copies on this computer only)")  # the bad text is moot
    assert not field.isVisible() and dialog.launch_button.isEnabled()
    with qtbot.waitSignal(dialog.launched, timeout=WAIT_MS):
        dialog.launch_button.click()
    (m,) = aws_window.ledger.machines()
    assert m.store == "none"


# --------------------------------------------------------------------------- Alibaba Cloud


@pytest.fixture
def aliyun_window(qtbot: Any, loop: Any, aliyun: AliyunStandin, aliyun_creds: Credentials,
                  memory_keyring: Any, monkeypatch: pytest.MonkeyPatch,
                  banner_port: int) -> Iterator[MainWindow]:
    credentials.save_credentials(aliyun_creds)
    with open_cloud_window(qtbot, monkeypatch, banner_port, ALIYUN_ENDPOINT_ENV,
                           aliyun.endpoint) as w:
        w.ledger.save_account(Account("aliyun", "LTAI…0123"))
        yield w


def test_a_machine_ram_refused_a_role_says_what_stays_unprotected(
        aliyun_window: MainWindow, qtbot: Any, aliyun: AliyunStandin, aliyun_creds: Credentials,
        oss_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # the bucket, on the OSS stand-in (reached through it as a proxy), is checked first
    oss_server.reset()
    oss_server.add_account(aliyun_creds.key_id, aliyun_creds.secret, "1234567890123456")
    monkeypatch.setenv(PROXY_ENV, oss_server.proxy)
    make_client("aliyun", "cn-hangzhou", aliyun_creds).create_bucket(
        Bucket="lab-runs", CreateBucketConfiguration={"LocationConstraint": "cn-hangzhou"})
    aliyun.ram_denied = True  # the keys may not make or pass roles
    dialog = _open(aliyun_window, A10, "cn-hangzhou")
    choice = dialog.findChild(QComboBox, "storeChoice")
    field = dialog.findChild(QLineEdit, "storeUri")
    assert choice is not None and field is not None
    _pick(qtbot, choice, "Another bucket…")
    assert field.placeholderText() == "oss://bucket/prefix"
    qtbot.keyClicks(field, "oss://lab-runs")
    # the default budget's "stop" would need the role RAM refuses (issue 29): terminate at
    # it, which the cloud's own release timer enforces
    action = dialog.findChild(QComboBox, "onBudget")
    assert action is not None
    _pick(qtbot, action, "terminate")
    assert dialog.launch_button.isEnabled()
    with qtbot.waitSignal(dialog.launched, timeout=WAIT_MS):
        dialog.launch_button.click()
    (m,) = aliyun_window.ledger.machines()
    assert m.store == "oss://lab-runs/" and aliyun.role_of(m.cloud_id) == ""
    (refused,) = [e.detail for e in aliyun_window.ledger.events(m.id)
                  if e.step == "instance-role-refused"]
    assert refused.startswith("NoPermission: ")
    said = (f"This machine has no role to stop itself ({refused}): with gpudesk closed, its "
            "agent cannot ask Alibaba Cloud to stop the bill.")
    role = dialog.findChild(QLabel, "roleText")
    assert role is not None and role.isVisible() and role.text() == said

    dialog.close()
    page = aliyun_window.instances
    aliyun_window.show_page("instances")
    page.reload()
    row = [x.id for x in page.model.machines].index(m.id)
    for column in ("spend", "budget"):
        tip = page.model.index(row, COL[column]).data(Qt.ItemDataRole.ToolTipRole)
        assert said in tip.splitlines(), tip


def test_a_stop_budget_without_a_role_is_refused_until_the_user_accepts_the_app_alone(
        aliyun_window: MainWindow, qtbot: Any, aliyun: AliyunStandin) -> None:
    """RAM refuses the role and the budget's action is "stop" (the default): a stop from
    inside an ECS machine keeps charging, so Launch is refused before anything bills, in
    words; ticking "only the open app stops it" is the explicit way on (issue 29)."""
    from PySide6.QtWidgets import QCheckBox

    aliyun.ram_denied = True
    dialog = _open(aliyun_window, A10, "cn-hangzhou")
    accept = dialog.findChild(QCheckBox, "appStopOnly")
    assert accept is not None and accept.isVisible() and not accept.isChecked()
    action = dialog.findChild(QComboBox, "onBudget")
    assert action is not None and action.currentData() == "stop"
    _pick(qtbot, action, "terminate")  # terminate has the cloud's own timer: no question
    assert not accept.isVisible()
    _pick(qtbot, action, "stop")
    assert accept.isVisible()
    dialog.launch_button.click()
    qtbot.waitUntil(lambda: "gave gpudesk no role" in dialog.log.text(), timeout=WAIT_MS)
    assert "Nothing was launched" in dialog.log.text()
    assert aliyun.state.instances == {}
    assert [m.state for m in aliyun_window.ledger.machines()] == ["failed"]
    qtbot.waitUntil(lambda: dialog.launch_button.isEnabled(), timeout=WAIT_MS)
    accept.click()
    with qtbot.waitSignal(dialog.launched, timeout=WAIT_MS):
        dialog.launch_button.click()
    live = [m for m in aliyun_window.ledger.machines() if m.state != "failed"]
    assert len(live) == 1 and live[0].on_budget == "stop"
    assert aliyun.role_of(live[0].cloud_id) == ""
