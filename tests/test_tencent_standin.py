"""The stand-in Tencent server itself, driven by the real tencentcloud SDK over HTTP."""

from __future__ import annotations

import hashlib
import json
import time
import urllib.request
from datetime import UTC
from datetime import datetime
from typing import Any

import pytest
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from tencent_standin import SECRET_ID
from tencent_standin import SECRET_KEY
from tencent_standin import TencentStandin
from tencent_standin import sdk_client
from tencent_standin import tc3_signature
from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException
from tencentcloud.cvm.v20170312 import models
from tencentcloud.cvm.v20170312.cvm_client import CvmClient
from tencentcloud.vpc.v20170312.vpc_client import VpcClient


@pytest.fixture
def cloud(tencent: TencentStandin) -> TencentStandin:  # noqa: F811
    return tencent



def _client(server: TencentStandin, cls: Any = CvmClient, secret_id: str = SECRET_ID,
            secret_key: str = SECRET_KEY, region: str = "ap-guangzhou") -> Any:
    service = "vpc" if cls is VpcClient else "cvm"
    return sdk_client(server, service, region, secret_id, secret_key)


def _code(call: Any) -> str:
    with pytest.raises(TencentCloudSDKException) as info:
        call()
    return str(info.value.code)


def test_real_sdk_signature_is_accepted(cloud: TencentStandin) -> None:
    answer = _client(cloud).call_json("DescribeRegions", {})["Response"]
    assert {r["Region"] for r in answer["RegionSet"]} >= {"ap-guangzhou", "ap-shanghai"}
    assert answer["RequestId"]
    # The model path too (the SDK's typed request/response objects).
    zones = _client(cloud).DescribeZones(models.DescribeZonesRequest())
    assert [z.Zone for z in zones.ZoneSet] == ["ap-guangzhou-3", "ap-guangzhou-4",
                                               "ap-guangzhou-6"]
    vpc = _client(cloud, VpcClient).call_json("DescribeSecurityGroups", {})["Response"]
    assert vpc["TotalCount"] == 0
    assert cloud.calls == {"DescribeRegions": 1, "DescribeZones": 1,
                             "DescribeSecurityGroups": 1}


def test_wrong_secret_unknown_id_and_malformed_id_are_refused(cloud: TencentStandin) -> None:
    wrong = _client(cloud, secret_key=SECRET_KEY[:-1] + "X")
    assert _code(lambda: wrong.call_json("DescribeRegions", {})) == "AuthFailure.SignatureFailure"
    unknown = _client(cloud, secret_id="AKID" + "0" * 32)
    assert _code(lambda: unknown.call_json("DescribeRegions", {})) == \
        "AuthFailure.SecretIdNotFound"
    odd = _client(cloud, secret_id="not-a-key-id")
    assert _code(lambda: odd.call_json("DescribeRegions", {})) == "AuthFailure.InvalidSecretId"
    assert cloud.params("DescribeRegions") == []  # refused before any action ran


def test_clock_skew_over_300_s_is_refused(cloud: TencentStandin) -> None:
    client = _client(cloud)
    cloud.clock_offset = 301.0
    assert _code(lambda: client.call_json("DescribeRegions", {})) == \
        "AuthFailure.SignatureExpire"
    cloud.clock_offset = -290.0  # inside the window: fine
    assert client.call_json("DescribeRegions", {})["Response"]["TotalCount"] == 3


def test_signing_service_follows_the_action_as_for_an_ip_host(cloud: TencentStandin) -> None:
    # A CVM client signs with service "cvm"; a VPC action must be signed for "vpc".
    wrong_service = _client(cloud, CvmClient)
    assert _code(lambda: wrong_service.call_json("DescribeSecurityGroups", {})) == \
        "AuthFailure.SignatureFailure"


def _raw(server: TencentStandin, action: str, body: bytes, signed_body: bytes | None = None,
         service: str = "cvm") -> dict[str, Any]:
    """A request signed by hand (the SDK's recipe), optionally with a body swapped after."""
    timestamp = int(time.time())
    date = datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d")
    host = server.endpoint
    canonical = (f"POST\n/\n\ncontent-type:application/json\nhost:{host}\n\ncontent-type;host\n"
                 f"{hashlib.sha256(signed_body or body).hexdigest()}")
    to_sign = (f"TC3-HMAC-SHA256\n{timestamp}\n{date}/{service}/tc3_request\n"
               f"{hashlib.sha256(canonical.encode()).hexdigest()}")
    signature = tc3_signature(SECRET_KEY, date, service, to_sign)
    request = urllib.request.Request(f"http://{host}/", data=body, method="POST", headers={
        "Content-Type": "application/json", "Host": host, "X-TC-Action": action,
        "X-TC-Version": "2017-03-12", "X-TC-Timestamp": str(timestamp),
        "X-TC-Region": "ap-guangzhou",
        "Authorization": f"TC3-HMAC-SHA256 Credential={SECRET_ID}/{date}/{service}/tc3_request, "
                         f"SignedHeaders=content-type;host, Signature={signature}"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=10) as answer:
        assert answer.headers["Content-Type"] == "application/json"
        result: dict[str, Any] = json.loads(answer.read())
        return result


def test_hand_signed_request_passes_and_a_changed_body_fails(cloud: TencentStandin) -> None:
    body = json.dumps({"Limit": 1}).encode()
    ok = _raw(cloud, "DescribeImages", body)["Response"]
    assert len(ok["ImageSet"]) == 1 and "Error" not in ok
    tampered = _raw(cloud, "DescribeImages", json.dumps({"Limit": 5}).encode(),
                    signed_body=body)["Response"]
    assert set(tampered) == {"Error", "RequestId"}
    assert tampered["Error"]["Code"] == "AuthFailure.SignatureFailure"
    assert tampered["Error"]["Message"]


def _run(client: Any, **extra: Any) -> list[str]:
    params = {"Placement": {"Zone": "ap-guangzhou-3"}, "InstanceType": "GN7.2XLARGE32",
              "ImageId": "img-gpu22cu12", "InstanceChargeType": "POSTPAID_BY_HOUR",
              "TagSpecification": [{"ResourceType": "instance",
                                    "Tags": [{"Key": "gpudesk", "Value": "1"}]}], **extra}
    ids: list[str] = client.call_json("RunInstances", params)["Response"]["InstanceIdSet"]
    return ids


def _states(client: Any, ids: list[str]) -> list[str]:
    answer = client.call_json("DescribeInstances", {"InstanceIds": ids})["Response"]
    return [i["InstanceState"] for i in answer["InstanceSet"]]


def test_instances_move_through_states_and_terminated_ones_vanish(
        cloud: TencentStandin) -> None:
    client = _client(cloud)
    ids = _run(client)
    assert len(ids) == 1 and ids[0].startswith("ins-")
    assert _states(client, ids) == ["PENDING"]
    assert _states(client, ids) == ["RUNNING"]
    client.call_json("StopInstances", {"InstanceIds": ids})
    assert _code(lambda: client.call_json("StopInstances", {"InstanceIds": ids})) == \
        "UnsupportedOperation.InstanceStateStopping"
    assert _states(client, ids) == ["STOPPING"]
    assert _states(client, ids) == ["STOPPED"]
    client.call_json("StartInstances", {"InstanceIds": ids})
    assert _states(client, ids) == ["STARTING"]
    assert _states(client, ids) == ["RUNNING"]
    client.call_json("TerminateInstances", {"InstanceIds": ids})
    assert _states(client, ids) == ["TERMINATING"]
    assert _states(client, ids) == []
    assert _code(lambda: client.call_json("TerminateInstances", {"InstanceIds": ids})) == \
        "InvalidInstanceId.NotFound"
    assert _code(lambda: client.call_json("DescribeInstances", {"InstanceIds": ["i-1"]})) == \
        "InvalidInstanceId.Malformed"


def test_client_token_spot_and_fail_next(cloud: TencentStandin) -> None:
    client = _client(cloud)
    first = _run(client, ClientToken="tok-1")
    assert _run(client, ClientToken="tok-1") == first
    assert _run(client, ClientToken="tok-2") != first
    spot = {"InstanceChargeType": "SPOTPAID", "InstanceMarketOptions": {
        "MarketType": "spot", "SpotOptions": {"MaxPrice": "1.0", "SpotInstanceType": "one-time"}}}
    assert _code(lambda: _run(client, **spot)) == "InvalidParameterValue.InsufficientPrice"
    spot["InstanceMarketOptions"]["SpotOptions"]["MaxPrice"] = "3.0"  # type: ignore[index]
    assert len(_run(client, **spot)) == 1
    cloud.fail_next("RunInstances", "ResourcesSoldOut.SpecifiedInstanceType",
                      zone="ap-guangzhou-4")
    assert len(_run(client)) == 1  # another zone: not matched
    assert _code(lambda: _run(client, Placement={"Zone": "ap-guangzhou-4"})) == \
        "ResourcesSoldOut.SpecifiedInstanceType"
    assert len(_run(client, Placement={"Zone": "ap-guangzhou-4"})) == 1  # only the next one
    assert cloud.calls["RunInstances"] == 8
    assert _code(lambda: _run(client, Placement={"Zone": "ap-shanghai-2"})) == \
        "InvalidZone.MismatchRegion"


def test_describe_instances_filters_and_pages(cloud: TencentStandin) -> None:
    client = _client(cloud)
    tagged = [_run(client)[0] for _ in range(3)]
    untagged = _run(client, TagSpecification=[])[0]
    cloud.max_page = 2
    filters = [{"Name": "tag-key", "Values": ["gpudesk"]}]
    first = client.call_json("DescribeInstances", {"Filters": filters, "Limit": 100})["Response"]
    assert first["TotalCount"] == 3 and len(first["InstanceSet"]) == 2
    second = client.call_json("DescribeInstances", {"Filters": filters, "Offset": 2,
                                                    "Limit": 100})["Response"]
    seen = {i["InstanceId"] for i in first["InstanceSet"] + second["InstanceSet"]}
    assert seen == set(tagged) and untagged not in seen
    by_tag_value = client.call_json("DescribeInstances", {"Filters": [
        {"Name": "tag:gpudesk", "Values": ["1"]}, {"Name": "zone", "Values": ["ap-guangzhou-3"]}]})
    assert by_tag_value["Response"]["TotalCount"] == 3
    other_region = _client(cloud, region="ap-shanghai")
    assert other_region.call_json("DescribeInstances", {})["Response"]["TotalCount"] == 0


def test_security_group_rules_one_direction_per_call(cloud: TencentStandin) -> None:
    vpc = _client(cloud, VpcClient)
    group = vpc.call_json("CreateSecurityGroup", {"GroupName": "g", "GroupDescription": "d"})
    group_id = group["Response"]["SecurityGroup"]["SecurityGroupId"]
    rule = {"Protocol": "TCP", "Port": "22", "CidrBlock": "203.0.113.7/32", "Action": "ACCEPT"}
    both = {"Ingress": [rule], "Egress": [rule]}
    assert _code(lambda: vpc.call_json("CreateSecurityGroupPolicies", {
        "SecurityGroupId": group_id, "SecurityGroupPolicySet": both})) == "InvalidParameter"
    vpc.call_json("CreateSecurityGroupPolicies", {"SecurityGroupId": group_id,
                                                  "SecurityGroupPolicySet": {"Ingress": [rule]}})
    rules = vpc.call_json("DescribeSecurityGroupPolicies", {"SecurityGroupId": group_id})
    ingress = rules["Response"]["SecurityGroupPolicySet"]["Ingress"]
    assert [(r["Protocol"], r["Port"], r["CidrBlock"], r["PolicyIndex"]) for r in ingress] == \
        [("TCP", "22", "203.0.113.7/32", 0)]
    vpc.call_json("DeleteSecurityGroupPolicies", {"SecurityGroupId": group_id,
                                                  "SecurityGroupPolicySet": {
                                                      "Ingress": [{"PolicyIndex": 0}]}})
    rules = vpc.call_json("DescribeSecurityGroupPolicies", {"SecurityGroupId": group_id})
    assert rules["Response"]["SecurityGroupPolicySet"]["Ingress"] == []
    vpc.call_json("DeleteSecurityGroup", {"SecurityGroupId": group_id})
    assert _code(lambda: vpc.call_json("DeleteSecurityGroup", {"SecurityGroupId": group_id})) \
        == "InvalidSecurityGroupID.NotFound"


def _spot_items(client: Any, itype: str) -> list[str]:
    answer = client.call_json("DescribeZoneInstanceConfigInfos", {"Filters": [
        {"Name": "instance-type", "Values": [itype]},
        {"Name": "instance-charge-type", "Values": ["SPOTPAID"]}]})["Response"]
    return [i["Zone"] for i in answer["InstanceTypeQuotaSet"]]


def test_spot_is_sold_for_some_types_in_some_regions_only(cloud: TencentStandin) -> None:
    guangzhou, shanghai = _client(cloud), _client(cloud, region="ap-shanghai")
    beijing = _client(cloud, region="ap-beijing")
    # No SPOTPAID item in any zone where CVM sells no spot of the type ...
    assert _spot_items(guangzhou, "GT4.4XLARGE96") == []
    assert _spot_items(shanghai, "GT4.4XLARGE96") == []
    assert _spot_items(shanghai, "PNV4.7XLARGE116") == []
    assert _spot_items(beijing, "PNV4.56XLARGE932") == []
    # ... while the same types are sold as spot elsewhere, and every type on demand.
    assert _spot_items(beijing, "GT4.4XLARGE96") == ["ap-beijing-5", "ap-beijing-6",
                                                     "ap-beijing-7"]
    assert len(_spot_items(guangzhou, "PNV4.7XLARGE116")) == 3
    ondemand = shanghai.call_json("DescribeZoneInstanceConfigInfos", {"Filters": [
        {"Name": "instance-type", "Values": ["PNV4.7XLARGE116"]}]})["Response"]
    assert {i["InstanceChargeType"] for i in ondemand["InstanceTypeQuotaSet"]} == {
        "POSTPAID_BY_HOUR"}
    # A spot launch or price inquiry there is refused in the cloud's words.
    spot = {"InstanceChargeType": "SPOTPAID", "InstanceType": "PNV4.7XLARGE116",
            "Placement": {"Zone": "ap-shanghai-2"}, "InstanceMarketOptions": {
                "MarketType": "spot", "SpotOptions": {"MaxPrice": "99"}}}
    assert _code(lambda: _run(shanghai, **spot)) == \
        "UnsupportedOperation.NoInstanceTypeSupportSpot"
    assert _code(lambda: shanghai.call_json("InquiryPriceRunInstances", {
        "ImageId": "img-gpu22cu12", **spot})) == "UnsupportedOperation.NoInstanceTypeSupportSpot"
    assert not cloud.state.instances


def test_documented_limits_are_refused_as_invalid_parameter_value(
        cloud: TencentStandin) -> None:
    client = _client(cloud)
    assert _code(lambda: client.call_json("DescribeInstances", {"Limit": 101})) == \
        "InvalidParameterValue"
    assert _code(lambda: _run(client, InstanceChargeType="POSTPAID")) == "InvalidParameterValue"
    assert _code(lambda: client.call_json("ImportKeyPair", {
        "KeyName": "k" * 26, "ProjectId": 0, "PublicKey": "ssh-rsa AAAA"})) == \
        "InvalidParameterValue"
    assert _code(lambda: client.call_json("TerminateInstances", {
        "InstanceIds": [f"ins-{i:08d}" for i in range(101)]})) == "InvalidParameterValue"
    assert client.call_json("DescribeInstances", {"Limit": 100})["Response"]["TotalCount"] == 0


def test_a_group_is_refused_a_while_after_its_machine_is_gone(cloud: TencentStandin) -> None:
    cloud.linger_deletes = 2
    vpc = _client(cloud, VpcClient)
    group = vpc.call_json("CreateSecurityGroup", {"GroupName": "g", "GroupDescription": "d"})
    group_id = group["Response"]["SecurityGroup"]["SecurityGroupId"]
    client = _client(cloud)
    ids = _run(client, SecurityGroupIds=[group_id])
    delete = {"SecurityGroupId": group_id}
    assert _code(lambda: vpc.call_json("DeleteSecurityGroup", delete)) == "ResourceInUse"
    client.call_json("TerminateInstances", {"InstanceIds": ids})
    assert _states(client, ids) == ["TERMINATING"]
    assert _states(client, ids) == []  # gone from the list ...
    assert _code(lambda: vpc.call_json("DeleteSecurityGroup", delete)) == "ResourceInUse"
    assert _code(lambda: vpc.call_json("DeleteSecurityGroup", delete)) == "ResourceInUse"
    vpc.call_json("DeleteSecurityGroup", delete)  # ... and deletable two refusals later
    assert group_id not in cloud.state.groups
