"""One budget per machine: ``change_budget`` moves the ledger (first), the cloud's own cap and
the agent's rules, and the desktop's crossings follow the ledger. The cloud's cap is read back
from the stand-ins' own state, never from gpudesk's figures."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import asyncio
import time
from typing import Any

import aliyun_standin
import pytest
from aliyun_standin import AliyunStandin
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from tencent_standin import TencentStandin
from tencent_standin import timer_at as _at
from tencent_standin import undo_timers as _timers

from gpudesk.services.cloud.launcher import Launcher
from gpudesk.services.cloud.launcher import LaunchPlan
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.tencent import STOP_CHARGING
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.budgets import BudgetChecker
from gpudesk.services.money.budgets import BudgetConfig
from gpudesk.services.money.budgets import FiredState
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote.machine_budget import change_budget
from gpudesk.services.remote.machine_rules import agent_rules

REGION = "ap-guangzhou"
HOUR = 3600.0


@pytest.fixture
def cvm(tencent: TencentStandin, tencent_creds: Credentials) -> Any:
    p = TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http",
                        stopped_mode=STOP_CHARGING)
    yield p
    p.close()


def _tencent_machine(ledger: Ledger, p: TencentProvider, *, spent_usd: float, budget: float,
                     action: str, timer_at: float | None = None, **kw: Any) -> Machine:
    """A running CVM machine at $3.6/h that has cost ``spent_usd`` so far."""
    group = p.ensure_security_group(REGION, "203.0.113.7")
    inst = p.run_instance(LaunchRequest("m-tcbudget01", REGION, "GN7.2XLARGE32",
                                        zone="ap-guangzhou-3", security_group=group,
                                        cloud_timer_at=timer_at))
    p.describe(REGION, [inst.cloud_id])  # PENDING → RUNNING, as CVM does a moment later
    since = time.time() - spent_usd / 3.6 * HOUR
    return ledger.add(Machine(
        id="m-tcbudget01", provider="tencent", region=REGION, zone="ap-guangzhou-3",
        cloud_id=inst.cloud_id, state="running", running_since=since, launched_at=since,
        price_per_hour=3.6, currency="USD", budget=budget, on_budget=action,
        enforced_by="cloud-timer" if timer_at else "", cloud_timer_at=timer_at, **kw))


def test_raising_a_tencent_budget_writes_the_ledger_first_and_moves_the_cvm_timer(
        tencent: TencentStandin, cvm: TencentProvider) -> None:
    now = time.time()
    with Ledger() as ledger:
        m = _tencent_machine(ledger, cvm, spent_usd=30.0, budget=12.0, action="terminate",
                             timer_at=now + HOUR)
        assert [t["ActionTime"] for t in _timers(tencent, m.cloud_id)]  # the launch's cap
        seen: list[tuple[float | None, list[str]]] = []

        def providers(_name: str) -> TencentProvider:
            row = ledger.get(m.id)  # what the ledger says as the cloud is about to be asked
            assert row is not None
            seen.append((row.budget, [e.step for e in ledger.events(m.id)]))
            return cvm

        change = change_budget(ledger, m.id, 50.0, "terminate", settings=Settings(),
                               providers=providers, now=now)  # type: ignore[arg-type]
        # the ledger held the new budget, as an event, before any cloud call
        assert seen == [(50.0, ["intent", "budget"])]
        steps = [e.step for e in ledger.events(m.id)]
        assert steps[:4] == ["intent", "budget", "guard-requested", "guard"]
        # CVM itself now ends it when the $20 left runs out at $3.6/h, not an hour from now
        (timer,) = _timers(tencent, m.cloud_id)
        assert timer["TimerAction"] == "TerminateInstances"
        assert _at(timer["ActionTime"]) == pytest.approx(now + 20 / 3.6 * HOUR, abs=2.0)
        row = ledger.get(m.id)
        assert row is not None and (row.budget, row.on_budget) == (50.0, "terminate")
        assert row.cloud_timer_at == pytest.approx(_at(timer["ActionTime"]), abs=1.0)
    assert change.ok and change.previous_budget == 12.0
    # the desktop holds it to $50 ($30 spent); the agent gets the rules at its next connect
    assert change.desktop is not None
    assert (change.desktop.budget.cap, change.desktop.budget.action) == (50.0, "terminate")
    assert change.desktop.percent == pytest.approx(60.0, abs=0.1)
    assert not change.agent_pushed and "next connect" in change.as_json()["agent"]["says"]
    assert (change.agent_cap_usd, change.agent_action) == (50.0, "terminate")
    (said,) = change.as_json()["cloud"]["says"]
    assert said.startswith("Tencent Cloud says: it terminates the machine itself at ")


def test_the_tencent_10_usd_machine_that_spent_30_crosses_and_is_stopped_by_the_desktop(
        tencent: TencentStandin, cvm: TencentProvider) -> None:
    """The report: a Tencent machine with a $10 budget that has spent $30 gave no crossing
    (Preferences' machine budget was 0). With "stop" only the desktop's StopInstances ends
    that bill: the crossing must come, and reach the stop."""
    from gpudesk.services.cloud.machines import act

    now = time.time()
    with Ledger() as ledger:
        m = _tencent_machine(ledger, cvm, spent_usd=30.0, budget=12.0, action="terminate",
                             timer_at=now + HOUR)
        change = change_budget(ledger, m.id, 10.0, "stop", settings=Settings(),
                               providers=lambda _n: cvm, now=now)
        assert change.ok and _timers(tencent, m.cloud_id) == []  # CVM's timer only terminates
        assert change.guard is not None and change.guard.enforced_by == ()
        assert change.as_json()["cloud"]["says"] == [
            "Tencent Cloud says: no time is set at which it ends the machine itself."]
        assert change.desktop is not None and change.desktop.percent == pytest.approx(300, 0.01)
        checker = BudgetChecker.for_ledger(ledger, lambda: BudgetConfig(),  # Preferences: 0
                                           FiredState.load(ledger.path.parent / "alerts.json"))
        crossings = checker.check(time.time())
        assert [(c.threshold, c.action, c.machines) for c in crossings] == [
            (50.0, None, ()), (80.0, None, ()), (100.0, "stop", (m.id,))]
        (owed,) = checker.state.owed_actions()
        asyncio.run(act(ledger, owed.machine, owed.action, lambda _n: cvm))  # the alerts' act
        raw = tencent.state.instances[m.cloud_id]
        assert raw["InstanceState"] in ("STOPPING", "STOPPED")
        assert raw["StopChargingMode"] == "STOP_CHARGING"


def test_an_aliyun_budget_moves_the_auto_release_time(
        aliyun: AliyunStandin, aliyun_creds: Credentials, memory_keyring: Any) -> None:
    provider = AliyunProvider(aliyun_creds, endpoint=aliyun.endpoint, protocol="http",
                              sleep=lambda _s: None)
    plan = LaunchPlan(provider="aliyun", instance_type="ecs.gn7i-c8g1.2xlarge",
                      region="cn-hangzhou", allow_from="203.0.113.7/32", gpu="A10", gpus=1,
                      price_per_hour=2.0, disk_gb=100, wait_ssh=False)
    with Ledger() as ledger:
        launcher = Launcher(ledger, lambda _n: provider, poll_s=0.0)  # type: ignore[arg-type]
        m = asyncio.run(launcher.launch(plan)).machine
        assert not aliyun.state.instances[m.cloud_id].get("AutoReleaseTime")  # no budget yet
        now = time.time()
        change = change_budget(ledger, m.id, 20.0, "terminate", settings=Settings(),
                               providers=lambda _n: provider, now=now)
        released = aliyun.state.instances[m.cloud_id]["AutoReleaseTime"]
        # $20 (in CNY at the launch's rate) at the cloud's own quote, not the plan's $2/h:
        # ECS releases it by itself when that money is spent (compute + the 100 GB ESSD's
        # ¥1.0 per GB-month, which bills while it runs)
        quoted_cny = aliyun_standin.TYPES["ecs.gn7i-c8g1.2xlarge"][4] + 100 * 1.0 / 730
        assert _at(released) == pytest.approx(now + 20 * 7.2 / quoted_cny * HOUR, abs=60.0)
        assert change.ok and change.guard is not None
        assert "cloud-timer" in change.guard.enforced_by
        # back to "stop": ECS's release time is cancelled (it could only delete the machine)
        change = change_budget(ledger, m.id, 20.0, "stop", settings=Settings(),
                               providers=lambda _n: provider)
        assert aliyun.state.instances[m.cloud_id]["AutoReleaseTime"] == ""
        assert change.as_json()["cloud"]["says"] == [
            "Alibaba Cloud says: no time is set at which it ends the machine itself."]


def test_a_cloud_that_refuses_keeps_its_cap_and_the_ledger_says_so(
        tencent: TencentStandin, cvm: TencentProvider) -> None:
    now = time.time()
    with Ledger() as ledger:
        m = _tencent_machine(ledger, cvm, spent_usd=3.0, budget=12.0, action="terminate",
                             timer_at=now + HOUR)
        (old,) = _timers(tencent, m.cloud_id)
        tencent.fail_next("DescribeInstancesActionTimer", "UnauthorizedOperation",
                          "CAM denies cvm:DescribeInstancesActionTimer.")
        change = change_budget(ledger, m.id, 50.0, "terminate", settings=Settings(),
                               providers=lambda _n: cvm, now=now)
        assert not change.ok and "DescribeInstancesActionTimer" in change.cloud_error
        assert _timers(tencent, m.cloud_id) == [old]  # the cloud kept its cap...
        row = ledger.get(m.id)
        # ...and the ledger says so: the timer read back from the cloud (whole seconds)
        assert row is not None and row.cloud_timer_at == pytest.approx(now + HOUR, abs=1.0)
        assert row.budget == 50.0  # the desktop (and the agent) hold it to the new budget
        assert [e.step for e in ledger.events(m.id)][-3:] == [
            "budget", "guard-requested", "guard-failed"]


def test_bad_budgets_are_refused_in_words_and_nothing_changes() -> None:
    with Ledger() as ledger:
        ledger.add(Machine(id="m-aws0000001", provider="aws", region="us-east-1",
                           state="running", price_per_hour=1.0, budget=5.0, on_budget="stop"))
        ledger.add(Machine(id="m-own0000001", provider="own", state="ready", name="desk"))
        ledger.add(Machine(id="m-end0000001", provider="aws", state="terminated"))
        for amount, action, ref, words in [
                (-5.0, None, "m-aws0000001", "more than 0 (got -5.0)"),
                (0.0, None, "m-aws0000001", "more than 0"),
                (float("nan"), None, "m-aws0000001", "more than 0"),
                (5.0, "warn", "m-aws0000001", "stopped or terminated, not 'warn'"),
                (5.0, None, "m-nope", "No machine 'm-nope' in the ledger"),
                (5.0, None, "m-own0000001", "desk is your own machine"),
                (5.0, None, "m-end0000001", "has ended (terminated)")]:
            with pytest.raises(ProviderError) as err:
                change_budget(ledger, ref, amount, action, settings=Settings())
            assert words in err.value.message()
        assert [e.step for e in ledger.events("m-aws0000001")] == ["intent"]
        row = ledger.get("m-aws0000001")
        assert row is not None and (row.budget, row.on_budget) == (5.0, "stop")


def test_the_agent_and_the_desktop_hold_a_machine_to_the_same_own_budget() -> None:
    now = time.time()
    settings = Settings(machine_budget_usd=40.0, budget_action="warn", cny_per_usd=7.0)
    with Ledger() as ledger:
        own = ledger.add(Machine(id="m-own-cny01", provider="tencent", state="running",
                                 running_since=now - HOUR, price_per_hour=7.0, currency="CNY",
                                 budget=70.0, on_budget="terminate", cloud_id="ins-1"))
        bare = ledger.add(Machine(id="m-default01", provider="aws", state="running",
                                  running_since=now - HOUR, price_per_hour=1.0,
                                  cloud_id="i-1"))
        checker = BudgetChecker.for_ledger(ledger, lambda: BudgetConfig.from_settings(settings),
                                           FiredState.load(ledger.path.parent / "a.json"))
        desk = {s.budget.key: s for s in checker.statuses(now)}
        for m in (own, bare):
            rules = agent_rules(m, settings, ledger, now)
            assert rules.budget is not None
            b = desk[m.id].budget
            assert (rules.budget.cap, rules.budget.action) == (b.cap, b.action)
            assert rules.budget.spent_before == pytest.approx(desk[m.id].spent, abs=1e-3)
    # ¥70 is $10 at ¥7/$ and its own "terminate"; the other has Preferences' $40, which warns
    assert (desk[own.id].budget.cap, desk[own.id].budget.action) == (10.0, "terminate")
    assert (desk[bare.id].budget.cap, desk[bare.id].budget.action) == (40.0, "warn")
