"""Budget actions are never lost: they queue, never cancel each other, and a failed one is
kept (across restarts), shown and retried until done."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.money.budgets import BudgetChecker
from gpudesk.services.money.budgets import BudgetConfig
from gpudesk.services.money.budgets import FiredState
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.ui.watch.budget_alerts import BudgetAlerts
from gpudesk.ui.watch.budget_alerts import BudgetBanner

T0 = datetime(2026, 11, 10, 9, 0, tzinfo=UTC).timestamp()


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    clock = [T0]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    with Ledger(tmp_path / "l.sqlite3") as led:
        for ledger_id in ("m-1", "m-2"):  # $3.6/h each: $0.001 a second from T0
            led.add(Machine(id=ledger_id, provider="aws", price_per_hour=3.6, name=ledger_id,
                            cloud_id=f"i-{ledger_id}"))
            led.update(ledger_id, state="running")
        led.clock = clock  # type: ignore[attr-defined]
        yield led


class FlakyCloud:
    """Stands for the provider call: the first ``times`` actions on ``fails`` raise, like a
    throttled cloud."""

    def __init__(self, ledger: Ledger, fails: str, times: int) -> None:
        self.ledger = ledger
        self.fails = {fails: times}
        self.calls: list[tuple[str, str]] = []
        self.running = 0
        self.overlapped = False

    async def act(self, action: str, ledger_id: str) -> None:
        self.calls.append((action, ledger_id))
        self.running += 1
        self.overlapped |= self.running > 1
        try:
            await asyncio.sleep(0)  # a real await: a second action could start here
            if self.fails.get(ledger_id, 0) > 0:
                self.fails[ledger_id] -= 1
                raise ProviderError("throttled", "The cloud asked gpudesk to slow down.")
            self.ledger.update(ledger_id, state="stopped" if action == "stop" else
                               "terminated", step=action)
        finally:
            self.running -= 1


def test_two_budgets_crossing_in_one_check_queue_and_a_failure_is_retried_until_done(
        qtbot: Any, loop: Any, ledger: Any, tmp_path: Path) -> None:
    state_path = tmp_path / "alerts.json"
    config = BudgetConfig(monthly_usd=20.0, machine_usd=10.0, action="stop")
    checker = BudgetChecker.for_ledger(ledger, lambda: config, FiredState.load(state_path),
                                       tz=UTC)
    cloud = FlakyCloud(ledger, fails="m-1", times=2)  # m-1 is owed by two budgets
    alerts = BudgetAlerts(checker, None, clock=lambda: ledger.clock[0], act=cloud.act,
                          is_billing=lambda i: bool(ledger.get(i).billing),
                          tray_available=lambda: False)
    banner = BudgetBanner()
    qtbot.addWidget(banner)
    alerts.owed.connect(banner.show_owed)
    needed: list[tuple[str, list[str]]] = []
    alerts.action_needed.connect(lambda a, ids: needed.append((a, ids)))

    ledger.clock[0] = T0 + 10_000  # $10 each: both machine budgets and the $20 month at once
    crossings = alerts.check_now()
    assert sorted((c.budget.scope, c.threshold) for c in crossings if c.action) == [
        ("machine", 100.0), ("machine", 100.0), ("month", 100.0)]
    assert len(needed) == 3  # three budgets asked for a stop in one check
    with qtbot.waitSignal(alerts.owed, timeout=3000) as told:
        pass
    # each machine was asked once per owed action, one after another, none cancelled
    assert not cloud.overlapped
    assert ("stop", "m-2") in cloud.calls and ("stop", "m-1") in cloud.calls
    assert ledger.get("m-2").state == "stopped"
    assert ledger.get("m-1").state == "running"  # the throttled stop did not happen...
    text = told.args[0]
    assert "could not stop m-1" in text and "slow down" in text and "m-2" not in text
    assert banner.isVisible() and "could not stop m-1" in banner.label.text()
    # ...and is not forgotten: the fired state (a restart) still owes it
    owed = FiredState.load(state_path).owed_actions()
    assert [o.machine for o in owed] == ["m-1", "m-1"] and all(o.tries == 1 for o in owed)

    # the next check repeats no alert but retries the owed stop, which now works
    ledger.clock[0] = T0 + 10_030
    with qtbot.waitSignal(alerts.owed, timeout=3000) as told:
        assert alerts.check_now() == []
    assert told.args[0] == ""
    assert ledger.get("m-1").state == "stopped"
    assert banner.isHidden()
    assert FiredState.load(state_path).owed == {}
    # twice refused, then once done; the month budget's stop found it stopped: not asked again
    assert cloud.calls.count(("stop", "m-1")) == 3
    assert cloud.calls.count(("stop", "m-2")) == 1


def test_a_machines_own_budget_reaches_the_queue_with_no_budget_in_preferences(
        qtbot: Any, loop: Any, ledger: Any) -> None:
    """The window's wiring (``BudgetAlerts.for_ledger``): Preferences' machine budget is 0,
    yet each machine's own budget (Launch dialog, --budget) crosses and owes its own action."""
    from gpudesk.services.core.settings import Settings

    ledger.update("m-1", budget=10.0, on_budget="terminate")
    ledger.update("m-2", budget=40.0, on_budget="stop")
    cloud = FlakyCloud(ledger, fails="", times=0)
    alerts = BudgetAlerts.for_ledger(ledger, lambda: Settings(), None,
                                     clock=lambda: ledger.clock[0], act=cloud.act,
                                     tray_available=lambda: False)
    needed: list[tuple[str, list[str]]] = []
    alerts.action_needed.connect(lambda a, ids: needed.append((a, ids)))
    ledger.clock[0] = T0 + 30_000  # $30 each: m-1 is past its $10, m-2 at 75 % of its $40
    with qtbot.waitSignal(alerts.owed, timeout=3000):
        crossings = alerts.check_now()
    assert sorted((c.budget.key, c.threshold) for c in crossings) == [
        ("m-1", 50.0), ("m-1", 80.0), ("m-1", 100.0), ("m-2", 50.0)]
    assert needed == [("terminate", ["m-1"])]
    assert cloud.calls == [("terminate", "m-1")]
    assert ledger.get("m-1").state == "terminated" and ledger.get("m-2").state == "running"
