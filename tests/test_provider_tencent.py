"""TencentProvider against the stand-in CVM/VPC server, over HTTP, with the real SDK."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from tencent_standin import REGIONS
from tencent_standin import SECRET_ID
from tencent_standin import SECRET_KEY
from tencent_standin import TencentStandin
from tencent_standin import sdk_client
from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException

from gpudesk.services.cloud.providers import base
from gpudesk.services.cloud.providers import tencent_parse as tp
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.cloud.providers.tencent import client_token
from gpudesk.services.cloud.providers.tencent_errors import CallContext
from gpudesk.services.cloud.providers.tencent_errors import map_error


@pytest.fixture
def cloud(tencent: TencentStandin) -> TencentStandin:  # noqa: F811
    return tencent


@pytest.fixture
def creds(tencent_creds: Credentials) -> Credentials:  # noqa: F811
    return tencent_creds


REGION = "ap-guangzhou"
T4 = "GN7.2XLARGE32"
PUBLIC_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQgpudeskTestKeyOnlyForTheStandinServer00 me@lap"
OTHER_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQanotherKeyForTheStandinServerTest0000 me@lap"
MY_IP = "203.0.113.7"


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def provider(cloud: TencentStandin, creds: Credentials,
             sleeps: Sleeps) -> Any:
    p = TencentProvider(creds, endpoint=cloud.endpoint, protocol="http", sleep=sleeps)
    yield p
    p.close()


def _request(**kw: Any) -> LaunchRequest:
    values: dict[str, Any] = {"ledger_id": "L1", "region": REGION, "instance_type": T4,
                              "zone": "ap-guangzhou-3", "allow_from": MY_IP}
    values.update(kw)
    return LaunchRequest(**values)


def _raises(kind: str, call: Any) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        call()
    assert info.value.kind == kind, (info.value.kind, info.value.detail)
    return info.value


def _text(err: ProviderError) -> str:
    return " ".join([str(err), err.message(), err.detail, repr(err.values), repr(err.args)])


# --------------------------------------------------------------------------- verify


def test_verify_ok_with_dry_run(provider: TencentProvider, cloud: TencentStandin) -> None:
    zones = REGIONS[provider.regions()[0]][1]  # the check runs in the first region
    cloud.sell_out(zones[0], T4)  # the cheapest type, sold out in the first zone
    identity = provider.verify()
    assert identity == base.Identity(account="", principal=base.mask(SECRET_ID),
                                     can_launch=True, launch_check="allowed")
    assert cloud.calls == {"DescribeRegions": 1, "DescribeZoneInstanceConfigInfos": 1,
                           "DescribeImages": 1, "RunInstances": 1}
    (dry,) = cloud.params("RunInstances")
    # A complete request: a zone and type the region sells, a public GPU image of the region.
    assert dry["DryRun"] is True and dry["InstanceType"] == T4
    assert dry["Placement"]["Zone"] == zones[1] and dry["ImageId"] == "img-gpu22cu12"
    assert cloud.state.instances == {}


def test_verify_an_incomplete_dry_run_would_be_missing_parameter(cloud: TencentStandin) -> None:
    """What the old check sent: the stand-in answers as CVM documents, not DryRunOperation."""
    with pytest.raises(TencentCloudSDKException) as info:
        sdk_client(cloud).call_json("RunInstances", {
            "DryRun": True, "InstanceChargeType": "POSTPAID_BY_HOUR", "InstanceType": T4,
            "Placement": {"Zone": "ap-guangzhou-3"}, "InstanceCount": 1})
    assert info.value.code == "MissingParameter"


def test_verify_anything_else_is_could_not_check(provider: TencentProvider,
                                                 cloud: TencentStandin) -> None:
    cloud.fail_next("RunInstances", "InvalidParameterValue.InstanceTypeNotSupported",
                    "not supported here")
    identity = provider.verify()
    assert (identity.can_launch, identity.launch_check) == (False, "unknown")
    assert identity.launch_detail.startswith("[InvalidParameterValue.InstanceTypeNotSupported]")
    for zone in REGIONS[provider.regions()[0]][1]:
        for itype in ("GN7.2XLARGE32", "GN7.20XLARGE320", "GN10Xp.2XLARGE40",
                      "GN10Xp.20XLARGE320", "GT4.4XLARGE96", "GT4.41XLARGE948",
                      "PNV4.7XLARGE116", "PNV4.56XLARGE932"):
            cloud.sell_out(zone, itype)
    identity = provider.verify()  # nothing on sale: no dry run can be made
    assert identity.launch_check == "unknown" and "on sale" in identity.launch_detail
    cloud.denied.add("DescribeImages")  # a refused look-up is not a refused launch
    cloud.sold_out.clear()
    assert provider.verify().launch_check == "unknown"


def test_verify_wrong_secret_and_unknown_key_are_auth(cloud: TencentStandin) -> None:
    for creds in (Credentials("tencent", SECRET_ID, "Wrong" + SECRET_KEY[5:]),
                  Credentials("tencent", "AKID" + "9" * 32, SECRET_KEY)):
        p = TencentProvider(creds, endpoint=cloud.endpoint, protocol="http")
        err = _raises("auth", p.verify)
        assert "Tencent Cloud rejected the keys" in str(err)
        assert err.detail.startswith("[AuthFailure.")
        assert creds.secret not in _text(err)


def test_verify_skewed_clock_is_clock(provider: TencentProvider,
                                      cloud: TencentStandin) -> None:
    cloud.clock_offset = 3600.0  # the server is an hour ahead of this computer
    err = _raises("clock", provider.verify)
    assert "clock" in str(err) and err.detail.startswith("[AuthFailure.SignatureExpire]")


def test_verify_permission(provider: TencentProvider, cloud: TencentStandin) -> None:
    cloud.denied.add("RunInstances")
    identity = provider.verify()
    assert (identity.can_launch, identity.launch_check) == (False, "denied")
    cloud.fail_next("DescribeRegions", "AuthFailure.UnauthorizedOperation", "not allowed")
    err = _raises("permission", provider.verify)
    assert {k: v for k, v in err.values.items() if k != "detail"} == {
        "action": "call DescribeRegions", "permission": "cvm:DescribeRegions"}
    assert "cvm:DescribeRegions" in str(err)


def test_verify_no_server_is_network(creds: Credentials) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = TencentProvider(creds, endpoint=f"127.0.0.1:{port}", protocol="http")
    err = _raises("network", p.verify)
    assert "Could not reach Tencent Cloud ([ClientNetworkError]" in str(err)


# --------------------------------------------------------------------------- key & group


def test_key_pair_is_imported_once_under_a_legal_name(provider: TencentProvider,
                                                      cloud: TencentStandin) -> None:
    key_id = provider.ensure_key_pair(REGION, "gpudesk-my-laptop-ed25519-2025", PUBLIC_KEY)
    assert key_id.startswith("skey-")
    assert provider.ensure_key_pair(REGION, "gpudesk-my-laptop-ed25519-2025", PUBLIC_KEY) \
        == key_id
    assert cloud.calls["ImportKeyPair"] == 1
    stored = cloud.state.key_pairs[key_id]
    assert stored["KeyName"] == tp.key_name("gpudesk-my-laptop-ed25519-2025")
    assert len(stored["KeyName"]) == 25 and stored["ProjectId"] == 0
    assert stored["Tags"] == [{"Key": "gpudesk", "Value": "1"}]
    # Same name, another public key: a second key, never the wrong one.
    other = provider.ensure_key_pair(REGION, "gpudesk-my-laptop-ed25519-2025", OTHER_KEY)
    assert other != key_id and cloud.state.key_pairs[other]["PublicKey"] == OTHER_KEY
    assert provider.ensure_key_pair(REGION, "gpudesk-my-laptop-ed25519-2025", OTHER_KEY) == other
    assert cloud.calls["ImportKeyPair"] == 2


def _rules(cloud: TencentStandin, group_id: str, direction: str) -> list[tuple[str, ...]]:
    return [(r["Protocol"], r["Port"], r["CidrBlock"] or r["Ipv6CidrBlock"], r["Action"])
            for r in cloud.state.groups[group_id][direction]]


def test_security_group_opens_only_ssh_to_one_address(provider: TencentProvider,
                                                      cloud: TencentStandin) -> None:
    group_id = provider.ensure_security_group(REGION, MY_IP)
    assert _rules(cloud, group_id, "Ingress") == [("TCP", "22", f"{MY_IP}/32", "ACCEPT")]
    assert set(_rules(cloud, group_id, "Egress")) == {("ALL", "ALL", "0.0.0.0/0", "ACCEPT"),
                                                        ("ALL", "ALL", "::/0", "ACCEPT")}
    group = cloud.state.groups[group_id]
    assert group["SecurityGroupName"] == f"gpudesk-ssh-{MY_IP}"
    assert group["TagSet"] == [{"Key": "gpudesk", "Value": "1"}]
    writes = cloud.calls["CreateSecurityGroupPolicies"]
    assert provider.ensure_security_group(REGION, f"{MY_IP}/32") == group_id
    assert cloud.calls["CreateSecurityGroup"] == 1
    assert cloud.calls["CreateSecurityGroupPolicies"] == writes  # nothing to change
    # Someone opened RDP and SSH to the world: the next ensure closes both.
    cloud.add_rule(group_id, "Ingress", {"Protocol": "TCP", "Port": "3389",
                                           "CidrBlock": "0.0.0.0/0", "Ipv6CidrBlock": "",
                                           "Action": "ACCEPT"})
    cloud.add_rule(group_id, "Ingress", {"Protocol": "TCP", "Port": "22",
                                           "CidrBlock": "0.0.0.0/0", "Ipv6CidrBlock": "",
                                           "Action": "ACCEPT"})
    assert provider.ensure_security_group(REGION, MY_IP) == group_id
    assert _rules(cloud, group_id, "Ingress") == [("TCP", "22", f"{MY_IP}/32", "ACCEPT")]


def test_security_group_ipv6_single_address(provider: TencentProvider,
                                            cloud: TencentStandin) -> None:
    group_id = provider.ensure_security_group(REGION, "2001:db8::7")
    assert _rules(cloud, group_id, "Ingress") == [("TCP", "22", "2001:db8::7/128", "ACCEPT")]


@pytest.mark.parametrize("cidr", ["0.0.0.0/0", "10.0.0.0/8", "::/0", "not-an-address", ""])
def test_wide_or_bad_ranges_are_refused_before_any_call(provider: TencentProvider,
                                                        cloud: TencentStandin,
                                                        cidr: str) -> None:
    _raises("invalid", lambda: provider.ensure_security_group(REGION, cidr))
    _raises("invalid", lambda: provider.run_instance(_request(allow_from=cidr)))
    assert sum(cloud.calls.values()) == 0


# --------------------------------------------------------------------------- image


def test_find_image_picks_the_newest_public_ubuntu_gpu_image(provider: TencentProvider,
                                                             cloud: TencentStandin) -> None:
    # Newer but without a driver (img-ubuntu22), another OS (img-tos31gpu) and a private
    # image (img-mygpu001) are all passed over.
    assert provider.find_image(REGION, T4) == "img-gpu22cu12"
    params = cloud.params("DescribeImages")[0]
    assert params["InstanceType"] == T4
    assert {"Name": "image-type", "Values": ["PUBLIC_IMAGE"]} in params["Filters"]
    cloud.images = [i for i in cloud.images if "GPU" not in i["ImageName"].upper()
                      or i.get("ImageType") == "PRIVATE_IMAGE"]
    err = _raises("not-found", lambda: provider.find_image(REGION, T4))
    assert "GPU driver" in str(err) and REGION in str(err)


# --------------------------------------------------------------------------- launch


def _prepared(provider: TencentProvider, **kw: Any) -> LaunchRequest:
    key = provider.ensure_key_pair(REGION, "gpudesk_test", PUBLIC_KEY)
    group = provider.ensure_security_group(REGION, MY_IP)
    return _request(key_name=key, security_group=group, **kw)


def test_run_on_demand_sends_everything_and_comes_up(provider: TencentProvider,
                                                     cloud: TencentStandin) -> None:
    request = _prepared(provider, disk_gb=200, client_token="tok-on-demand")
    machine = provider.run_instance(request)
    params = cloud.params("RunInstances")[-1]
    assert params["InstanceChargeType"] == "POSTPAID_BY_HOUR"
    assert "InstanceMarketOptions" not in params
    assert params["Placement"]["Zone"] == "ap-guangzhou-3"
    assert params["ImageId"] == "img-gpu22cu12"
    assert params["SystemDisk"] == {"DiskType": "CLOUD_PREMIUM", "DiskSize": 200}
    assert params["LoginSettings"] == {"KeyIds": [request.key_name]}
    assert params["SecurityGroupIds"] == [request.security_group]
    assert params["InternetAccessible"] == {"PublicIpAssigned": True,
                                            "InternetChargeType": "TRAFFIC_POSTPAID_BY_HOUR",
                                            "InternetMaxBandwidthOut": 100}
    assert params["ClientToken"] == "tok-on-demand"
    assert params["InstanceName"] == "gpudesk-L1"
    assert params["TagSpecification"] == [{"ResourceType": "instance", "Tags": [
        {"Key": "gpudesk", "Value": "1"}, {"Key": "gpudesk-ledger-id", "Value": "L1"}]}]
    assert (machine.provider, machine.state, machine.market, machine.instance_type,
            machine.zone, machine.ledger_id) == ("tencent", "pending", "on-demand", T4,
                                                 "ap-guangzhou-3", "L1")
    assert machine.launched_at is not None and machine.public_ip == ""
    (later,) = provider.describe(REGION, [machine.cloud_id])
    assert later.state == "running" and later.public_ip.startswith("198.51.100.")


def test_run_picks_the_first_available_zone_and_makes_the_group(
        provider: TencentProvider, cloud: TencentStandin) -> None:
    cloud.zone_state["ap-guangzhou-3"] = "UNAVAILABLE"
    machine = provider.run_instance(_request(zone=""))
    assert machine.zone == "ap-guangzhou-4"
    (group_id,) = cloud.params("RunInstances")[-1]["SecurityGroupIds"]
    assert _rules(cloud, group_id, "Ingress") == [("TCP", "22", f"{MY_IP}/32", "ACCEPT")]
    assert client_token(_request()) == cloud.params("RunInstances")[-1]["ClientToken"]


def test_run_without_any_group_is_refused(provider: TencentProvider,
                                          cloud: TencentStandin) -> None:
    _raises("invalid", lambda: provider.run_instance(_request(allow_from="")))
    assert sum(cloud.calls.values()) == 0


def test_run_spot_with_and_without_max_price(provider: TencentProvider,
                                             cloud: TencentStandin) -> None:
    machine = provider.run_instance(_prepared(provider, market="spot", max_price=3.0))
    params = cloud.params("RunInstances")[-1]
    assert params["InstanceChargeType"] == "SPOTPAID"
    assert params["InstanceMarketOptions"] == {"MarketType": "spot", "SpotOptions": {
        "MaxPrice": "3", "SpotInstanceType": "one-time"}}
    assert machine.market == "spot"
    provider.run_instance(_prepared(provider, market="spot", ledger_id="L2"))
    assert cloud.params("RunInstances")[-1]["InstanceMarketOptions"]["SpotOptions"][
        "MaxPrice"] == "8.68"  # bids the on-demand price of that zone
    assert [m.market for m in provider.list_managed(REGION)] == ["spot", "spot"]


def test_a_launch_that_fails_later_reads_as_terminated(provider: TencentProvider,
                                                       cloud: TencentStandin) -> None:
    cloud.fail_launch_next(zone="ap-guangzhou-3")
    machine = provider.run_instance(_prepared(provider))
    assert machine.state == "pending"
    (later,) = provider.describe(REGION, [machine.cloud_id])
    assert later.state == "terminated"  # LAUNCH_FAILED: never billed
    assert cloud.state.instances[machine.cloud_id]["InstanceState"] == "LAUNCH_FAILED"


def test_same_client_token_makes_one_machine(provider: TencentProvider,
                                             cloud: TencentStandin) -> None:
    request = _prepared(provider, client_token="same-token")
    first = provider.run_instance(request)
    second = provider.run_instance(request)
    assert first.cloud_id == second.cloud_id
    assert len(cloud.state.instances) == 1 and cloud.calls["RunInstances"] == 2


def test_client_token_is_short_ascii() -> None:
    long = client_token(_request(client_token="x" * 80))
    assert len(long) <= 64 and long.isascii() and long == client_token(
        _request(client_token="x" * 80))
    assert client_token(_request(client_token="令牌")).isascii()
    assert client_token(_request(ledger_id="L9")) == "gpudesk-L9"


def test_sold_out_is_capacity_naming_type_and_zone(provider: TencentProvider,
                                                   cloud: TencentStandin) -> None:
    request = _prepared(provider)
    cloud.fail_next("RunInstances", "ResourcesSoldOut.SpecifiedInstanceType",
                      "sold out", zone="ap-guangzhou-3")
    err = _raises("capacity", lambda: provider.run_instance(request))
    assert str(err) == "Tencent Cloud has no GN7.2XLARGE32 free in ap-guangzhou-3 right now."
    assert err.failover
    cloud.sell_out("ap-guangzhou-3", T4)  # the stand-in's own stock, not an injected error
    err = _raises("capacity", lambda: provider.run_instance(request))
    assert err.detail.startswith("[ResourcesSoldOut.SpecifiedInstanceType]")
    assert provider.run_instance(_prepared(provider, zone="ap-guangzhou-4")).zone == \
        "ap-guangzhou-4"


def test_quota(provider: TencentProvider, cloud: TencentStandin) -> None:
    request = _prepared(provider)
    cloud.instance_quota = 0
    err = _raises("quota", lambda: provider.run_instance(request))
    assert "\"CVM instances\" in ap-guangzhou is too small for GN7.2XLARGE32" in str(err)
    assert "CVM → Quotas" in str(err) and err.failover
    cloud.instance_quota = None
    cloud.fail_next("RunInstances", "LimitExceeded.SpotQuota", "spot quota")
    err = _raises("quota", lambda: provider.run_instance(
        _prepared(provider, market="spot", max_price=5.0)))
    assert err.values["quota"] == "spot instances of this type"


def test_spot_price_below_market_is_price(provider: TencentProvider,
                                          cloud: TencentStandin) -> None:
    err = _raises("price", lambda: provider.run_instance(
        _prepared(provider, market="spot", max_price=1.0)))
    assert str(err).startswith("Your maximum spot price 1 CNY/h is below the market price in "
                               "ap-guangzhou-3")
    assert err.detail.startswith("[InvalidParameterValue.InsufficientPrice]") and err.failover


def test_throttling_is_retried_with_backoff(provider: TencentProvider, cloud: TencentStandin,
                                            sleeps: Sleeps) -> None:
    request = _prepared(provider)
    before = cloud.calls["RunInstances"]
    cloud.fail_next("RunInstances", "RequestLimitExceeded", "slow down", times=2)
    provider.run_instance(request)
    assert cloud.calls["RunInstances"] - before == 3
    assert sleeps == [1.0, 2.0]
    sleeps.clear()
    cloud.fail_next("DescribeInstances", "RequestLimitExceeded.UinLimitExceeded", times=99)
    err = _raises("throttled", lambda: provider.list_managed(REGION))
    assert cloud.calls["DescribeInstances"] == 1 + 4  # one describe in run_instance, 4 tries
    assert sleeps == [1.0, 2.0, 4.0]
    assert "retried and gave up" in str(err)


# --------------------------------------------------------------------------- lifecycle


def test_describe_unknown_and_malformed_ids(provider: TencentProvider,
                                            cloud: TencentStandin) -> None:
    assert provider.describe(REGION, ["ins-00000000"]) == []
    assert cloud.calls["DescribeInstances"] == 1
    assert provider.describe(REGION, ["i-0123456789", "", "../x"]) == []  # cannot exist
    assert cloud.calls["DescribeInstances"] == 1
    err = _raises("not-found", lambda: provider.stop(REGION, "ins-00000000"))
    assert str(err) == "Tencent Cloud has no machine called ins-00000000 in ap-guangzhou."


def test_list_managed_only_tagged_and_paged(provider: TencentProvider,
                                            cloud: TencentStandin) -> None:
    ours = {provider.run_instance(_prepared(provider, ledger_id=f"L{n}")).cloud_id
            for n in range(3)}
    foreign = sdk_client(cloud).call_json("RunInstances", {
        "Placement": {"Zone": "ap-guangzhou-3"}, "InstanceType": T4,
        "ImageId": "img-gpu22cu12"})["Response"]["InstanceIdSet"][0]  # untagged
    cloud.max_page = 2
    managed = provider.list_managed(REGION)
    assert {m.cloud_id for m in managed} == ours and foreign not in ours
    assert sorted(m.ledger_id for m in managed) == ["L0", "L1", "L2"]
    assert provider.list_managed("ap-shanghai") == []


def test_stop_start_terminate(provider: TencentProvider, cloud: TencentStandin) -> None:
    machine = provider.run_instance(_prepared(provider))
    provider.describe(REGION, [machine.cloud_id])  # PENDING → RUNNING
    provider.stop(REGION, machine.cloud_id)
    provider.stop(REGION, machine.cloud_id)  # already stopping: fine
    assert cloud.params("StopInstances")[0]["StoppedMode"] == "KEEP_CHARGING"
    assert [m.state for m in provider.describe(REGION, [machine.cloud_id])] == ["stopping"]
    assert [m.state for m in provider.describe(REGION, [machine.cloud_id])] == ["stopped"]
    provider.start(REGION, machine.cloud_id)
    assert [m.state for m in provider.describe(REGION, [machine.cloud_id])] == ["pending"]
    assert [m.state for m in provider.describe(REGION, [machine.cloud_id])] == ["running"]
    provider.start(REGION, machine.cloud_id)  # already running: fine
    provider.stop(REGION, machine.cloud_id, stopped_mode="STOP_CHARGING")
    assert cloud.state.instances[machine.cloud_id]["StopChargingMode"] == "STOP_CHARGING"
    provider.terminate(REGION, machine.cloud_id)
    provider.terminate(REGION, machine.cloud_id)  # already terminating: fine
    assert [m.state for m in provider.describe(REGION, [machine.cloud_id])] == ["terminated"]
    assert provider.describe(REGION, [machine.cloud_id]) == []
    _raises("not-found", lambda: provider.terminate(REGION, machine.cloud_id))


def test_cleanup_deletes_only_unused_gpudesk_resources(provider: TencentProvider,
                                                       cloud: TencentStandin) -> None:
    request = _prepared(provider)
    spare_key = provider.ensure_key_pair(REGION, "gpudesk_spare", OTHER_KEY)
    spare_group = provider.ensure_security_group(REGION, "198.51.100.99")
    foreign = sdk_client(cloud).call_json("ImportKeyPair", {
        "KeyName": "mine", "ProjectId": 0, "PublicKey": OTHER_KEY})["Response"]["KeyId"]
    machine = provider.run_instance(request)
    assert sorted(provider.cleanup(REGION)) == sorted([spare_key, spare_group])
    assert set(cloud.state.key_pairs) == {request.key_name, foreign}
    assert set(cloud.state.groups) == {request.security_group}
    provider.terminate(REGION, machine.cloud_id)
    provider.describe(REGION, [machine.cloud_id])  # seen terminating, then gone
    assert sorted(provider.cleanup(REGION)) == sorted([request.key_name,
                                                        request.security_group])
    assert set(cloud.state.key_pairs) == {foreign} and cloud.state.groups == {}
    assert provider.cleanup(REGION) == []


# --------------------------------------------------------------------------- offers & price


def test_live_offers_with_a_sold_out_zone(provider: TencentProvider,
                                          cloud: TencentStandin) -> None:
    cloud.sell_out("ap-guangzhou-4", T4, reason="No stock of GN7.2XLARGE32 right now.")
    offers = provider.live_offers(REGION)
    # zones × known types × markets, less GT4.4XLARGE96's spot (not sold as spot in
    # Guangzhou: no SPOTPAID item, so no spot offer); S5 is not asked for
    assert len(offers) == 3 * 8 * 2 - 3
    assert not [o for o in offers if o.instance_type == "GT4.4XLARGE96" and o.market == "spot"]
    params = cloud.params("DescribeZoneInstanceConfigInfos")[0]
    assert {"Name": "instance-charge-type", "Values": ["POSTPAID_BY_HOUR", "SPOTPAID"]} in \
        params["Filters"]
    t4 = {(o.zone, o.market): o for o in offers if o.instance_type == T4}
    assert t4[("ap-guangzhou-3", "on-demand")].price_per_hour == pytest.approx(8.68)
    assert t4[("ap-guangzhou-3", "spot")].price_per_hour == pytest.approx(2.6)
    assert all(o.currency == "CNY" and o.provider == "tencent" for o in offers)
    sold = [o for o in offers if not o.available]
    assert {(o.zone, o.instance_type) for o in sold} == {("ap-guangzhou-4", T4)}
    assert {o.reason for o in sold} == {"No stock of GN7.2XLARGE32 right now."}


def test_inquiry_price(provider: TencentProvider) -> None:
    assert provider.inquiry_price(_request(image_id="img-gpu22cu12")) == pytest.approx(8.68)
    assert provider.inquiry_price(_request(image_id="img-gpu22cu12", market="spot")) == \
        pytest.approx(2.6)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("bad", [
    {"region": "us-east-1"}, {"instance_type": "g5.xlarge"}, {"instance_type": "S5.MEDIUM4"},
    {"market": "spot", "max_price": 0.0}, {"market": "spot", "max_price": -1.0},
    {"max_price": 2.0}, {"disk_gb": 10},
])
def test_bad_requests_make_no_call(provider: TencentProvider, cloud: TencentStandin,
                                   bad: dict[str, Any]) -> None:
    _raises("invalid", lambda: provider.run_instance(_request(**bad)))
    assert sum(cloud.calls.values()) == 0


def test_bad_region_refused_everywhere_before_any_call(provider: TencentProvider,
                                                       cloud: TencentStandin) -> None:
    for call in (lambda: provider.live_offers("mars-1"), lambda: provider.list_managed("x"),
                 lambda: provider.describe("x", ["ins-00000000"]),
                 lambda: provider.find_image("x", T4), lambda: provider.cleanup("x"),
                 lambda: provider.ensure_key_pair("x", "k", PUBLIC_KEY),
                 lambda: provider.stop("x", "ins-00000000")):
        err = _raises("invalid", call)
        assert "ap-guangzhou" in str(err)
    assert sum(cloud.calls.values()) == 0


def test_regions_and_types_default_to_the_bundled_catalog(creds: Credentials) -> None:
    p = TencentProvider(creds)
    assert p.regions() == ["ap-beijing", "ap-guangzhou", "ap-shanghai"]
    assert isinstance(p, base.Provider)


def test_no_secret_in_repr_str_or_errors(provider: TencentProvider, cloud: TencentStandin,
                                         creds: Credentials) -> None:
    texts = [repr(provider), str(provider), repr(creds)]
    cloud.fail_next("DescribeRegions", "InternalError",
                      f"oops SecretKey={SECRET_KEY} id {SECRET_ID}")
    texts.append(_text(_raises("other", provider.verify)))
    wrong = TencentProvider(Credentials("tencent", SECRET_ID, "x" + SECRET_KEY[1:]),
                            endpoint=cloud.endpoint, protocol="http")
    texts.append(_text(_raises("auth", wrong.verify)))
    texts.append(repr(wrong))
    for text in texts:
        assert SECRET_KEY not in text and SECRET_KEY[1:] not in text
        assert SECRET_ID not in text


# --------------------------------------------------------------------------- tables


@pytest.mark.parametrize(("code", "kind"), [
    ("AuthFailure.SecretIdNotFound", "auth"), ("AuthFailure.SignatureFailure", "auth"),
    ("AuthFailure.InvalidSecretId", "auth"), ("InvalidCredential", "auth"),
    ("AuthFailure.SignatureExpire", "clock"),
    ("UnauthorizedOperation", "permission"), ("AuthFailure.UnauthorizedOperation", "permission"),
    ("UnauthorizedOperation.PermissionDenied", "permission"),
    ("ClientNetworkError", "network"), ("ServerNetworkError", "network"),
    ("RequestLimitExceeded", "throttled"), ("RequestLimitExceeded.IPLimitExceeded", "throttled"),
    ("ResourcesSoldOut.SpecifiedInstanceType", "capacity"),
    ("ResourcesSoldOut.AvailableZone", "capacity"),
    ("ResourceInsufficient.SpecifiedInstanceType", "capacity"),
    ("ResourceInsufficient.ZoneSoldOutForSpecifiedInstance", "capacity"),
    ("InvalidParameterValue.InsufficientOffering", "capacity"),
    ("LimitExceeded.InstanceQuota", "quota"), ("LimitExceeded.SpotQuota", "quota"),
    ("LimitExceeded.UserSpotQuota", "quota"), ("LimitExceeded.CvmInstanceQuota", "quota"),
    ("InstancesQuotaLimitExceeded", "quota"), ("LimitExceeded.TagResourceQuota", "quota"),
    ("InvalidParameterValue.InsufficientPrice", "price"),
    ("InvalidInstanceId.NotFound", "not-found"), ("InvalidInstanceId.Malformed", "not-found"),
    ("InvalidSecurityGroupID.NotFound", "not-found"), ("InvalidImageId.NotFound", "not-found"),
    ("InvalidZone.MismatchRegion", "invalid"), ("InvalidParameterValue.ZoneNotSupported",
                                                "invalid"),
    ("InvalidPublicKey.Malformed", "invalid"), ("MissingParameter", "invalid"),
    ("InternalError", "other"), ("ResourceInUse", "other"),
])
def test_error_table(code: str, kind: str) -> None:
    ctx = CallContext("cvm", "RunInstances", REGION, zone="ap-guangzhou-3", instance_type=T4,
                      max_price=2.5, resource="ins-12345678")
    err = map_error(code, "words from Tencent", ctx)
    assert err.kind == kind
    assert err.detail == f"[{code}] words from Tencent"
    assert "{" not in err.message()  # every placeholder filled
    assert err.failover == (kind in ("quota", "capacity", "price"))


@pytest.mark.parametrize(("state", "mapped"), [
    ("PENDING", "pending"), ("LAUNCH_FAILED", "terminated"), ("RUNNING", "running"),
    ("STOPPING", "stopping"), ("STOPPED", "stopped"), ("STARTING", "pending"),
    ("REBOOTING", "running"), ("TERMINATING", "terminated"), ("SHUTDOWN", "terminated"),
    ("SOMETHING_NEW", "pending"),
])
def test_state_table(state: str, mapped: str) -> None:
    assert tp.state_of(state) == mapped


def test_key_names_are_legal_and_deterministic() -> None:
    assert tp.key_name("gpudesk_laptop") == "gpudesk_laptop"
    for name in ("gpudesk-laptop", "gpudesk-" + "x" * 40, "", "键", "a b/c"):
        legal = tp.key_name(name)
        assert 0 < len(legal) <= 25 and legal.replace("_", "").isalnum() and legal.isascii()
        assert legal == tp.key_name(name)
    assert tp.key_name("gpudesk-a") != tp.key_name("gpudesk_a")


def test_created_time_is_utc() -> None:
    assert tp.parse_time("2025-06-01T08:00:00Z") == 1748764800.0
    assert tp.parse_time("2025-06-01T08:00:00") == 1748764800.0
    assert tp.parse_time("") is None and tp.parse_time("yesterday") is None


def test_zone_choices_cheapest_first_with_cvms_reasons(provider: TencentProvider,
                                                       cloud: TencentStandin) -> None:
    cloud.zone_prices[("ap-guangzhou-6", T4, "POSTPAID_BY_HOUR")] = 8.1
    cloud.sell_out("ap-guangzhou-4", T4, "POSTPAID_BY_HOUR", reason="No stock right now.")
    cloud.zone_state["ap-guangzhou-3"] = "UNAVAILABLE"
    choices = provider.zone_choices(REGION, T4)
    assert choices == [base.ZoneChoice("ap-guangzhou-6", True),
                       base.ZoneChoice("ap-guangzhou-3", False, "zone UNAVAILABLE"),
                       base.ZoneChoice("ap-guangzhou-4", False, "No stock right now.")]
    # Spot is its own market: the on-demand sell-out does not touch it.
    assert [c.zone for c in provider.zone_choices(REGION, T4, "spot") if c.sells] == [
        "ap-guangzhou-4", "ap-guangzhou-6"]
    machine = provider.run_instance(_request(zone=""))
    assert machine.zone == "ap-guangzhou-6"  # the cheapest zone that sells it
    offers = [o for o in provider.live_offers(REGION) if o.instance_type == T4
              and o.market == "on-demand" and o.available]
    assert sorted((o.zone, o.price_per_hour) for o in offers) == [
        ("ap-guangzhou-3", 8.68), ("ap-guangzhou-6", 8.1)]  # per zone; -4 is sold out


# --------------------------------------------------------------------------- billing words


def test_describe_reads_the_charging_mode_of_a_stopped_machine(
        provider: TencentProvider, cloud: TencentStandin) -> None:
    machine = provider.run_instance(_prepared(provider))
    (running,) = provider.describe(REGION, [machine.cloud_id])
    assert running.stopped_mode == "NOT_APPLICABLE"  # CVM's word while it runs
    cloud.shutdown_inside(machine.cloud_id)  # the agent's shutdown: CVM keeps charging
    (stopped,) = provider.describe(REGION, [machine.cloud_id])
    assert (stopped.state, stopped.stopped_mode) == ("stopped", "KEEP_CHARGING")
    assert provider.stop_note(REGION, machine.cloud_id).startswith("stopped with KEEP_CHARGING")


def test_already_stopped_is_done_only_when_the_charge_stopped(
        cloud: TencentStandin, creds: Credentials) -> None:
    provider = TencentProvider(creds, endpoint=cloud.endpoint, protocol="http",
                               stopped_mode="STOP_CHARGING")
    machine = provider.run_instance(_prepared(provider))
    provider.describe(REGION, [machine.cloud_id])
    cloud.shutdown_inside(machine.cloud_id)
    err = _raises("invalid", lambda: provider.stop(REGION, machine.cloud_id))
    assert err.detail == ("[UnsupportedOperation.InstanceStateStopped] "
                          "StopChargingMode=KEEP_CHARGING")
    assert "still charges it" in err.message() and machine.cloud_id in err.message()
    provider.start(REGION, machine.cloud_id)
    provider.describe(REGION, [machine.cloud_id])  # STARTING → RUNNING
    provider.stop(REGION, machine.cloud_id)
    provider.stop(REGION, machine.cloud_id)  # stopping without charge: a retry is fine
    provider.describe(REGION, [machine.cloud_id])
    provider.stop(REGION, machine.cloud_id)  # stopped without charge: fine
    assert provider.stop_note(REGION, machine.cloud_id).startswith("stopped with STOP_CHARGING")
    provider.close()


def test_stop_charging_refused_is_said_in_words() -> None:
    err = map_error("UnsupportedOperation.StoppedModeStopCharging", "not supported",
                    CallContext("cvm", "StopInstances", REGION, resource="ins-abcdefgh"))
    assert err.kind == "invalid"
    assert err.message().startswith("Tencent Cloud cannot stop charging ins-abcdefgh")
    assert "full price" in err.message()
    raw = {"InstanceChargeType": "POSTPAID_BY_HOUR", "SystemDisk": {"DiskType": "CLOUD_PREMIUM"}}
    assert tp.stop_charging_refusal(raw) == ""
    assert tp.stop_charging_refusal(dict(raw, InstanceChargeType="SPOTPAID")) == \
        "spot (SPOTPAID)"
    assert tp.stop_charging_refusal(dict(raw, InstanceChargeType="PREPAID")) == \
        "charge type PREPAID"
    assert tp.stop_charging_refusal(dict(raw, DataDisks=[{"DiskType": "LOCAL_BASIC"}])) == \
        "local disk (LOCAL_BASIC)"
