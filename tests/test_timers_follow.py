"""The cloud's timer is what the cloud holds, and it follows the machine (issue 21 items 7
and 8; "timers that follow the machine"), against the Tencent and Aliyun stand-ins (real
SDKs): every figure asserted is read from the cloud's own state.

* A CVM timer change whose import fails leaves the ledger saying what CVM holds (nothing
  after the old timer was deleted), never the old time.
* ECS's release time: guard and provider floor at the same 30 minutes + 1 (whole minutes),
  and the ledger records the AutoReleaseTime ECS reads back.
* A stop that ends the compute bill removes the CVM timer; a start sets it again at
  now + budget left ÷ (quote + disk).
"""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from aliyun_standin import AliyunStandin
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from tencent_standin import TencentStandin
from tencent_standin import timer_at as _at
from tencent_standin import undo_timers as _timers

from gpudesk.services.cloud import guard
from gpudesk.services.cloud import machines
from gpudesk.services.cloud.providers import aliyun_parse as ap
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.tencent import STOP_CHARGING
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.money.spend import machine_spend

HOUR = 3600.0
REGION = "ap-guangzhou"
ZONE = "ap-guangzhou-3"
QUOTED_CNY = 7.43
RATE = 7.2
DISK_GB = 100.0


@pytest.fixture
def ledger() -> Iterator[Ledger]:
    with Ledger() as led:
        yield led


@pytest.fixture
def cvm(tencent: TencentStandin, tencent_creds: Credentials) -> Iterator[TencentProvider]:
    p = TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http",
                        stopped_mode=STOP_CHARGING, sleep=lambda _s: None)
    yield p
    p.close()


def _cvm_machine(ledger: Ledger, p: TencentProvider, *, spent_usd: float, budget: float,
                 timer_at: float | None) -> Machine:
    """A running CVM at the cloud's quote of ¥7.43/h that has cost ``spent_usd``."""
    group = p.ensure_security_group(REGION, "203.0.113.7")
    inst = p.run_instance(LaunchRequest("m-tfollow001", REGION, "GN7.2XLARGE32", zone=ZONE,
                                        security_group=group, cloud_timer_at=timer_at))
    p.describe(REGION, [inst.cloud_id])  # PENDING → RUNNING
    price = QUOTED_CNY / RATE
    since = time.time() - spent_usd / price * HOUR
    m = ledger.add(Machine(
        id="m-tfollow001", provider="tencent", region=REGION, zone=ZONE,
        instance_type="GN7.2XLARGE32", cloud_id=inst.cloud_id, state="running",
        running_since=since, launched_at=since, price_per_hour=price, currency="USD",
        disk_gb=DISK_GB, budget=budget, on_budget="terminate",
        enforced_by="agent,cloud-timer" if timer_at else "agent", cloud_timer_at=timer_at))
    guard.record_quote(ledger, m.id, guard.Quote(QUOTED_CNY, "CNY",
                                                 "InquiryPriceRunInstances", RATE, zone=ZONE))
    return m


# ----------------------------------------------------------------- item 7: CVM read back


def test_a_failed_cvm_import_leaves_the_ledger_saying_what_cvm_holds(
        tencent: TencentStandin, cvm: TencentProvider, ledger: Ledger) -> None:
    now = time.time()
    m = _cvm_machine(ledger, cvm, spent_usd=1.0, budget=5.0, timer_at=now + HOUR)
    assert len(_timers(tencent, m.cloud_id)) == 1
    tencent.fail_next("ImportInstancesActionTimer", "InternalError", "import failed")
    with pytest.raises(ProviderError):
        guard.apply(ledger, m, cvm, 20.0, "terminate", now)
    assert _timers(tencent, m.cloud_id) == []  # the old one was deleted first
    row = ledger.get(m.id)
    assert row is not None and row.cloud_timer_at is None  # not the old time
    assert "cloud-timer" not in row.enforced_by.split(",")
    assert row.budget == 5.0  # the old budget holds
    # asked again, it holds what CVM says
    g = guard.apply(ledger, row, cvm, 20.0, "terminate", now)
    (held,) = _timers(tencent, m.cloud_id)
    row = ledger.get(m.id)
    assert row is not None and row.cloud_timer_at == _at(held["ActionTime"]) == g.cloud_timer_at


# ----------------------------------------------------------------- item 8: ECS's floor


def test_guard_and_ecs_agree_on_the_release_time(
        aliyun: AliyunStandin, aliyun_creds: Credentials, ledger: Ledger) -> None:
    now = time.time()
    # a budget that lasts ten minutes: ECS accepts nothing under 30 minutes ahead
    g = guard.plan("aliyun", 1.0, "terminate", 6.0, 0.0, now)
    assert g.cloud_timer_at is not None and g.cloud_timer_at % 60 == 0
    assert now + 30 * 60 < g.cloud_timer_at <= now + ap.RELEASE_FLOOR_S
    assert guard.TIMER_FLOOR_S["aliyun"] == ap.RELEASE_FLOOR_S == 31 * 60
    p = AliyunProvider(aliyun_creds, endpoint=aliyun.endpoint, protocol="http",
                       sleep=lambda _s: None)
    try:
        made = p.run_instance(LaunchRequest("m-tfollow002", "cn-hangzhou",
                                            "ecs.gn7i-c8g1.2xlarge", zone="cn-hangzhou-i",
                                            allow_from="203.0.113.7"))
        m = ledger.add(Machine(id="m-tfollow002", provider="aliyun", region="cn-hangzhou",
                               zone="cn-hangzhou-i", cloud_id=made.cloud_id, state="running",
                               price_per_hour=6.0, currency="USD", launched_at=now,
                               running_since=now))
        applied = guard.apply(ledger, m, p, 1.0, "terminate", now)
        held = aliyun.state.instances[made.cloud_id]["AutoReleaseTime"]
        row = ledger.get(m.id)
        assert row is not None and row.cloud_timer_at == _at(held) == applied.cloud_timer_at
        assert p.guard_at("cn-hangzhou", made.cloud_id) == _at(held)
        assert 30 * 60 < _at(held) - now <= 31 * 60  # the ledger says what ECS does
    finally:
        p.close()


# ----------------------------------------------------------------- timers follow


def test_the_cvm_timer_follows_a_stop_and_a_start(
        tencent: TencentStandin, cvm: TencentProvider, ledger: Ledger) -> None:
    now = time.time()
    m = _cvm_machine(ledger, cvm, spent_usd=1.0, budget=5.0, timer_at=now + HOUR)

    def providers(_name: str) -> TencentProvider:
        return cvm

    asyncio.run(machines.act(ledger, m.id, "stop", providers))
    assert tencent.params("StopInstances")[-1]["StoppedMode"] == "STOP_CHARGING"
    assert _timers(tencent, m.cloud_id) == []  # nothing spends the budget: no timer
    row = ledger.get(m.id)
    assert row is not None and row.cloud_timer_at is None
    assert "cloud-timer" not in row.enforced_by.split(",")
    row = asyncio.run(machines.settle(ledger, m.id, providers, poll_s=0))
    assert row.state == "stopped"

    started = asyncio.run(machines.act(ledger, m.id, "start", providers))
    (held,) = _timers(tencent, m.cloud_id)
    at = _at(held["ActionTime"])
    after = time.time()
    left_cny = (5.0 - machine_spend(ledger, started, after).total) * RATE
    disk = guard.disk_per_hour("tencent", REGION, DISK_GB, "CNY", RATE)
    assert at == pytest.approx(after + left_cny / (QUOTED_CNY + disk) * HOUR, abs=5.0)
    assert started.cloud_timer_at == at
    assert "cloud-timer" in started.enforced_by.split(",")
