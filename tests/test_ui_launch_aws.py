"""The Launch dialog's image field and a stop on the Instances page, clicked in the window
against moto (over HTTP): AWS refuses without a deep-learning image, a typed image id is
launched as the CLI's --image is; a stopped machine no longer shows its released address."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from typing import Any

import pytest
from cloud_window import fill_launch_dialog
from cloud_window import open_cloud_window
from cloud_window import select_offer
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from PySide6.QtWidgets import QMessageBox

from gpudesk.services.cloud import credentials
from gpudesk.services.money.ledger import Account
from gpudesk.ui.machines.instances_model import COL
from gpudesk.ui.machines.launch_dialog import LaunchDialog
from gpudesk.ui.shell.main_window import MainWindow

WAIT_MS = 30000
OWN_IMAGE = "ami-0c0ffee0000000001"


@pytest.fixture
def window(qtbot, loop, aws, memory_keyring, monkeypatch, banner_port):  # type: ignore[no-untyped-def]  # noqa: F811
    credentials.save_credentials(aws.credentials)
    with open_cloud_window(qtbot, monkeypatch, banner_port, "AWS_ENDPOINT_URL",
                           aws.endpoint.removeprefix("http://")) as w:
        w.ledger.save_account(Account("aws", "AKIA…0001", account="123456789012",
                                      can_launch=True))
        yield w


def open_launch(window: MainWindow) -> LaunchDialog:
    select_offer(window, "g4dn.xlarge", "us-east-1")
    window.plan.launch_button.click()
    dialog = window.launch_dialog
    assert isinstance(dialog, LaunchDialog)
    fill_launch_dialog(dialog, "203.0.113.7/32", fallbacks=False)
    return dialog


def test_an_image_typed_in_the_launch_dialog_is_the_one_launched(  # type: ignore[no-untyped-def]
        window, qtbot, aws) -> None:  # noqa: F811
    dialog = open_launch(window)
    assert dialog.image.text() == "" and "automatic" in dialog.image.placeholderText()
    dialog.launch_button.click()  # no Deep Learning AMI in this region: refused, in words
    qtbot.waitUntil(lambda: dialog.failure_box is not None and dialog.failure_box.isVisible(),
                    timeout=WAIT_MS)
    box = dialog.failure_box
    assert box is not None and box.windowTitle() == "The machine was not launched"
    assert "GPU deep-learning image" in box.text() and "us-east-1" in box.text()
    box.button(QMessageBox.StandardButton.Ok).click()
    assert dialog.launch_button.isEnabled() and dialog.image.isEnabled()

    aws.publish_image("us-east-1", OWN_IMAGE, "my own CUDA image",
                      datetime(2026, 2, 1, tzinfo=UTC))
    qtbot.keyClicks(dialog.image, OWN_IMAGE)
    with qtbot.waitSignal(dialog.launched, timeout=WAIT_MS):
        dialog.launch_button.click()
    machine = next(m for m in window.ledger.machines() if m.state == "running")
    (inst,) = [i for r in aws.client("ec2").describe_instances(
        InstanceIds=[machine.cloud_id])["Reservations"] for i in r["Instances"]]
    assert inst["ImageId"] == OWN_IMAGE


def test_a_stopped_machine_shows_no_released_address(window, qtbot, aws,  # type: ignore[no-untyped-def]  # noqa: F811
                                                     banner_port: Any) -> None:
    aws.publish_dlami("us-east-1")
    dialog = open_launch(window)
    with qtbot.waitSignal(dialog.launched, timeout=WAIT_MS):
        dialog.launch_button.click()
    dialog.close_button.click()
    (m,) = [m for m in window.ledger.machines() if m.state == "running"]
    assert m.public_ip
    page = window.instances
    page.settle_poll_s = 0.01
    window.show_page("instances")
    page.select_machine(m.id)
    row = [x.id for x in page.model.machines].index(m.id)
    assert page.model.index(row, COL["address"]).data() == m.public_ip
    page.stop_button.click()
    qtbot.waitUntil(lambda: window.ledger.get(m.id).state == "stopped",  # type: ignore[union-attr]
                    timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not page.settle_runner.busy and not page.action_runner.busy,
                    timeout=WAIT_MS)
    stopped = window.ledger.get(m.id)
    assert stopped is not None and stopped.public_ip == ""
    row = [x.id for x in page.model.machines].index(m.id)
    assert page.model.index(row, COL["address"]).data() == ""
    assert "is stopped: the machine no longer bills" in page.status.text()
    # its disk still bills: said, never "Nothing is billing" (issue 31)
    assert "1 stopped machine(s) still bill their disks" in page.banner.text()
