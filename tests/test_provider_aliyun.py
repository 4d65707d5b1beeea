"""AliyunProvider against the stand-in ECS server, over HTTP, with the real SDK and signature."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aliyun_standin import ACCESS_KEY_ID
from aliyun_standin import VERSION
from aliyun_standin import VPC_VERSION
from aliyun_standin import AliyunStandin
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401

from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.cloud.providers import aliyun_parse as ap
from gpudesk.services.cloud.providers import base
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.aliyun_errors import CallContext
from gpudesk.services.cloud.providers.aliyun_errors import map_error
from gpudesk.services.cloud.providers.base import TAG_MANAGED
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.base import ProviderError

REGION = "cn-hangzhou"
ZONE = "cn-hangzhou-h"
A10 = "ecs.gn7i-c8g1.2xlarge"
PUBLIC_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQgpudeskTestKeyOnlyForTheStandinServer00 me@lap"
OTHER_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQanotherKeyForTheStandinServerTest0000 me@lap"
MY_IP = "203.0.113.7"
VERIFY_REGION = "cn-beijing"  # the first region gpudesk knows: where verify looks
GPU_IMAGE = "ubuntu_22_04_gpu_cuda12_20240510.vhd"  # the newest public Ubuntu GPU image
GPUDESK = {TAG_MANAGED: "1"}


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def cloud(aliyun: AliyunStandin) -> AliyunStandin:  # noqa: F811
    return aliyun


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def provider(cloud: AliyunStandin, aliyun_creds: Credentials,  # noqa: F811
             sleeps: Sleeps) -> Iterator[AliyunProvider]:
    p = AliyunProvider(aliyun_creds, endpoint=cloud.endpoint, protocol="http", sleep=sleeps)
    yield p
    p.close()


def _request(**kw: Any) -> LaunchRequest:
    values: dict[str, Any] = {"ledger_id": "L1", "region": REGION, "instance_type": A10,
                              "zone": ZONE, "allow_from": MY_IP, "image_id": "",
                              "key_name": ""}
    values.update(kw)
    return LaunchRequest(**values)


def _raises(kind: str, call: Any) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        call()
    assert info.value.kind == kind, (info.value.kind, info.value.detail)
    return info.value


def _launch(provider: AliyunProvider, **kw: Any) -> base.CloudInstance:
    key = provider.ensure_key_pair(REGION, "gpudesk-abc", PUBLIC_KEY)
    group = provider.ensure_security_group(REGION, f"{MY_IP}/32")
    return provider.run_instance(_request(key_name=key, security_group=group, **kw))


def _running(provider: AliyunProvider, cloud_id: str) -> base.CloudInstance:
    for _ in range(5):
        found = provider.describe(REGION, [cloud_id])
        if found and found[0].state == base.STATE_RUNNING:
            return found[0]
    raise AssertionError("never ran")


# --------------------------------------------------------------------------- verify


def test_key_check_dry_runs_a_real_image_in_the_gpudesk_vswitch(
        provider: AliyunProvider, cloud: AliyunStandin) -> None:
    mine = cloud.add_vpc(VERIFY_REGION, "mine")  # the user's own network comes second
    cloud.add_group(mine)
    cloud.add_vswitch(mine, "cn-beijing-h")
    _, vswitch = provider.ensure_network(VERIFY_REGION, "cn-beijing-i")
    group = provider.ensure_security_group(VERIFY_REGION, f"{MY_IP}/32")
    made = {a: cloud.calls[a] for a in ("CreateVpc", "CreateVSwitch", "CreateSecurityGroup")}
    identity = provider.verify()
    assert identity.principal == base.mask(ACCESS_KEY_ID)
    assert identity.can_launch and identity.launch_check == "allowed", identity.launch_detail
    assert cloud.calls["DescribeRegions"] == 1 and cloud.calls["RunInstances"] == 1
    (sent,) = cloud.params("RunInstances")
    assert sent["DryRun"].lower() == "true" and sent["InstanceChargeType"] == "PostPaid"
    assert (sent["ZoneId"], sent["VSwitchId"], sent["SecurityGroupId"]) == (
        "cn-beijing-i", vswitch, group)
    assert sent["ImageId"] == GPU_IMAGE  # the one a launch would pick (find_image)
    assert sent["InstanceType"] == min(o.instance_type for o in load_catalog().offers
                                       if o.provider == "aliyun")
    assert cloud.state.instances == {}  # a dry run makes nothing, and nothing else was made
    assert {a: cloud.calls[a] for a in made} == made


def test_key_check_falls_back_to_any_vswitch_and_never_creates_one(
        provider: AliyunProvider, cloud: AliyunStandin) -> None:
    identity = provider.verify()  # a new account: nothing to name in a dry run
    assert identity.launch_check == "unknown" and not identity.can_launch
    assert "no vSwitch in cn-beijing" in identity.launch_detail
    assert "first launch" in identity.launch_detail
    assert cloud.calls["RunInstances"] == 0
    # The user's own network (named like gpudesk's, but not tagged): used, as it is.
    mine = cloud.add_vpc(VERIFY_REGION, ap.VPC_NAME)
    vswitch = cloud.add_vswitch(mine, "cn-beijing-l")
    identity = provider.verify()
    assert identity.launch_check == "unknown" and "no security group" in identity.launch_detail
    group = cloud.add_group(mine)
    identity = provider.verify()
    assert identity.launch_check == "allowed", identity.launch_detail
    sent = cloud.params("RunInstances")[-1]
    assert (sent["VSwitchId"], sent["SecurityGroupId"], sent["ImageId"]) == (
        vswitch, group, GPU_IMAGE)
    # A zone with nothing in stock is passed over: nothing to dry-run there.
    for itype in {o.instance_type for o in load_catalog().offers if o.provider == "aliyun"}:
        cloud.sell_out("cn-beijing-l", itype)
    identity = provider.verify()
    assert identity.launch_check == "unknown" and "in stock" in identity.launch_detail
    for action in ("CreateVpc", "CreateVSwitch", "CreateSecurityGroup", "ImportKeyPair"):
        assert cloud.calls[action] == 0, action
    assert list(cloud.state.vpcs) == [mine] and cloud.state.instances == {}


def test_verify_tells_unknown_key_wrong_secret_and_ram_apart(cloud: AliyunStandin) -> None:
    unknown = AliyunProvider(Credentials("aliyun", "LTAI5tNoSuchKey000000000", "x" * 30),
                             endpoint=cloud.endpoint, protocol="http")
    err = _raises("auth", unknown.verify)
    assert "does not know the AccessKey ID LTAI…0000" in err.message()
    assert "InvalidAccessKeyId.NotFound" in err.detail
    wrong = AliyunProvider(Credentials("aliyun", ACCESS_KEY_ID, "wrong-secret-0123456789abcdef"),
                           endpoint=cloud.endpoint, protocol="http")
    err = _raises("auth", wrong.verify)
    assert "secret does not match" in err.message() and "SignatureDoesNotMatch" in err.detail
    assert "wrong-secret" not in err.message() + err.detail + repr(err.values)
    mine = cloud.add_vpc(VERIFY_REGION)
    cloud.add_vswitch(mine, "cn-beijing-h")
    cloud.add_group(mine)
    cloud.denied.add("RunInstances")
    good = AliyunProvider(Credentials("aliyun", ACCESS_KEY_ID, cloud.secrets[ACCESS_KEY_ID]),
                          endpoint=cloud.endpoint, protocol="http")
    identity = good.verify()
    assert not identity.can_launch and identity.launch_check == "denied"
    assert "Forbidden.RAM" in identity.launch_detail
    cloud.denied.add("DescribeRegions")
    err = _raises("permission", good.verify)
    assert "ecs:DescribeRegions" in err.message()


def test_clock_skew_is_a_clock_error(provider: AliyunProvider, cloud: AliyunStandin) -> None:
    cloud.clock_offset = 3600.0
    _raises("clock", lambda: provider.describe(REGION, ["i-abcdefgh12"]))


def test_throttling_is_retried_with_backoff(provider: AliyunProvider, cloud: AliyunStandin,
                                           sleeps: Sleeps) -> None:
    cloud.fail_next("DescribeInstances", "Throttling.User", times=2)
    assert provider.list_managed(REGION) == []
    assert sleeps == [1.0, 2.0]
    cloud.fail_next("DescribeInstances", "Throttling.User", times=9)
    _raises("throttled", lambda: provider.list_managed(REGION))


# --------------------------------------------------------------------------- network


def test_key_pair_imported_once_and_a_different_key_gets_its_own_name(
        provider: AliyunProvider, cloud: AliyunStandin) -> None:
    assert provider.ensure_key_pair(REGION, "gpudesk-abc", PUBLIC_KEY) == "gpudesk-abc"
    assert provider.ensure_key_pair(REGION, "gpudesk-abc", PUBLIC_KEY) == "gpudesk-abc"
    assert cloud.calls["ImportKeyPair"] == 1
    other = provider.ensure_key_pair(REGION, "gpudesk-abc", OTHER_KEY)
    assert other.startswith("gpudesk-abc-") and other != "gpudesk-abc"
    key = cloud.state.key_pairs[(REGION, "gpudesk-abc")]
    assert key["Tags"] == {base.TAG_MANAGED: "1"}


def test_security_group_opens_only_ssh_from_one_address(provider: AliyunProvider,
                                                        cloud: AliyunStandin) -> None:
    _raises("invalid", lambda: provider.ensure_security_group(REGION, "0.0.0.0/0"))
    _raises("invalid", lambda: provider.ensure_security_group(REGION, "203.0.113.0/24"))
    assert cloud.calls == {}  # refused before any call
    group = provider.ensure_security_group(REGION, f"{MY_IP}/32")
    raw = cloud.state.groups[group]
    assert raw["Tags"] == {base.TAG_MANAGED: "1"}
    assert [(r["IpProtocol"], r["PortRange"], r["SourceCidrIp"]) for r in raw["Rules"]] == [
        ("TCP", "22/22", f"{MY_IP}/32")]
    # Someone opened more; the next launch closes it again, and finds the same group.
    cloud.add_rule(group, {"IpProtocol": "TCP", "PortRange": "1/65535",
                           "SourceCidrIp": "0.0.0.0/0"})
    assert provider.ensure_security_group(REGION, f"{MY_IP}/32") == group
    assert [r["SourceCidrIp"] for r in cloud.state.groups[group]["Rules"]] == [f"{MY_IP}/32"]
    assert cloud.calls["CreateSecurityGroup"] == 1


def test_vpc_made_once_per_region_and_found_again(provider: AliyunProvider,
                                                  cloud: AliyunStandin,
                                                  sleeps: Sleeps) -> None:
    vpc, vsw = provider.ensure_network(REGION, ZONE)
    assert vpc.startswith("vpc-") and vsw.startswith("vsw-")
    again = provider.ensure_network(REGION, ZONE)
    assert again == (vpc, vsw)
    other_zone = provider.ensure_network(REGION, "cn-hangzhou-i")
    assert other_zone[0] == vpc and other_zone[1] != vsw
    assert cloud.calls["CreateVpc"] == 1 and cloud.calls["CreateVSwitch"] == 2
    assert cloud.state.vpcs[vpc]["Tags"] == GPUDESK  # tagged like everything gpudesk makes
    assert cloud.state.vswitches[vsw]["Tags"] == GPUDESK
    assert cloud.state.vswitches[other_zone[1]]["Tags"] == GPUDESK
    assert len(sleeps) == 2  # waited while the new VPC was Pending, not after
    # Through the VPC API (its calls take tags), found again by the tag, not by a name.
    for action in ("CreateVpc", "DescribeVpcs", "CreateVSwitch", "DescribeVSwitches"):
        assert cloud.versions[(action, VPC_VERSION)] > 0 and not cloud.versions[(action,
                                                                                  VERSION)]
    for sent in cloud.params("DescribeVSwitches") + cloud.params("DescribeVpcs")[:1]:
        assert (sent["Tag.1.Key"], sent["Tag.1.Value"]) == (TAG_MANAGED, "1")
        assert "VpcName" not in sent and "VSwitchName" not in sent
        assert int(sent["PageSize"]) <= 50


def test_a_users_vpc_named_gpudesk_vpc_is_never_used(provider: AliyunProvider,
                                                     cloud: AliyunStandin) -> None:
    mine = cloud.add_vpc(REGION, ap.VPC_NAME, cidr=ap.VPC_CIDR)  # no gpudesk tag: the user's
    my_switch = cloud.add_vswitch(mine, ZONE, f"gpudesk-{ZONE}", cidr="172.16.1.0/24")
    vpc, vsw = provider.ensure_network(REGION, ZONE)
    assert vpc != mine and vsw != my_switch
    assert cloud.calls["CreateVpc"] == 1 and cloud.state.vpcs[vpc]["Tags"] == GPUDESK
    assert provider.ensure_security_group(REGION, f"{MY_IP}/32") in {
        g for g, raw in cloud.state.groups.items() if raw["VpcId"] == vpc}


def test_the_tagged_vpc_is_found_whatever_its_name(provider: AliyunProvider,
                                                   cloud: AliyunStandin) -> None:
    ours = cloud.add_vpc(REGION, "renamed-in-the-console", tags=GPUDESK, cidr=ap.VPC_CIDR)
    cloud.add_vpc(REGION, ap.VPC_NAME)  # and a user's one named like gpudesk's
    # In gpudesk's VPC, a vSwitch the user added (untagged) is not gpudesk's either.
    theirs = cloud.add_vswitch(ours, ZONE, f"gpudesk-{ZONE}", cidr="172.16.9.0/24")
    tagged = cloud.add_vswitch(ours, "cn-hangzhou-i", "any name", tags=GPUDESK,
                               cidr="172.16.2.0/24")
    assert provider.ensure_network(REGION, "cn-hangzhou-i") == (ours, tagged)
    vpc, vsw = provider.ensure_network(REGION, ZONE)
    assert vpc == ours and vsw not in (theirs, tagged)
    assert cloud.calls["CreateVpc"] == 0 and cloud.calls["CreateVSwitch"] == 1
    assert cloud.state.vswitches[vsw]["Tags"] == GPUDESK


def test_vpc_calls_use_the_vpc_endpoint_or_the_override(aliyun_creds: Credentials,  # noqa: F811
                                                        cloud: AliyunStandin) -> None:
    real = AliyunProvider(aliyun_creds)  # the SDK's endpoint map: no call is made
    assert real._client("cn-hangzhou", "vpc")._endpoint == "vpc.aliyuncs.com"
    assert real._client("cn-beijing", "vpc")._endpoint == "vpc.cn-beijing.aliyuncs.com"
    assert real._client("cn-beijing")._endpoint == "ecs.cn-beijing.aliyuncs.com"
    # The stand-in (GPUDESK_ALIYUN_ENDPOINT) answers both products, and a RAM refusal of a
    # VPC call names the VPC permission.
    cloud.denied.add("DescribeVpcs")
    p = AliyunProvider(aliyun_creds, endpoint=cloud.endpoint, protocol="http")
    err = _raises("permission", lambda: p.ensure_network(REGION, ZONE))
    assert "vpc:DescribeVpcs" in err.message() and "AliyunVPCFullAccess" in err.message()
    assert cloud.versions[("DescribeVpcs", VPC_VERSION)] == 1


# --------------------------------------------------------------------------- launch


def test_on_demand_launch_is_tagged_keyed_and_idempotent(provider: AliyunProvider,
                                                         cloud: AliyunStandin) -> None:
    first = _launch(provider, client_token="L1-1")
    assert first.provider == "aliyun" and first.market == "on-demand"
    assert first.tags == {base.TAG_MANAGED: "1", base.TAG_LEDGER: "L1"}
    sent = cloud.params("RunInstances")[-1]
    assert sent["ClientToken"] == "L1-1" and sent["KeyPairName"] == "gpudesk-abc"
    assert sent["SpotStrategy"] == "NoSpot" and sent["InstanceChargeType"] == "PostPaid"
    assert "Password" not in sent and sent["PasswordInherit"].lower() == "false"
    assert "AutoReleaseTime" not in sent  # no budget, no cloud timer
    group_tags = cloud.state.groups[sent["SecurityGroupId"]]["Tags"]
    key_tags = cloud.state.key_pairs[(REGION, "gpudesk-abc")]["Tags"]
    assert group_tags == key_tags == {base.TAG_MANAGED: "1", base.TAG_LEDGER: "L1"}
    # The same token again (a retry after a lost answer) makes no second machine.
    again = provider.run_instance(_request(key_name="gpudesk-abc",
                                           security_group=sent["SecurityGroupId"],
                                           client_token="L1-1"))
    assert again.cloud_id == first.cloud_id and len(cloud.state.instances) == 1
    running = _running(provider, first.cloud_id)
    assert running.public_ip.startswith("198.51.100.")
    assert running.launched_at is not None and abs(running.launched_at - time.time()) < 120


def test_spot_capped_and_market_priced(provider: AliyunProvider, cloud: AliyunStandin) -> None:
    capped = _launch(provider, market="spot", max_price=5.0, client_token="a")
    sent = cloud.params("RunInstances")[-1]
    assert sent["SpotStrategy"] == "SpotWithPriceLimit" and float(sent["SpotPriceLimit"]) == 5.0
    assert capped.market == "spot"
    _launch(provider, market="spot", client_token="b")
    sent = cloud.params("RunInstances")[-1]
    assert sent["SpotStrategy"] == "SpotAsPriceGo" and "SpotPriceLimit" not in sent
    err = _raises("price", lambda: _launch(provider, market="spot", max_price=0.5,
                                           client_token="c"))
    assert "0.5 CNY/h" in err.message() and ZONE in err.message()


@pytest.mark.parametrize("code", ["OperationDenied.NoStock", "Zone.NotOnSale",
                                  "InvalidInstanceType.ValueNotSupported"])
def test_stock_answers_fail_over(provider: AliyunProvider, cloud: AliyunStandin,
                                 code: str) -> None:
    cloud.fail_next("RunInstances", code, zone=ZONE)
    err = _raises("capacity", lambda: _launch(provider))
    assert err.failover and code in err.detail
    assert f"no {A10} free in {ZONE}" in err.message()


def test_zone_choices_follow_the_stock(provider: AliyunProvider, cloud: AliyunStandin) -> None:
    cloud.sell_out(ZONE, A10)
    cloud.not_on_sale.add("cn-hangzhou-j")
    choices = provider.zone_choices(REGION, A10)
    assert choices[0] == base.ZoneChoice("cn-hangzhou-i", True)
    assert base.ZoneChoice(ZONE, False, "WithoutStock") in choices
    assert base.ZoneChoice("cn-hangzhou-j", False, "WithoutStock") in choices
    # A launch without a zone goes where the stock is.
    made = _launch(provider, zone="")
    assert made.zone == "cn-hangzhou-i"
    cloud.sell_out("cn-hangzhou-i", A10)
    err = _raises("capacity", lambda: _launch(provider, zone="", client_token="z"))
    assert "cn-hangzhou-h: WithoutStock" in err.message()


def test_auto_release_time_set_kept_current_and_honoured(provider: AliyunProvider,
                                                         cloud: AliyunStandin) -> None:
    at = time.time() + 2 * 3600
    made = _launch(provider, cloud_timer_at=at, budget=32.0, price_per_hour=16.0,
                   on_budget="terminate")
    sent = cloud.params("RunInstances")[-1]
    assert sent["AutoReleaseTime"] == ap.format_time(at // 60 * 60)  # ECS keeps minutes
    # Too soon for ECS (under 30 minutes ahead): moved to the earliest it accepts.
    provider.set_guard(REGION, made.cloud_id, "terminate", "on-demand", time.time() + 60)
    raw = cloud.state.instances[made.cloud_id]
    moved = ap.parse_time(raw["AutoReleaseTime"])
    assert moved is not None and 30 * 60 < moved - time.time() < 32 * 60
    provider.set_guard(REGION, made.cloud_id, "terminate", "on-demand", None)
    assert raw["AutoReleaseTime"] == ""
    provider.set_guard(REGION, made.cloud_id, "terminate", "on-demand", at)
    # ECS deletes it at that moment by itself: nobody calls DeleteInstances.
    cloud.advance(2 * 3600 + 1)
    assert provider.describe(REGION, [made.cloud_id]) == []
    assert [i for i, _ in cloud.state.released] == [made.cloud_id]
    assert cloud.calls["DeleteInstances"] == 0


def test_release_time_from_budget_and_price() -> None:
    now = 1_700_000_000.0
    assert ap.release_time(now, 0.0, 16.0) is None
    assert ap.release_time(now, 32.0, 0.0) is None
    assert ap.release_time(now, 32.0, 16.0) == now + 2 * 3600 - (now % 60)
    assert ap.release_time(now, 1.0, 16.0) == pytest.approx(now + 30 * 60, abs=60)


# --------------------------------------------------------------------------- lifecycle


def test_stop_start_terminate_and_what_still_bills(provider: AliyunProvider,
                                                   cloud: AliyunStandin) -> None:
    made = _launch(provider)
    _running(provider, made.cloud_id)
    provider.stop(REGION, made.cloud_id)
    assert cloud.params("StopInstances")[-1]["StoppedMode"] == "StopCharging"
    assert provider.describe(REGION, [made.cloud_id])[0].state == base.STATE_STOPPING
    assert "no longer bill" in provider.stop_note(REGION, made.cloud_id)
    assert provider.describe(REGION, [made.cloud_id])[0].state == base.STATE_STOPPED
    provider.stop(REGION, made.cloud_id)  # already stopped: done, no second call
    assert cloud.calls["StopInstances"] == 1
    provider.start(REGION, made.cloud_id)
    _running(provider, made.cloud_id)
    cloud.keep_charging_types.add(A10)
    provider.stop(REGION, made.cloud_id)
    assert "bills as if running" in provider.stop_note(REGION, made.cloud_id)
    provider.terminate(REGION, made.cloud_id)
    provider.terminate(REGION, made.cloud_id)  # already gone: done
    assert provider.describe(REGION, [made.cloud_id]) == []
    assert cloud.params("DeleteInstances")[0]["Force"].lower() == "true"


def test_list_managed_by_tags_cleanup_and_spot_reclaim(provider: AliyunProvider,
                                                       cloud: AliyunStandin) -> None:
    made = _launch(provider, market="spot", client_token="s")
    listed = provider.list_managed(REGION)
    assert [i.cloud_id for i in listed] == [made.cloud_id]
    assert listed[0].ledger_id == "L1"
    assert provider.cleanup(REGION) == []  # the machine still uses key and group
    cloud.reclaim(made.cloud_id)
    reclaimed = provider.describe(REGION, [made.cloud_id])[0]
    assert reclaimed.state == base.STATE_TERMINATED  # recycling: billing has ended
    assert reclaimed.reason == "Recycling: spot recycling"  # the cloud's own words
    provider.terminate(REGION, made.cloud_id)
    removed = provider.cleanup(REGION)
    assert "gpudesk-abc" in removed and any(r.startswith("sg-") for r in removed)
    assert cloud.state.groups == {} and cloud.state.key_pairs == {}


def test_live_offers_and_spot_history(provider: AliyunProvider, cloud: AliyunStandin) -> None:
    cloud.sell_out(ZONE, A10)
    offers = [o for o in provider.live_offers(REGION) if o.instance_type == A10]
    on_demand = {o.zone: o for o in offers if o.market == "on-demand"}
    assert on_demand["cn-hangzhou-i"].price_per_hour == 16.0
    assert on_demand["cn-hangzhou-i"].currency == "CNY" and on_demand["cn-hangzhou-i"].available
    assert not on_demand[ZONE].available and on_demand[ZONE].reason == "WithoutStock"
    since = time.time() - 600
    history = provider.spot_price_history(REGION, ZONE, A10, since)
    assert [p.price for p in history] == [3.2, 3.36]
    assert history[0].at == since and history[0].currency == "CNY"
    # A type the region does not sell is no offer, not a failed refresh.
    odd = AliyunProvider(provider._credentials, endpoint=cloud.endpoint, protocol="http",
                         known_types={A10, "ecs.gn8-notsold.2xlarge"})
    assert {o.instance_type for o in odd.live_offers(REGION)} == {A10}


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(("code", "kind"), [
    ("InvalidAccessKeyId.NotFound", "auth"), ("SignatureDoesNotMatch", "auth"),
    ("Forbidden.RAM", "permission"), ("InvalidTimeStamp.Expired", "clock"),
    ("Throttling.User", "throttled"), ("OperationDenied.NoStock", "capacity"),
    ("Zone.NotOnSale", "capacity"), ("InvalidInstanceType.ValueNotSupported", "capacity"),
    ("QuotaExceed.ElasticQuota", "quota"), ("InvalidSpotPriceLimit.LowerThanPublicPrice", "price"),
    ("InvalidInstanceId.NotFound", "not-found"), ("InvalidParameter", "invalid"),
    ("InvalidAccountStatus.NotEnoughBalance", "permission"), ("ClientNetworkError", "network"),
    ("SomethingNew", "other"),
])
def test_error_table(code: str, kind: str) -> None:
    err = map_error(code, "msg secret=abc", CallContext("RunInstances", REGION, zone=ZONE,
                                                         instance_type=A10, max_price=1.0))
    assert err.kind == kind
    assert "abc" not in err.detail and code in err.detail
    assert "{" not in err.message()


def test_agent_reads_the_ecs_spot_termination_time() -> None:
    """On the machine, the agent dates a reclaim from ECS metadata (UTC), 404 = no notice."""
    import threading
    from datetime import UTC
    from datetime import datetime
    from http.server import BaseHTTPRequestHandler
    from http.server import ThreadingHTTPServer

    from gpudesk.agent.rules import SPOT_PROVIDERS
    from gpudesk.agent.spot import ALIYUN_PATH
    from gpudesk.agent.spot import AliyunSpot
    from gpudesk.agent.spot import SpotConfig
    from gpudesk.agent.spot import make_source

    notice: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            body = notice[0].encode() if notice and self.path == ALIYUN_PATH else b""
            self.send_response(200 if body else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        source = make_source(SpotConfig("aliyun", url))
        assert isinstance(source, AliyunSpot) and "aliyun" in SPOT_PROVIDERS
        assert source.check() is None
        notice.append("2015-01-05T18:02:00Z")
        found = source.check()
        assert found is not None and found.provider == "aliyun"
        assert found.deadline == datetime(2015, 1, 5, 18, 2, tzinfo=UTC).timestamp()
    finally:
        server.shutdown()
        server.server_close()


def test_allow_my_new_address_and_leftovers(provider: AliyunProvider,
                                           cloud: AliyunStandin) -> None:
    group = provider.ensure_security_group(REGION, f"{MY_IP}/32")
    key = provider.ensure_key_pair(REGION, "gpudesk-abc", PUBLIC_KEY)
    assert provider.ssh_addresses(REGION, group) == [f"{MY_IP}/32"]
    cloud.add_rule(group, {"IpProtocol": "TCP", "PortRange": "443/443",
                           "SourceCidrIp": "198.51.100.9/32", "Description": "someone's"})
    replaced = provider.set_ssh_address(REGION, group, "203.0.113.99")
    assert replaced == [f"{MY_IP}/32"]
    assert provider.ssh_addresses(REGION, group) == ["203.0.113.99/32"]
    rules = {r["SourceCidrIp"] for r in cloud.state.groups[group]["Rules"]}
    assert rules == {"203.0.113.99/32", "198.51.100.9/32"}  # only gpudesk's own rule moved
    assert sorted(provider.leftovers(REGION)) == sorted([key, group])


# --------------------------------------------------------------------------- prices


OFFERS = ["offers", "--model", "gpt2", "--batch", "1", "--seq", "512", "--precision",
          "amp-fp16", "--all", "--provider", "aliyun"]


def test_offers_without_a_bundled_price_say_so(gpudesk_home: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from gpudesk.cli.entry import main

    assert main([*OFFERS, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["offers"]
    assert len(rows) == 21
    for row in rows:
        assert (row["price_per_hour"], row["cost_to_finish"]) == (None, None)
        assert row["price_source"] == ("no bundled price: refresh prices with your Alibaba "
                                       "Cloud account")
        assert row["fits"] and row["hours"] is not None  # only the money is unknown
    assert main(OFFERS) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("aliyun")]
    assert len(lines) == 21 and all("$" not in line and "        -/h" in line for line in lines)


def test_a_refresh_fills_the_price_from_describe_price(provider: AliyunProvider,
                                                       cloud: AliyunStandin,
                                                       tmp_path: Path) -> None:
    from gpudesk.services.cloud.live_prices import refresh_prices
    from gpudesk.services.cloud.price_cache import apply_cache

    def a10(catalog: Any) -> Any:
        return next(o for o in catalog.offers if (o.provider, o.instance_type, o.region) == (
            "aliyun", A10, REGION))

    assert a10(load_catalog()).ondemand_price is None
    report = asyncio.run(refresh_prices(load_catalog(), ["aliyun"], 8.0,
                                        lambda _name: provider, cache=tmp_path))
    assert report.errors == {}
    live = a10(report.catalog)
    assert live.price_kind == "live" and live.price_status == "live"
    assert live.ondemand_price == 2.0  # the stand-in's 16 CNY/h at 8 CNY/USD
    assert live.spot_price == round(16.0 * 0.21 / 8.0, 6)  # the latest spot quote
    assert cloud.params("DescribePrice")[0]["InstanceType"] in {
        o.instance_type for o in report.catalog.offers if o.provider == "aliyun"}
    assert all(o.priced for o in report.catalog.offers)  # every Aliyun row got its price
    kept = a10(apply_cache(load_catalog(), tmp_path))  # and the next start shows it, dated
    assert (kept.price_kind, kept.ondemand_price) == ("cached", 2.0)


def test_a_launch_without_a_price_asks_the_cloud_in_its_currency_or_refuses(
        provider: AliyunProvider, cloud: AliyunStandin) -> None:
    """No bundled Aliyun price: the launcher quotes DescribePrice (CNY on the China site, USD
    on the international one); no usable answer means no machine, not one billing at $0."""
    from gpudesk.services.cloud.launcher import LaunchPlan
    from gpudesk.services.cloud.launcher import quote

    plan = LaunchPlan(provider="aliyun", region="cn-hangzhou",
                      instance_type="ecs.gn7i-c8g1.2xlarge", cny_per_usd=8.0)
    assert quote(provider, plan) == 2.0  # the stand-in's 16 CNY/h at 8 CNY/USD
    cloud.currency = "USD"
    assert quote(provider, plan) == round(16.0 / 7.2, 6)  # taken as it is
    cloud.fail_next("DescribePrice", "InternalError", "The request processing has failed.")
    with pytest.raises(base.ProviderError) as refused:
        quote(provider, plan)
    assert refused.value.kind == "price"
    assert "gave no price for ecs.gn7i-c8g1.2xlarge in cn-hangzhou" in str(refused.value)
    assert "InternalError" in str(refused.value)
