"""Issue 23: the agent ends its run's keep-alive group through the machine's role.

AWS against a real moto server: a group made with boto3 (launch template + Auto Scaling
group of size 1), then the agent's stdlib calls (the role's credentials from a metadata
stand-in on 127.0.0.1, SigV4 service ``autoscaling``) set it to 0 and delete it, and
moto's own DescribeAutoScalingGroups shows no group. A denied action and a wrong region
come back as words in the event log, with no secret and no traceback.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from aliyun_ess_standin import AliyunEssStandin
from aliyun_standin import ACCESS_KEY_ID
from aliyun_standin import ACCESS_KEY_SECRET
from aliyun_standin import AliyunStandin
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_aws import ACCOUNT  # noqa: F401
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from metadata_standin import MetadataStandin
from standin_http import fresh_standin
from tencent_as_standin import TencentAsStandin
from tencent_standin import SECRET_ID
from tencent_standin import SECRET_KEY

from gpudesk.agent.clock import SimClock
from gpudesk.agent.events import EventLog
from gpudesk.agent.events import read_events
from gpudesk.agent.group_end import GroupEnder
from gpudesk.agent.group_end import GroupEndError
from gpudesk.agent.group_end import GroupRef
from gpudesk.agent.group_end import end_group
from gpudesk.agent.group_end import endpoint_of
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.tencent import TencentProvider

R = "us-east-1"
ROLE = "gpudesk-run-machine"
AMI = "ami-0abcdef1234567890"
GROUP = "gpudesk-run-m-0042"
PUBLIC_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQgpudeskTestKeyOnlyForTheStandinServer00 me@lap"


def _make_group(cloud: MotoAws, name: str = GROUP) -> str:  # noqa: F811
    """A real Auto Scaling group of size 1 in moto, as the desktop makes one."""
    cloud.publish_image(R, AMI, "ubuntu", datetime(2026, 1, 1, tzinfo=UTC))
    ec2 = cloud.client("ec2")
    ec2.create_launch_template(LaunchTemplateName=name, LaunchTemplateData={
        "ImageId": AMI, "InstanceType": "g5.xlarge"})
    asg = cloud.client("autoscaling")
    asg.create_auto_scaling_group(
        AutoScalingGroupName=name, LaunchTemplate={"LaunchTemplateName": name},
        MinSize=1, MaxSize=1, DesiredCapacity=1, AvailabilityZones=[f"{R}a"],
        CapacityRebalance=True)
    members = asg.describe_auto_scaling_groups(AutoScalingGroupNames=[name])[
        "AutoScalingGroups"][0]["Instances"]
    assert len(members) == 1
    return str(members[0]["InstanceId"])


def _groups(cloud: MotoAws, name: str = GROUP) -> list[dict[str, Any]]:  # noqa: F811
    found: list[dict[str, Any]] = cloud.client("autoscaling").describe_auto_scaling_groups(
        AutoScalingGroupNames=[name])["AutoScalingGroups"]
    return found


def _static(key: str = "ASIAROLEMACHINE00001", secret: str = "role/SeCrEt+0123456789abcdef",
            token: str = "FwoGZXIvYXdzROLE-session-token") -> Any:
    def issue() -> dict[str, str]:
        return {"Code": "Success", "AccessKeyId": key, "SecretAccessKey": secret,
                "Token": token, "Expiration": "2099-01-01T00:00:00Z"}
    return issue


def test_endpoints_follow_each_clouds_reference() -> None:
    assert endpoint_of("aws", "eu-west-1") == "https://autoscaling.eu-west-1.amazonaws.com/"
    assert endpoint_of("aws", "cn-north-1") == \
        "https://autoscaling.cn-north-1.amazonaws.com.cn/"
    assert endpoint_of("tencent", "ap-guangzhou") == "https://as.tencentcloudapi.com/"
    assert endpoint_of("aliyun", "cn-hangzhou") == "https://ess.aliyuncs.com/"
    assert endpoint_of("aliyun", "eu-central-1") == "https://ess.eu-central-1.aliyuncs.com/"
    assert GroupRef.from_dict({"cloud": "aws", "region": R, "group_id": GROUP}) == \
        GroupRef("aws", R, GROUP)
    assert GroupRef.from_dict(None) is None
    assert GroupRef.from_dict({"cloud": "gcp", "region": R, "group_id": "g"}) is None


def test_aws_group_set_to_zero_and_deleted_through_the_role(
        aws: MotoAws, moto_server: str, tmp_path: Path) -> None:  # noqa: F811
    iid = _make_group(aws)
    assert _groups(aws)[0]["DesiredCapacity"] == 1
    clock = SimClock()
    events = EventLog(tmp_path / "agent", clock)
    with MetadataStandin("aws", ROLE, iid, R, _static()) as md:
        ender = GroupEnder(GroupRef("aws", R, GROUP), ROLE, events, clock=clock,
                           metadata=md.url, endpoint=moto_server)
        assert ender.attempt("ended") is True
        # IMDSv2 token first, then the role's credentials: nothing else signs the calls
        assert md.hits[0] == "PUT /latest/api/token"
        assert f"GET /latest/meta-data/iam/security-credentials/{ROLE}" in md.hits
    assert _groups(aws) == []  # moto's own describe: no group
    assert ender.gone and ender.confirmed
    done = [e for e in read_events(tmp_path / "agent") if e["kind"] == "group-end"]
    assert len(done) == 1 and done[0]["gone"] is True and done[0]["why"] == "ended"
    assert done[0]["key"] == ender.key
    assert "{group}" in done[0]["said"] and done[0]["values"]["group"] == GROUP
    # a restarted agent knows from the events that the group is gone: no call at all
    again = GroupEnder(GroupRef("aws", R, GROUP), ROLE, EventLog(tmp_path / "agent", clock),
                       clock=clock, metadata="http://127.0.0.1:9", endpoint=moto_server)
    assert again.gone and again.attempt("ended") is True


def test_aws_a_group_already_gone_is_success_and_one_at_zero_is_confirmed(
        aws: MotoAws, moto_server: str) -> None:  # noqa: F811
    iid = _make_group(aws)
    with MetadataStandin("aws", ROLE, iid, R, _static()) as md:
        out = end_group(GroupRef("aws", R, GROUP), ROLE, metadata=md.url,
                        endpoint=moto_server)
        assert out.gone
        # ended by the desktop already (or an earlier try): still success, no error
        again = end_group(GroupRef("aws", R, GROUP), ROLE, metadata=md.url,
                          endpoint=moto_server)
        assert again.gone


def test_aws_denied_action_is_a_readable_event_without_secrets(
        aws: MotoAws, moto_server: str, tmp_path: Path) -> None:  # noqa: F811
    iid = _make_group(aws)
    iam = aws.client("iam")
    iam.create_role(RoleName=ROLE, AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                "Principal": {"Service": "ec2.amazonaws.com"}}]}))
    iam.put_role_policy(RoleName=ROLE, PolicyName="p", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": ["autoscaling:Describe*"], "Resource": "*"}]}))
    got = aws.client("sts").assume_role(RoleArn=f"arn:aws:iam::{ACCOUNT}:role/{ROLE}",
                                        RoleSessionName=iid)["Credentials"]
    key = {"AccessKeyId": got["AccessKeyId"], "SecretAccessKey": got["SecretAccessKey"],
           "Token": got["SessionToken"]}
    clock = SimClock()
    events = EventLog(tmp_path / "agent", clock)
    with MetadataStandin("aws", ROLE, iid, R, _static(key["AccessKeyId"],
                                                     key["SecretAccessKey"],
                                                     key["Token"])) as md, \
            aws.enforce_iam():
        ender = GroupEnder(GroupRef("aws", R, GROUP), ROLE, events, clock=clock,
                           metadata=md.url, endpoint=moto_server)
        assert ender.attempt("budget") is False
        ender.tick()  # not due yet: the backoff holds the next try
        clock.advance(15.0)
        assert ender.tick() is False
    failed = [e for e in read_events(tmp_path / "agent") if e["kind"] == "group-end-failed"]
    assert [e["attempt"] for e in failed] == [1, 2]
    assert [e["retry_s"] for e in failed] == [15.0, 30.0]  # backoff doubles
    first = failed[0]
    assert "UpdateAutoScalingGroup" in first["error"] and "AccessDenied" in first["error"]
    assert first["code"] == "AccessDenied" and first["why"] == "budget"
    text = (tmp_path / "agent" / "events.jsonl").read_text()
    assert key["SecretAccessKey"] not in text and key["Token"] not in text
    assert "Traceback" not in text
    assert _groups(aws)[0]["DesiredCapacity"] == 1  # nothing changed in the cloud


def test_aws_wrong_region_is_refused_in_words_before_any_call(
        aws: MotoAws, moto_server: str, tmp_path: Path) -> None:  # noqa: F811
    iid = _make_group(aws)
    clock = SimClock()
    events = EventLog(tmp_path / "agent", clock)
    with MetadataStandin("aws", ROLE, iid, R, _static()) as md:
        # in eu-west-1 moto has no such group: a "not found" there must not read as gone
        with pytest.raises(GroupEndError, match="in eu-west-1, but this machine is in "
                                                "us-east-1"):
            end_group(GroupRef("aws", "eu-west-1", GROUP), ROLE, metadata=md.url,
                      endpoint=moto_server)
        ender = GroupEnder(GroupRef("aws", "eu-west-1", GROUP), ROLE, events, clock=clock,
                           metadata=md.url, endpoint=moto_server)
        assert ender.attempt("ended") is False
        assert not any("credentials" in h for h in md.hits)  # no role credentials asked
    failed = [e for e in read_events(tmp_path / "agent") if e["kind"] == "group-end-failed"]
    assert failed[0]["code"] == "WrongRegion"
    assert "eu-west-1" in failed[0]["error"] and "Traceback" not in failed[0]["error"]
    assert _groups(aws)[0]["DesiredCapacity"] == 1


def test_unreachable_cloud_is_words_and_retried(tmp_path: Path) -> None:
    clock = SimClock()
    events = EventLog(tmp_path / "agent", clock)
    with MetadataStandin("aws", ROLE, "i-1", R, _static()) as md:
        ender = GroupEnder(GroupRef("aws", R, GROUP), ROLE, events, clock=clock,
                           metadata=md.url, endpoint="http://127.0.0.1:9", timeout=2.0)
        ender.arm("ended")
        assert ender.tick() is False
    failed = [e for e in read_events(tmp_path / "agent") if e["kind"] == "group-end-failed"]
    assert "cannot reach 127.0.0.1:9" in failed[0]["error"]
    assert "ROLE-session-token" not in (tmp_path / "agent" / "events.jsonl").read_text()


# ------------------------------------------------------------------ Tencent Cloud AS

TC_REGION = "ap-guangzhou"
TC_ID = "AKIDroleGroupEnd000000000000000001"
TC_SECRET = "roleGroupEndSecret0123456789abcdef"
TC_TOKEN = "role-group-end-session-token-0123456789"


def _tc_issue() -> dict[str, str]:
    return {"Code": "Success", "TmpSecretId": TC_ID, "TmpSecretKey": TC_SECRET,
            "Token": TC_TOKEN, "ExpiredTime": "4102444800",
            "Expiration": "2099-12-31T00:00:00Z"}


@pytest.fixture(scope="module")
def as_server() -> Iterator[TencentAsStandin]:
    server = TencentAsStandin().start()
    yield server
    server.stop()


@pytest.fixture
def tc(as_server: TencentAsStandin, monkeypatch: pytest.MonkeyPatch) -> TencentAsStandin:
    cloud = fresh_standin(as_server, SECRET_ID, SECRET_KEY, monkeypatch)
    cloud.add_secret(TC_ID, TC_SECRET)  # the role's temporary key, as CAM would issue it
    return cloud


def _tc_group(cloud: TencentAsStandin) -> tuple[str, str]:
    """A group of size 1 made by the desktop's provider; (group id, its member)."""
    p = TencentProvider(Credentials(provider="tencent", key_id=SECRET_ID, secret=SECRET_KEY),
                        endpoint=cloud.endpoint, protocol="http", sleep=lambda _s: None)
    try:
        key = p.ensure_key_pair(TC_REGION, "gpudesk-laptop", PUBLIC_KEY)
        state = p.create_group(LaunchRequest(
            ledger_id="m-0a1b2c3d4e", region=TC_REGION, instance_type="GN7.2XLARGE32",
            market="spot", allow_from="203.0.113.7/32", key_name=key,
            user_data="#!/bin/bash\necho resume\n", budget=60.0, price_per_hour=2.6,
            cloud_timer_at=time.time() + 3 * 3600.5))
        p.describe_group(TC_REGION, state.group_id)  # the member is IN_SERVICE now
    finally:
        p.close()
    return state.group_id, state.members[0].cloud_id


def test_tencent_group_set_to_zero_then_deleted_once_no_machine_remains(
        tc: TencentAsStandin, tmp_path: Path) -> None:
    group_id, member = _tc_group(tc)
    clock = SimClock()
    events = EventLog(tmp_path / "agent", clock)
    with MetadataStandin("tencent", ROLE, member, TC_REGION, _tc_issue) as md:
        ender = GroupEnder(GroupRef("tencent", TC_REGION, group_id), ROLE, events, clock=clock,
                           metadata=md.url, endpoint=f"http://{tc.endpoint}/")
        # size 0 confirmed; the member (this machine) is still leaving: no delete yet
        assert ender.attempt("budget") is True and not ender.gone
        assert tc.groups[group_id]["DesiredCapacity"] == 0
        assert tc.groups[group_id]["MaxSize"] == 0 and tc.groups[group_id]["MinSize"] == 0
        assert tc.calls["DeleteAutoScalingGroup"] == 0
        tc.tick()  # AS finishes the scale-in: no machine left
        clock.advance(15.0)
        assert ender.tick() is True and ender.gone
    assert group_id not in tc.groups
    assert tc.params("ModifyAutoScalingGroup")[-1] == {
        "AutoScalingGroupId": group_id, "MinSize": 0, "MaxSize": 0, "DesiredCapacity": 0}
    said = [e for e in read_events(tmp_path / "agent") if e["kind"] == "group-end"]
    assert [(e["gone"], e["desired"]) for e in said] == [(False, 0), (True, 0)]


def test_tencent_denied_action_is_a_readable_event(tc: TencentAsStandin,
                                                   tmp_path: Path) -> None:
    group_id, member = _tc_group(tc)
    tc.denied = {"ModifyAutoScalingGroup"}
    clock = SimClock()
    events = EventLog(tmp_path / "agent", clock)
    with MetadataStandin("tencent", ROLE, member, TC_REGION, _tc_issue) as md:
        ender = GroupEnder(GroupRef("tencent", TC_REGION, group_id), ROLE, events, clock=clock,
                           metadata=md.url, endpoint=f"http://{tc.endpoint}/")
        assert ender.attempt("ended") is False
    (failed,) = [e for e in read_events(tmp_path / "agent") if e["kind"] == "group-end-failed"]
    assert failed["code"] == "UnauthorizedOperation"
    assert "Tencent Cloud AS refused ModifyAutoScalingGroup" in failed["error"]
    text = (tmp_path / "agent" / "events.jsonl").read_text()
    assert TC_SECRET not in text and TC_TOKEN not in text and "Traceback" not in text
    assert tc.groups[group_id]["DesiredCapacity"] == 1


# ------------------------------------------------------------------ Alibaba Cloud ESS

ALI_REGION = "cn-hangzhou"
ALI_ID = "STS.roleGroupEnd0000000001"
ALI_SECRET = "roleGroupEndAliSecret0123456789"
ALI_TOKEN = "CAIS-role-group-end-security-token"


def _ali_issue() -> dict[str, str]:
    return {"Code": "Success", "AccessKeyId": ALI_ID, "AccessKeySecret": ALI_SECRET,
            "SecurityToken": ALI_TOKEN, "Expiration": "2099-12-31T00:00:00Z"}


@pytest.fixture(scope="module")
def ess_server() -> Iterator[AliyunEssStandin]:
    server = AliyunEssStandin().start()
    yield server
    server.stop()


@pytest.fixture
def ess(ess_server: AliyunEssStandin, aliyun: AliyunStandin,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> AliyunEssStandin:
    ess_server.ecs = aliyun
    cloud = fresh_standin(ess_server, ACCESS_KEY_ID, ACCESS_KEY_SECRET, monkeypatch)
    cloud.add_secret(ALI_ID, ALI_SECRET)  # the role's STS key, as RAM would issue it
    return cloud


def _ali_group(cloud: AliyunEssStandin) -> tuple[str, str]:
    p = AliyunProvider(Credentials(provider="aliyun", key_id=ACCESS_KEY_ID,  # type: ignore
                                   secret=ACCESS_KEY_SECRET),
                       endpoint=cloud.endpoint, protocol="http", sleep=lambda _s: None)
    try:
        key = p.ensure_key_pair(ALI_REGION, "gpudesk-abc", PUBLIC_KEY)
        sg = p.ensure_security_group(ALI_REGION, "203.0.113.7/32")
        state = p.create_group(LaunchRequest(
            ledger_id="m-0123456789", region=ALI_REGION, instance_type="ecs.gn7i-c8g1.2xlarge",
            zone="cn-hangzhou-h", market="spot", max_price=4.5, key_name=key,
            security_group=sg, user_data="#!/bin/bash\necho resume\n", budget=50.0,
            price_per_hour=3.2, cloud_timer_at=time.time() + 3 * 3600 + 37.5))
    finally:
        p.close()
    return state.group_id, state.members[0].cloud_id


def test_aliyun_group_set_to_zero_and_force_deleted(ess: AliyunEssStandin,
                                                    aliyun: AliyunStandin,  # noqa: F811
                                                    tmp_path: Path) -> None:
    group_id, member = _ali_group(ess)
    clock = SimClock()
    events = EventLog(tmp_path / "agent", clock)
    with MetadataStandin("aliyun", ROLE, member, ALI_REGION, _ali_issue) as md:
        ender = GroupEnder(GroupRef("aliyun", ALI_REGION, group_id), ROLE, events,
                           clock=clock, metadata=md.url, endpoint=f"http://{ess.endpoint}/")
        assert ender.attempt("ended") is True and ender.gone
    assert group_id not in ess.groups
    assert member not in aliyun.state.instances  # ESS released it with the group
    modify = ess.params("ModifyScalingGroup")[-1]
    assert (modify["MinSize"], modify["MaxSize"], modify["DesiredCapacity"]) == ("0", "0", "0")
    assert [p["ForceDelete"] for p in ess.params("DeleteScalingGroup")] == ["true"]
    assert ess.internal_errors == [] and ess.limit_refusals == []
    (done,) = [e for e in read_events(tmp_path / "agent") if e["kind"] == "group-end"]
    assert done["gone"] is True and done["cloud"] == "aliyun"


def test_aliyun_wrong_region_and_unknown_key_are_words(ess: AliyunEssStandin,
                                                       tmp_path: Path) -> None:
    group_id, member = _ali_group(ess)
    clock = SimClock()
    events = EventLog(tmp_path / "agent", clock)

    def stranger() -> dict[str, str]:
        return {**_ali_issue(), "AccessKeyId": "STS.notKnownHere0000000001"}

    with MetadataStandin("aliyun", ROLE, member, ALI_REGION, stranger) as md:
        GroupEnder(GroupRef("aliyun", "cn-beijing", group_id), ROLE, events, clock=clock,
                   metadata=md.url, endpoint=f"http://{ess.endpoint}/").attempt("ended")
        GroupEnder(GroupRef("aliyun", ALI_REGION, group_id), ROLE, events, clock=clock,
                   metadata=md.url, endpoint=f"http://{ess.endpoint}/").attempt("ended")
    wrong, unknown = [e for e in read_events(tmp_path / "agent")
                      if e["kind"] == "group-end-failed"]
    assert wrong["code"] == "WrongRegion" and "cn-beijing" in wrong["error"]
    assert unknown["code"] == "InvalidAccessKeyId.NotFound"
    assert "Alibaba Cloud ESS refused ModifyScalingGroup" in unknown["error"]
    text = (tmp_path / "agent" / "events.jsonl").read_text()
    assert ALI_SECRET not in text and ALI_TOKEN not in text and "Traceback" not in text
    assert ess.groups[group_id]["DesiredCapacity"] == 1
