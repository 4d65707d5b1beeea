"""Issue 31's minor items, clicked in the real window: what still bills is said (a stopped
machine's disk, a stopped machine charged in full, apart and in red), and the quit box
lists every machine that still bills."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QMessageBox
from tencent_standin import TencentStandin
from test_ui_launch_honest import Gate  # noqa: F401
from test_ui_launch_honest import open_launch  # noqa: F401
from test_ui_launch_honest import shown_box  # noqa: F401
from test_ui_launch_honest import window  # noqa: F401

from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.cloud.launcher import Progress
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.ui.machines.instances_model import COL
from gpudesk.ui.machines.instances_page import InstancesPage
from gpudesk.ui.machines.launch_dialog import LaunchDialog
from gpudesk.ui.shell.main_window import MainWindow


@pytest.fixture
def ledger() -> Iterator[Ledger]:
    with Ledger() as led:
        yield led


def _stopped_aws(ledger: Ledger, name: str = "disk-only") -> Machine:
    return ledger.add(Machine(id=f"m-{name}", name=name, provider="aws", region="us-east-1",
                              instance_type="g4dn.xlarge", cloud_id="i-0123456789abcdef0",
                              state="stopped", price_per_hour=0.526, disk_gb=100.0))


def _page(qtbot: Any, ledger: Ledger) -> InstancesPage:
    page = InstancesPage(ledger, lambda _name: None)  # type: ignore[arg-type,return-value]
    qtbot.addWidget(page)
    page.show()
    return page


def test_a_stopped_machine_whose_disk_bills_is_never_nothing_is_billing(
        qtbot: Any, ledger: Ledger) -> None:
    _stopped_aws(ledger)
    page = _page(qtbot, ledger)
    page.show_ended.click()
    page.show_ended.click()  # a person toggles the list: the banner is said again
    assert "Nothing is billing" not in page.banner.text()
    assert "1 stopped machine(s) still bill their disks until terminated" in page.banner.text()


def test_a_stopped_machine_charged_in_full_has_its_own_rate_in_red(
        qtbot: Any, ledger: Ledger) -> None:
    now = time.time() - 600
    ledger.add(Machine(id="m-runs", name="runs", provider="aws", region="us-east-1",
                       instance_type="g4dn.xlarge", cloud_id="i-0aaaaaaaaaaaaaaa1",
                       state="running", price_per_hour=0.5, running_since=now))
    ledger.add(Machine(id="m-kept", name="kept", provider="tencent", region="ap-guangzhou",
                       instance_type="GN7.2XLARGE32", cloud_id="ins-kept0001",
                       state="stopped", stopped_mode="KEEP_CHARGING", price_per_hour=1.25))
    page = _page(qtbot, ledger)
    text = page.banner.text()
    assert "1 running ($0.50 per hour)" in text  # the running one's rate only
    assert "1 stopped (still billing: $1.25 per hour" in text
    row = [m.id for m in page.model.machines].index("m-kept")
    for col in ("price", "state"):
        brush = page.model.index(row, COL[col]).data(Qt.ItemDataRole.ForegroundRole)
        assert brush is not None and brush.color().name() == "#c0392b"


def test_the_quit_box_lists_a_stopped_machine_whose_disk_bills(
        window: MainWindow, qtbot: Any) -> None:
    _stopped_aws(window.ledger, "diskbox")
    window.instances.reload()
    window.quit_action.trigger()
    box = shown_box(qtbot, window, "quitQuestion")
    assert "diskbox" in box.text() and "its disk bills until it is terminated" in box.text()
    assert not [b for b in box.buttons() if b.objectName() == "quitStop"]  # nothing to stop
    box.button(QMessageBox.StandardButton.Cancel).click()
    qtbot.waitUntil(lambda: not box.isVisible())
    assert window.isVisible()


def test_a_stop_is_one_sentence_with_the_clouds_word_once() -> None:
    from gpudesk.services.cloud.providers import aliyun_errors as ae
    from gpudesk.ui.machines.stop_sentence import stop_sentence

    kept = Machine(id="m-ali", name="ali", provider="aliyun", state="stopped",
                   stopped_mode="KeepCharging", cloud_id="i-ali")
    note = ae.MSG_STOPPED_KEEP_CHARGING.format(
        why=ae.WHY_KEEP_TYPE.format(instance_type="ecs.gn7i-c8g1.2xlarge"))
    text = stop_sentence(kept, note)
    assert text.count("KeepCharging") == 1 and "StopCharging" in text  # the why, once
    assert "ecs.gn7i-c8g1.2xlarge" in text and "stopped with " not in text
    free = Machine(id="m-free", name="free", provider="aliyun", state="stopped",
                   stopped_mode="StopCharging", cloud_id="i-free")
    text = stop_sentence(free, ae.MSG_STOPPED_STOP_CHARGING)
    assert text.count("StopCharging") == 1 and "stopped with " not in text
    # a note that is the cloud's error, not its word: said inside a sentence of ours
    text = stop_sentence(free, "InvalidInstanceId.NotFound: no such instance")
    assert "Alibaba Cloud did not say what still bills: InvalidInstanceId" in text


WAIT_MS = 20000


def test_a_quote_that_is_not_the_estimate_is_said_before_the_machine_is_requested(
        window: MainWindow, qtbot: Any, tencent: TencentStandin, banner_port: int) -> None:
    # CVM quotes 10 % above the catalog's estimate on the Launch button
    for zone in range(1, 8):
        tencent.zone_prices[(f"ap-guangzhou-{zone}", "GN7.2XLARGE32", "POSTPAID_BY_HOUR")] = 9.55
    gate = Gate(banner_port)
    gate.open = True
    dialog = open_launch(window, gate)
    estimate = dialog.price()
    assert dialog.launch_button.text() == f"Launch (about ${estimate:.3f}/h)"
    seen: list[tuple[str, int]] = []  # (what the log said, RunInstances calls) at the quote
    shown = dialog.on_progress

    def heard(p: Progress) -> None:
        shown(p)
        if p.quote is not None:
            seen.append((dialog.log.text(), tencent.calls.get("RunInstances", 0)))

    dialog.on_progress = heard  # type: ignore[method-assign]
    with qtbot.waitSignal(dialog.launched, timeout=WAIT_MS):
        dialog.launch_button.click()
    quoted = round(9.55 / 7.2, 3)
    ((said, requested),) = seen
    assert requested == 0  # said before the machine was asked for
    assert said == (f"Tencent Cloud quotes ${quoted:.3f} per hour (9.55 CNY, "
                    f"InquiryPriceRunInstances), not the estimated ${estimate:.3f}: the machine "
                    "bills at the quote, and its spend and budget count from it.")
    assert f"${quoted:.3f} per hour, as Tencent Cloud quoted" in dialog.cost.text()
    dialog.close_button.click()


def _aliyun_dialog(qtbot: Any) -> LaunchDialog:
    catalog = load_catalog()
    offer = next(o for o in catalog.filter(provider="aliyun")
                 if o.instance_type == "ecs.gn7i-c8g1.2xlarge")

    async def never(*_a: Any) -> Any:
        raise AssertionError("nothing launches here")

    d = LaunchDialog(offer, catalog, never, detect=False, budget=20.0, on_budget="stop")
    qtbot.addWidget(d)
    d.show()
    return d


def test_alibaba_terminate_is_the_clouds_release_time_then_its_quote(qtbot: Any) -> None:
    from gpudesk.services.cloud import guard

    d = _aliyun_dialog(qtbot)
    text = d.findChild(QLabel, "guardText")
    assert text is not None
    d.on_budget.setCurrentIndex(d.on_budget.findData("terminate"))  # as a person picks it
    assert "agent shuts it down" not in text.text()
    assert ("At 20.00 USD Alibaba Cloud itself terminates this machine, at a time set from the "
            "budget and the price it quotes just before the launch") in text.text()
    # the cloud's quote arrives (DescribePrice, 16 CNY/h): the time it will release it at
    d.on_progress(Progress("instance", "started", "", None, "m-x",
                           guard.Quote(16.0, "CNY", "DescribePrice", 7.2, "cn-hangzhou"), 0.0))
    assert "Alibaba Cloud itself terminates this machine at 20" in text.text()  # a UTC date
    assert d.launch_button.text() == "Launch ($2.222/h, the cloud's quote)"
    assert "Alibaba Cloud quotes $2.222 per hour (16 CNY, DescribePrice)" in d.log.text()


def test_a_kept_alive_machine_is_guarded_in_one_wording_everywhere(
        window: MainWindow, qtbot: Any) -> None:
    from gpudesk.services.cloud import guard

    now = time.time() - 600
    window.ledger.add(Machine(
        id="m-kept", name="kept", provider="tencent", region="ap-guangzhou",
        instance_type="GN7.2XLARGE32", cloud_id="ins-kept0001", state="running",
        market="spot", price_per_hour=0.4, running_since=now, budget=20.0, on_budget="stop",
        enforced_by="agent,cloud-timer", group_id="gpudesk-run-m-kept", group_state="live"))
    window.instances.reload()
    words = guard.MSG_GROUP_GUARD.format(budget="20.00 USD")
    model = window.instances.model
    row = [m.id for m in model.machines].index("m-kept")
    assert model.index(row, COL["budget"]).data() == "$20.00, then the group ends"
    assert model.index(row, COL["budget"]).data(Qt.ItemDataRole.ToolTipRole) == words
    window.quit_action.trigger()
    box = shown_box(qtbot, window, "quitQuestion")
    assert words in box.text()  # the same words as the tooltip, not "EC2 stops it"
    box.button(QMessageBox.StandardButton.Cancel).click()
    qtbot.waitUntil(lambda: not box.isVisible())


def test_the_address_error_speaks_the_windows_words_and_goes_once_one_is_typed(
        qtbot: Any, loop: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpudesk.services.cloud.public_ip import ECHO_ENV

    monkeypatch.setenv(ECHO_ENV, "http://127.0.0.1:9/")  # nothing answers there
    catalog = load_catalog()
    offer = next(o for o in catalog.filter(provider="tencent")
                 if o.instance_type == "GN7.2XLARGE32")

    async def never(*_a: Any) -> Any:
        raise AssertionError("nothing launches here")

    d = LaunchDialog(offer, catalog, never, detect=True)
    qtbot.addWidget(d)
    d.show()
    qtbot.waitUntil(lambda: "public address" in d.log.text(), timeout=WAIT_MS)
    assert "--allow-from" not in d.log.text()
    assert 'type your public address in "SSH allowed only from"' in d.log.text()
    qtbot.keyClicks(d.allow_from, "203.0.113.7")  # as a person types it
    assert d.log.text() == ""


def test_with_cny_chosen_the_budget_field_and_the_guard_are_in_yuan(qtbot: Any) -> None:
    from gpudesk.ui.widgets.money import Money

    catalog = load_catalog()
    offer = next(o for o in catalog.filter(provider="aws") if o.instance_type == "g4dn.xlarge")

    async def never(*_a: Any) -> Any:
        raise AssertionError("nothing launches here")

    d = LaunchDialog(offer, catalog, never, detect=False, money=Money("CNY", 7.2),
                     on_budget="terminate")
    qtbot.addWidget(d)
    d.show()
    assert d.budget.prefix() == "¥ "
    d.budget.selectAll()
    qtbot.keyClicks(d.budget, "36")  # ¥36, as a person types it
    assert d.budget.value() == 36.0
    assert d.plan().budget == 5.0  # the ledger's USD: ¥36 at 7.2 CNY/USD
    said = d.findChild(QLabel, "guardText").text()
    assert "¥36.00" in said and "USD" not in said


def test_with_cny_chosen_in_preferences_the_plan_filter_is_in_yuan(
        window: MainWindow, qtbot: Any) -> None:
    from PySide6.QtWidgets import QDialogButtonBox

    from gpudesk.ui.widgets.money import DISPLAY

    plan = window.plan
    assert plan.filter_labels[0].text() == "Max $/h"
    dialog = window.show_preferences()
    assert dialog is not None
    dialog.currency.setCurrentIndex(dialog.currency.findData("CNY"))  # as a person picks it
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    with qtbot.waitSignal(dialog.saved):
        qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)
    try:
        assert plan.filter_labels[0].text() == "Max ¥/h"
    finally:
        DISPLAY.set("USD", 7.2)  # the one display setting, for the tests after this one


def test_watch_says_the_chosen_machines_status_not_anothers(
        qtbot: Any, loop: Any, ledger: Ledger, memory_keyring: Any) -> None:
    from gpudesk.services.core.settings import Settings
    from gpudesk.ui.watch.watch_page import WatchPage

    for name in ("gone-a", "gone-b"):  # two machines nothing answers for
        ledger.add(Machine(id=f"m-{name}", provider="aws", state="running", cloud_id="i-1",
                           public_ip="127.0.0.1", ssh_port=1, ssh_user="ubuntu", name=name))
    page = WatchPage(ledger, lambda: Settings())
    qtbot.addWidget(page)
    page.show()
    for ref in ("m-gone-a", "m-gone-b"):  # a person chooses each and clicks Connect
        page.machine.setCurrentIndex(page.machine.findData(ref))
        qtbot.mouseClick(page.connect_button, Qt.MouseButton.LeftButton)
    try:
        qtbot.waitUntil(lambda: page.feeds["m-gone-a"].state_now == "failed", timeout=60_000)
        qtbot.waitUntil(lambda: page.feeds["m-gone-b"].state_now == "failed", timeout=60_000)
        qtbot.waitUntil(lambda: page.status.text().startswith("gone-b"), timeout=60_000)
        assert "gone-a" not in page.status.text()  # b is on screen: a's words wait
        page.show_machine("m-gone-a")
        assert page.status.text().startswith("gone-a"), page.status.text()
    finally:
        page.shutdown()


def test_a_stop_traceback_above_a_restarted_run_is_said_to_be_an_earlier_one(
        qtbot: Any) -> None:
    from gpudesk.ui.run.run_log_view import RunLogView

    log = RunLogView()
    qtbot.addWidget(log)
    log.show()
    log.append_bytes("".join(
        ["[default0]:step 100 loss 1.2\n", "[default0]:Traceback (most recent call last):\n"]
        + [f'[default0]:  File "train.py", line {i}, in step\n' for i in range(3)]
        + ["torch.distributed.elastic.multiprocessing.api.SignalException: Process 4127 got "
           "signal: 15\n"]).encode())
    assert log.fold_stop_traceback() == 5
    assert log.unfold_button.text() == "Show the stop's traceback (5 lines)"
    log.runs_again()  # the page heard "running" again: the run was restarted
    assert log.unfold_button.text() == "Show the earlier stop's traceback (5 lines)"
    qtbot.mouseClick(log.unfold_button, Qt.MouseButton.LeftButton)
    assert log.unfold_button.text() == "Hide the earlier stop's traceback"
