"""The Launch and Change budget dialogs say the state they are in (issue 31, minor items
15 and 16): fields being applied cannot be edited meanwhile, and a failed launch's reason
goes once the choices it was about are changed."""

from __future__ import annotations

import threading
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox
from PySide6.QtWidgets import QWidget

from gpudesk.services.cloud import keep_alive_launch
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.ui.machines.budget_dialog import BudgetDialog
from gpudesk.ui.machines.launch_dialog import LaunchDialog
from gpudesk.ui.widgets.money import DISPLAY

WAIT_MS = 10000


def test_change_budget_fields_are_locked_while_the_change_is_applied(
        qtbot: Any, loop: Any) -> None:
    ledger = Ledger()
    m = ledger.add(Machine(id="m-locked01", provider="tencent", region="ap-guangzhou",
                           instance_type="GN7.2XLARGE32", cloud_id="ins-8k2j4h1q",
                           state="running", name="m-locked01", budget=12.0,
                           on_budget="terminate"))
    parent = QWidget()
    qtbot.addWidget(parent)
    dialog = BudgetDialog(ledger, m, None, DISPLAY, parent=parent)  # type: ignore[arg-type]
    release = threading.Event()
    asked: list[float] = []

    def change(_ledger: Ledger, _id: str, amount: float, _action: str, **_kw: Any) -> None:
        asked.append(amount)
        release.wait(WAIT_MS / 1000)
        raise ProviderError("invalid", "The cloud said no.")

    dialog.change_budget = change  # type: ignore[assignment]
    dialog.show()
    qtbot.waitExposed(dialog)
    dialog.amount.selectAll()
    qtbot.keyClicks(dialog.amount, "30")
    qtbot.mouseClick(dialog.apply_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: asked == [30.0], timeout=WAIT_MS)
    assert dialog.runner.busy
    for field in (dialog.amount, dialog.currency, dialog.action):
        assert not field.isEnabled()  # what is being applied stays what was typed
    release.set()
    qtbot.waitUntil(lambda: not dialog.runner.busy, timeout=WAIT_MS)
    assert "not changed" in dialog.result_label.text()
    for field in (dialog.amount, dialog.currency, dialog.action):
        assert field.isEnabled()
    dialog.close()


def test_a_failed_launch_reason_goes_when_the_choice_is_fixed(qtbot: Any, loop: Any) -> None:
    catalog = load_catalog()
    offer = next(o for o in catalog.offers
                 if o.instance_type == "g5.xlarge" and o.region == "us-east-1")

    async def refuse(_plan: object, _report: object) -> None:
        raise ProviderError("invalid", keep_alive_launch.MSG_NEEDS_BUDGET)

    dialog = LaunchDialog(offer, catalog, refuse, spot=True, money=DISPLAY,  # type: ignore[arg-type]
                          detect=False)
    qtbot.addWidget(dialog)
    dialog.allow_from.setText("203.0.113.7/32")
    dialog.show()
    qtbot.waitExposed(dialog)
    dialog.keep_alive.setFocus()
    qtbot.keyClick(dialog.keep_alive, Qt.Key.Key_Space)
    dialog.no_budget.setFocus()
    qtbot.keyClick(dialog.no_budget, Qt.Key.Key_Space)
    assert dialog.keep_alive.isChecked() and dialog.no_budget.isChecked()
    qtbot.mouseClick(dialog.launch_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "needs a budget" in dialog.log.text(), timeout=WAIT_MS)
    box = dialog.failure_box
    if isinstance(box, QMessageBox):
        box.close()
    # the user gives it a budget: the refusal is about a form that is no more
    dialog.no_budget.setFocus()
    qtbot.keyClick(dialog.no_budget, Qt.Key.Key_Space)
    dialog.budget.setFocus()
    dialog.budget.selectAll()
    qtbot.keyClicks(dialog.budget, "20")
    qtbot.keyClick(dialog.budget, Qt.Key.Key_Tab)
    assert dialog.budget.value() == 20.0
    assert "needs a budget" not in dialog.log.text()
    assert "$20.00" in dialog.guard_text.text()
    assert dialog.launch_button.isEnabled()


def test_plan_summary_never_calls_an_on_demand_price_spot(qtbot: Any) -> None:
    from gpudesk.services.core.settings import Settings
    from gpudesk.ui.plan.plan_page import PlanPage

    page = PlanPage(Settings(), load_catalog())
    qtbot.addWidget(page)
    page.show()
    page.spot.setFocus()
    if not page.spot.isChecked():
        qtbot.keyClick(page.spot, Qt.Key.Key_Space)
    assert page.spot.isChecked()
    row = next(i for i in range(page.proxy.rowCount())
               if page.proxy.ranked_at(i).offer.spot_price is None
               and page.proxy.ranked_at(i).offer.ondemand_price is not None)
    page.select_row(row)
    r = page.proxy.ranked_at(row)
    text = page.summary_values["market"].text()
    assert "no spot price known" in text and "(spot)" not in text
    assert r.price_per_hour == r.offer.ondemand_price
