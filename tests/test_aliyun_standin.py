"""The ECS stand-in itself: it checks the SDK's real ACS3-HMAC-SHA256 signature and keeps state
as ECS documents it, so the provider tests against it mean something."""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.request import Request
from urllib.request import urlopen

import pytest
from alibabacloud_ecs20140526 import models
from alibabacloud_vpc20160428 import models as vpc_models
from aliyun_standin import ACCESS_KEY_ID
from aliyun_standin import ACCESS_KEY_SECRET
from aliyun_standin import IMAGES
from aliyun_standin import VPC_VERSION
from aliyun_standin import AliyunStandin
from aliyun_standin import acs3_signature
from aliyun_standin import sdk_client
from aliyun_standin import vpc_sdk_client
from darabonba.runtime import RuntimeOptions
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401

RUNTIME = RuntimeOptions(autoretry=False, max_attempts=1)


def _code(call: Any) -> tuple[str, int]:
    with pytest.raises(Exception) as info:  # noqa: PT011 - the SDK's ClientException family
        call()
    data = getattr(info.value, "data", None) or {}
    return str(data.get("Code")), int(data.get("statusCode") or 0)


def test_real_sdk_signature_accepted_and_wrong_ones_refused(aliyun: AliyunStandin) -> None:  # noqa: F811
    good = sdk_client(aliyun)
    answer = good.describe_regions_with_options(models.DescribeRegionsRequest(), RUNTIME)
    assert {r.region_id for r in answer.body.regions.region} == {
        "cn-hangzhou", "cn-shanghai", "cn-beijing"}
    wrong = sdk_client(aliyun, secret="not-the-secret-0123456789abcd")
    assert _code(lambda: wrong.describe_regions_with_options(
        models.DescribeRegionsRequest(), RUNTIME)) == ("SignatureDoesNotMatch", 400)
    unknown = sdk_client(aliyun, key_id="LTAI5tUnknown00000000000")
    assert _code(lambda: unknown.describe_regions_with_options(
        models.DescribeRegionsRequest(), RUNTIME)) == ("InvalidAccessKeyId.NotFound", 404)
    aliyun.clock_offset = 3600
    assert _code(lambda: good.describe_regions_with_options(
        models.DescribeRegionsRequest(), RUNTIME))[0] == "InvalidTimeStamp.Expired"


def test_tampered_query_and_replayed_nonce_are_refused(aliyun: AliyunStandin) -> None:  # noqa: F811
    """A request signed by hand the way the SDK does, then changed after signing."""
    headers = {"host": aliyun.endpoint, "x-acs-action": "DescribeZones",
               "x-acs-version": "2014-05-26", "x-acs-date": _now(),
               "x-acs-signature-nonce": "nonce-1",
               "x-acs-content-sha256": hashlib.sha256(b"").hexdigest()}
    query = {"RegionId": "cn-hangzhou"}
    signed = sorted(headers)
    sig = acs3_signature(ACCESS_KEY_SECRET, "POST", "/", query, headers, signed,
                         headers["x-acs-content-sha256"])
    auth = f"ACS3-HMAC-SHA256 Credential={ACCESS_KEY_ID},SignedHeaders={';'.join(signed)}," \
           f"Signature={sig}"

    def send(target: str) -> tuple[int, dict[str, Any]]:
        req = Request(f"http://{aliyun.endpoint}{target}", data=b"", method="POST",
                      headers={**headers, "Authorization": auth})
        try:
            with urlopen(req, timeout=10) as resp:  # noqa: S310 - loopback only
                return resp.status, json.loads(resp.read())
        except Exception as exc:  # noqa: BLE001 - HTTPError carries the answer
            return exc.code, json.loads(exc.read())  # type: ignore[attr-defined]

    status, body = send("/?RegionId=cn-shanghai")
    assert (status, body["Code"]) == (400, "SignatureDoesNotMatch")
    status, body = send("/?RegionId=cn-hangzhou")
    assert status == 200 and len(body["Zones"]["Zone"]) == 3
    status, body = send("/?RegionId=cn-hangzhou")
    assert (status, body["Code"]) == (400, "SignatureNonceUsed")


def test_state_machine_and_documented_errors(aliyun: AliyunStandin) -> None:  # noqa: F811
    client = sdk_client(aliyun)
    assert _code(lambda: client.describe_price_with_options(models.DescribePriceRequest(
        region_id="cn-hangzhou", instance_type="ecs.nope"), RUNTIME))[0] == \
        "InvalidInstanceType.ValueNotSupported"
    assert _code(lambda: client.stop_instances_with_options(models.StopInstancesRequest(
        region_id="cn-hangzhou", instance_id=["i-doesnotexist00"]), RUNTIME)) == (
        "InvalidInstanceId.NotFound", 404)
    aliyun.denied.add("DescribeZones")
    assert _code(lambda: client.describe_zones_with_options(models.DescribeZonesRequest(
        region_id="cn-hangzhou"), RUNTIME)) == ("Forbidden.RAM", 403)
    assert aliyun.internal_errors == []


def test_vpc_api_signed_tagged_and_filtered_by_tag(aliyun: AliyunStandin) -> None:  # noqa: F811
    """The VPC SDK's requests are checked like ECS's; tags are kept and filter the lists."""
    vpc = vpc_sdk_client(aliyun)
    tag = vpc_models.CreateVpcRequestTag(key="gpudesk", value="1")
    made = vpc.create_vpc_with_options(vpc_models.CreateVpcRequest(
        region_id="cn-hangzhou", vpc_name="anything", cidr_block="172.16.0.0/16", tag=[tag]),
        RUNTIME).body.vpc_id
    mine = aliyun.add_vpc("cn-hangzhou", "gpudesk-vpc")  # the same name, no tag
    wanted = [vpc_models.DescribeVpcsRequestTag(key="gpudesk", value="1")]
    found = vpc.describe_vpcs_with_options(vpc_models.DescribeVpcsRequest(
        region_id="cn-hangzhou", tag=wanted, page_size=50), RUNTIME).body.vpcs.vpc
    assert [v.vpc_id for v in found] == [made]
    assert [(t.key, t.value) for t in found[0].tags.tag] == [("gpudesk", "1")]
    every = vpc.describe_vpcs_with_options(vpc_models.DescribeVpcsRequest(
        region_id="cn-hangzhou"), RUNTIME).body.vpcs.vpc
    assert {v.vpc_id for v in every} == {made, mine}
    assert _code(lambda: vpc.describe_vpcs_with_options(vpc_models.DescribeVpcsRequest(
        region_id="cn-hangzhou", page_size=100), RUNTIME))[0] == "InvalidParameter"
    wrong = vpc_sdk_client(aliyun, secret="not-the-secret-0123456789abcd")
    assert _code(lambda: wrong.describe_vswitches_with_options(
        vpc_models.DescribeVSwitchesRequest(region_id="cn-hangzhou"), RUNTIME)) == (
        "SignatureDoesNotMatch", 400)
    # ECS's own VPC actions take no tags; the stand-in does not serve them.
    ecs = sdk_client(aliyun)
    assert _code(lambda: ecs.create_vpc_with_options(models.CreateVpcRequest(
        region_id="cn-hangzhou", vpc_name="gpudesk-vpc"), RUNTIME))[0] == "InvalidAction.NotFound"
    assert aliyun.versions[("CreateVpc", VPC_VERSION)] == 1 and aliyun.internal_errors == []


def test_dry_run_checks_image_vswitch_and_group(aliyun: AliyunStandin) -> None:  # noqa: F811
    """A DryRun answers DryRunOperation only for a request that could launch as it is."""
    vpc_id = aliyun.add_vpc("cn-hangzhou")
    vswitch = aliyun.add_vswitch(vpc_id, "cn-hangzhou-h")
    group = aliyun.add_group(vpc_id)
    client = sdk_client(aliyun)

    def dry(**kw: str) -> tuple[str, int]:
        values = {"region_id": "cn-hangzhou", "zone_id": "cn-hangzhou-h",
                  "instance_type": "ecs.gn7i-c8g1.2xlarge", "image_id": IMAGES[0]["ImageId"],
                  "v_switch_id": vswitch, "security_group_id": group} | kw
        return _code(lambda: client.run_instances_with_options(models.RunInstancesRequest(
            dry_run=True, amount=1, **values), RUNTIME))

    assert dry()[0] == "DryRunOperation"
    assert dry(image_id="ubuntu_22_04_x64_20G_alibase_20240101.vhd") == (
        "InvalidImageId.NotFound", 404)
    assert dry(v_switch_id="vsw-placeholder000000")[0] == "InvalidVSwitchId.NotExist"
    assert dry(zone_id="cn-hangzhou-i")[0] == "InvalidVSwitchId.NotExist"  # not its zone
    assert dry(security_group_id="sg-nosuchgroup00000")[0] == "InvalidSecurityGroupId.NotFound"
    assert aliyun.state.instances == {} and aliyun.internal_errors == []


def test_security_groups_page_by_max_results_and_next_token(aliyun: AliyunStandin) -> None:  # noqa: F811
    """As ECS recommends: MaxResults (at most 100) and the NextToken of the last answer,
    empty on the last page, with no TotalCount; a token it never gave is refused."""
    vpc_id = aliyun.add_vpc("cn-hangzhou")
    made = {aliyun.add_group(vpc_id, f"g{i}") for i in range(25)}
    client = sdk_client(aliyun)
    seen: list[str] = []
    token = ""
    while True:
        page = client.describe_security_groups_with_options(
            models.DescribeSecurityGroupsRequest(region_id="cn-hangzhou", max_results=10,
                                                 next_token=token or None), RUNTIME).body
        seen += [g.security_group_id for g in page.security_groups.security_group]
        assert page.total_count is None
        token = page.next_token or ""
        if not token:
            break
    assert len(seen) == 25 and set(seen) == made
    assert _code(lambda: client.describe_security_groups_with_options(
        models.DescribeSecurityGroupsRequest(region_id="cn-hangzhou", max_results=10,
                                             next_token="made-up"), RUNTIME)) == (
        "InvalidParameter", 400)
    assert aliyun.internal_errors == []


def test_spot_is_sold_only_for_some_types_and_zones(aliyun: AliyunStandin) -> None:  # noqa: F811
    """DescribeAvailableResource with a SpotStrategy leaves out what is not sold as spot;
    RunInstances refuses a spot machine there; spot price history has none."""
    client = sdk_client(aliyun)

    def listed(itype: str, strategy: str) -> set[str]:
        body = client.describe_available_resource_with_options(
            models.DescribeAvailableResourceRequest(
                region_id="cn-hangzhou", destination_resource="InstanceType",
                instance_type=itype, instance_charge_type="PostPaid", spot_strategy=strategy),
            RUNTIME).body.to_map()
        return {z["ZoneId"] for z in body["AvailableZones"]["AvailableZone"]
                for r in z["AvailableResources"]["AvailableResource"]
                for t in r["SupportedResources"]["SupportedResource"] if t["Value"] == itype}

    zones = {"cn-hangzhou-h", "cn-hangzhou-i", "cn-hangzhou-j"}
    v100, a100 = "ecs.gn6v-c8g1.2xlarge", "ecs.gn7e-c16g1.4xlarge"
    assert listed(v100, "NoSpot") == zones == listed(a100, "NoSpot")
    assert listed(v100, "SpotAsPriceGo") == zones - {"cn-hangzhou-h"}
    assert listed(a100, "SpotWithPriceLimit") == set()
    history = client.describe_spot_price_history_with_options(
        models.DescribeSpotPriceHistoryRequest(region_id="cn-hangzhou", network_type="vpc",
                                               instance_type=v100), RUNTIME).body
    assert {p.zone_id for p in history.spot_prices.spot_price_type} == zones - {
        "cn-hangzhou-h"}
    vpc_id = aliyun.add_vpc("cn-hangzhou")
    vswitch = aliyun.add_vswitch(vpc_id, "cn-hangzhou-h")
    group = aliyun.add_group(vpc_id)
    assert _code(lambda: client.run_instances_with_options(models.RunInstancesRequest(
        region_id="cn-hangzhou", zone_id="cn-hangzhou-h", instance_type=v100, amount=1,
        image_id=IMAGES[0]["ImageId"], v_switch_id=vswitch, security_group_id=group,
        instance_charge_type="PostPaid", spot_strategy="SpotAsPriceGo"), RUNTIME)) == (
        "InvalidResourceType.NotSupported", 403)
    assert aliyun.state.instances == {} and aliyun.internal_errors == []


def _now() -> str:
    from datetime import UTC
    from datetime import datetime

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
