"""Tencent keep-alive groups (AS) end to end: the provider through the real SDK's CommonClient
against the AS stand-in (tests/tencent_as_standin.py), which checks TC3 signatures and the
documented limits, and keeps its members as real machines in the CVM stand-in's state."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from standin_http import fresh_standin
from tencent_as_standin import AS_VERSION
from tencent_as_standin import TencentAsStandin
from tencent_as_standin import as_client
from tencent_standin import SECRET_ID
from tencent_standin import SECRET_KEY
from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException

from gpudesk.services.cloud.keep_alive import KeepAliveGroups
from gpudesk.services.cloud.keep_alive import group_name
from gpudesk.services.cloud.providers import base
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.cloud.providers.tencent_keep_alive import END_ACTION_NAME
from gpudesk.services.cloud.providers.tencent_keep_alive import beijing_time
from gpudesk.services.cloud.providers.user_data import decode_base64

REGION = "ap-guangzhou"
TYPE = "GN7.2XLARGE32"
PUBLIC_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQgpudeskTestKeyOnlyForTheStandinServer00 me@lap"
USER_DATA = "#!/bin/bash\nset -eu\necho 'resume run r-1 from the bucket' > /var/log/gpudesk\n"
ROLE = "gpudesk-machine"


@pytest.fixture(scope="module")
def as_server() -> Iterator[TencentAsStandin]:
    server = TencentAsStandin().start()
    yield server
    server.stop()


@pytest.fixture
def cloud(as_server: TencentAsStandin, monkeypatch: pytest.MonkeyPatch) -> TencentAsStandin:
    return fresh_standin(as_server, SECRET_ID, SECRET_KEY, monkeypatch)


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def provider(cloud: TencentAsStandin, sleeps: Sleeps) -> Iterator[TencentProvider]:
    p = TencentProvider(Credentials(provider="tencent", key_id=SECRET_ID, secret=SECRET_KEY),
                        endpoint=cloud.endpoint, protocol="http", sleep=sleeps)
    yield p
    p.close()


def _request(provider: TencentProvider, ledger_id: str = "m-0a1b2c3d4e", **kw: Any
             ) -> LaunchRequest:
    key = provider.ensure_key_pair(REGION, "gpudesk-laptop", PUBLIC_KEY)
    values: dict[str, Any] = {
        "ledger_id": ledger_id, "region": REGION, "instance_type": TYPE, "market": "spot",
        "allow_from": "203.0.113.7/32", "key_name": key, "user_data": USER_DATA,
        "budget": 60.0, "price_per_hour": 2.6, "cloud_timer_at": time.time() + 3 * 3600.5}
    values.update(kw)
    return LaunchRequest(**values)


def _code(call: Any) -> str:
    with pytest.raises(TencentCloudSDKException) as info:
        call()
    return str(info.value.code)


def test_create_makes_a_spot_configuration_a_group_and_a_tagged_member(
        provider: TencentProvider, cloud: TencentAsStandin) -> None:
    assert isinstance(provider, KeepAliveGroups)
    request = _request(provider)
    state = provider.create_group(request, role_name=ROLE)

    (config,) = cloud.configs.values()
    assert config["LaunchConfigurationName"] == group_name(request.ledger_id)
    assert decode_base64(config["UserData"]) == USER_DATA
    assert config["InstanceChargeType"] == "SPOTPAID"
    # no max price: the bid is the zone's on-demand price (Tencent never charges above it)
    assert config["InstanceMarketOptions"] == {
        "MarketType": "spot", "SpotOptions": {"MaxPrice": "8.68",
                                              "SpotInstanceType": "one-time"}}
    assert config["CamRoleName"] == ROLE
    assert config["LoginSettings"] == {"KeyIds": [request.key_name]}
    assert {t["Key"]: t["Value"] for t in config["InstanceTags"]} == request.tags()
    (group,) = cloud.groups.values()
    assert (group["MaxSize"], group["MinSize"], group["DesiredCapacity"]) == (1, 0, 1)
    assert (group["RetryPolicy"], group["HealthCheckType"], group["CapacityRebalance"]) == (
        "INCREMENTAL_INTERVALS", "CVM", True)
    assert group["VpcId"] == "vpc-default0" and len(group["SubnetIdSet"]) == 3  # 3 zones sell

    assert state.group_id == group["AutoScalingGroupId"] and state.region == REGION
    assert state.desired == 1 and state.ledger_id == request.ledger_id
    assert state.end_at == math.floor(request.cloud_timer_at or 0)  # read back, to the second
    (member,) = state.members
    (machine,) = provider.describe(REGION, [member.cloud_id])  # a real CVM machine
    assert machine.market == "spot" and machine.ledger_id == request.ledger_id
    assert machine.tags[base.TAG_MANAGED] == "1"
    assert cloud.role_of(member.cloud_id) == ROLE
    assert decode_base64(cloud.state.instances[member.cloud_id]["_user_data"]) \
        == USER_DATA
    again = provider.describe_group(REGION, state.group_id)
    assert again is not None and [m.state for m in again.members] == ["IN_SERVICE"]

    # idempotent on the ledger id: a second call finds what the first made
    calls = dict(cloud.calls)
    twice = provider.create_group(request, role_name=ROLE)
    assert twice.group_id == state.group_id
    assert (len(cloud.configs), len(cloud.groups), len(cloud.actions)) == (1, 1, 1)
    assert cloud.calls["CreateLaunchConfiguration"] == calls["CreateLaunchConfiguration"] == 1
    assert cloud.calls["CreateScheduledAction"] == 1


def test_scheduled_end_is_read_back_and_moved(provider: TencentProvider,
                                              cloud: TencentAsStandin) -> None:
    request = _request(provider)
    state = provider.create_group(request)
    (action,) = cloud.actions.values()
    assert action["StartTime"] == beijing_time(request.cloud_timer_at or 0)
    assert action["StartTime"].endswith("+08:00")
    assert (action["MaxSize"], action["MinSize"], action["DesiredCapacity"]) == (0, 0, 0)
    assert action["ScheduledActionName"] == END_ACTION_NAME
    assert state.end_action_id == action["ScheduledActionId"]

    later = time.time() + 7 * 3600 + 0.75
    assert provider.schedule_end(REGION, state.group_id, later) == math.floor(later)
    moved = provider.describe_group(REGION, state.group_id)
    assert moved is not None and moved.end_at == math.floor(later)
    assert moved.end_action_id == state.end_action_id and len(cloud.actions) == 1
    assert cloud.calls["ModifyScheduledAction"] == 1


def test_a_reclaimed_member_is_replaced_on_the_next_tick(provider: TencentProvider,
                                                         cloud: TencentAsStandin) -> None:
    state = provider.create_group(_request(provider))
    (first,) = state.members
    cloud.reclaim(first.cloud_id)
    started = cloud.tick()
    assert len(started) == 1 and started[0] != first.cloud_id
    now = provider.describe_group(REGION, state.group_id)
    assert now is not None and now.desired == 1
    assert [m.cloud_id for m in now.members] == started
    (gone,) = provider.describe(REGION, [first.cloud_id])
    assert gone.state == base.STATE_TERMINATED
    (new,) = provider.describe(REGION, started)
    assert new.ledger_id == state.ledger_id and new.market == "spot"


def test_the_scheduled_action_ends_the_group_at_its_time(provider: TencentProvider,
                                                         cloud: TencentAsStandin) -> None:
    state = provider.create_group(_request(provider))
    assert state.end_at is not None
    (member,) = state.members
    assert cloud.run_scheduled(state.end_at - 1) == []  # not yet
    assert cloud.members(state.group_id)
    assert cloud.run_scheduled(state.end_at) == [state.end_action_id]
    after = provider.describe_group(REGION, state.group_id)
    assert after is not None and after.desired == 0 and after.members == []
    (machine,) = provider.describe(REGION, [member.cloud_id])
    assert machine.state == base.STATE_TERMINATED
    assert cloud.tick() == []  # desired 0: nothing replaces it


def test_end_group_removes_everything_and_is_idempotent(provider: TencentProvider,
                                                        cloud: TencentAsStandin,
                                                        sleeps: Sleeps) -> None:
    state = provider.create_group(_request(provider))
    provider.describe_group(REGION, state.group_id)  # the member is IN_SERVICE now
    (member,) = state.members
    # What the cloud refuses while a member is in service (API reference 377/20439).
    refused = _code(lambda: as_client(cloud).call_json(
        "DeleteAutoScalingGroup", {"AutoScalingGroupId": state.group_id}))
    assert refused == "ResourceInUse.InstanceInGroup"

    provider.end_group(REGION, state.group_id)
    assert (cloud.groups, cloud.configs, cloud.actions) == ({}, {}, {})
    assert cloud.params("ModifyAutoScalingGroup")[-1] == {
        "AutoScalingGroupId": state.group_id, "MaxSize": 0, "MinSize": 0, "DesiredCapacity": 0}
    assert cloud.calls["DeleteAutoScalingGroup"] == 3  # ours: refused once (in activity), then done
    assert len(sleeps) == 1
    (machine,) = provider.describe(REGION, [member.cloud_id])
    assert machine.state == base.STATE_TERMINATED
    assert provider.describe_group(REGION, state.group_id) is None

    before = dict(cloud.calls)
    provider.end_group(REGION, state.group_id)  # already gone: success, nothing changed
    assert cloud.calls["DeleteAutoScalingGroup"] == before["DeleteAutoScalingGroup"]
    assert cloud.calls["ModifyAutoScalingGroup"] == before["ModifyAutoScalingGroup"]


def test_list_groups_finds_gpudesk_groups_by_tag(provider: TencentProvider,
                                                 cloud: TencentAsStandin) -> None:
    a = provider.create_group(_request(provider, "m-aaaaaaaaaa"))
    b = provider.create_group(_request(provider, "m-bbbbbbbbbb"))
    client = as_client(cloud)
    config = next(iter(cloud.configs))
    client.call_json("CreateAutoScalingGroup", {  # someone else's group, untagged
        "AutoScalingGroupName": "web-frontend", "LaunchConfigurationId": config,
        "MaxSize": 0, "MinSize": 0, "DesiredCapacity": 0, "VpcId": "vpc-default0",
        "SubnetIds": [cloud.groups[a.group_id]["SubnetIdSet"][0]]})
    found = provider.list_groups(REGION)
    assert sorted((g.group_id, g.ledger_id) for g in found) == sorted(
        [(a.group_id, "m-aaaaaaaaaa"), (b.group_id, "m-bbbbbbbbbb")])
    assert all(g.end_at is not None and len(g.members) == 1 for g in found)
    assert provider.list_groups("ap-shanghai") == []


def test_a_wrong_signature_is_refused(provider: TencentProvider,
                                      cloud: TencentAsStandin) -> None:
    wrong = as_client(cloud, secret_key=SECRET_KEY[:-1] + "X")
    assert _code(lambda: wrong.call_json("DescribeAutoScalingGroups", {})) == \
        "AuthFailure.SignatureFailure"
    # signed for another service's scope: refused too (AS signs for "as")
    from tencentcloud.common import credential
    from tencentcloud.common.common_client import CommonClient
    from tencentcloud.common.profile.client_profile import ClientProfile
    from tencentcloud.common.profile.http_profile import HttpProfile

    cvm_scope = CommonClient("cvm", AS_VERSION, credential.Credential(SECRET_ID, SECRET_KEY),
                             REGION, ClientProfile(httpProfile=HttpProfile(
                                 protocol="http", endpoint=cloud.endpoint)))
    assert _code(lambda: cvm_scope.call_json("DescribeAutoScalingGroups", {})) == \
        "AuthFailure.SignatureFailure"
    assert as_client(cloud).call_json("DescribeAutoScalingGroups", {})["Response"][
        "TotalCount"] == 0
    bad = TencentProvider(Credentials(provider="tencent", key_id=SECRET_ID,
                                      secret=SECRET_KEY[:-1] + "X"),
                          endpoint=cloud.endpoint, protocol="http")
    with pytest.raises(base.ProviderError) as info:
        bad.describe_group(REGION, "asg-00000000")
    assert info.value.kind == "auth"
    bad.close()


def test_the_standin_holds_the_documented_limits(provider: TencentProvider,
                                                 cloud: TencentAsStandin) -> None:
    state = provider.create_group(_request(provider))
    client = as_client(cloud)
    config = next(iter(cloud.configs))
    subnet = cloud.groups[state.group_id]["SubnetIdSet"][0]

    def group(name: str, **kw: Any) -> Any:
        return client.call_json("CreateAutoScalingGroup", {
            "AutoScalingGroupName": name, "LaunchConfigurationId": config, "MaxSize": 0,
            "MinSize": 0, "DesiredCapacity": 0, "VpcId": "vpc-default0",
            "SubnetIds": [subnet], **kw})

    assert _code(lambda: group("g" * 56)) == "InvalidParameterValue.TooLong"  # > 55 bytes
    assert _code(lambda: group("组" * 19)) == "InvalidParameterValue.TooLong"  # 57 bytes
    assert group("g" * 55)["Response"]["AutoScalingGroupId"].startswith("asg-")
    assert _code(lambda: group("sizes", MaxSize=1, DesiredCapacity=2)) == \
        "InvalidParameterValue.Size"
    assert _code(lambda: client.call_json("CreateLaunchConfiguration", {
        "LaunchConfigurationName": "c" * 61, "ImageId": "img-gpu22cu12",
        "InstanceType": TYPE})) == "InvalidParameterValue.TooLong"
    assert _code(lambda: client.call_json("CreateLaunchConfiguration", {
        "LaunchConfigurationName": "spot", "ImageId": "img-gpu22cu12", "InstanceType": TYPE,
        "InstanceChargeType": "SPOTPAID"})) == "MissingParameter.InstanceMarketOptions"
    assert _code(lambda: client.call_json("CreateLaunchConfiguration", {
        "LaunchConfigurationName": "big", "ImageId": "img-gpu22cu12", "InstanceType": TYPE,
        "UserData": "A" * (16 * 1024 + 4)})) == "InvalidParameterValue.UserDataSizeExceeded"

    def action(start: str) -> Any:
        return client.call_json("CreateScheduledAction", {
            "AutoScalingGroupId": state.group_id, "ScheduledActionName": "x", "MaxSize": 0,
            "MinSize": 0, "DesiredCapacity": 0, "StartTime": start})

    future = time.time() + 3600
    utc_text = datetime.fromtimestamp(future).astimezone().strftime("%Y-%m-%dT%H:%M:%SZ")
    assert _code(lambda: action(utc_text)) == "InvalidParameterValue.TimeFormat"
    assert _code(lambda: action(beijing_time(time.time() - 60))) == \
        "InvalidParameterValue.StartTimeBeforeCurrentTime"
    assert _code(lambda: action(beijing_time(future)) and action(
        beijing_time(future + 60))) == "InvalidParameterValue.ScheduledActionNameDuplicate"
    assert _code(lambda: client.call_json("DescribeAutoScalingGroups", {"Limit": 101})) == \
        "InvalidParameterValue"
    assert _code(lambda: client.call_json("DescribeAutoScalingGroups", {
        "AutoScalingGroupIds": [state.group_id],
        "Filters": [{"Name": "tag-key", "Values": ["gpudesk"]}]})) == \
        "InvalidParameterValue.Filter"
    assert _code(lambda: client.call_json("DeleteLaunchConfiguration", {
        "LaunchConfigurationId": config})) == "ResourceInUse.LaunchConfigurationIdInUse"
    # a name AS would refuse is never sent: the provider shortens it, stably
    long_id = "m-" + "9" * 60
    made = provider.create_group(_request(provider, long_id))
    assert len(cloud.groups[made.group_id]["AutoScalingGroupName"]) <= 55
    assert made.ledger_id == long_id


def test_a_spent_budget_is_refused_before_any_call(provider: TencentProvider,
                                                   cloud: TencentAsStandin) -> None:
    request = _request(provider)
    cloud.calls.clear()
    for spent in (request.__class__(**{**request.__dict__, "cloud_timer_at": time.time() + 5}),
                  request.__class__(**{**request.__dict__, "budget": 0.0})):
        with pytest.raises(base.ProviderError) as info:
            provider.create_group(spent)
        assert info.value.kind == "invalid" and "already spent" in str(info.value)
    with pytest.raises(base.ProviderError):
        provider.schedule_end(REGION, "asg-00000000", time.time() + 10)
    assert sum(cloud.calls.values()) == 0
    assert (cloud.configs, cloud.groups, cloud.actions) == ({}, {}, {})


def test_nothing_bills_before_the_end_is_in_place(provider: TencentProvider,
                                                  cloud: TencentAsStandin) -> None:
    request = _request(provider)
    cloud.fail_next("CreateScheduledAction", "InternalError", "stand-in: AS is down")
    with pytest.raises(base.ProviderError):
        provider.create_group(request)
    (group,) = cloud.groups.values()
    assert cloud.params("CreateAutoScalingGroup")[0]["DesiredCapacity"] == 0
    assert group["DesiredCapacity"] == 0 and group["_members"] == []  # no machine, no bill
    state = provider.create_group(request)  # the retry finishes what was left
    assert state.group_id == group["AutoScalingGroupId"] and len(state.members) == 1
    assert state.end_at == math.floor(request.cloud_timer_at or 0)
    actions = [a for a, _, _ in cloud.requests if a in ("CreateScheduledAction",
                                                        "ModifyAutoScalingGroup")]
    assert actions == ["CreateScheduledAction", "CreateScheduledAction",
                       "ModifyAutoScalingGroup"]  # the machine comes after the end
