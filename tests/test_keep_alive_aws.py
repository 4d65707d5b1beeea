"""Keep-alive groups on AWS against a real moto server: what moto holds is asserted.

Every test reads the fake cloud back with its own plain boto3 client (launch templates,
Auto Scaling groups, scheduled actions, instances), never the provider's answer alone.

moto's limit: it does not watch EC2 for members that end (a spot reclaim or an
``ec2 terminate``), so the reclaim test drives it the way AWS's own health check does
on a reclaimed Spot member: TerminateInstanceInAutoScalingGroup with
ShouldDecrementDesiredCapacity=False, after which the group starts a replacement.
"""

from __future__ import annotations

import json
import time
from datetime import UTC
from datetime import datetime
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401

from gpudesk.services.cloud.keep_alive import KeepAliveGroups
from gpudesk.services.cloud.keep_alive import group_name
from gpudesk.services.cloud.providers.aws import AwsProvider
from gpudesk.services.cloud.providers.base import TAG_LEDGER
from gpudesk.services.cloud.providers.base import TAG_MANAGED
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.user_data import decode_base64

R = "us-east-1"
ME = "203.0.113.7"
SCRIPT = "#!/bin/bash\necho 'gpudesk first boot: resume run r-42'\n"


def _public_key() -> str:
    key = Ed25519PrivateKey.generate().public_key()
    return key.public_bytes(serialization.Encoding.OpenSSH,
                            serialization.PublicFormat.OpenSSH).decode() + " gpudesk"


def _request(aws: MotoAws, p: AwsProvider, ledger_id: str = "m-0042", **kw: Any  # noqa: F811
             ) -> LaunchRequest:
    aws.publish_dlami()
    key = p.ensure_key_pair(R, "gpudesk-test", _public_key())
    fields: dict[str, Any] = dict(
        ledger_id=ledger_id, region=R, instance_type="g5.xlarge", market="spot",
        max_price=0.75, key_name=key, allow_from=ME + "/32", client_token=f"{ledger_id}-1",
        budget=10.0, price_per_hour=0.5, cloud_timer_at=time.time() + 7200,
        user_data=SCRIPT)
    fields.update(kw)
    return LaunchRequest(**fields)


def _groups(aws: MotoAws) -> list[dict[str, Any]]:  # noqa: F811
    found: list[dict[str, Any]] = aws.client("autoscaling").describe_auto_scaling_groups()[
        "AutoScalingGroups"]
    return found


def _templates(aws: MotoAws) -> list[dict[str, Any]]:  # noqa: F811
    found: list[dict[str, Any]] = aws.client("ec2").describe_launch_templates()[
        "LaunchTemplates"]
    return found


def _running(aws: MotoAws) -> list[dict[str, Any]]:  # noqa: F811
    answer = aws.client("ec2").describe_instances(Filters=[
        {"Name": "instance-state-name", "Values": ["pending", "running"]}])
    return [i for r in answer["Reservations"] for i in r["Instances"]]


def _end_actions(aws: MotoAws, name: str) -> list[dict[str, Any]]:  # noqa: F811
    found: list[dict[str, Any]] = aws.client("autoscaling").describe_scheduled_actions(
        AutoScalingGroupName=name)["ScheduledUpdateGroupActions"]
    return found


def _tags(inst: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in inst.get("Tags", [])}


def test_the_provider_offers_keep_alive_groups(aws: MotoAws) -> None:  # noqa: F811
    assert isinstance(aws.provider(), KeepAliveGroups)


def test_create_makes_a_template_and_a_group_of_one_running_machine(aws: MotoAws) -> None:  # noqa: F811
    p = aws.provider()
    state = p.create_group(_request(aws, p))
    name = group_name("m-0042")

    [template] = _templates(aws)
    assert template["LaunchTemplateName"] == name
    assert {TAG_MANAGED: "1", TAG_LEDGER: "m-0042"}.items() <= _tags(template).items()
    data = aws.client("ec2").describe_launch_template_versions(
        LaunchTemplateName=name)["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    assert data["InstanceType"] == "g5.xlarge"
    assert data["InstanceMarketOptions"]["MarketType"] == "spot"
    assert data["InstanceMarketOptions"]["SpotOptions"]["MaxPrice"] == "0.75"
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    assert data["MetadataOptions"]["HttpPutResponseHopLimit"] == 1
    assert data["InstanceInitiatedShutdownBehavior"] == "terminate"
    assert decode_base64(data["UserData"]) == SCRIPT
    assert "IamInstanceProfile" not in data
    specs = {spec["ResourceType"]: _tags(spec) for spec in data["TagSpecifications"]}
    for kind in ("instance", "volume"):
        assert specs[kind][TAG_LEDGER] == "m-0042" and specs[kind][TAG_MANAGED] == "1"

    [group] = _groups(aws)
    assert group["AutoScalingGroupName"] == name
    assert (group["MinSize"], group["MaxSize"], group["DesiredCapacity"]) == (0, 1, 1)
    assert group["CapacityRebalance"] is True
    assert group["LaunchTemplate"]["LaunchTemplateName"] == name
    group_tags = {t["Key"]: (t["Value"], t["PropagateAtLaunch"]) for t in group["Tags"]}
    assert group_tags[TAG_MANAGED] == ("1", True)
    assert group_tags[TAG_LEDGER] == ("m-0042", True)
    default_subnets = aws.client("ec2").describe_subnets(
        Filters=[{"Name": "default-for-az", "Values": ["true"]}])["Subnets"]
    assert set(group["VPCZoneIdentifier"].split(",")) == {s["SubnetId"] for s in default_subnets}

    [member] = group["Instances"]
    [inst] = _running(aws)
    assert inst["InstanceId"] == member["InstanceId"]
    assert inst["State"]["Name"] == "running"
    assert {TAG_MANAGED: "1", TAG_LEDGER: "m-0042"}.items() <= _tags(inst).items()
    user_data = aws.client("ec2").describe_instance_attribute(
        InstanceId=inst["InstanceId"], Attribute="userData")["UserData"]["Value"]
    assert decode_base64(user_data) == SCRIPT

    # What create answered is what the cloud holds.
    assert state.group_id == name and state.region == R and state.desired == 1
    assert [m.cloud_id for m in state.members] == [inst["InstanceId"]]
    assert state.members[0].state == member["LifecycleState"]
    assert state.members[0].zone == member["AvailabilityZone"]
    assert state.members[0].launched_at is not None
    assert state.ledger_id == "m-0042"


def test_the_end_is_read_back_to_the_second_with_size_zero(aws: MotoAws) -> None:  # noqa: F811
    p = aws.provider()
    at = time.time() + 5 * 3600 + 0.7
    state = p.create_group(_request(aws, p, cloud_timer_at=at))
    [action] = _end_actions(aws, state.group_id)
    assert action["StartTime"] == datetime.fromtimestamp(int(at), UTC)
    assert (action["MinSize"], action["MaxSize"], action["DesiredCapacity"]) == (0, 0, 0)
    assert state.end_at == int(at)
    assert state.end_action_id


def test_schedule_end_moves_the_one_action(aws: MotoAws) -> None:  # noqa: F811
    p = aws.provider()
    state = p.create_group(_request(aws, p, cloud_timer_at=time.time() + 3600))
    later = time.time() + 9 * 3600
    answered = p.schedule_end(R, state.group_id, later)
    [action] = _end_actions(aws, state.group_id)
    assert answered == int(later)
    assert action["StartTime"] == datetime.fromtimestamp(int(later), UTC)
    assert action["DesiredCapacity"] == 0
    described = p.describe_group(R, state.group_id)
    assert described is not None and described.end_at == int(later)


def test_an_end_less_than_a_minute_ahead_is_refused(aws: MotoAws) -> None:  # noqa: F811
    p = aws.provider()
    state = p.create_group(_request(aws, p))
    before = _end_actions(aws, state.group_id)
    with pytest.raises(ProviderError) as info:
        p.schedule_end(R, state.group_id, time.time() + 10)
    assert info.value.kind == "invalid"
    assert "End the group now" in info.value.message()
    assert _end_actions(aws, state.group_id) == before


def test_a_reclaimed_member_is_replaced_by_another_machine(aws: MotoAws) -> None:  # noqa: F811
    p = aws.provider()
    state = p.create_group(_request(aws, p))
    [first] = state.members
    # A reclaim as AWS's health check handles it: the member ends, the desired size stays.
    aws.client("autoscaling").terminate_instance_in_auto_scaling_group(
        InstanceId=first.cloud_id, ShouldDecrementDesiredCapacity=False)
    after = p.describe_group(R, state.group_id)
    assert after is not None and after.desired == 1
    [second] = after.members
    assert second.cloud_id != first.cloud_id
    [inst] = _running(aws)
    assert inst["InstanceId"] == second.cloud_id
    assert _tags(inst)[TAG_LEDGER] == "m-0042"
    user_data = aws.client("ec2").describe_instance_attribute(
        InstanceId=second.cloud_id, Attribute="userData")["UserData"]["Value"]
    assert decode_base64(user_data) == SCRIPT
    old = aws.client("ec2").describe_instances(InstanceIds=[first.cloud_id])
    assert old["Reservations"][0]["Instances"][0]["State"]["Name"] == "terminated"


def test_end_group_leaves_nothing_and_may_be_repeated(aws: MotoAws) -> None:  # noqa: F811
    p = aws.provider()
    state = p.create_group(_request(aws, p))
    assert _running(aws)
    p.end_group(R, state.group_id)
    assert _groups(aws) == []
    assert _templates(aws) == []
    assert _running(aws) == []
    assert _end_actions(aws, state.group_id) == []
    assert p.describe_group(R, state.group_id) is None
    p.end_group(R, state.group_id)  # already gone: success
    p.end_group(R, group_name("never-made"))


def test_create_twice_with_one_ledger_id_makes_one_group(aws: MotoAws) -> None:  # noqa: F811
    p = aws.provider()
    request = _request(aws, p)
    first = p.create_group(request)
    second = aws.provider().create_group(request)  # a retry from a fresh provider
    assert second.group_id == first.group_id
    assert [m.cloud_id for m in second.members] == [m.cloud_id for m in first.members]
    assert len(_groups(aws)) == 1
    assert len(_templates(aws)) == 1
    assert len(_running(aws)) == 1
    assert len(_end_actions(aws, first.group_id)) == 1


def test_a_retry_finishes_a_group_left_without_its_end(aws: MotoAws) -> None:  # noqa: F811
    """A crash after CreateAutoScalingGroup: the retry writes the end, then sizes it to 1."""
    p = aws.provider()
    request = _request(aws, p)
    p._ensure_template(request, group_name(request.ledger_id), "")
    p._create_asg(request, group_name(request.ledger_id),
                  _templates(aws)[0]["LaunchTemplateId"])
    [group] = _groups(aws)
    assert group["DesiredCapacity"] == 0 and _running(aws) == []  # nothing bills yet
    state = p.create_group(request)
    assert state.end_at == int(request.cloud_timer_at or 0)
    assert state.desired == 1 and len(_running(aws)) == 1


def test_list_groups_finds_gpudesk_groups_by_tag(aws: MotoAws) -> None:  # noqa: F811
    p = aws.provider()
    a = p.create_group(_request(aws, p, ledger_id="m-0001"))
    b = p.create_group(_request(aws, p, ledger_id="m-0002", cloud_timer_at=None))
    # Someone else's group in the same region is never listed.
    ec2 = aws.client("ec2")
    ec2.create_launch_template(LaunchTemplateName="theirs", LaunchTemplateData={
        "ImageId": "ami-0d1a0000000000001", "InstanceType": "t3.micro"})
    aws.client("autoscaling").create_auto_scaling_group(
        AutoScalingGroupName="theirs", LaunchTemplate={"LaunchTemplateName": "theirs"},
        MinSize=0, MaxSize=1, DesiredCapacity=0, AvailabilityZones=["us-east-1a"],
        Tags=[{"Key": "team", "Value": "x", "PropagateAtLaunch": True}])
    listed = {g.group_id: g for g in p.list_groups(R)}
    assert set(listed) == {a.group_id, b.group_id}
    assert listed[a.group_id].ledger_id == "m-0001"
    assert listed[a.group_id].end_at == a.end_at is not None
    assert listed[b.group_id].end_at is None  # no budget: no cloud-side end
    assert [m.cloud_id for m in listed[a.group_id].members] == [m.cloud_id for m in a.members]


def test_a_spent_budget_is_refused_before_anything_is_made(aws: MotoAws) -> None:  # noqa: F811
    p = aws.provider()
    request = _request(aws, p, cloud_timer_at=time.time() - 5)
    with pytest.raises(ProviderError) as info:
        p.create_group(request)
    assert info.value.kind == "invalid"
    assert "budget of this run is already spent" in info.value.message()
    assert _groups(aws) == [] and _templates(aws) == [] and _running(aws) == []


def test_a_role_and_a_zone_reach_the_template_and_the_group(aws: MotoAws) -> None:  # noqa: F811
    iam = aws.client("iam")
    iam.create_role(RoleName="gpudesk-run", AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                "Principal": {"Service": "ec2.amazonaws.com"}}]}))
    iam.create_instance_profile(InstanceProfileName="gpudesk-run")
    iam.add_role_to_instance_profile(InstanceProfileName="gpudesk-run", RoleName="gpudesk-run")
    p = aws.provider()
    state = p.create_group(_request(aws, p, zone="us-east-1b"), role_name="gpudesk-run")
    data = aws.client("ec2").describe_launch_template_versions(
        LaunchTemplateName=state.group_id)["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    assert data["IamInstanceProfile"] == {"Name": "gpudesk-run"}
    [group] = _groups(aws)
    zones = {s["AvailabilityZone"] for s in aws.client("ec2").describe_subnets(
        SubnetIds=group["VPCZoneIdentifier"].split(","))["Subnets"]}
    assert zones == {"us-east-1b"}
    assert [m.zone for m in state.members] == ["us-east-1b"]


def test_on_demand_groups_ask_for_no_spot_market(aws: MotoAws) -> None:  # noqa: F811
    p = aws.provider()
    state = p.create_group(_request(aws, p, market="on-demand", max_price=None))
    data = aws.client("ec2").describe_launch_template_versions(
        LaunchTemplateName=state.group_id)["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    assert "InstanceMarketOptions" not in data


def test_a_denied_autoscaling_action_is_named(aws: MotoAws) -> None:  # noqa: F811
    aws.publish_dlami()
    iam = aws.client("iam")
    with aws.enforce_iam(free_calls=3):
        iam.create_user(UserName="ec2only")
        iam.put_user_policy(UserName="ec2only", PolicyName="p", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": ["ec2:*", "ssm:GetParametersByPath",
                                               "autoscaling:Describe*"], "Resource": "*"}]}))
        key = iam.create_access_key(UserName="ec2only")["AccessKey"]
        p = AwsProvider(Credentials("aws", key["AccessKeyId"], key["SecretAccessKey"]),
                        endpoint_url=aws.endpoint)
        with pytest.raises(ProviderError) as info:
            p.create_group(_request(aws, p))
    assert info.value.kind == "permission"
    assert "autoscaling:CreateAutoScalingGroup" in info.value.message()
    assert _groups(aws) == []
