"""Budget thresholds fire exactly once each, on a simulated clock, across restarts."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from gpudesk.services.core.settings import Settings
from gpudesk.services.money import budgets
from gpudesk.services.money.budgets import Budget
from gpudesk.services.money.budgets import BudgetChecker
from gpudesk.services.money.budgets import BudgetConfig
from gpudesk.services.money.budgets import FiredState
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine

UTC = ZoneInfo("UTC")


def _run_clock(checker: BudgetChecker, start: float, stop: float, step: float
               ) -> list[tuple[float, float, str | None, tuple[str, ...]]]:
    fired = []
    t = start
    while t <= stop:
        fired += [(c.threshold, t, c.action, c.machines) for c in checker.check(t)]
        t += step
    return fired


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Ledger:
    monkeypatch.setattr("gpudesk.services.money.ledger.time.time", lambda: 0.0)
    return Ledger(tmp_path / "l.sqlite3")


def test_machine_budget_fires_50_80_100_once_then_never_again(ledger: Ledger,
                                                               tmp_path: Path) -> None:
    ledger.add(Machine(id="m-1", provider="aws", price_per_hour=3.6))  # $0.001 a second
    ledger.update("m-1", state="running")  # at t = 0
    state_path = tmp_path / "alerts.json"
    config = BudgetConfig(machine_usd=10.0, action="terminate")
    checker = BudgetChecker.for_ledger(ledger, lambda: config, FiredState.load(state_path))
    # $5 at 5000 s, $8 at 8000 s, $10 at 10000 s; checked every 100 s up to 4 h
    assert _run_clock(checker, 0.0, 14_400.0, 100.0) == [
        (50.0, 5000.0, None, ()), (80.0, 8000.0, None, ()),
        (100.0, 10_000.0, "terminate", ("m-1",))]
    # the app restarts: a new checker reads what fired
    again = BudgetChecker.for_ledger(ledger, lambda: config, FiredState.load(state_path))
    assert again.check(20_000.0) == []
    assert json.loads(state_path.read_text())["fired"] == {
        Budget("machine", "m-1", 10.0, action="terminate").id: [50.0, 80.0, 100.0]}
    # raising the cap to $30 is a new budget: 50 % ($15) fires anew at once (spend is $20)
    raised = BudgetConfig(machine_usd=30.0, action="terminate")
    checker = BudgetChecker.for_ledger(ledger, lambda: raised, FiredState.load(state_path))
    assert _run_clock(checker, 20_000.0, 31_000.0, 100.0) == [
        (50.0, 20_000.0, None, ()), (80.0, 24_000.0, None, ()),
        (100.0, 30_000.0, "terminate", ("m-1",))]


def test_a_jump_fires_every_threshold_passed_once_and_stopped_machines_are_left(
        ledger: Ledger, tmp_path: Path) -> None:
    ledger.add(Machine(id="m-1", provider="aws", price_per_hour=3.6))
    ledger.update("m-1", state="running")
    checker = BudgetChecker.for_ledger(ledger, lambda: BudgetConfig(machine_usd=10.0),
                                       FiredState.load(tmp_path / "a.json"))
    crossings = checker.check(9000.0)  # the laptop slept: $9 already
    assert [(c.threshold, c.action) for c in crossings] == [(50.0, None), (80.0, None)]
    assert crossings[-1].percent == pytest.approx(90.0)
    assert checker.check(9500.0) == []
    ledger.update("m-1", state="terminated")  # gone: no machine budget any more
    assert checker.check(20_000.0) == []


def test_month_budget_sums_providers_in_usd_and_a_new_month_fires_anew(
        ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dec1 = datetime(2026, 12, 1, tzinfo=UTC).timestamp()
    jan1 = datetime(2027, 1, 1, tzinfo=UTC).timestamp()
    monkeypatch.setattr("gpudesk.services.money.ledger.time.time", lambda: dec1)
    ledger.add(Machine(id="m-a", provider="aws", price_per_hour=3.6))
    ledger.add(Machine(id="m-t", provider="tencent", price_per_hour=46.08, currency="CNY"))
    ledger.add(Machine(id="m-own", provider="own", price_per_hour=0.0, state="ready"))
    ledger.update("m-a", state="running")
    ledger.update("m-t", state="running")
    # $3.6/h + ¥46.08/h at ¥7.2/$ ($6.4/h) = $10/h against a $100 month
    config = BudgetConfig(monthly_usd=100.0, cny_per_usd=7.2, action="stop")
    checker = BudgetChecker.for_ledger(ledger, lambda: config,
                                       FiredState.load(tmp_path / "a.json"), tz=UTC)
    status = checker.statuses(dec1 + 3600)[0]
    assert status.spent == pytest.approx(10.0) and status.per_hour == pytest.approx(10.0)
    assert status.cap_at == pytest.approx(dec1 + 10 * 3600)
    hour = 3600.0
    assert _run_clock(checker, dec1, dec1 + 12 * hour, 600.0) == [
        (50.0, dec1 + 5 * hour, None, ()), (80.0, dec1 + 8 * hour, None, ()),
        (100.0, dec1 + 10 * hour, "stop", ("m-a", "m-t"))]
    # January is a new budget; only January's spend counts towards it
    fired = _run_clock(checker, jan1, jan1 + 6 * hour, 600.0)
    assert fired == [(50.0, jan1 + 5 * hour, None, ())]


def test_corrupt_state_is_moved_aside_and_settings_give_the_config(tmp_path: Path) -> None:
    path = tmp_path / "alerts.json"
    path.write_text("{not json")
    state = FiredState.load(path)
    assert state.fired == {} and (tmp_path / "alerts.json.bad").exists()
    state.mark(Budget("month", "2026-12", 5.0), [50.0, 50.0, 80.0])
    state.save()
    assert FiredState.load(path).fired == state.fired
    assert list(state.fired.values()) == [[50.0, 80.0]]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    config = BudgetConfig.from_settings(Settings(monthly_budget_usd=200.0,
                                                 machine_budget_usd=25.0, cny_per_usd=7.0))
    assert config == BudgetConfig(200.0, 25.0, "stop", 7.0)
    assert BudgetChecker(lambda: ([], []), lambda: BudgetConfig(), state).check(1e9) == []


def test_budget_identity_mirrors_the_agent_rule(tmp_path: Path) -> None:
    from gpudesk.agent.rules import parse_rules

    b = Budget("machine", "m-1", 10.0, action="warn")
    assert b.id == Budget("machine", "m-1", 10.0, action="warn").id
    assert b.id != Budget("machine", "m-1", 20.0, action="warn").id
    assert b.id != Budget("machine", "m-2", 10.0, action="warn").id
    status = budgets.Status(b, spent=4.0, per_hour=3.6, cap_at=None)
    rule = parse_rules({"budget": budgets.agent_budget(status, 3.6, now=1000.0)}).budget
    assert rule is not None and rule.id == b.id and rule.action == "warn"
    assert rule.spend(1000.0 + 3600) == pytest.approx(7.6)  # $4 before + 1 h at $3.6


def test_the_tencent_machine_with_a_10_usd_budget_that_spent_30_crosses(
        ledger: Ledger, tmp_path: Path) -> None:
    """Reported: its budget was stored in the ledger and never read, so with Preferences'
    machine budget at 0 it spent $30 of $10 unseen. With "stop" on Tencent Cloud the
    desktop's stop is the only thing that ends that bill."""
    ledger.add(Machine(id="m-t", provider="tencent", price_per_hour=3.6, currency="USD",
                       budget=10.0, on_budget="stop"))
    ledger.update("m-t", state="running")  # $0.001 a second from t = 0
    checker = BudgetChecker.for_ledger(ledger, lambda: BudgetConfig(),  # Preferences: none
                                       FiredState.load(tmp_path / "a.json"))
    crossings = checker.check(30_000.0)
    assert [(c.threshold, c.action, c.machines) for c in crossings] == [
        (50.0, None, ()), (80.0, None, ()), (100.0, "stop", ("m-t",))]
    assert crossings[-1].percent == pytest.approx(300.0)
    assert [(o.action, o.machine) for o in checker.state.owed_actions()] == [("stop", "m-t")]


def test_each_cloud_is_held_to_its_own_budget_and_preferences_only_give_the_default(
        ledger: Ledger, tmp_path: Path) -> None:
    ledger.add(Machine(id="m-aws", provider="aws", price_per_hour=3.6, budget=5.0,
                       on_budget="terminate"))
    ledger.add(Machine(id="m-tc", provider="tencent", price_per_hour=25.92, currency="CNY",
                       budget=72.0, on_budget="stop"))  # ¥72 = $10 at ¥7.2/$
    ledger.add(Machine(id="m-ali", provider="aliyun", price_per_hour=3.6, budget=8.0,
                       on_budget="terminate"))
    ledger.add(Machine(id="m-none", provider="aws", price_per_hour=3.6))  # no budget of its own
    for ledger_id in ("m-aws", "m-tc", "m-ali", "m-none"):
        ledger.update(ledger_id, state="running")
    prefs = BudgetConfig(machine_usd=20.0, action="warn", cny_per_usd=7.2)
    checker = BudgetChecker.for_ledger(ledger, lambda: prefs, FiredState.load(tmp_path / "a"))
    held = {s.budget.key: (s.budget.cap, s.budget.action, round(s.spent, 6))
            for s in checker.statuses(3600.0)}
    assert held == {"m-aws": (5.0, "terminate", 3.6), "m-tc": (10.0, "stop", 3.6),
                    "m-ali": (8.0, "terminate", 3.6), "m-none": (20.0, "warn", 3.6)}
    # at $9 each: aws and aliyun past their own, Tencent at 90 % of its ¥72, the default 45 %
    full = [(c.budget.key, c.action) for c in checker.check(9000.0) if c.threshold == 100.0]
    assert sorted(full) == [("m-ali", "terminate"), ("m-aws", "terminate")]
    # Preferences change: only the machine with no budget of its own follows
    prefs = BudgetConfig(machine_usd=8.0, action="stop", cny_per_usd=7.2)
    after = [(c.budget.key, c.threshold, c.action) for c in checker.check(9100.0)]
    assert after == [("m-none", 50.0, None), ("m-none", 80.0, None),
                     ("m-none", 100.0, "stop")]
    assert budgets.machine_budget(ledger.get("m-tc"), prefs) == budgets.MachineBudget(
        72.0, "CNY", "stop", True)
    assert budgets.machine_budget(Machine(id="x", provider="aws"), BudgetConfig()) is None


def test_a_machine_started_again_past_its_budget_is_owed_the_stop_again(
        ledger: Ledger, tmp_path: Path) -> None:
    """The budget's stop was done; the user (or anyone) starts the machine while it is still
    over its cap: the stop is owed again (no second alert), as often as it is started."""
    ledger.add(Machine(id="m-1", provider="aliyun", price_per_hour=3.6, budget=10.0,
                       on_budget="stop"))
    ledger.update("m-1", state="running")
    checker = BudgetChecker.for_ledger(ledger, lambda: BudgetConfig(),
                                       FiredState.load(tmp_path / "a.json"))
    assert [c.threshold for c in checker.check(11_000.0)] == [50.0, 80.0, 100.0]
    (owed,) = checker.state.owed_actions()
    assert (owed.action, owed.machine) == ("stop", "m-1")
    checker.state.settle(owed.key)  # the desktop's stop was done
    ledger.update("m-1", state="stopped")
    assert checker.check(11_100.0) == [] and checker.state.owed_actions() == []
    ledger.update("m-1", state="running")  # started again, still over the cap
    assert checker.check(11_200.0) == []  # no new alert ...
    (again,) = checker.state.owed_actions()  # ... but the stop is owed again
    assert (again.action, again.machine) == ("stop", "m-1")
    # and kept on the books across a restart of the app
    assert [o.machine for o in FiredState.load(tmp_path / "a.json").owed_actions()] == ["m-1"]
