"""A kept-alive group's next member boots from new user data (AWS, moto over HTTP).

``set_user_data`` makes a new launch template version and the group's default; a reclaim
after it starts a member whose user data (read from moto's EC2) is the new one, while the
template keeps the rest of the machine (image, type, spot options). Over the limit (16 KB
raw, counted on the gzip that is sent) it is refused before any call. (moto's
CreateLaunchTemplateVersion needs one fix to launch from a new version:
tests/moto_template_versions.py.)"""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import base64
import random

import moto_template_versions
import pytest
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from test_keep_alive_aws import SCRIPT
from test_keep_alive_aws import R
from test_keep_alive_aws import _request

from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.user_data import decode_base64

NEW = "#cloud-config\nruncmd:\n  - [echo, 'resume run r-7 from s3://b/runs/r-7/']\n"


@pytest.fixture(autouse=True)
def _moto_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    moto_template_versions.fix(monkeypatch)


def _user_data(aws: MotoAws, instance_id: str) -> str:
    value = aws.client("ec2").describe_instance_attribute(
        InstanceId=instance_id, Attribute="userData")["UserData"]["Value"]
    return decode_base64(value)


def test_after_set_user_data_a_replacement_boots_from_the_new_data(aws: MotoAws) -> None:
    p = aws.provider()
    state = p.create_group(_request(aws, p))
    [first] = state.members
    assert _user_data(aws, first.cloud_id) == SCRIPT

    version = p.set_user_data(R, state.group_id, NEW)

    ec2 = aws.client("ec2")
    (template,) = ec2.describe_launch_templates(LaunchTemplateNames=[state.group_id])[
        "LaunchTemplates"]
    assert str(template["LatestVersionNumber"]) == version == "2"
    assert str(template["DefaultVersionNumber"]) == version
    (latest,) = ec2.describe_launch_template_versions(
        LaunchTemplateId=template["LaunchTemplateId"], Versions=["$Latest"])[
        "LaunchTemplateVersions"]
    data = latest["LaunchTemplateData"]
    assert decode_base64(data["UserData"]) == NEW
    # the rest of the machine is the first version's
    assert data["InstanceType"] == "g5.xlarge" and data["ImageId"]
    assert data["InstanceMarketOptions"]["SpotOptions"]["MaxPrice"] == "0.75"
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    # the member already running keeps what it booted with
    assert _user_data(aws, first.cloud_id) == SCRIPT

    aws.client("autoscaling").terminate_instance_in_auto_scaling_group(
        InstanceId=first.cloud_id, ShouldDecrementDesiredCapacity=False)
    after = p.describe_group(R, state.group_id)
    assert after is not None
    [second] = [m for m in after.members if m.cloud_id != first.cloud_id]
    assert _user_data(aws, second.cloud_id) == NEW


def test_a_group_pinned_to_a_version_is_moved_to_latest(aws: MotoAws) -> None:
    p = aws.provider()
    state = p.create_group(_request(aws, p, ledger_id="m-0043"))
    asg = aws.client("autoscaling")
    (template,) = aws.client("ec2").describe_launch_templates(
        LaunchTemplateNames=[state.group_id])["LaunchTemplates"]
    asg.update_auto_scaling_group(AutoScalingGroupName=state.group_id, LaunchTemplate={
        "LaunchTemplateId": template["LaunchTemplateId"], "Version": "1"})
    p.set_user_data(R, state.group_id, NEW)
    (group,) = asg.describe_auto_scaling_groups(AutoScalingGroupNames=[state.group_id])[
        "AutoScalingGroups"]
    assert group["LaunchTemplate"]["Version"] == "$Latest"


def test_user_data_over_16_kb_is_refused_before_any_call(aws: MotoAws) -> None:
    p = aws.provider()
    state = p.create_group(_request(aws, p, ledger_id="m-0044"))
    with pytest.raises(ProviderError) as info:
        # gzip gains little on it: 16,500 random bytes as text are some 16,700 sent
        p.set_user_data(R, state.group_id,
                        base64.b64encode(random.Random(29).randbytes(16_500)).decode())
    assert info.value.kind == "invalid" and "16384" in info.value.message()
    (template,) = aws.client("ec2").describe_launch_templates(
        LaunchTemplateNames=[state.group_id])["LaunchTemplates"]
    assert template["LatestVersionNumber"] == 1
