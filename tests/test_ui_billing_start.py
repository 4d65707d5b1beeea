"""The app starts with a machine from before still billing (moto): the window says so, and
nothing crashes.

The window is made as ``gpudesk.app.run_gui`` makes it (frame first, ``finish_start``
after, then ``start_background``), with the app's own exception hook, so a bug in a slot
would open the crash dialog here as it does for a user.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication

from gpudesk import app as gpudesk_app
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.providers.base import TAG_LEDGER
from gpudesk.services.cloud.providers.base import TAG_MANAGED
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Account
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.ui.shell import crash_dialog
from gpudesk.ui.shell.main_window import MainWindow


@pytest.fixture
def billing_from_before(aws, memory_keyring) -> str:  # type: ignore[no-untyped-def]  # noqa: F811
    """A g4dn.xlarge running on moto since an earlier session, in the app's own ledger."""
    credentials.save_credentials(aws.credentials)
    image = aws.publish_dlami("us-east-1")
    made = aws.client("ec2").run_instances(
        ImageId=image, InstanceType="g4dn.xlarge", MinCount=1, MaxCount=1,
        TagSpecifications=[{"ResourceType": "instance", "Tags": [
            {"Key": TAG_MANAGED, "Value": "1"}, {"Key": TAG_LEDGER, "Value": "m-before0001"}]}])
    cloud_id = made["Instances"][0]["InstanceId"]
    with Ledger() as ledger:  # the file the app opens (under GPUDESK_HOME)
        ledger.save_account(Account("aws", "AKIA…0001", account="123456789012",
                                    can_launch=True))
        ledger.add(Machine(id="m-before0001", provider="aws", region="us-east-1",
                           instance_type="g4dn.xlarge", gpu="T4", gpus=1, cloud_id=cloud_id,
                           state="running", price_per_hour=0.526, name="m-before0001"))
    return cloud_id


@pytest.fixture
def app_hook(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The app's exception hook (the crash dialog) instead of pytest-qt's capture."""
    monkeypatch.setattr(sys, "excepthook", gpudesk_app._excepthook)
    yield
    for dialog in list(crash_dialog._open):
        dialog.close()


def crash_dialogs() -> list[Any]:
    return [w for w in QApplication.topLevelWidgets()
            if w.objectName() == "crashDialog" and w.isVisible()]


@pytest.mark.qt_no_exception_capture
def test_a_machine_from_before_still_billing_is_said_at_start_without_a_crash(
        qtbot, loop, billing_from_before, app_hook) -> None:  # type: ignore[no-untyped-def]
    w = MainWindow(Settings(language="en", welcomed=True), deferred=True)  # as run_gui does
    w.show()
    w.finish_start(background_later=True)  # the first screen: the Plan page
    assert w.pages.currentWidget() is w.plan and not w.background_started
    w.start_background()  # the loop turn after: Instances, the tray, the check at start
    ledger = w.ledger
    try:
        # the first check of the clouds at start finds it billing: the alert, once
        qtbot.waitUntil(lambda: w.instances.last_report is not None, timeout=30000)
        qtbot.waitUntil(lambda: any(h == "Machines are billing" for h, _ in w.tray.messages),
                        timeout=5000)
        (text,) = [t for h, t in w.tray.messages if h == "Machines are billing"]
        assert "1 machine(s) from before are still billing" in text
        # no tray here (offscreen): the status bar says where the alerts go instead
        assert not w.tray.available()
        assert "no system tray" in w.statusBar().currentMessage()
        # ... and the alert itself is a box in the window, with the way to the machines
        from PySide6.QtWidgets import QMessageBox

        qtbot.waitUntil(lambda: any(b.isVisible() for b in
                                    w.findChildren(QMessageBox, "billingFromBefore")))
        (box,) = [b for b in w.findChildren(QMessageBox, "billingFromBefore") if b.isVisible()]
        assert "1 machine(s) from before are still billing" in box.text()
        next(b for b in box.buttons() if b.objectName() == "showInstances").click()
        qtbot.waitUntil(lambda: w.pages.currentWidget() is w.instances)
        assert "1 billing" in w.billing_label.text()
        assert "may be billing" in w.instances.banner.text()
        assert crash_dialogs() == [] and crash_dialog._open == []
    finally:
        w.close()
        w.deleteLater()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        ledger.close()
