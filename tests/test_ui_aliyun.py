"""Alibaba Cloud in the window like the other clouds: Accounts, Plan → Launch, Instances,
against the ECS stand-in (real SDK, real signature)."""

from __future__ import annotations

import pytest
from aliyun_standin import ACCESS_KEY_ID
from aliyun_standin import ACCESS_KEY_SECRET
from cloud_window import confirm_terminate
from cloud_window import fill_launch_dialog
from cloud_window import offer_row
from cloud_window import open_cloud_window
from cloud_window import select_offer
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401

from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.accounts import ALIYUN_ENDPOINT_ENV

A10 = "ecs.gn7i-c8g1.2xlarge"


@pytest.fixture
def window(qtbot, loop, aliyun, memory_keyring, monkeypatch, banner_port):  # type: ignore[no-untyped-def]  # noqa: F811
    with open_cloud_window(qtbot, monkeypatch, banner_port, ALIYUN_ENDPOINT_ENV,
                           aliyun.endpoint) as w:
        yield w


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
    select_offer(window, A10, "cn-hangzhou")
    plan.launch_button.click()
    dialog = window.launch_dialog
    assert dialog is not None and A10 in dialog.heading.text()
    # No bundled price: never shown as free; the launch asks DescribePrice first.
    assert dialog.launch_button.text() == "Launch (price not known yet)"
    assert "no price for this machine" in dialog.cost.text() and "$0" not in dialog.cost.text()
    fill_launch_dialog(dialog, "203.0.113.7", fallbacks=False)
    with qtbot.waitSignal(dialog.launched, timeout=20000):
        dialog.launch_button.click()
    page = window.instances
    (m,) = page.model.machines
    assert m.provider == "aliyun" and m.state == "running" and m.cloud_id in aliyun.state.instances
    assert m.price_per_hour == round(16.0 / 7.2, 6)  # the stand-in's 16 CNY/h, at 7.2 CNY/USD
    assert aliyun.calls["DescribePrice"] == 1
    assert "1 billing" in window.billing_label.text()
    dialog.close()
    confirm_terminate(window, qtbot, m.id)
    assert aliyun.calls["DeleteInstances"] == 1 and aliyun.state.instances == {}


def test_no_quote_no_machine(window, qtbot, aliyun, aliyun_creds) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """An offer with no bundled price whose quote fails: the dialog says why and nothing was
    created or written to the ledger."""
    from gpudesk.services.money.ledger import Account

    credentials.save_credentials(aliyun_creds)
    window.ledger.save_account(Account("aliyun", "LTAI…0123"))
    aliyun.fail_next("DescribePrice", "ServiceUnavailable", "busy", times=5)
    plan = window.plan
    plan.select_row(offer_row(plan, A10, "cn-hangzhou"))
    plan.launch_button.click()
    dialog = window.launch_dialog
    fill_launch_dialog(dialog, "203.0.113.7", fallbacks=False)
    dialog.launch_button.click()
    qtbot.waitUntil(lambda: not dialog.runner.busy and "gave no price" in dialog.log.text(),
                    timeout=20000)
    assert dialog.launch_button.isEnabled()  # the user may try again
    assert aliyun.calls["RunInstances"] == 0 and aliyun.state.instances == {}
    assert window.ledger.machines(include_ended=True) == []
    dialog.close()
