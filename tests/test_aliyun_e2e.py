"""Alibaba Cloud end to end, as on the other clouds: the launcher, the ledger, the machine
actions, ``gpudesk ls`` and cleanup against the ECS/VPC stand-in, which checks the SDK's real
signature and refuses every request that breaks a documented limit (tests/cloud_limits.py).

Launch with failover across zones; tags on the machine, key pair and group; key pair login and
no password; 22/tcp from one /32 only; the public address after stop/start; StopCharging or
why not; terminate and nothing left behind; spot offered only where ECS sells it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aliyun_standin import AliyunStandin
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401

from gpudesk.services.cloud import cleanup
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.accounts import ALIYUN_ENDPOINT_ENV
from gpudesk.services.cloud.launcher import Launcher
from gpudesk.services.cloud.launcher import LaunchPlan
from gpudesk.services.cloud.launcher import probe_ssh
from gpudesk.services.cloud.machines import act
from gpudesk.services.cloud.machines import settle
from gpudesk.services.cloud.providers import base
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.aliyun_groups import MACHINE_GROUP_PREFIX
from gpudesk.services.cloud.providers.base import TAG_LEDGER
from gpudesk.services.cloud.providers.base import TAG_MANAGED
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.reconcile import reconcile
from gpudesk.services.money.ledger import Ledger

REGION = "cn-hangzhou"
A10 = "ecs.gn7i-c8g1.2xlarge"
V100 = "ecs.gn6v-c8g1.2xlarge"  # the stand-in sells it as spot outside cn-hangzhou-h only
A100 = "ecs.gn7e-c16g1.4xlarge"  # the stand-in sells it pay-as-you-go only
ADDRESS = "203.0.113.7/32"
PLAN = LaunchPlan(provider="aliyun", instance_type=A10, region=REGION, allow_from=ADDRESS,
                  gpu="A10", gpus=1, price_per_hour=2.0, disk_gb=100)


@pytest.fixture
def cloud(aliyun: AliyunStandin, aliyun_creds: Credentials, memory_keyring,  # type: ignore[no-untyped-def]  # noqa: F811
          gpudesk_home: Path, monkeypatch: pytest.MonkeyPatch) -> AliyunStandin:
    """The stand-in, with the keys stored as the app stores them and every ``gpudesk``
    call (``ls`` included) pointed at it."""
    credentials.save_credentials(aliyun_creds)
    monkeypatch.setenv(ALIYUN_ENDPOINT_ENV, f"http://{aliyun.endpoint}")
    return aliyun


@pytest.fixture
def providers(cloud: AliyunStandin, aliyun_creds: Credentials  # noqa: F811
              ) -> Callable[[str], AliyunProvider]:
    """One provider for the launcher and the machine actions; its backoff waits are not
    slept (the stand-in's VPC is Available on the next look, whatever the clock)."""
    provider = AliyunProvider(aliyun_creds, endpoint=cloud.endpoint, protocol="http",
                              sleep=lambda _s: None)
    return lambda _name: provider


def _launch(providers: Callable[[str], AliyunProvider], banner_port: int,
            plan: LaunchPlan = PLAN) -> Any:
    with Ledger() as ledger:
        launcher = Launcher(ledger, providers, poll_s=0.0,  # type: ignore[arg-type]
                            ssh_probe=lambda _a: probe_ssh("127.0.0.1", banner_port, 2))
        return asyncio.run(launcher.launch(plan))


def _tags(raw_tags: Any) -> dict[str, str]:
    if isinstance(raw_tags, dict) and "Tag" in raw_tags:
        return {t["TagKey"]: t["TagValue"] for t in raw_tags["Tag"]}
    return dict(raw_tags)


def _ls() -> list[dict[str, Any]]:
    """``gpudesk ls --json`` in this process (it reconciles with the cloud first)."""
    import contextlib
    import io

    from gpudesk.cli.entry import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["ls", "--json"]) == 0
    return list(json.loads(out.getvalue()))


def test_launch_fails_over_and_the_machine_is_gpudesks_alone(
        cloud: AliyunStandin, providers: Callable[[str], AliyunProvider],
        banner_port: int) -> None:
    # cn-hangzhou-h lists A10 in stock, then has none when asked: the next zone gets it.
    cloud.fail_next("RunInstances", "OperationDenied.NoStock", "The requested resource is "
                    "sold out in the specified zone.", zone="cn-hangzhou-h")
    result = _launch(providers, banner_port)
    m = result.machine
    assert m.state == "running" and m.zone == "cn-hangzhou-i" and m.cloud_id.startswith("i-")
    assert [(r.zone, r.error.kind) for r in result.refusals] == [("cn-hangzhou-h", "capacity")]
    tries = cloud.params("RunInstances")
    assert [t["ZoneId"] for t in tries] == ["cn-hangzhou-h", "cn-hangzhou-i"]

    raw = cloud.state.instances[m.cloud_id]
    assert _tags(raw["Tags"]) == {TAG_MANAGED: "1", TAG_LEDGER: m.id}
    key = cloud.state.key_pairs[(REGION, m.key_name)]
    assert _tags(key["Tags"]) == {TAG_MANAGED: "1", TAG_LEDGER: m.id}
    group = cloud.state.groups[m.security_group]
    assert group["SecurityGroupName"] == MACHINE_GROUP_PREFIX + m.id  # its own group
    assert _tags(group["Tags"]) == {TAG_MANAGED: "1", TAG_LEDGER: m.id}
    assert raw["SecurityGroupIds"]["SecurityGroupId"] == [m.security_group]

    # Key pair login only: the pair is attached, no password is sent or inherited.
    sent = tries[-1]
    assert sent["KeyPairName"] == m.key_name == raw["KeyPairName"]
    assert "Password" not in sent and sent["PasswordInherit"].lower() == "false"
    # SSH from the one address, nothing else open.
    (rule,) = [r for r in group["Rules"] if r["Direction"] == "ingress"]
    assert (rule["IpProtocol"], rule["PortRange"], rule["Policy"].lower()) == (
        "TCP", "22/22", "accept")
    source = ipaddress.ip_network(rule["SourceCidrIp"])
    assert source == ipaddress.ip_network(ADDRESS) and source.prefixlen == 32
    assert cloud.limit_refusals == [] and cloud.internal_errors == []


def test_stop_start_shows_the_new_address_and_terminate_leaves_nothing(
        cloud: AliyunStandin, providers: Callable[[str], AliyunProvider],
        banner_port: int) -> None:
    m = _launch(providers, banner_port).machine
    first_ip = cloud.state.instances[m.cloud_id]["PublicIpAddress"]["IpAddress"][0]
    assert [r["public_address"] for r in _ls()] == [first_ip]
    with Ledger() as ledger:
        asyncio.run(act(ledger, m.id, "stop", providers))  # type: ignore[arg-type]
        stopped = asyncio.run(settle(ledger, m.id, providers, poll_s=0.0))  # type: ignore[arg-type]
        assert stopped.state == "stopped" and stopped.public_ip == ""
        assert cloud.params("StopInstances")[-1]["StoppedMode"] == "StopCharging"
        (note,) = [e.detail for e in ledger.events(m.id) if e.step == "stop-billing"]
        assert note.startswith("stopped with StopCharging") and "system disk still bills" in note
        asyncio.run(act(ledger, m.id, "start", providers))  # type: ignore[arg-type]
        started = asyncio.run(settle(ledger, m.id, providers, poll_s=0.0))  # type: ignore[arg-type]
        assert started.state == "running"
    new_ip = cloud.state.instances[m.cloud_id]["PublicIpAddress"]["IpAddress"][0]
    assert new_ip != first_ip  # StopCharging released the old one
    (row,) = _ls()
    assert (row["state"], row["public_address"]) == ("running", new_ip)

    with Ledger() as ledger:
        ended = asyncio.run(act(ledger, m.id, "terminate", providers))  # type: ignore[arg-type]
        assert ended.state == "terminated" and not ended.billing
        assert cloud.params("DeleteInstances")[-1]["Force"].lower() == "true"
        assert cloud.state.instances == {}
        assert cloud.state.groups == {} and cloud.state.key_pairs == {}  # nothing left behind
        report = cleanup.run(ledger, providers)  # type: ignore[arg-type]
        assert report.done == [f"{m.id} {REGION}"] and report.errors == {}
        assert asyncio.run(reconcile(ledger, providers, names=["aliyun"])).billing == []  # type: ignore[arg-type]
    assert cloud.limit_refusals == [] and cloud.internal_errors == []


def test_cleanup_waits_while_the_machine_is_alive_and_finishes_after(
        cloud: AliyunStandin, providers: Callable[[str], AliyunProvider],
        banner_port: int) -> None:
    """A group ECS will not delete yet (DependencyViolation) waits for the next pass."""
    m = _launch(providers, banner_port).machine
    provider = providers("aliyun")
    assert provider.cleanup(REGION) == []  # the machine still uses key and group
    cloud.fail_next("DeleteSecurityGroup", "DependencyViolation", "There is still "
                    "instance(s) in the specified security group.")
    with Ledger() as ledger:
        asyncio.run(act(ledger, m.id, "terminate", providers))  # type: ignore[arg-type]
        assert list(cloud.state.groups) == [m.security_group]  # refused once, kept
        report = cleanup.run(ledger, providers)  # type: ignore[arg-type]
        assert report.done == [f"{m.id} {REGION}"]
        assert cloud.state.groups == {} and cloud.state.key_pairs == {}
        assert provider.leftovers(REGION) == []


def test_stop_says_why_stop_charging_did_not_apply(
        cloud: AliyunStandin, providers: Callable[[str], AliyunProvider],
        banner_port: int) -> None:
    cloud.keep_charging_types.add(A10)  # as ECS does for types with local SSDs
    m = _launch(providers, banner_port).machine
    with Ledger() as ledger:
        asyncio.run(act(ledger, m.id, "stop", providers))  # type: ignore[arg-type]
        (note,) = [e.detail for e in ledger.events(m.id) if e.step == "stop-billing"]
    assert cloud.params("StopInstances")[-1]["StoppedMode"] == "StopCharging"  # asked for
    assert note.startswith("stopped with KeepCharging")
    assert f"this type ({A10}) does not allow StopCharging" in note
    assert "bills as if running" in note


def test_spot_is_offered_and_launched_only_where_ecs_sells_it(
        cloud: AliyunStandin, providers: Callable[[str], AliyunProvider],
        banner_port: int) -> None:
    provider = providers("aliyun")
    offers = provider.live_offers(REGION)
    spot = {(o.instance_type, o.zone) for o in offers if o.market == "spot"}
    on_demand = {(o.instance_type, o.zone) for o in offers if o.market == "on-demand"}
    zones = ["cn-hangzhou-h", "cn-hangzhou-i", "cn-hangzhou-j"]
    assert {(A100, z) for z in zones} <= on_demand and not {(A100, z) for z in zones} & spot
    assert (V100, "cn-hangzhou-h") in on_demand and (V100, "cn-hangzhou-h") not in spot
    assert {(V100, "cn-hangzhou-i"), (V100, "cn-hangzhou-j")} <= spot
    assert {(A10, z) for z in zones} <= spot
    # The answer that decides it: DescribeAvailableResource with a SpotStrategy.
    asked = [q for q in cloud.params("DescribeAvailableResource")
             if q.get("SpotStrategy") == "SpotAsPriceGo"]
    assert {q["InstanceType"] for q in asked} >= {A10, V100, A100}
    # A spot price sold out for now is still offered, marked unavailable, in ECS's words.
    cloud.sell_out("cn-hangzhou-i", A10)
    sold_out = [o for o in provider.live_offers(REGION) if o.market == "spot"
                and (o.instance_type, o.zone) == (A10, "cn-hangzhou-i")]
    assert [(o.available, o.reason) for o in sold_out] == [(False, "WithoutStock")]

    # A spot launch of the V100 with no zone goes where spot is sold, never to -h.
    assert base.ZoneChoice("cn-hangzhou-h", False, "not offered") in provider.zone_choices(
        REGION, V100, "spot")
    plan = LaunchPlan(provider="aliyun", instance_type=V100, region=REGION, market="spot",
                      allow_from=ADDRESS, price_per_hour=3.0)
    m = _launch(providers, banner_port, plan).machine
    assert (m.zone, m.market) == ("cn-hangzhou-i", "spot")
    assert [q["ZoneId"] for q in cloud.params("RunInstances")] == ["cn-hangzhou-i"]
    # And asked there anyway, ECS refuses: a capacity refusal the launcher fails over on.
    with pytest.raises(base.ProviderError) as refused:
        provider.run_instance(base.LaunchRequest(
            "m-00000000aa", REGION, V100, "spot", "cn-hangzhou-h", allow_from=ADDRESS,
            security_group=m.security_group, key_name=m.key_name))
    assert refused.value.kind == "capacity"
    assert "InvalidResourceType.NotSupported" in refused.value.detail
    assert cloud.limit_refusals == [] and cloud.internal_errors == []
