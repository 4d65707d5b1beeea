"""Accounts, Launch and Instances in the window, against the Tencent stand-in (real SDK)."""

from __future__ import annotations

import threading

import keyring
import pytest
from cloud_window import confirm_terminate
from cloud_window import fill_launch_dialog
from cloud_window import open_cloud_window
from cloud_window import select_offer
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import SECRET_ID  # noqa: F401
from fixtures_tencent import SECRET_KEY  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from PySide6.QtCore import Qt

from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.accounts import TENCENT_ENDPOINT_ENV
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.core.settings import Settings
from gpudesk.ui.shell.main_window import MainWindow


@pytest.fixture
def window(qtbot, loop, tencent, memory_keyring, monkeypatch, banner_port):  # type: ignore[no-untyped-def]  # noqa: F811
    with open_cloud_window(qtbot, monkeypatch, banner_port, TENCENT_ENDPOINT_ENV,
                           tencent.endpoint) as w:
        yield w


def test_wrong_key_keeps_the_input_and_stores_nothing(window, qtbot, memory_keyring) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    box = window.accounts.tencent
    box.key_id.setText(SECRET_ID)
    box.secret.setText("not-the-secret-0123456789abcdefg")
    box.save_button.click()
    qtbot.waitUntil(lambda: box.status.property("state") == "error", timeout=10000)
    assert "rejected the keys" in box.status.text()
    assert box.secret.text() == "not-the-secret-0123456789abcdefg"  # nothing lost
    assert memory_keyring.items == {} and window.ledger.accounts() == []
    box.runner.last_box.close()
    box.secret.setText(SECRET_KEY)
    box.save_button.click()
    qtbot.waitUntil(lambda: box.status.property("state") == "ok", timeout=10000)
    assert box.secret.text() == ""  # in the keyring now, not in a widget
    assert credentials.load_credentials("tencent").secret == SECRET_KEY  # type: ignore[union-attr]
    assert "valid" in box.status.text() and box.remove_button.isEnabled()


def test_no_keyring_disables_saving(qtbot, loop) -> None:  # type: ignore[no-untyped-def]
    from fixtures_keyring import FailKeyring

    before = keyring.get_keyring()
    keyring.set_keyring(FailKeyring())
    try:
        w = MainWindow(Settings(language="en", welcomed=True), load_catalog())
        qtbot.addWidget(w)
        assert not w.accounts.aws.save_button.isEnabled()
        assert "never stores keys in a file" in w.accounts.aws.status.text()
    finally:
        keyring.set_keyring(before)


def test_launch_from_plan_then_terminate_from_instances(window, qtbot, tencent,  # noqa: F811
                                                        tencent_creds) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    credentials.save_credentials(tencent_creds)
    from gpudesk.services.money.ledger import Account

    window.ledger.save_account(Account("tencent", "AKID…abcd"))
    plan = window.plan
    select_offer(window, "GN7.2XLARGE32", "ap-guangzhou")
    assert plan.launch_button.isEnabled()
    plan.launch_button.click()
    dialog = window.launch_dialog
    assert dialog is not None and "GN7.2XLARGE32" in dialog.heading.text()
    assert "/h" in dialog.launch_button.text()
    fill_launch_dialog(dialog, "203.0.113.7", fallbacks=False)  # keep the test to one region
    with qtbot.waitSignal(dialog.launched, timeout=20000):
        dialog.launch_button.click()
    assert dialog.allow_from.text() == "203.0.113.7/32"
    assert all(m.text() == "✓" for m in dialog.step_marks.values())
    assert "is running" in dialog.log.text()
    page = window.instances
    (m,) = page.model.machines
    assert m.state == "running" and m.cloud_id in tencent.state.instances
    assert "may be billing" in page.banner.text() and "1 billing" in window.billing_label.text()
    dialog.close()

    confirm_terminate(window, qtbot, m.id)
    qtbot.waitUntil(lambda: "Nothing is billing" in page.banner.text())
    assert tencent.calls["TerminateInstances"] == 1


def test_cancel_in_the_dialog_terminates_what_was_requested(window, qtbot, tencent,  # noqa: F811
                                                            tencent_creds) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    credentials.save_credentials(tencent_creds)
    from gpudesk.services.money.ledger import Account

    window.ledger.save_account(Account("tencent", "AKID…abcd"))
    waiting = threading.Event()

    async def never(_addr: str) -> bool:
        waiting.set()
        return False

    window.launcher.ssh_probe = never
    select_offer(window, "GN7.2XLARGE32", "ap-guangzhou")
    window.plan.launch_button.click()
    dialog = window.launch_dialog
    fill_launch_dialog(dialog, "203.0.113.7/32", fallbacks=True)
    dialog.launch_button.click()
    qtbot.waitUntil(waiting.is_set, timeout=20000)
    assert dialog.cancel_button.isEnabled()
    with qtbot.waitSignal(dialog.ended, timeout=20000):
        dialog.cancel_button.click()
    (m,) = window.ledger.machines()
    assert m.state == "terminated" and not m.billing
    assert "Cancelled" in dialog.log.text()
    assert tencent.calls["TerminateInstances"] == 1


def test_launch_without_keys_goes_to_accounts(window) -> None:  # type: ignore[no-untyped-def]
    select_offer(window, "GN7.2XLARGE32", "ap-guangzhou")
    window.plan.launch_button.click()
    assert window.launch_dialog is None
    assert window.pages.currentWidget() is window.accounts


def test_prices_follow_the_currency_preference(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    from dataclasses import replace

    from gpudesk.ui.plan.offers_model import COL

    select_offer(window, "GN7.2XLARGE32", "ap-guangzhou")
    r = window.plan.selected_offer()
    usd = window.plan.proxy.index(0, COL["price"]).data()
    assert usd.startswith("$")
    window.apply_settings(replace(window.settings, currency="CNY", cny_per_usd=7.0))
    try:
        row = next(i for i in range(window.plan.proxy.rowCount())
                   if window.plan.proxy.ranked_at(i).offer == r.offer)
        shown = window.plan.proxy.index(row, COL["price"]).data()
        assert shown == f"¥{r.price_per_hour * 7.0:,.2f} ({r.offer.price_kind})"
        header = window.plan.model.headerData(COL["price"], Qt.Orientation.Horizontal)
        assert header.startswith("¥")
    finally:
        window.apply_settings(replace(window.settings, currency="USD"))


def test_the_tray_menu_lists_what_bills(window, qtbot, tencent, tencent_creds) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    from gpudesk.services.money.ledger import Machine

    window.ledger.add(Machine(id="m-aaaaaaaaaa", provider="tencent", region="ap-guangzhou",
                              instance_type="GN7.2XLARGE32", cloud_id="ins-1", state="running",
                              price_per_hour=1.2, name="m-aaaaaaaaaa"))
    window.instances.reload()
    texts = [a.text() for a in window.tray.menu.actions() if a.text()]
    assert any("m-aaaaaaaaaa" in t and "GN7.2XLARGE32" in t for t in texts), texts
    assert "1 machine(s) may be billing ($1.20/h)" in window.tray.icon.toolTip()
    assert texts[-2:] == ["Show gpudesk", "Quit"]
    window.ledger.update("m-aaaaaaaaaa", state="terminated")
    window.instances.reload()
    assert window.tray.icon.toolTip().endswith("nothing is billing")
