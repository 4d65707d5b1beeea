""""Allow my new address": the machine's /32 moves, rules the user added stay (both clouds)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401

from gpudesk.cli.entry import main
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.accounts import TENCENT_ENDPOINT_ENV
from gpudesk.services.cloud.allow_me import address_mismatch
from gpudesk.services.cloud.allow_me import allow_me
from gpudesk.services.cloud.launcher import Launcher
from gpudesk.services.cloud.launcher import LaunchPlan
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.money.ledger import Ledger

OLD = "203.0.113.7/32"
NEW = "198.51.100.77/32"
THEIRS = "192.0.2.50/32"  # a colleague's address the user opened by hand


@pytest.fixture
def ledger(gpudesk_home) -> Iterator[Ledger]:  # type: ignore[no-untyped-def]
    with Ledger() as ledger:
        yield ledger


@pytest.fixture
def tencent_cloud(tencent, tencent_creds, memory_keyring, monkeypatch):  # type: ignore[no-untyped-def]  # noqa: F811
    monkeypatch.setenv(TENCENT_ENDPOINT_ENV, f"http://{tencent.endpoint}")
    credentials.save_credentials(tencent_creds)
    return tencent


def _ingress(cloud, group_id: str) -> list[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    return sorted((r["Port"], r["CidrBlock"], r["PolicyDescription"])
                  for r in cloud.state.groups[group_id]["Ingress"])


def test_tencent_allow_me_replaces_only_gpudesks_rule(tencent_cloud, ledger,  # type: ignore[no-untyped-def]
                                                      capsys) -> None:
    plan = LaunchPlan(provider="tencent", instance_type="GN7.2XLARGE32", region="ap-guangzhou",
                      allow_from=OLD, wait_ssh=False)
    m = asyncio.run(Launcher(ledger, poll_s=0.0).launch(plan)).machine
    for port in ("22", "8888"):
        tencent_cloud.add_rule(m.security_group, "Ingress", {
            "Protocol": "TCP", "Port": port, "CidrBlock": THEIRS, "Ipv6CidrBlock": "",
            "Action": "ACCEPT", "PolicyDescription": "mine"})
    assert address_mismatch(ledger, m.id, OLD) is None
    assert address_mismatch(ledger, m.id, NEW) == (NEW, [OLD])
    result = allow_me(ledger, m.id, NEW)
    assert (result.address, result.replaced) == (NEW, [OLD])
    assert _ingress(tencent_cloud, m.security_group) == sorted([
        ("22", NEW, "gpudesk: SSH from one address"), ("22", THEIRS, "mine"),
        ("8888", THEIRS, "mine")])
    assert address_mismatch(ledger, m.id, NEW) is None
    # The command line: the same, back to the old address, as JSON.
    assert main(["allow-me", m.id, "--address", OLD, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["address"], out["replaced"], out["id"]) == (OLD, [NEW], m.id)
    assert ("22", OLD, "gpudesk: SSH from one address") in _ingress(tencent_cloud,
                                                                     m.security_group)
    steps = [e.step for e in ledger.events(m.id)]
    assert steps.count("allow-me") == 2


def test_a_wide_address_is_refused_before_any_call(tencent_cloud, ledger) -> None:  # type: ignore[no-untyped-def]
    plan = LaunchPlan(provider="tencent", instance_type="GN7.2XLARGE32", region="ap-guangzhou",
                      allow_from=OLD, wait_ssh=False)
    m = asyncio.run(Launcher(ledger, poll_s=0.0).launch(plan)).machine
    calls = sum(tencent_cloud.calls.values())
    for wide in ("0.0.0.0/0", "198.51.100.0/24"):
        with pytest.raises(ProviderError) as info:
            allow_me(ledger, m.id, wide)
        assert info.value.kind == "invalid"
    assert sum(tencent_cloud.calls.values()) == calls
    with pytest.raises(ProviderError) as info:
        allow_me(ledger, "m-nope", NEW)
    assert info.value.kind == "not-found"


def test_aws_allow_me_replaces_only_gpudesks_rule(aws, memory_keyring, ledger) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami("us-east-1")
    plan = LaunchPlan(provider="aws", instance_type="g5.xlarge", region="us-east-1",
                      allow_from=OLD, wait_ssh=False, disk_gb=120)
    m = asyncio.run(Launcher(ledger, poll_s=0.0).launch(plan)).machine
    ec2 = aws.client("ec2")
    ec2.authorize_security_group_ingress(GroupId=m.security_group, IpPermissions=[
        {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22,
         "IpRanges": [{"CidrIp": THEIRS, "Description": "mine"}]},
        {"IpProtocol": "tcp", "FromPort": 8888, "ToPort": 8888, "IpRanges": [{"CidrIp": THEIRS}]}])
    assert address_mismatch(ledger, m.id, NEW) == (NEW, [OLD])
    result = allow_me(ledger, m.id, NEW)
    assert result.replaced == [OLD]
    group = ec2.describe_security_groups(GroupIds=[m.security_group])["SecurityGroups"][0]
    sources = sorted((p["FromPort"], r["CidrIp"]) for p in group["IpPermissions"]
                     for r in p.get("IpRanges", []))
    assert sources == sorted([(22, NEW), (22, THEIRS), (8888, THEIRS)])
    assert address_mismatch(ledger, m.id, NEW) is None
