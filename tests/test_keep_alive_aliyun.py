"""Alibaba Cloud keep-alive groups (ESS) against the ESS stand-in fronting the ECS stand-in,
over HTTP, with the real SDKs and their signatures: the group's machines are ECS machines."""

from __future__ import annotations

import base64
import json
import math
import time
from collections.abc import Iterator
from typing import Any

import pytest
from aliyun_ess_standin import TAG_ESS_GROUP
from aliyun_ess_standin import AliyunEssStandin
from aliyun_ess_standin import ess_sdk_client
from aliyun_standin import ACCESS_KEY_ID
from aliyun_standin import ACCESS_KEY_SECRET
from aliyun_standin import AliyunStandin
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from standin_http import fresh_standin

from gpudesk.services.cloud.keep_alive import KeepAliveGroups
from gpudesk.services.cloud.keep_alive import group_name
from gpudesk.services.cloud.providers import aliyun_parse as ap
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.aliyun_keep_alive import MSG_BUDGET_SPENT
from gpudesk.services.cloud.providers.aliyun_keep_alive import end_minute
from gpudesk.services.cloud.providers.aliyun_keep_alive import launch_time
from gpudesk.services.cloud.providers.base import TAG_LEDGER
from gpudesk.services.cloud.providers.base import TAG_MANAGED
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.base import ProviderError

REGION = "cn-hangzhou"
ZONE = "cn-hangzhou-h"
A10 = "ecs.gn7i-c8g1.2xlarge"
PUBLIC_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQgpudeskTestKeyOnlyForTheStandinServer00 me@lap"
MY_IP = "203.0.113.7"
USER_DATA = "#!/bin/bash\necho 'resume run r-1 from the bucket' > /tmp/gpudesk-first-boot\n"


@pytest.fixture(scope="session")
def ess_server() -> Iterator[AliyunEssStandin]:
    server = AliyunEssStandin().start()
    yield server
    server.stop()


@pytest.fixture
def ess(ess_server: AliyunEssStandin, aliyun: AliyunStandin,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> AliyunEssStandin:
    """The ESS stand-in, fresh, in front of the (fresh) ECS stand-in."""
    ess_server.ecs = aliyun
    return fresh_standin(ess_server, ACCESS_KEY_ID, ACCESS_KEY_SECRET, monkeypatch)


@pytest.fixture
def provider(ess: AliyunEssStandin, aliyun_creds: Credentials  # noqa: F811
             ) -> Iterator[AliyunProvider]:
    p = AliyunProvider(aliyun_creds, endpoint=ess.endpoint, protocol="http",
                       sleep=lambda _s: None)
    yield p
    p.close()


def _request(provider: AliyunProvider, **kw: Any) -> LaunchRequest:
    key = provider.ensure_key_pair(REGION, "gpudesk-abc", PUBLIC_KEY)
    group = provider.ensure_security_group(REGION, f"{MY_IP}/32")
    values: dict[str, Any] = {
        "ledger_id": "m-0123456789", "region": REGION, "instance_type": A10, "zone": ZONE,
        "market": "spot", "max_price": 4.5, "key_name": key, "security_group": group,
        "user_data": USER_DATA, "budget": 50.0, "price_per_hour": 3.2,
        "cloud_timer_at": time.time() + 3 * 3600 + 37.5}
    values.update(kw)
    return LaunchRequest(**values)


def _ecs_role(cloud: AliyunStandin, name: str) -> None:  # noqa: F811
    """A RAM role ECS may attach (it trusts ecs.aliyuncs.com), made by the stand-in's RAM."""
    with cloud._lock:
        cloud._CreateRole("", {"RoleName": name, "AssumeRolePolicyDocument": json.dumps({
            "Version": "1", "Statement": [{"Action": "sts:AssumeRole", "Effect": "Allow",
                                           "Principal": {"Service": ["ecs.aliyuncs.com"]}}]})})


def _decoded(config: dict[str, Any]) -> str:
    return base64.b64decode(config["UserData"]).decode()


def test_create_makes_an_enabled_spot_group_with_one_tagged_member(
        provider: AliyunProvider, ess: AliyunEssStandin, aliyun: AliyunStandin) -> None:  # noqa: F811
    assert isinstance(provider, KeepAliveGroups)
    _ecs_role(aliyun, "gpudesk-run-role")
    request = _request(provider)
    state = provider.create_group(request, role_name="gpudesk-run-role")

    assert ess.internal_errors == [] and ess.limit_refusals == []
    group = ess.groups[state.group_id]
    assert group["ScalingGroupName"] == group_name("m-0123456789")
    assert group["LifecycleState"] == "Active" and state.status == "Active"
    assert (group["MinSize"], group["MaxSize"], group["DesiredCapacity"]) == (0, 1, 1)
    # replace a spot machine on its reclaim notice; never silently on-demand (money)
    assert group["SpotInstanceRemedy"] is True
    assert group["CompensateWithOnDemand"] is False
    assert group["MultiAZPolicy"] == "COST_OPTIMIZED"
    assert group["OnDemandPercentageAboveBaseCapacity"] == 0
    assert group["VSwitchIds"][0] in aliyun.state.vswitches
    assert aliyun.state.vswitches[group["VSwitchIds"][0]]["ZoneId"] == ZONE

    config = ess.configs[group["ActiveScalingConfigurationId"]]
    assert config["LifecycleState"] == "Active"
    assert _decoded(config) == request.user_data
    assert config["SpotStrategy"] == "SpotWithPriceLimit"
    assert config["SpotPriceLimits"] == [{"InstanceType": A10, "PriceLimit": 4.5}]
    assert config["RamRoleName"] == "gpudesk-run-role"
    assert config["KeyPairName"] == request.key_name
    assert config["SecurityGroupId"] == request.security_group
    assert config["SystemDiskSize"] == 100

    # the one member is a real ECS machine, tagged, spot, with the run's first-boot script
    assert state.desired == 1 and len(state.members) == 1
    member = state.members[0]
    assert member.state == "InService" and member.zone == ZONE
    raw = aliyun.state.instances[member.cloud_id]
    tags = {t["TagKey"]: t["TagValue"] for t in raw["Tags"]["Tag"]}
    assert tags[TAG_MANAGED] == "1" and tags[TAG_LEDGER] == "m-0123456789"
    assert tags[TAG_ESS_GROUP] == state.group_id
    assert raw["SpotStrategy"] == "SpotWithPriceLimit" and raw["SpotPriceLimit"] == 4.5
    assert raw["_user_data"] == USER_DATA and aliyun.role_of(member.cloud_id) == "gpudesk-run-role"
    managed = {i.cloud_id: i for i in provider.list_managed(REGION)}
    assert member.cloud_id in managed and managed[member.cloud_id].ledger_id == "m-0123456789"
    assert state.tags == {TAG_MANAGED: "1", TAG_LEDGER: "m-0123456789"}


def test_the_end_is_set_before_the_group_can_start_anything(
        provider: AliyunProvider, ess: AliyunEssStandin) -> None:
    provider.create_group(_request(provider))
    order = [a for a, _, _ in ess.requests if not a.startswith("Describe")]
    assert order == ["CreateScalingGroup", "CreateScalingConfiguration", "CreateScheduledTask",
                     "EnableScalingGroup"]


def test_scheduled_end_is_read_back_rounded_down_to_the_minute(
        provider: AliyunProvider, ess: AliyunEssStandin) -> None:
    at = time.time() + 2 * 3600 + 59.9  # 59.9 s into some minute at most: rounded down
    state = provider.create_group(_request(provider, cloud_timer_at=at))
    (task,) = ess.tasks.values()
    assert task["ScalingGroupId"] == state.group_id
    assert (task["MinValue"], task["MaxValue"], task["DesiredCapacity"]) == (0, 0, 0)
    assert task["LaunchTime"] == launch_time(at)
    assert state.end_at == math.floor(at / 60) * 60 == end_minute(at)
    assert at - 60 < state.end_at <= at  # never later than the budget allows
    assert state.end_action_id == task["ScheduledTaskId"]


def test_schedule_end_moves_the_task(provider: AliyunProvider, ess: AliyunEssStandin) -> None:
    state = provider.create_group(_request(provider))
    later = time.time() + 30 * 3600 + 12.0
    got = provider.schedule_end(REGION, state.group_id, later)
    assert got == math.floor(later / 60) * 60
    assert len(ess.tasks) == 1  # moved, not a second task
    assert [p["LaunchTime"] for p in ess.params("ModifyScheduledTask")] == [launch_time(later)]
    again = provider.describe_group(REGION, state.group_id)
    assert again is not None and again.end_at == got


def test_schedule_end_far_away_is_capped_at_90_days(provider: AliyunProvider,
                                                    ess: AliyunEssStandin) -> None:
    state = provider.create_group(_request(provider))
    now = time.time()
    got = provider.schedule_end(REGION, state.group_id, now + 400 * 86400)
    assert now + 90 * 86400 - 120 < got <= now + 90 * 86400
    assert ess.limit_refusals == []


def test_reclaim_then_tick_starts_a_replacement(
        provider: AliyunProvider, ess: AliyunEssStandin, aliyun: AliyunStandin) -> None:  # noqa: F811
    state = provider.create_group(_request(provider))
    first = state.members[0].cloud_id
    ess.reclaim(first)
    assert ap.state_of(aliyun.state.instances[first]["Status"],
                       ap.locks_of(aliyun.state.instances[first])) == "terminated"
    ess.tick()
    after = provider.describe_group(REGION, state.group_id)
    assert after is not None and [m.state for m in after.members] == ["InService"]
    second = after.members[0].cloud_id
    assert second != first
    assert first not in aliyun.state.instances  # released
    assert aliyun.state.instances[second]["_user_data"] == USER_DATA
    assert aliyun.state.instances[second]["SpotStrategy"] == "SpotWithPriceLimit"


def test_no_spot_means_no_machine_never_on_demand(
        provider: AliyunProvider, ess: AliyunEssStandin, aliyun: AliyunStandin) -> None:  # noqa: F811
    state = provider.create_group(_request(provider))
    ess.sell_out_spot()
    ess.reclaim(state.members[0].cloud_id)
    ess.tick()
    after = provider.describe_group(REGION, state.group_id)
    assert after is not None and after.members == [] and after.desired == 1
    assert ess.activities[-1]["status"] == "Failed"
    assert not [i for i in aliyun.state.instances.values() if i["SpotStrategy"] == "NoSpot"]
    # what ESS would have done with its default (CompensateWithOnDemand true): on-demand
    ess.groups[state.group_id]["CompensateWithOnDemand"] = True
    ess.tick()
    assert [i["SpotStrategy"] for i in aliyun.state.instances.values()] == ["NoSpot"]


def test_run_scheduled_sets_the_group_to_zero(
        provider: AliyunProvider, ess: AliyunEssStandin, aliyun: AliyunStandin) -> None:  # noqa: F811
    state = provider.create_group(_request(provider))
    assert state.end_at is not None
    assert ess.run_scheduled(state.end_at - 1) == []  # not yet
    assert ess.run_scheduled(state.end_at) == [state.end_action_id]
    after = provider.describe_group(REGION, state.group_id)
    assert after is not None and after.desired == 0 and after.members == []
    assert state.members[0].cloud_id not in aliyun.state.instances
    ess.tick()  # and it stays at 0
    assert ess.alive(state.group_id) == []


def test_end_group_removes_everything_and_is_idempotent(
        provider: AliyunProvider, ess: AliyunEssStandin, aliyun: AliyunStandin) -> None:  # noqa: F811
    state = provider.create_group(_request(provider))
    member = state.members[0].cloud_id
    provider.end_group(REGION, state.group_id)
    assert ess.groups == {} and ess.configs == {} and ess.tasks == {}
    assert member not in aliyun.state.instances
    assert provider.describe_group(REGION, state.group_id) is None
    assert [p["ForceDelete"].lower() for p in ess.params("DeleteScalingGroup")] == ["true"]
    provider.end_group(REGION, state.group_id)  # already gone: success, nothing more deleted
    assert len(ess.params("DeleteScalingGroup")) == 1


def test_create_again_finds_what_the_first_made(provider: AliyunProvider,
                                                ess: AliyunEssStandin) -> None:
    request = _request(provider)
    first = provider.create_group(request)
    second = provider.create_group(request)
    assert second.group_id == first.group_id
    assert len(ess.groups) == len(ess.configs) == len(ess.tasks) == 1
    assert [m.cloud_id for m in second.members] == [m.cloud_id for m in first.members]


def test_list_groups_by_tag(provider: AliyunProvider, ess: AliyunEssStandin,
                            aliyun: AliyunStandin) -> None:  # noqa: F811
    ours = provider.create_group(_request(provider))
    vsw = ess.groups[ours.group_id]["VSwitchIds"]
    with ess._lock:  # the user's own group, untagged, same network
        ess._CreateScalingGroup(REGION, {"ScalingGroupName": "gpudesk-run-mine", "MinSize": "0",
                                         "MaxSize": "1", "VSwitchIds.1": vsw[0]})
    listed = provider.list_groups(REGION)
    assert [g.group_id for g in listed] == [ours.group_id]
    assert listed[0].ledger_id == "m-0123456789" and len(listed[0].members) == 1


def test_on_demand_group_asks_for_no_spot(provider: AliyunProvider,
                                          ess: AliyunEssStandin) -> None:
    state = provider.create_group(_request(provider, market="on-demand", max_price=None))
    group = ess.groups[state.group_id]
    assert group["MultiAZPolicy"] == "PRIORITY" and group["SpotInstanceRemedy"] is False
    config = ess.configs[group["ActiveScalingConfigurationId"]]
    assert config["SpotStrategy"] == "NoSpot"


def test_spot_at_market_price(provider: AliyunProvider, ess: AliyunEssStandin) -> None:
    state = provider.create_group(_request(provider, max_price=None))
    config = ess.configs[ess.groups[state.group_id]["ActiveScalingConfigurationId"]]
    assert config["SpotStrategy"] == "SpotAsPriceGo" and config["SpotPriceLimits"] == []


def test_a_spent_budget_is_refused_before_any_call(provider: AliyunProvider,
                                                   ess: AliyunEssStandin) -> None:
    request = _request(provider, cloud_timer_at=time.time() + 20)
    before = sum(ess.calls.values())
    ecs_before = len(ess.ecs.requests) if ess.ecs else 0
    with pytest.raises(ProviderError) as info:
        provider.create_group(request)
    assert info.value.kind == "invalid" and info.value.template == MSG_BUDGET_SPENT
    assert sum(ess.calls.values()) == before
    assert (len(ess.ecs.requests) if ess.ecs else 0) == ecs_before
    with pytest.raises(ProviderError):
        provider.create_group(_request(provider, budget=0.0))
    assert sum(ess.calls.values()) == before and ess.groups == {}


def test_schedule_end_in_the_past_is_refused_before_any_call(
        provider: AliyunProvider, ess: AliyunEssStandin) -> None:
    state = provider.create_group(_request(provider))
    before = sum(ess.calls.values())
    with pytest.raises(ProviderError) as info:
        provider.schedule_end(REGION, state.group_id, time.time() - 5)
    assert info.value.template == MSG_BUDGET_SPENT and sum(ess.calls.values()) == before


def test_a_wrong_signature_is_refused(ess: AliyunEssStandin) -> None:
    from alibabacloud_ess20220222 import models

    client = ess_sdk_client(ess, ACCESS_KEY_ID, "not-the-secret-at-all-000000000")
    with pytest.raises(Exception) as info:
        client.describe_scaling_groups(models.DescribeScalingGroupsRequest(region_id=REGION))
    assert ap.code_of(info.value)[0] == "SignatureDoesNotMatch"
    good = ess_sdk_client(ess, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    answer = good.describe_scaling_groups(models.DescribeScalingGroupsRequest(region_id=REGION))
    assert answer.body.total_count == 0


def test_a_wrong_secret_reaches_the_user_as_auth(ess: AliyunEssStandin) -> None:
    p = AliyunProvider(Credentials(provider="aliyun", key_id=ACCESS_KEY_ID,  # type: ignore[arg-type]
                                   secret="not-the-secret-at-all-000000000"),
                       endpoint=ess.endpoint, protocol="http", sleep=lambda _s: None)
    with pytest.raises(ProviderError) as info:
        p.list_groups(REGION)
    assert info.value.kind == "auth"


def test_stand_in_refuses_an_over_limit_name_and_page(ess: AliyunEssStandin) -> None:
    from alibabacloud_ess20220222 import models

    client = ess_sdk_client(ess, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    with pytest.raises(Exception) as info:
        client.create_scaling_group(models.CreateScalingGroupRequest(
            region_id=REGION, scaling_group_name="g" * 65, min_size=0, max_size=1))
    assert ap.code_of(info.value) == ("InvalidParameter",
                                      'The specified parameter "ScalingGroupName" is not valid.')
    with pytest.raises(Exception) as info:
        client.describe_scaling_groups(models.DescribeScalingGroupsRequest(
            region_id=REGION, page_size=51))
    assert ap.code_of(info.value)[0] == "InvalidParameter"
    with pytest.raises(Exception) as info:
        client.create_scaling_group(models.CreateScalingGroupRequest(
            region_id=REGION, scaling_group_name="ok-name", min_size=1, max_size=1,
            desired_capacity=2))
    assert ap.code_of(info.value)[0] == "InvalidParameter.Conflict"
    assert [a for a, _ in ess.limit_refusals] == ["CreateScalingGroup", "DescribeScalingGroups"]
    assert ess.groups == {}


def test_stand_in_holds_launch_time_to_the_minute_and_90_days(
        provider: AliyunProvider, ess: AliyunEssStandin) -> None:
    from alibabacloud_ess20220222 import models

    state = provider.create_group(_request(provider))
    client = ess_sdk_client(ess, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    soon = time.time() + 3600
    for bad in (ap.format_time(soon),  # seconds: not YYYY-MM-DDThh:mmZ
                launch_time(time.time() - 3600),  # the past
                launch_time(time.time() + 91 * 86400)):  # beyond 90 days
        with pytest.raises(Exception) as info:
            client.create_scheduled_task(models.CreateScheduledTaskRequest(
                region_id=REGION, scaling_group_id=state.group_id, launch_time=bad,
                desired_capacity=0, min_value=0, max_value=0))
        assert ap.code_of(info.value) == ("InvalidParameter",
                                          'The specified parameter "LaunchTime" is not valid.')
    assert len(ess.tasks) == 1


def test_a_disabled_group_starts_nothing(ess: AliyunEssStandin, provider: AliyunProvider,
                                         aliyun: AliyunStandin) -> None:  # noqa: F811
    request = _request(provider)
    ess.fail_next("EnableScalingGroup", "Throttling.User", times=4)  # every try of one call
    with pytest.raises(ProviderError) as info:
        provider.create_group(request)
    assert info.value.kind == "throttled"
    (group,) = ess.groups.values()
    assert group["LifecycleState"] == "Inactive" and ess.alive(group["ScalingGroupId"]) == []
    assert len(ess.tasks) == 1  # but its end already stands
    ess.tick()
    assert aliyun.state.instances == {}
    state = provider.create_group(request)  # the retry finishes it
    assert state.status == "Active" and len(state.members) == 1


def test_ram_denied_names_ess(provider: AliyunProvider, ess: AliyunEssStandin) -> None:
    request = _request(provider)
    ess.fail_next("CreateScalingGroup", "Forbidden.RAM", "User not authorized")
    with pytest.raises(ProviderError) as info:
        provider.create_group(request)
    assert info.value.kind == "permission"
    assert "AliyunESSFullAccess" in info.value.message()
    assert "ess:CreateScalingGroup" in info.value.message()


def test_a_missing_role_fails_the_activity_and_starts_nothing(
        provider: AliyunProvider, ess: AliyunEssStandin, aliyun: AliyunStandin) -> None:  # noqa: F811
    state = provider.create_group(_request(provider), role_name="no-such-role")
    assert state.members == [] and aliyun.state.instances == {}
    assert ess.activities[-1]["status"] == "Failed"
    assert "InvalidRamRole.NotFound" in ess.activities[-1]["why"]


def test_config_tags_are_json_of_the_run_tags(provider: AliyunProvider,
                                              ess: AliyunEssStandin) -> None:
    provider.create_group(_request(provider))
    (sent,) = ess.params("CreateScalingConfiguration")
    assert json.loads(sent["Tags"]) == {TAG_MANAGED: "1", TAG_LEDGER: "m-0123456789"}
    assert base64.b64decode(sent["UserData"]).decode() == USER_DATA
