"""A launch records the cloud's timer as the cloud holds it, not as gpudesk asked (issue 21,
"timers that follow the machine": read back after every change, the launch included).

Against the Tencent and Aliyun stand-ins (real SDKs). Each stand-in is made to keep another
moment than the one asked for, as a cloud may (ECS keeps whole minutes and pushes a release
under its floor out; a cloud may round or move a timer): the ledger and ``show --json`` must
then say the cloud's moment, read from the stand-in's own state.
"""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC
from datetime import datetime
from typing import Any

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

from gpudesk.cli.entry import main
from gpudesk.services.cloud.launcher import Launcher
from gpudesk.services.cloud.launcher import LaunchPlan
from gpudesk.services.cloud.providers import aliyun_parse as ap
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote import first_boot

MOVED_S = 7 * 60.0  # how far the stand-in moves the timer it was asked for


def _cvm_at(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def _cvm_text(at: float) -> str:
    return datetime.fromtimestamp(int(at), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _launch(ledger: Ledger, providers: Callable[[str], Any], plan: LaunchPlan) -> Machine:
    launcher = Launcher(ledger, providers, poll_s=0.0,
                        first_boot=first_boot.for_launch(lambda: Settings(), ledger))
    return asyncio.run(launcher.launch(plan)).machine


def _show(ref: str, capsys: pytest.CaptureFixture[str]) -> Any:
    capsys.readouterr()
    assert main(["show", ref, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_cvm_launch_records_the_action_timer_cvm_holds(
        tencent: TencentStandin, tencent_creds: Credentials, memory_keyring: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    original = tencent._add_timer

    def moved(instance_id: str, timer: dict[str, Any]) -> str:
        # the cloud keeps the timer seven minutes later than asked
        return original(instance_id, {**timer, "ActionTime": _cvm_text(
            _cvm_at(str(timer["ActionTime"])) + MOVED_S)})

    tencent._add_timer = moved  # type: ignore[method-assign]
    provider = TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http")
    plan = LaunchPlan(provider="tencent", instance_type="GN7.2XLARGE32", region="ap-guangzhou",
                      zone="ap-guangzhou-3", allow_from="203.0.113.7/32", price_per_hour=1.2,
                      budget=12.0, on_budget="terminate", cny_per_usd=7.0, wait_ssh=False)
    try:
        with Ledger() as ledger:
            m = _launch(ledger, lambda _n: provider, plan)
            steps = [e.step for e in ledger.events(m.id)]
    finally:
        provider.close()
    (sent,) = [p for a, _r, p in tencent.requests if a == "RunInstances"]
    asked = _cvm_at(sent["ActionTimer"]["ActionTime"])
    (held,) = [t for t in tencent.state.action_timers.values()
               if t["InstanceId"] == m.cloud_id and t["Status"] == "UNDO"]
    cloud_at = _cvm_at(held["ActionTime"])
    assert cloud_at == asked + MOVED_S  # the stand-in did move it
    assert "DescribeInstancesActionTimer" in [a for a, _r, _p in tencent.requests]
    assert m.cloud_timer_at == cloud_at  # the ledger: what CVM holds
    assert steps.index("guard-read") > steps.index("instance")
    shown = _show(m.id, capsys)
    assert shown["guard"]["cloud_timer_at"] == held["ActionTime"]
    assert "cloud-timer" in shown["guard"]["enforced_by"]


def test_an_ecs_launch_records_the_release_time_ecs_holds(
        aliyun: AliyunStandin, aliyun_creds: Credentials, memory_keyring: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    original = aliyun._RunInstances

    def moved(region: str, q: dict[str, str]) -> dict[str, Any]:
        answer = original(region, q)
        for iid in answer["InstanceIdSets"]["InstanceIdSet"]:
            raw = aliyun.state.instances[iid]
            at = ap.parse_time(raw["AutoReleaseTime"])
            assert at is not None
            raw["AutoReleaseTime"] = ap.format_time(at + MOVED_S)  # ECS pushed it out
        return answer

    aliyun._RunInstances = moved  # type: ignore[method-assign]
    provider = AliyunProvider(aliyun_creds, endpoint=aliyun.endpoint, protocol="http",
                              sleep=lambda _s: None)
    # ¥14.4 at ~¥14.4/h: a release about an hour ahead
    plan = LaunchPlan(provider="aliyun", instance_type="ecs.gn7i-c8g1.2xlarge",
                      region="cn-hangzhou", allow_from="203.0.113.7/32", price_per_hour=2.0,
                      budget=2.0, on_budget="terminate", cny_per_usd=7.2, wait_ssh=False)
    try:
        with Ledger() as ledger:
            m = _launch(ledger, lambda _n: provider, plan)
    finally:
        provider.close()
    (sent,) = aliyun.params("RunInstances")
    asked = ap.parse_time(sent["AutoReleaseTime"])
    held = aliyun.state.instances[m.cloud_id]["AutoReleaseTime"]
    cloud_at = ap.parse_time(held)
    assert asked is not None and cloud_at == asked + MOVED_S
    assert m.cloud_timer_at == cloud_at != asked
    shown = _show(m.id, capsys)
    assert _cvm_at(shown["guard"]["cloud_timer_at"]) == cloud_at


def test_a_timer_the_cloud_did_not_keep_is_not_claimed(
        tencent: TencentStandin, tencent_creds: Credentials, memory_keyring: Any) -> None:
    """CVM took the machine but holds no timer for it (dropped, or deleted meanwhile): the
    ledger says no timer, and the cloud timer no longer counts among the enforcers."""
    original = tencent._RunInstances

    def dropped(region: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = original(region, params)
        for timer in tencent.state.action_timers.values():
            if timer["InstanceId"] in answer["InstanceIdSet"]:
                timer["Status"] = "DONE"  # not pending any more: nothing will act
        return answer

    tencent._RunInstances = dropped  # type: ignore[method-assign]
    provider = TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http")
    plan = LaunchPlan(provider="tencent", instance_type="GN7.2XLARGE32", region="ap-guangzhou",
                      zone="ap-guangzhou-3", allow_from="203.0.113.7/32", price_per_hour=1.2,
                      budget=12.0, on_budget="terminate", cny_per_usd=7.0, wait_ssh=False)
    try:
        with Ledger() as ledger:
            m = _launch(ledger, lambda _n: provider, plan)
    finally:
        provider.close()
    assert [a for a, _r, p in tencent.requests if a == "RunInstances"]
    assert m.cloud_timer_at is None
    assert "cloud-timer" not in m.enforced_by.split(",")
