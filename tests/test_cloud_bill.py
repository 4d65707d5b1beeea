"""The stand-ins' bills: each cloud's rules for running, stopped, stopped-but-charging and
ended machines, EC2's 60-second minimum, and the clouds' own timers acting on the clock."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import base64
import time
from datetime import UTC
from datetime import datetime

import pytest
from aliyun_standin import AliyunStandin
from cloud_bill import Bill
from cloud_bill import Seen
from ec2_bill import Ec2Bill
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from tencent_standin import TencentStandin

from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.tencent import TencentProvider


class Clock:
    def __init__(self, start: float) -> None:
        self.now = float(start)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _iso(t: float) -> str:
    return datetime.fromtimestamp(int(t), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_ec2_bills_a_minute_at_least_each_start_then_by_the_second() -> None:
    clock = Clock(1_000_000.0)
    bill = Bill("aws", clock)
    bill.record("i-1", Seen("compute", 3.6, 0.0))  # $3.6/h: $0.001 a second
    clock.advance(30)
    bill.record("i-1", Seen("disk", 3.6, 0.0))
    assert bill.total() == pytest.approx(0.060)  # 30 s run, 60 s billed
    clock.advance(3600)
    bill.record("i-1", Seen("compute", 3.6, 0.0))  # started again: a new minimum
    clock.advance(90)
    bill.record("i-1", Seen("none", 0.0, 0.0))
    assert bill.total() == pytest.approx(0.060 + 0.090)
    assert bill.rate_per_hour() == 0.0
    assert bill.total(clock() + 86_400) == pytest.approx(0.150)  # ended: nothing more


def test_stopped_disk_only_versus_stopped_keep_charging() -> None:
    clock = Clock(0.0)
    bill = Bill("tencent", clock)  # CNY; 0.35 per GB-month
    bill.record("a", Seen("compute", 7.3, 100.0))
    bill.record("b", Seen("compute", 7.3, 100.0))
    clock.advance(3600)
    bill.record("a", Seen("disk", 7.3, 100.0))  # STOP_CHARGING
    bill.record("b", Seen("keep", 7.3, 100.0))  # KEEP_CHARGING, or a shutdown from inside
    clock.advance(730 * 3600)  # a month
    a, b = bill.parts(instance_id="a"), bill.parts(instance_id="b")
    assert a.running == pytest.approx(7.3) and a.keep == 0.0
    assert a.disk == pytest.approx(35.0 * 731 / 730)  # 100 GB × 0.35, one month and an hour
    assert b.keep == pytest.approx(7.3 * 730)  # the compute goes on billing, stopped
    assert bill.rate_per_hour() == pytest.approx(7.3 + 2 * 35.0 / 730)


def test_a_machine_the_cloud_no_longer_shows_bills_nothing() -> None:
    clock = Clock(0.0)
    bill = Bill("aliyun", clock)
    bill.sync({"i-1": Seen("compute", 16.0, 0.0)})
    clock.advance(1800)
    bill.sync({})  # released
    clock.advance(3600)
    assert bill.total() == pytest.approx(8.0)


def test_cvm_bill_follows_the_stand_in_and_its_action_timer(
        tencent: TencentStandin, tencent_creds: Credentials) -> None:
    clock = Clock(time.time())
    tencent.bill = bill = Bill("tencent", clock)
    p = TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http")
    try:
        group = p.ensure_security_group("ap-guangzhou", "203.0.113.7")
        at = float(int(time.time()) + 3600)
        inst = p.run_instance(LaunchRequest(
            "m-bill00001", "ap-guangzhou", "GN7.2XLARGE32", zone="ap-guangzhou-3",
            security_group=group, disk_gb=100, cloud_timer_at=at))
        p.describe("ap-guangzhou", [inst.cloud_id])  # PENDING → RUNNING
        assert bill.state_of(inst.cloud_id) == "compute"
        clock.advance(1800)
        tencent.shutdown_inside(inst.cloud_id)  # the agent's poweroff: keeps charging
        p.describe("ap-guangzhou", [inst.cloud_id])
        assert bill.state_of(inst.cloud_id) == "keep"
        clock.advance(1800)
        assert tencent.fire_timers(at) == [inst.cloud_id]  # CVM ends it at ActionTime
        p.describe("ap-guangzhou", [inst.cloud_id])
        assert bill.state_of(inst.cloud_id) == "none"
        clock.advance(86_400)
        assert bill.parts().running == pytest.approx(8.68 / 2)
        assert bill.parts().keep == pytest.approx(8.68 / 2)
    finally:
        p.close()
        tencent.bill = None


def test_ecs_bill_stop_charging_keep_charging_and_auto_release(
        aliyun: AliyunStandin, aliyun_creds: Credentials) -> None:
    clock = Clock(float(int(time.time()) // 60 * 60))  # ECS release times are whole minutes
    aliyun.clock = clock
    aliyun.bill = bill = Bill("aliyun", clock)
    p = AliyunProvider(aliyun_creds, endpoint=aliyun.endpoint, protocol="http",
                       sleep=lambda _s: None)
    try:
        group = p.ensure_security_group("cn-hangzhou", "203.0.113.7/32")
        release = clock() + 3 * 3600
        inst = p.run_instance(LaunchRequest(
            "m-bill00002", "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge", zone="cn-hangzhou-i",
            security_group=group, disk_gb=100, image_id="ubuntu_22_04_gpu_cuda12_20240510.vhd",
            on_budget="terminate", cloud_timer_at=release))
        sent = aliyun.params("RunInstances")[-1]
        assert sent["AutoReleaseTime"] == _iso(release)
        for _ in range(3):
            p.describe("cn-hangzhou", [inst.cloud_id])
        assert bill.state_of(inst.cloud_id) == "compute"
        clock.advance(3600)
        p.stop("cn-hangzhou", inst.cloud_id, stopped_mode="StopCharging")
        for _ in range(3):
            p.describe("cn-hangzhou", [inst.cloud_id])
        assert bill.state_of(inst.cloud_id) == "disk"
        clock.advance(3600)
        assert aliyun.release_due() == []
        clock.advance(3600)
        assert aliyun.release_due() == [inst.cloud_id]  # released at its time, on the clock
        assert bill.state_of(inst.cloud_id) == "none"
        parts = bill.parts(clock() + 86_400)
        assert parts.running == pytest.approx(16.0)
        assert parts.disk == pytest.approx(100 * 1.0 * 3 / 730)
        assert base64.b64decode(sent.get("UserData", "") or b"") == b""
    finally:
        aliyun.bill = None
        aliyun.clock = None


def test_ecs_shutdown_from_inside_keeps_charging(aliyun: AliyunStandin,
                                                aliyun_creds: Credentials) -> None:
    clock = Clock(float(int(time.time())))
    aliyun.clock = clock
    aliyun.bill = bill = Bill("aliyun", clock)
    p = AliyunProvider(aliyun_creds, endpoint=aliyun.endpoint, protocol="http",
                       sleep=lambda _s: None)
    try:
        group = p.ensure_security_group("cn-hangzhou", "203.0.113.7/32")
        inst = p.run_instance(LaunchRequest(
            "m-bill00003", "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge", zone="cn-hangzhou-i",
            security_group=group, image_id="ubuntu_22_04_gpu_cuda12_20240510.vhd"))
        for _ in range(3):
            p.describe("cn-hangzhou", [inst.cloud_id])
        aliyun.shutdown_inside(inst.cloud_id)
        assert bill.state_of(inst.cloud_id) == "keep"
        assert aliyun.state.instances[inst.cloud_id]["StoppedMode"] == "KeepCharging"
    finally:
        aliyun.bill = None
        aliyun.clock = None


def test_ec2_bill_from_moto_and_the_shutdown_behaviour(aws: MotoAws) -> None:
    clock = Clock(1_000_000.0)
    ec2 = Ec2Bill(clock)
    aws.publish_dlami("us-east-1")
    provider = aws.provider()
    group = provider.ensure_security_group("us-east-1", "203.0.113.7/32")
    stops = provider.run_instance(LaunchRequest("m-bill00004", "us-east-1", "g5.xlarge",
                                                security_group=group, on_budget="stop"))
    ends = provider.run_instance(LaunchRequest("m-bill00005", "us-east-1", "g5.xlarge",
                                               security_group=group, on_budget="terminate"))
    provider.describe("us-east-1", [stops.cloud_id, ends.cloud_id])  # pending → running
    ec2.sample()
    assert ec2.bill.state_of(stops.cloud_id) == ec2.bill.state_of(ends.cloud_id) == "compute"
    clock.advance(3600)
    assert ec2.os_shutdown(stops.cloud_id) == "stop"  # EC2 follows the shutdown behaviour
    assert ec2.os_shutdown(ends.cloud_id) == "terminate"
    provider.describe("us-east-1", [stops.cloud_id, ends.cloud_id])
    ec2.sample()
    assert ec2.bill.state_of(stops.cloud_id) == "disk"
    assert ec2.bill.state_of(ends.cloud_id) == "none"
    clock.advance(3600)
    assert ec2.bill.parts(instance_id=ends.cloud_id).running == pytest.approx(1.006)
    assert ec2.bill.parts(instance_id=stops.cloud_id).running == pytest.approx(1.006)
