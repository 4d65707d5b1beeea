"""Every request gpudesk makes is one the cloud would accept (issue 24).

gpudesk's real request paths are driven against each cloud's stand-in (Alibaba Cloud, Tencent
Cloud) or moto (AWS), every request is recorded as it left (at the stand-in; through a
botocore ``before-parameter-build`` hook for AWS), and each is checked against the cloud's
table of documented limits in ``tests/cloud_limits.py``: zero violations. The Aliyun stand-in
refuses a violation itself, in ECS's own words; that refusal is tested here too, against the
answer ECS gave gpudesk in the field (``PageSize=100`` on DescribeSecurityGroups).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

import botocore.handlers
import cloud_limits
import pytest
from alibabacloud_ecs20140526 import models as ecs_models
from alibabacloud_vpc20160428 import models as vpc_models
from aliyun_standin import AliyunStandin
from aliyun_standin import sdk_client
from aliyun_standin import vpc_sdk_client
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from darabonba.runtime import RuntimeOptions
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

from gpudesk.services.cloud.providers import base
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.base import ProviderError

PUBLIC_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQgpudeskTestKeyOnlyForTheStandinServer00 me@lap"
ED25519_KEY = Ed25519PrivateKey.generate().public_key().public_bytes(  # moto parses the key
    serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode() + " me@lap"
MY_IP = "203.0.113.7"
RUNTIME = RuntimeOptions(autoretry=False, max_attempts=1)
GPUDESK_TAG = {base.TAG_MANAGED: "1"}


def _refusal(call: Callable[[], Any]) -> tuple[str, str, int]:
    """(Code, Message, HTTP status) of the error the real SDK raised."""
    with pytest.raises(Exception) as info:  # noqa: PT011 - the SDK's ClientException family
        call()
    data = getattr(info.value, "data", None) or {}
    return str(data.get("Code")), str(data.get("Message")), int(data.get("statusCode") or 0)


# --------------------------------------------------------------------------- the table itself


def test_check_speaks_each_clouds_words_and_reads_flat_and_nested_alike() -> None:
    page_100 = 'InvalidParameter: The specified parameter "PageSize" is not valid.'
    assert cloud_limits.check("aliyun", "DescribeSecurityGroups", {"PageSize": "100"}) == [
        page_100]
    assert cloud_limits.check("aliyun", "DescribeSecurityGroups", {"PageSize": 50}) == []
    assert cloud_limits.split(page_100) == (
        "InvalidParameter", 'The specified parameter "PageSize" is not valid.')
    nested = {"Tag": [{"Key": f"k{i}", "Value": "v"} for i in range(21)]}
    flat = {f"Tag.{i + 1}.Key": f"k{i}" for i in range(21)}
    assert cloud_limits.check("aliyun", "RunInstances", nested) == cloud_limits.check(
        "aliyun", "RunInstances", flat) == [
        'InvalidParameter: The specified parameter "Tag" is not valid.']
    assert cloud_limits.check("aliyun", "RunInstances", {
        "AutoReleaseTime": "2026-01-01T00:00Z"}) == [
        "InvalidAutoReleaseTime.Malformed: The specified parameter AutoReleaseTime is not "
        "valid."]
    assert cloud_limits.check("aliyun", "AuthorizeSecurityGroup", {"Permissions": [
        {"IpProtocol": "tcp", "PortRange": "22/22", "SourceCidrIp": "10.0.0.1/33"}]})
    assert cloud_limits.check("aws", "DescribeInstances", {
        "MaxResults": 5, "InstanceIds": ["i-1"]})  # "cannot specify … in the same request"
    assert cloud_limits.check("tencent", "StopInstances", {"StoppedMode": "STOP"})
    assert cloud_limits.check("aliyun", "NoSuchAction", {"PageSize": 10**6}) == []
    # Every row says where it comes from.
    for cloud, table in cloud_limits.TABLES.items():
        for action, rules in table.items():
            for rule in rules:
                assert rule.source, (cloud, action, rule.param)


def test_standin_refuses_page_size_100_exactly_as_ecs_does(aliyun: AliyunStandin) -> None:  # noqa: F811
    ecs = sdk_client(aliyun)
    assert _refusal(lambda: ecs.describe_security_groups_with_options(
        ecs_models.DescribeSecurityGroupsRequest(region_id="cn-hangzhou", page_size=100),
        RUNTIME)) == ("InvalidParameter", 'The specified parameter "PageSize" is not valid.',
                      400)
    ecs.describe_security_groups_with_options(ecs_models.DescribeSecurityGroupsRequest(
        region_id="cn-hangzhou", page_size=50), RUNTIME)  # the most ECS documents
    assert _refusal(lambda: ecs.describe_key_pairs_with_options(
        ecs_models.DescribeKeyPairsRequest(region_id="cn-hangzhou", page_size=51),
        RUNTIME))[0] == "InvalidParameter"
    assert _refusal(lambda: ecs.describe_security_groups_with_options(
        ecs_models.DescribeSecurityGroupsRequest(region_id="cn-hangzhou", max_results=101),
        RUNTIME))[0] == "InvalidParameter"
    vpc = vpc_sdk_client(aliyun)
    for request, call in ((vpc_models.DescribeVpcsRequest(region_id="cn-hangzhou",
                                                           page_size=51),
                           vpc.describe_vpcs_with_options),
                          (vpc_models.DescribeVSwitchesRequest(region_id="cn-hangzhou",
                                                               page_size=51),
                           vpc.describe_vswitches_with_options)):
        assert _refusal(lambda r=request, c=call: c(r, RUNTIME))[:2] == (  # type: ignore[misc]
            "InvalidParameter", 'The specified parameter "PageSize" is not valid.')
    assert [a for a, _ in aliyun.limit_refusals] == [
        "DescribeSecurityGroups", "DescribeKeyPairs", "DescribeSecurityGroups",
        "DescribeVpcs", "DescribeVSwitches"]


# --------------------------------------------------------------------------- Alibaba Cloud


@pytest.fixture
def ali(aliyun: AliyunStandin, aliyun_creds: Credentials) -> Iterator[AliyunProvider]:  # noqa: F811
    p = AliyunProvider(aliyun_creds, endpoint=aliyun.endpoint, protocol="http",
                       sleep=lambda _s: None)
    yield p
    p.close()


def test_gpudesk_pages_through_every_page_in_the_documented_sizes(
        aliyun: AliyunStandin, ali: AliyunProvider) -> None:  # noqa: F811
    region = "cn-hangzhou"
    vpc = aliyun.add_vpc(region, "mine")
    groups = {aliyun.add_group(vpc, f"g{i}", tags=GPUDESK_TAG) for i in range(130)}
    keys = {ali.ensure_key_pair(region, f"gpudesk-k{i:02}", PUBLIC_KEY) for i in range(60)}
    for i in range(55):  # more gpudesk VPCs than one page holds
        aliyun.add_vpc(region, f"v{i}", tags=GPUDESK_TAG, cidr="172.16.0.0/16")
    assert set(ali.leftovers(region)) == groups | keys  # every page of both
    ali.ensure_network(region, "")  # DescribeVpcs over two pages of 50
    sg = aliyun.params("DescribeSecurityGroups")
    assert [(q.get("MaxResults"), q.get("NextToken", "")) for q in sg] == [
        ("100", ""), ("100", "standin-100")]
    assert all("PageSize" not in q for q in sg)
    kp = [q for q in aliyun.params("DescribeKeyPairs") if "Tag.1.Key" in q]
    assert [(q["PageNumber"], q["PageSize"]) for q in kp] == [("1", "50"), ("2", "50")]
    vpcs = aliyun.params("DescribeVpcs")
    assert [(q["PageNumber"], q["PageSize"]) for q in vpcs][:2] == [("1", "50"), ("2", "50")]
    assert aliyun.limit_refusals == [] and aliyun.internal_errors == []


def _drive(provider: Any, region: str, instance_type: str, zone: str,
           public_key: str = PUBLIC_KEY) -> list[str]:
    """Every request path of a provider a launch and a machine's life take; the
    ProviderErrors a stand-in's quirks cause are returned, not raised (what was sent is
    what is checked)."""
    errors: list[str] = []

    def step(call: Callable[[], Any]) -> Any:
        try:
            return call()
        except ProviderError as err:
            errors.append(f"{err.kind}: {err.detail or err.message()}")
            return None

    step(provider.verify)
    key = step(lambda: provider.ensure_key_pair(region, "gpudesk-conformance", public_key))
    shared = step(lambda: provider.ensure_security_group(region, f"{MY_IP}/32"))
    own = getattr(provider, "ensure_machine_group", None)
    group = (step(lambda: own(region, "m-00000000c1", f"{MY_IP}/32")) if own else None) or shared
    step(lambda: provider.set_ssh_address(region, group, "198.51.100.9/32"))
    step(lambda: provider.set_ssh_address(region, group, f"{MY_IP}/32"))
    step(lambda: provider.find_image(region, instance_type))
    step(lambda: provider.zone_choices(region, instance_type))
    step(lambda: provider.zone_choices(region, instance_type, "spot"))
    step(lambda: provider.live_offers(region))
    step(lambda: provider.spot_price_history(region, zone, instance_type, time.time() - 3600))
    made = []
    for ledger_id, market, cap in (("m-00000000c1", "on-demand", None),
                                   ("m-00000000c2", "spot", 50.0),
                                   ("m-00000000c3", "spot", None)):
        inst = step(lambda lid=ledger_id, mk=market, mp=cap: provider.run_instance(
            LaunchRequest(lid, region, instance_type, mk, zone, mp, key_name=key or "",
                          security_group=group or "", allow_from=f"{MY_IP}/32",
                          client_token=f"{lid}-1", budget=20.0, on_budget="terminate",
                          price_per_hour=2.0, cloud_timer_at=time.time() + 7200,
                          user_data="#!/bin/sh\necho gpudesk\n")))
        if inst is not None:
            made.append(inst.cloud_id)
    for cloud_id in made:
        for _ in range(3):
            step(lambda c=cloud_id: provider.describe(region, [c]))
    step(lambda: provider.list_managed(region))
    note = getattr(provider, "stop_note", None)
    if made:
        first = made[0]
        step(lambda: provider.set_guard(region, first, "terminate", "on-demand",
                                        time.time() + 3 * 3600))
        step(lambda: provider.set_guard(region, first, "terminate", "on-demand", None))
        step(lambda: provider.stop(region, first))
        if note is not None:
            step(lambda: note(region, first))
        for _ in range(3):
            step(lambda: provider.describe(region, [first]))
        step(lambda: provider.start(region, first))
    for cloud_id in made:
        step(lambda c=cloud_id: provider.terminate(region, c))
    step(lambda: provider.cleanup(region))
    step(lambda: provider.leftovers(region))
    return errors


def _violations(cloud: str, requests: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [f"{action}: {v}" for action, params in requests
            for v in cloud_limits.check(cloud, action, params)]


def test_every_aliyun_request_is_within_ecs_and_vpc_limits(
        aliyun: AliyunStandin, ali: AliyunProvider) -> None:  # noqa: F811
    assert _drive(ali, "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge", "cn-hangzhou-i") == []
    sent = [(action, query) for action, _region, query in aliyun.requests]
    assert _violations("aliyun", sent) == []
    assert aliyun.limit_refusals == [] and aliyun.internal_errors == []
    actions = {action for action, _ in sent}
    # The paths were really taken, and every action gpudesk sends has its row of limits.
    assert {"RunInstances", "DescribeSecurityGroups", "DescribeKeyPairs", "DescribeVpcs",
            "DescribeVSwitches", "CreateSecurityGroup", "AuthorizeSecurityGroup",
            "RevokeSecurityGroup", "StopInstances", "StartInstances", "DeleteInstances",
            "ModifyInstanceAutoReleaseTime", "TagResources", "DeleteSecurityGroup",
            "DeleteKeyPairs", "DescribeSpotPriceHistory", "DescribePrice"} <= actions
    assert actions <= cloud_limits.actions("aliyun"), actions - cloud_limits.actions("aliyun")
    launches = [q for a, q in sent if a == "RunInstances"]
    assert {q["SpotStrategy"] for q in launches} == {"NoSpot", "SpotWithPriceLimit",
                                                     "SpotAsPriceGo"}
    assert all(q.get("AutoReleaseTime") for q in launches)


# --------------------------------------------------------------------------- Tencent Cloud


def test_every_tencent_request_is_within_cvm_and_vpc_limits(
        tencent: TencentStandin, tencent_creds: Credentials) -> None:  # noqa: F811
    from gpudesk.services.cloud.providers.tencent import TencentProvider

    provider = TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http",
                               sleep=lambda _s: None)
    try:
        assert _drive(provider, "ap-guangzhou", "GN7.2XLARGE32", "ap-guangzhou-3") == []
    finally:
        provider.close()
    sent = [(action, params) for action, _region, params in tencent.requests]
    actions = {action for action, _ in sent}
    assert {"RunInstances", "DescribeInstances", "StopInstances", "DescribeKeyPairs"} <= actions
    assert _violations("tencent", sent) == []


# --------------------------------------------------------------------------- AWS


@pytest.fixture
def recorded_ec2(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """Each EC2 request's parameters as botocore builds it, from every session made after."""
    seen: list[tuple[str, dict[str, Any]]] = []

    def record(params: dict[str, Any], model: Any, **_kw: Any) -> None:
        seen.append((model.name, dict(params)))

    monkeypatch.setattr(botocore.handlers, "BUILTIN_HANDLERS", [
        *botocore.handlers.BUILTIN_HANDLERS, ("before-parameter-build.ec2", record)])
    return seen


def test_every_aws_request_is_within_ec2_limits(
        aws: MotoAws, recorded_ec2: list[tuple[str, dict[str, Any]]]) -> None:  # noqa: F811
    aws.publish_dlami("us-east-1")
    provider = aws.provider()
    assert _drive(provider, "us-east-1", "g5.xlarge", "us-east-1a", ED25519_KEY) == []
    actions = {action for action, _ in recorded_ec2}
    assert {"RunInstances", "DescribeInstances", "DescribeSecurityGroups", "ImportKeyPair",
            "AuthorizeSecurityGroupIngress", "StopInstances", "TerminateInstances"} <= actions
    assert _violations("aws", recorded_ec2) == []
