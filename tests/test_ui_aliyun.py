"""Alibaba Cloud in the window like the other clouds: Accounts, Plan → Launch, Instances,
against the ECS stand-in (real SDK, real signature)."""

from __future__ import annotations

import pytest
from aliyun_standin import ACCESS_KEY_ID, ACCESS_KEY_SECRET
from fixtures_aliyun import aliyun, aliyun_creds, aliyun_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from PySide6.QtCore import QCoreApplication, QEvent
from PySide6.QtWidgets import QMessageBox

from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.accounts import ALIYUN_ENDPOINT_ENV
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.cloud.launcher import probe_ssh
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Ledger
from gpudesk.ui.shell.main_window import MainWindow

A10 = "ecs.gn7i-c8g1.2xlarge"




@pytest.fixture
def window(qtbot, loop, aliyun, memory_keyring, monkeypatch, banner_port):  # type: ignore[no-untyped-def]  # noqa: F811
    monkeypatch.setenv(ALIYUN_ENDPOINT_ENV, f"http://{aliyun.endpoint}")
    ledger = Ledger()
    w = MainWindow(Settings(language="en", welcomed=True), load_catalog(), ledger=ledger)
    w.launcher.ssh_probe = lambda _addr: probe_ssh("127.0.0.1", banner_port, 2)
    w.launcher.poll_s = 0.01
    qtbot.addWidget(w)
    w.show()
    yield w
    w.close()
    w.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    ledger.close()


def test_accounts_box_verifies_before_saving(window, qtbot, memory_keyring) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    box = window.accounts.findChild(type(window.accounts.aws), "account_aliyun")
    assert box is not None and box.title() == "Alibaba Cloud"
    box.key_id.setText(ACCESS_KEY_ID)
    box.secret.setText("not-the-secret-0123456789abcd")
    box.save_button.click()
    qtbot.waitUntil(lambda: box.status.property("state") == "error", timeout=10000)
    assert "secret does not match" in box.status.text()
    assert memory_keyring.items == {} and window.ledger.accounts() == []
    box.runner.last_box.close()
    box.secret.setText(ACCESS_KEY_SECRET)
    box.save_button.click()
    qtbot.waitUntil(lambda: box.status.property("state") == "ok", timeout=10000)
    assert box.secret.text() == ""
    stored = credentials.load_credentials("aliyun")
    assert stored is not None and stored.secret == ACCESS_KEY_SECRET
    assert window.ledger.account("aliyun") is not None


def test_launch_from_plan_then_terminate_from_instances(window, qtbot, aliyun,  # noqa: F811
                                                        aliyun_creds) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    from gpudesk.services.money.ledger import Account

    credentials.save_credentials(aliyun_creds)
    window.ledger.save_account(Account("aliyun", "LTAI…0123"))
    plan = window.plan
    f = plan.form
    f.source.setCurrentIndex(f.source.findData("preset"))
    f.preset.setCurrentIndex(f.preset.findData("gpt2"))
    f.edits["batch"].setText("4")
    f.precision.setCurrentIndex(f.precision.findData("amp-fp16"))
    plan.recompute()
    rows = [row for row in range(plan.proxy.rowCount())
            if plan.proxy.ranked_at(row).offer.instance_type == A10
            and plan.proxy.ranked_at(row).offer.region == "cn-hangzhou"]
    assert rows, "the Aliyun offer is not on the Plan page"
    plan.select_row(rows[0])
    plan.launch_button.click()
    dialog = window.launch_dialog
    assert dialog is not None and A10 in dialog.heading.text()
    # No bundled price: never shown as free; the launch asks DescribePrice first.
    assert dialog.launch_button.text() == "Launch (price not known yet)"
    assert "no price for this machine" in dialog.cost.text() and "$0" not in dialog.cost.text()
    dialog.detect_runner.cancel()
    dialog.allow_from.setText("203.0.113.7")
    for i in range(dialog.fallbacks.count()):
        dialog.fallbacks.item(i).setCheckState(dialog.fallbacks.item(i).checkState().Unchecked)
    with qtbot.waitSignal(dialog.launched, timeout=20000):
        dialog.launch_button.click()
    page = window.instances
    (m,) = page.model.machines
    assert m.provider == "aliyun" and m.state == "running" and m.cloud_id in aliyun.state.instances
    assert m.price_per_hour == round(16.0 / 7.2, 6)  # the stand-in's 16 CNY/h, at 7.2 CNY/USD
    assert aliyun.calls["DescribePrice"] == 1
    assert "1 billing" in window.billing_label.text()
    dialog.close()
    page.select_machine(m.id)
    box = page.ask_terminate()
    assert box is not None and box.defaultButton() == box.button(QMessageBox.StandardButton.Cancel)
    yes = next(b for b in box.buttons() if b.objectName() == "confirmTerminateYes")
    yes.click()
    qtbot.waitUntil(lambda: window.ledger.get(m.id).state == "terminated", timeout=10000)
    assert aliyun.calls["DeleteInstances"] == 1 and aliyun.state.instances == {}


def test_no_quote_no_machine(window, qtbot, aliyun, aliyun_creds) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """An offer with no bundled price whose quote fails: the dialog says why and nothing was
    created or written to the ledger."""
    from gpudesk.services.money.ledger import Account

    credentials.save_credentials(aliyun_creds)
    window.ledger.save_account(Account("aliyun", "LTAI…0123"))
    aliyun.fail_next("DescribePrice", "ServiceUnavailable", "busy", times=5)
    plan = window.plan
    row = next(r for r in range(plan.proxy.rowCount())
               if plan.proxy.ranked_at(r).offer.instance_type == A10
               and plan.proxy.ranked_at(r).offer.region == "cn-hangzhou")
    plan.select_row(row)
    plan.launch_button.click()
    dialog = window.launch_dialog
    dialog.detect_runner.cancel()
    dialog.allow_from.setText("203.0.113.7")
    for i in range(dialog.fallbacks.count()):
        dialog.fallbacks.item(i).setCheckState(dialog.fallbacks.item(i).checkState().Unchecked)
    dialog.launch_button.click()
    qtbot.waitUntil(lambda: not dialog.runner.busy and "gave no price" in dialog.log.text(),
                    timeout=20000)
    assert dialog.launch_button.isEnabled()  # the user may try again
    assert aliyun.calls["RunInstances"] == 0 and aliyun.state.instances == {}
    assert window.ledger.machines(include_ended=True) == []
    dialog.close()
