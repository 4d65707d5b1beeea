"""The cloud's word on state (issue 29, item 7), against the Tencent and Aliyun stand-ins and
moto (real SDKs): a stop or start made in the cloud's console moves the cloud timer as
gpudesk's own does; state times come from the cloud where it gives them; an adopted machine
with no price is priced from the cloud's quote or said to have none, in red; and a budget
under ECS's release floor says the floor. Every timer asserted is read from the cloud."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from datetime import UTC
from datetime import datetime
from typing import Any

import pytest
from aliyun_standin import AliyunStandin
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from tencent_standin import TencentStandin
from tencent_standin import timer_at as _at
from tencent_standin import undo_timers as _timers

from gpudesk.services.cloud import aws_price_list
from gpudesk.services.cloud import guard
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.base import TAG_LEDGER
from gpudesk.services.cloud.providers.base import TAG_MANAGED
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.tencent import STOP_CHARGING
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.cloud.reconcile import ReconcileReport
from gpudesk.services.cloud.reconcile import reconcile_provider
from gpudesk.services.core.paths import cache_dir
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine

HOUR = 3600.0
REGION = "ap-guangzhou"
ZONE = "ap-guangzhou-3"
QUOTED_CNY = 7.43
RATE = 7.2


@pytest.fixture
def cvm(tencent: TencentStandin, tencent_creds: Credentials) -> Iterator[TencentProvider]:
    p = TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http",
                        stopped_mode=STOP_CHARGING, sleep=lambda _s: None)
    yield p
    p.close()


@pytest.fixture
def ecs(aliyun: AliyunStandin, aliyun_creds: Credentials) -> Iterator[AliyunProvider]:
    p = AliyunProvider(aliyun_creds, endpoint=aliyun.endpoint, protocol="http",
                       sleep=lambda _s: None)
    yield p
    p.close()


def _check(ledger: Ledger, name: str, p: object, region: str) -> ReconcileReport:
    report = ReconcileReport()
    reconcile_provider(ledger, name, p, [region], report)  # type: ignore[arg-type]
    return report


def _until(p: Any, region: str, cloud_id: str, state: str) -> None:
    for _ in range(5):
        (seen,) = p.describe(region, [cloud_id])
        if seen.state == state:
            return
    raise AssertionError(f"{cloud_id} never {state}")


def _cvm_row(ledger: Ledger, p: TencentProvider, timer_at: float) -> Machine:
    group = p.ensure_security_group(REGION, "203.0.113.7")
    inst = p.run_instance(LaunchRequest("m-console01", REGION, "GN7.2XLARGE32", zone=ZONE,
                                        security_group=group, cloud_timer_at=timer_at))
    _until(p, REGION, inst.cloud_id, "running")
    since = time.time() - 600
    m = ledger.add(Machine(
        id="m-console01", provider="tencent", region=REGION, zone=ZONE,
        instance_type="GN7.2XLARGE32", cloud_id=inst.cloud_id, state="running",
        running_since=since, launched_at=since, price_per_hour=round(QUOTED_CNY / RATE, 6),
        budget=12.0, on_budget="terminate", enforced_by="agent,cloud-timer",
        cloud_timer_at=timer_at, name="cvm"))
    guard.record_quote(ledger, m.id, guard.Quote(QUOTED_CNY, "CNY", "InquiryPriceRunInstances",
                                                 RATE, REGION, ZONE))
    return m


# ------------------------------------------------------------- console stop and start

def test_a_cvm_stopped_and_started_in_the_console_moves_its_action_timer(
        tencent: TencentStandin, cvm: TencentProvider) -> None:
    with Ledger() as ledger:
        m = _cvm_row(ledger, cvm, time.time() + HOUR)
        assert len(_timers(tencent, m.cloud_id)) == 1

        cvm.stop(REGION, m.cloud_id)  # in the console: gpudesk is not asked
        _until(cvm, REGION, m.cloud_id, "stopped")
        report = _check(ledger, "tencent", cvm, REGION)
        assert _timers(tencent, m.cloud_id) == []  # stopped without charge: no timer
        row = ledger.get(m.id)
        assert row is not None and row.state == "stopped" and row.cloud_timer_at is None
        assert "cloud-timer" not in row.enforced_by.split(",")
        assert report.timers == [m.id]
        assert "console-stop" in [e.step for e in ledger.events(m.id)]

        cvm.start(REGION, m.cloud_id)  # and started there again
        _until(cvm, REGION, m.cloud_id, "running")
        report = _check(ledger, "tencent", cvm, REGION)
        (held,) = _timers(tencent, m.cloud_id)
        row = ledger.get(m.id)
        assert row is not None and row.cloud_timer_at == _at(held["ActionTime"])
        assert "cloud-timer" in row.enforced_by.split(",")
        # ¥86.40 budget, about ¥1.24 spent, at ¥7.43/h + its disk: over 10 h from now
        assert row.cloud_timer_at > time.time() + 10 * HOUR
        assert report.timers == [m.id]


def test_an_ecs_machine_stopped_and_started_in_the_console_moves_its_release_time(
        aliyun: AliyunStandin, ecs: AliyunProvider) -> None:
    now = time.time()
    with Ledger() as ledger:
        made = ecs.run_instance(LaunchRequest("m-console02", "cn-hangzhou",
                                              "ecs.gn7i-c8g1.2xlarge", zone="cn-hangzhou-i",
                                              allow_from="203.0.113.7",
                                              cloud_timer_at=now + 5 * HOUR))
        _until(ecs, "cn-hangzhou", made.cloud_id, "running")
        released = _at(aliyun.state.instances[made.cloud_id]["AutoReleaseTime"])
        m = ledger.add(Machine(
            id="m-console02", provider="aliyun", region="cn-hangzhou", zone="cn-hangzhou-i",
            instance_type="ecs.gn7i-c8g1.2xlarge", cloud_id=made.cloud_id, state="running",
            running_since=now - 600, launched_at=now - 600, price_per_hour=round(16 / RATE, 6),
            budget=80 / RATE, on_budget="terminate", enforced_by="agent,cloud-timer",
            cloud_timer_at=released))
        guard.record_quote(ledger, m.id, guard.Quote(16.0, "CNY", "DescribePrice", RATE,
                                                     "cn-hangzhou", "cn-hangzhou-i"))

        ecs.stop("cn-hangzhou", m.cloud_id)  # StopCharging, in the console
        _until(ecs, "cn-hangzhou", m.cloud_id, "stopped")
        _check(ledger, "aliyun", ecs, "cn-hangzhou")
        assert not aliyun.state.instances[m.cloud_id].get("AutoReleaseTime")
        row = ledger.get(m.id)
        assert row is not None and row.cloud_timer_at is None

        ecs.start("cn-hangzhou", m.cloud_id)
        _until(ecs, "cn-hangzhou", m.cloud_id, "running")
        _check(ledger, "aliyun", ecs, "cn-hangzhou")
        held = _at(aliyun.state.instances[m.cloud_id]["AutoReleaseTime"])
        row = ledger.get(m.id)
        assert row is not None and row.cloud_timer_at == held
        # ¥80 budget, about ¥2.67 spent, at ¥16/h + its disk: a little under 5 h from now
        assert time.time() + 4 * HOUR < held < time.time() + 5 * HOUR


# ------------------------------------------------------------- state times from the cloud

def test_ecs_start_time_dates_a_start_made_while_gpudesk_was_not_looking(
        aliyun: AliyunStandin, ecs: AliyunProvider) -> None:
    with Ledger() as ledger:
        made = ecs.run_instance(LaunchRequest("m-console03", "cn-hangzhou",
                                              "ecs.gn7i-c8g1.2xlarge", zone="cn-hangzhou-i",
                                              allow_from="203.0.113.7"))
        _until(ecs, "cn-hangzhou", made.cloud_id, "running")
        ecs.stop("cn-hangzhou", made.cloud_id)
        _until(ecs, "cn-hangzhou", made.cloud_id, "stopped")
        ledger.add(Machine(id="m-console03", provider="aliyun", region="cn-hangzhou",
                           zone="cn-hangzhou-i", instance_type="ecs.gn7i-c8g1.2xlarge",
                           cloud_id=made.cloud_id, state="stopped", stopped_mode="StopCharging",
                           price_per_hour=2.2, launched_at=time.time() - HOUR))
        ecs.start("cn-hangzhou", made.cloud_id)
        _until(ecs, "cn-hangzhou", made.cloud_id, "running")
        # ECS says it started 20 minutes ago (gpudesk was closed then)
        started = math.floor((time.time() - 1200) / 60) * 60
        aliyun.state.instances[made.cloud_id]["StartTime"] = datetime.fromtimestamp(
            started, UTC).strftime("%Y-%m-%dT%H:%MZ")
        _check(ledger, "aliyun", ecs, "cn-hangzhou")
        row = ledger.get("m-console03")
        assert row is not None and row.state == "running" and row.running_since == started
        assert ledger.intervals(row.id)[-1].start == started


def test_cvm_dates_only_a_machine_running_since_its_creation(
        tencent: TencentStandin, cvm: TencentProvider) -> None:
    group = cvm.ensure_security_group(REGION, "203.0.113.7")
    inst = cvm.run_instance(LaunchRequest("m-console04", REGION, "GN7.2XLARGE32", zone=ZONE,
                                          security_group=group))
    created = math.floor(time.time()) - 900
    tencent.state.instances[inst.cloud_id]["CreatedTime"] = datetime.fromtimestamp(
        created, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with Ledger() as ledger:
        ledger.add(Machine(id="m-console04", provider="tencent", region=REGION, zone=ZONE,
                           instance_type="GN7.2XLARGE32", cloud_id=inst.cloud_id,
                           state="pending", price_per_hour=1.03))
        _until(cvm, REGION, inst.cloud_id, "running")
        _check(ledger, "tencent", cvm, REGION)
        row = ledger.get("m-console04")
        assert row is not None and row.running_since == created  # RunInstances: CreatedTime

        cvm.stop(REGION, inst.cloud_id)
        _until(cvm, REGION, inst.cloud_id, "stopped")
        _check(ledger, "tencent", cvm, REGION)
        cvm.start(REGION, inst.cloud_id)
        _until(cvm, REGION, inst.cloud_id, "running")
        before = time.time()
        _check(ledger, "tencent", cvm, REGION)
        row = ledger.get("m-console04")
        # LatestOperation StartInstances carries no time: dated when gpudesk saw it
        assert row is not None and row.running_since is not None
        assert before <= row.running_since <= time.time()


# ------------------------------------------------------------- adopted without a price

def _tagged_ec2(aws: MotoAws, ledger_id: str, itype: str = "t3.large") -> str:
    ami = aws.publish_dlami("us-east-1")
    (inst,) = aws.client("ec2").run_instances(
        ImageId=ami, MinCount=1, MaxCount=1, InstanceType=itype,
        TagSpecifications=[{"ResourceType": "instance", "Tags": [
            {"Key": TAG_MANAGED, "Value": "1"}, {"Key": TAG_LEDGER, "Value": ledger_id}]}],
    )["Instances"]
    return str(inst["InstanceId"])


def test_an_adopted_machine_without_a_bundled_price_is_priced_from_the_price_list(
        aws: MotoAws) -> None:
    aws_price_list.save(cache_dir(), aws_price_list.RegionPrices(
        "us-east-1", "2026-11-01", {"t3.large": 0.0832}))
    _tagged_ec2(aws, "m-adopt01")
    with Ledger() as ledger:
        report = _check(ledger, "aws", aws.provider(), "us-east-1")
        row = ledger.get("m-adopt01")
        assert row is not None and row.origin == "adopted" and row.price_per_hour == 0.0832
        quote = guard.launch_quote(ledger, row)
        assert quote is not None and quote.source == "AWS Price List published 2026-11-01"
        assert report.no_price == {}


@pytest.fixture
def aws_window(qtbot, loop, aws, memory_keyring, monkeypatch, banner_port  # type: ignore[no-untyped-def]
               ) -> Iterator[Any]:
    from cloud_window import open_cloud_window

    from gpudesk.services.cloud import credentials

    credentials.save_credentials(aws.credentials)
    with open_cloud_window(qtbot, monkeypatch, banner_port, "AWS_ENDPOINT_URL",
                           aws.endpoint.removeprefix("http://")) as w:
        yield w


def test_an_adopted_machine_the_cloud_gives_no_price_says_so_in_red(  # type: ignore[no-untyped-def]
        aws_window, qtbot, aws, capsys) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QPushButton

    from gpudesk.cli.entry import main
    from gpudesk.ui.machines.instances_model import COL

    window = aws_window
    _tagged_ec2(aws, "m-adopt02")
    page = window.instances
    window.show_page("instances")
    qtbot.waitUntil(lambda: not page.sync_runner.busy, timeout=20000)
    qtbot.mouseClick(page.findChild(QPushButton, "refresh"), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.ledger.get("m-adopt02") is not None, timeout=20000)
    qtbot.waitUntil(lambda: not page.sync_runner.busy, timeout=20000)
    row = window.ledger.get("m-adopt02")
    assert row is not None and row.price_per_hour == 0
    r = [m.id for m in page.model.machines].index("m-adopt02")
    cell = page.model.index(r, COL["price"])
    assert page.model.data(cell) == "no price: no budget can be counted"
    assert page.model.data(cell, Qt.ItemDataRole.ForegroundRole).color().name() == "#c0392b"
    tip = page.model.data(cell, Qt.ItemDataRole.ToolTipRole)
    assert "the cloud gave none when asked (AWS, t3.large in us-east-1" in tip
    assert "no budget can be counted" in page.status.text()
    assert page.status.property("warning") is True
    assert main(["show", "m-adopt02"]) == 0
    out = capsys.readouterr().out
    assert "no price: no budget can be counted. gpudesk found this machine" in out


# ------------------------------------------------------------- ECS's release floor

def test_a_budget_under_ecs_release_floor_says_the_floor() -> None:
    m = Machine(id="m-floor", provider="aliyun", region="cn-hangzhou", price_per_hour=2.0,
                budget=0.5, on_budget="terminate", enforced_by="agent,cloud-timer",
                cloud_timer_at=1_800_000_000.0, currency="USD")
    said = guard.english(m)
    # $0.50 at $2/h lasts 15 minutes; ECS releases 31 minutes ahead at the soonest
    floor = [s for s in said if "no sooner than 31 minutes" in s]
    assert len(floor) == 1 and "budget of 0.50 USD" in floor[0]
    assert "up to 1.03 USD" in floor[0]  # 31 minutes at $2/h
    big = Machine(**{**m.__dict__, "budget": 5.0})
    assert not [s for s in guard.english(big) if "no sooner than" in s]
