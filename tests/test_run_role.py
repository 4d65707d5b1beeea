"""The role of a keep-alive group's machines (issue 23): its run's folder and its own group.

AWS through moto's server (the role, profile, tags and inline policy as moto holds them;
what the policy allows judged by moto's own IAM policy engine, with the group's real ARN
from moto's Auto Scaling), Tencent Cloud and Alibaba Cloud through their stand-ins, which
check the SDKs' signatures and hold CAM's UpdatePolicy and RAM's policy versions to their
documented limits; the documents they stored are read back.
"""
# ruff: noqa: F811 - pytest fixtures imported from the fixture modules arrive as parameters

from __future__ import annotations

import json
from typing import Any

import pytest
from aliyun_standin import ACCOUNT_ID
from aliyun_standin import AliyunStandin
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_aws import ACCOUNT  # noqa: F401
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from tencent_standin import OWNER_UIN
from tencent_standin import TencentStandin

from gpudesk.services.cloud import instance_role
from gpudesk.services.cloud.keep_alive import group_name
from gpudesk.services.cloud.providers import base
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.aws import AwsProvider
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.storage import run_role
from gpudesk.services.storage.errors import AccessDenied
from gpudesk.services.storage.errors import StorageError
from gpudesk.services.storage.uri import StoreUri

LEDGER = "m-0a1b2c3d4e"
NAME = group_name(LEDGER)  # gpudesk-run-m-0a1b2c3d4e
RUN, RUN2 = "mnist-20260101-120000-ab12", "mnist-20260102-090000-cd34"
S3 = StoreUri("aws", "gpudesk-123456789012-us-east-1", "team/")
COS = StoreUri("tencent", "gpudesk-ab12cd34-1250000000", "")
OSS = StoreUri("aliyun", "gpudesk-1234567890123456-cn-hangzhou", "lab/")


# ------------------------------------------------------------------ AWS (moto)

def _policy(aws: MotoAws) -> dict[str, Any]:
    doc = aws.client("iam").get_role_policy(RoleName=NAME, PolicyName=run_role.AWS_POLICY)[
        "PolicyDocument"]
    return doc if isinstance(doc, dict) else json.loads(doc)  # type: ignore[no-any-return]


def _group_arn(aws: MotoAws, ledger_id: str) -> str:
    """A real Auto Scaling group as the keep-alive mixin names and tags it; moto's ARN."""
    ec2, asg = aws.client("ec2"), aws.client("autoscaling")
    name = group_name(ledger_id)
    ec2.create_launch_template(LaunchTemplateName=name, LaunchTemplateData={
        "ImageId": "ami-12c6146b", "InstanceType": "g4dn.xlarge"})
    asg.create_auto_scaling_group(
        AutoScalingGroupName=name, LaunchTemplate={"LaunchTemplateName": name}, MinSize=0,
        MaxSize=1, DesiredCapacity=0, AvailabilityZones=["us-east-1a"],
        Tags=[{"Key": base.TAG_LEDGER, "Value": ledger_id, "PropagateAtLaunch": True}])
    (group,) = asg.describe_auto_scaling_groups(AutoScalingGroupNames=[name])[
        "AutoScalingGroups"]
    return str(group["AutoScalingGroupARN"])


class _Engine:
    """moto's IAM policy engine over the role's policy as moto holds it."""

    def __init__(self, aws: MotoAws) -> None:
        from moto.iam.access_control import IAMPolicy

        self.engine = IAMPolicy(json.dumps(_policy(aws)))

    def allows(self, action: str, resource: str, tag: str | None = None) -> bool:
        from moto.iam.access_control import PermissionResult

        context = None if tag is None else {
            f"autoscaling:ResourceTag/{base.TAG_LEDGER}": tag}
        return self.engine.is_action_permitted(action, resource,
                                               incoming_condition_values=context) \
            == PermissionResult.PERMITTED

    def object(self, action: str, key: str) -> bool:
        return self.allows(action, f"arn:aws:s3:::{S3.bucket}/{key}")


def test_aws_role_profile_and_tags_are_what_moto_holds(aws: MotoAws) -> None:
    made = run_role.ensure_group_role(aws.provider(), LEDGER, "us-east-1", S3)
    assert made == NAME
    iam = aws.client("iam")
    role = iam.get_role(RoleName=NAME)["Role"]
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "ec2.amazonaws.com"}
    assert {t["Key"]: t["Value"] for t in role["Tags"]} == {
        "gpudesk": "1", "gpudesk-ledger-id": LEDGER}
    profile = iam.get_instance_profile(InstanceProfileName=NAME)["InstanceProfile"]
    assert [r["RoleName"] for r in profile["Roles"]] == [NAME]
    # moto serves no ListInstanceProfileTags; GetInstanceProfile carries the tags
    assert {t["Key"]: t["Value"] for t in profile["Tags"]} == {
        "gpudesk": "1", "gpudesk-ledger-id": LEDGER}
    assert iam.list_role_policies(RoleName=NAME)["PolicyNames"] == [run_role.AWS_POLICY]
    assert iam.list_attached_role_policies(RoleName=NAME)["AttachedPolicies"] == []
    # a second call (a retried launch) finds all of it and makes nothing twice
    assert run_role.ensure_group_role(aws.provider(), LEDGER, "us-east-1", S3) == NAME
    assert len(iam.list_instance_profiles()["InstanceProfiles"]) == 1
    assert len(_policy(aws)["Statement"]) == 2


def test_aws_policy_ends_only_its_group_and_reaches_no_object_before_a_run(
        aws: MotoAws) -> None:
    run_role.ensure_group_role(aws.provider(), LEDGER, "us-east-1", S3)
    mine, other = _group_arn(aws, LEDGER), _group_arn(aws, "m-ffffffffff")
    policy = _policy(aws)
    assert [s["Sid"] for s in policy["Statement"]] == ["EndItsGroup", "ReadGroups"]
    engine = _Engine(aws)
    root = f"team/runs/{RUN}/"
    assert not engine.object("s3:PutObject", f"{root}x")
    assert not engine.object("s3:GetObject", f"{root}manifest.json")
    assert not engine.allows("s3:ListBucket", f"arn:aws:s3:::{S3.bucket}")
    for action in run_role.AWS_GROUP_ACTIONS:
        assert engine.allows(action, mine, tag=LEDGER), action
        assert not engine.allows(action, other, tag="m-ffffffffff"), action
        assert not engine.allows(action, other), action  # by its ARN alone, too
        assert not engine.allows(action, mine, tag="m-ffffffffff"), action  # re-tagged: no
    assert engine.allows("autoscaling:DescribeAutoScalingGroups", "*")
    for action in ("ec2:RunInstances", "ec2:TerminateInstances", "iam:PassRole",
                   "iam:CreateRole", "iam:PutRolePolicy", "autoscaling:CreateAutoScalingGroup",
                   "autoscaling:PutScheduledUpdateGroupAction", "sts:AssumeRole"):
        assert not engine.allows(action, "*"), action
        assert not engine.allows(action, mine, tag=LEDGER), action


def test_aws_set_run_gives_the_runs_folder_only_and_replaces_the_last(aws: MotoAws) -> None:
    provider = aws.provider()
    run_role.ensure_group_role(provider, LEDGER, "us-east-1", S3)
    mine = _group_arn(aws, LEDGER)
    run_role.set_run(provider, LEDGER, "us-east-1", S3, RUN)
    engine = _Engine(aws)
    root = f"team/runs/{RUN}/"
    for action in ("s3:PutObject", "s3:GetObject", "s3:DeleteObject",
                   "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"):
        assert engine.object(action, f"{root}checkpoints/ckpt-100.pt"), action
    assert not engine.object("s3:PutObject", f"team/runs/{RUN2}/x")
    assert not engine.object("s3:PutObject", "team/secret.txt")
    assert not engine.allows("s3:PutObject", f"arn:aws:s3:::other-bucket/{root}x")
    assert not engine.allows("s3:DeleteBucket", f"arn:aws:s3:::{S3.bucket}")
    assert engine.allows("autoscaling:UpdateAutoScalingGroup", mine, tag=LEDGER)

    run_role.set_run(provider, LEDGER, "us-east-1", S3, RUN2)
    policy = _policy(aws)
    assert [s["Sid"] for s in policy["Statement"]] == [
        "EndItsGroup", "ReadGroups", "RunObjects", "ListRun",
        "ReadData"]  # one bucket part, the new run's (and datasets, read only: issue 32)
    listing = policy["Statement"][3]
    assert listing["Condition"] == {"StringLike": {"s3:prefix": [
        f"team/runs/{RUN2}/", f"team/runs/{RUN2}/*"]}}
    engine = _Engine(aws)
    assert engine.object("s3:PutObject", f"team/runs/{RUN2}/x")
    assert not engine.object("s3:PutObject", f"{root}x")
    # a retried ensure keeps the run it was given
    run_role.ensure_group_role(provider, LEDGER, "us-east-1", S3)
    assert _Engine(aws).object("s3:PutObject", f"team/runs/{RUN2}/x")


def test_aws_delete_leaves_nothing_and_is_idempotent(aws: MotoAws) -> None:
    provider = aws.provider()
    run_role.set_run(provider, LEDGER, "us-east-1", S3, RUN)  # makes the role too
    run_role.ensure_group_role(provider, "m-keepkeep01", "us-east-1", S3)  # another group's
    run_role.delete_group_role(provider, LEDGER, "us-east-1", "aws")
    iam = aws.client("iam")
    for probe in (lambda: iam.get_role(RoleName=NAME),
                  lambda: iam.get_instance_profile(InstanceProfileName=NAME),
                  lambda: iam.list_role_policies(RoleName=NAME)):
        with pytest.raises(iam.exceptions.NoSuchEntityException):
            probe()
    assert [r["RoleName"] for r in iam.list_roles()["Roles"]] == [group_name("m-keepkeep01")]
    assert [p["InstanceProfileName"] for p in iam.list_instance_profiles()[
        "InstanceProfiles"]] == [group_name("m-keepkeep01")]
    run_role.delete_group_role(provider, LEDGER, "us-east-1", "aws")  # gone is success


def test_aws_refusal_names_the_denied_action(aws: MotoAws) -> None:
    iam = aws.client("iam")
    iam.create_user(UserName="no-roles")
    iam.put_user_policy(UserName="no-roles", PolicyName="p", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "*", "Resource": "*"},
            {"Effect": "Deny", "Action": "iam:CreateRole", "Resource": "*"}]}))
    made = iam.create_access_key(UserName="no-roles")["AccessKey"]
    provider = AwsProvider(Credentials("aws", made["AccessKeyId"], made["SecretAccessKey"]),
                           endpoint_url=aws.endpoint)
    with aws.enforce_iam(), pytest.raises(run_role.RunRoleDenied) as caught:
        run_role.ensure_group_role(provider, LEDGER, "us-east-1", S3)
    assert isinstance(caught.value, AccessDenied)
    assert caught.value.action == "iam:CreateRole"
    assert caught.value.message() == run_role.MSG_ROLE_DENIED.format(
        action="iam:CreateRole", target=f"IAM role {NAME}")
    assert made["SecretAccessKey"] not in caught.value.message()


def test_aws_a_users_role_of_that_name_is_not_rewritten(aws: MotoAws) -> None:
    iam = aws.client("iam")
    lambda_only = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Action": "sts:AssumeRole",
        "Principal": {"Service": "lambda.amazonaws.com"}}]}
    iam.create_role(RoleName=NAME, AssumeRolePolicyDocument=json.dumps(lambda_only))
    with pytest.raises(StorageError) as caught:
        run_role.ensure_group_role(aws.provider(), LEDGER, "us-east-1", S3)
    assert caught.value.template == run_role.MSG_ROLE_TAKEN
    assert iam.list_role_policies(RoleName=NAME)["PolicyNames"] == []


def test_a_bad_run_id_is_refused_before_any_call(aws: MotoAws) -> None:
    with pytest.raises(StorageError):
        run_role.set_run(aws.provider(), LEDGER, "us-east-1", S3, "../other")
    assert aws.client("iam").list_roles()["Roles"] == []


# ------------------------------------------------------------------ Tencent Cloud (stand-in)

@pytest.fixture
def tc_provider(tencent: TencentStandin, tencent_creds: Credentials) -> TencentProvider:
    return TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http",
                           sleep=lambda _s: None)


def _cam_policy(tc: TencentStandin) -> tuple[int, dict[str, Any]]:
    (policy,) = [p for p in tc.state.policies.values() if p["PolicyName"] == NAME]
    return int(policy["PolicyId"]), json.loads(policy["PolicyDocument"])


def test_tencent_role_ends_only_its_group_and_gets_the_runs_folder(
        tencent: TencentStandin, tc_provider: TencentProvider) -> None:
    region = "ap-guangzhou"
    assert run_role.ensure_group_role(tc_provider, LEDGER, region, COS) == NAME
    role = tencent.state.roles[NAME]
    assert role["_services"] == ["cvm.qcloud.com"]
    assert {t["Key"]: t["Value"] for t in role["Tags"]} == {
        "gpudesk": "1", "gpudesk-ledger-id": LEDGER}
    pid, doc = _cam_policy(tencent)
    assert (NAME, pid) in tencent.state.attached
    groups = f"qcs::as:{region}:uin/{OWNER_UIN}:auto-scaling-group/"
    # before the group's id is known: the region's groups tagged with the ledger id only
    assert doc == {"version": "2.0", "statement": [{
        "effect": "allow", "action": list(run_role.TENCENT_GROUP_ACTIONS),
        "resource": [groups + "*"],
        "condition": {"for_any_value:string_equal": {
            "qcs:resource_tag": [f"gpudesk-ledger-id&{LEDGER}"]}}}]}
    # the group's id, once known: that group only, and no bucket yet
    run_role.ensure_group_role(tc_provider, LEDGER, region, COS, group_id="asg-8x2kq1zd")
    group_part = [{"effect": "allow", "action": list(run_role.TENCENT_GROUP_ACTIONS),
                   "resource": [groups + "asg-8x2kq1zd"]}]
    assert _cam_policy(tencent) == (pid, {"version": "2.0", "statement": group_part})

    run_role.set_run(tc_provider, LEDGER, region, COS, RUN)
    run_role.set_run(tc_provider, LEDGER, region, COS, RUN2)
    _, doc = _cam_policy(tencent)
    bucket = f"qcs::cos:{region}:uid/1250000000:{COS.bucket}"
    assert doc["statement"][:1] == group_part  # the id is kept, not widened back
    objects, listing, _datasets = doc["statement"][1:]  # datasets: read only (issue 32)
    assert objects["resource"] == [f"{bucket}/runs/{RUN2}/*"]
    assert "name/cos:PutObject" in objects["action"]
    assert "name/cos:PutBucketPolicy" not in objects["action"]
    assert listing["condition"] == {"string_like": {"cos:prefix": f"runs/{RUN2}/*"}}
    assert RUN not in json.dumps(doc)  # the first run's folder is gone
    assert [a for st in doc["statement"] for a in st["action"]
            if not a.startswith(("name/as:", "name/cos:"))] == []
    assert tencent.calls["CreatePolicy"] == 1 and tencent.calls["UpdatePolicy"] == 3
    assert tencent.calls["CreateRole"] == 1


def test_tencent_delete_leaves_nothing_and_is_idempotent(
        tencent: TencentStandin, tc_provider: TencentProvider) -> None:
    run_role.set_run(tc_provider, LEDGER, "ap-guangzhou", COS, RUN)
    instance_role.ensure_tencent_role(instance_role._cam_call(tc_provider), LEDGER)  # not ours
    own = instance_role.role_name("tencent", LEDGER)  # the machine's self-stop role
    run_role.delete_group_role(tc_provider, LEDGER, "ap-guangzhou", "tencent")
    assert list(tencent.state.roles) == [own]
    assert [p["PolicyName"] for p in tencent.state.policies.values()] == [own]
    assert [r for r, _p in tencent.state.attached] == [own]
    run_role.delete_group_role(tc_provider, LEDGER, "ap-guangzhou", "tencent")  # gone: ok
    assert list(tencent.state.roles) == [own]
    assert tencent.calls["DeletePolicy"] == 1  # the second call found no policy to delete


def test_tencent_refusal_names_the_cam_action(tencent: TencentStandin,
                                              tc_provider: TencentProvider) -> None:
    tencent.cam_denied = True
    with pytest.raises(run_role.RunRoleDenied) as caught:
        run_role.ensure_group_role(tc_provider, LEDGER, "ap-guangzhou", COS)
    assert caught.value.action == "cam:GetRole"
    assert "cam:GetRole" in caught.value.message() and NAME in caught.value.message()


def test_tencent_standin_holds_update_policy_to_its_limits(
        tencent: TencentStandin, tc_provider: TencentProvider) -> None:
    run_role.ensure_group_role(tc_provider, LEDGER, "ap-guangzhou", COS)
    pid, _ = _cam_policy(tencent)
    cam = instance_role._cam_call(tc_provider)

    def code(params: dict[str, Any]) -> str:
        with pytest.raises(base.ProviderError) as got:
            cam("UpdatePolicy", params)
        return got.value.detail.split("]")[0].lstrip("[")

    good = {"version": "2.0", "statement": [{"effect": "allow", "action": ["name/as:*"],
                                             "resource": ["*"]}]}
    too_long = dict(good, padding="x" * 6144)
    assert code({"PolicyId": pid, "PolicyDocument": json.dumps(too_long)}) == (
        "InvalidParameter.PolicyDocumentLengthOverLimit")
    assert code({"PolicyId": pid, "PolicyDocument": "{}"}) == (
        "InvalidParameter.PolicyDocumentError")
    assert code({"PolicyId": 1, "PolicyDocument": json.dumps(good)}) == (
        "InvalidParameter.PolicyIdNotExist")
    tencent.state.policies[pid]["CreateMode"] = 1  # a policy not made from a document
    assert code({"PolicyId": pid, "PolicyDocument": json.dumps(good)}) == (
        "InvalidParameter.PolicyIdError")


# ------------------------------------------------------------------ Alibaba Cloud (stand-in)

@pytest.fixture
def ali_provider(aliyun: AliyunStandin, aliyun_creds: Credentials) -> AliyunProvider:
    return AliyunProvider(aliyun_creds, endpoint=aliyun.endpoint, protocol="http",
                          sleep=lambda _s: None)


def _ram_document(ali: AliyunStandin) -> dict[str, Any]:
    return json.loads(ali.state.policies[NAME]["_document"])  # type: ignore[no-any-return]


def test_aliyun_role_ends_only_its_group_and_gets_the_runs_folder(
        aliyun: AliyunStandin, ali_provider: AliyunProvider) -> None:
    region = "cn-hangzhou"
    assert run_role.ensure_group_role(ali_provider, LEDGER, region, OSS) == NAME
    role = aliyun.state.roles[NAME]
    assert role["_services"] == ["ecs.aliyuncs.com"]
    assert role["_tags"] == {"gpudesk": "1", "gpudesk-ledger-id": LEDGER}
    assert aliyun.state.policies[NAME]["_tags"] == {"gpudesk": "1", "gpudesk-ledger-id": LEDGER}
    assert (NAME, NAME) in aliyun.state.attached
    groups = f"acs:ess:{region}:{ACCOUNT_ID}:scalinggroup/"
    assert _ram_document(aliyun) == {"Version": "1", "Statement": [
        {"Effect": "Allow", "Action": ["ess:ModifyScalingGroup", "ess:DeleteScalingGroup"],
         "Resource": [groups + "*"],
         "Condition": {"StringEquals": {"acs:ResourceTag/gpudesk-ledger-id": LEDGER}}},
        {"Effect": "Allow", "Action": ["ess:DescribeScalingGroups"],
         "Resource": [groups + "*"]}]}
    run_role.ensure_group_role(ali_provider, LEDGER, region, OSS, group_id="asg-bp1abc")
    group_part = [{"Effect": "Allow", "Action": [
        "ess:ModifyScalingGroup", "ess:DeleteScalingGroup", "ess:DescribeScalingGroups"],
        "Resource": [groups + "asg-bp1abc"]}]
    assert _ram_document(aliyun)["Statement"] == group_part

    # more updates than RAM keeps versions of a policy: each replaces the last, one is left
    runs = [f"run-{i}" for i in range(7)]
    for run in runs:
        run_role.set_run(ali_provider, LEDGER, region, OSS, run)
    doc = _ram_document(aliyun)
    assert doc["Statement"][:1] == group_part
    objects, listing, _datasets = doc["Statement"][1:]  # datasets: read only (issue 32)
    assert objects["Resource"] == [f"acs:oss:*:*:{OSS.bucket}/lab/runs/run-6/*"]
    assert listing["Condition"] == {"StringLike": {"oss:Prefix": ["lab/runs/run-6/*"]}}
    assert not any(f"runs/{r}/" in json.dumps(doc) for r in runs[:-1])
    versions = aliyun.state.policies[NAME]["_versions"]
    assert [v["IsDefaultVersion"] for v in versions] == [True]
    assert versions[0]["VersionId"] == "v9" == aliyun.state.policies[NAME]["DefaultVersion"]
    assert aliyun.calls["CreatePolicyVersion"] == 8 and aliyun.calls["CreatePolicy"] == 1
    assert [a for st in doc["Statement"] for a in st["Action"]
            if not a.startswith(("ess:", "oss:"))] == []


def test_aliyun_delete_leaves_nothing_and_is_idempotent(
        aliyun: AliyunStandin, ali_provider: AliyunProvider) -> None:
    run_role.set_run(ali_provider, LEDGER, "cn-hangzhou", OSS, RUN)
    run_role.set_run(ali_provider, LEDGER, "cn-hangzhou", OSS, RUN2)
    run_role.delete_group_role(ali_provider, LEDGER, "cn-hangzhou", "aliyun")
    assert aliyun.state.roles == {} and aliyun.state.policies == {}
    assert aliyun.state.attached == set()
    run_role.delete_group_role(ali_provider, LEDGER, "cn-hangzhou", "aliyun")


def test_aliyun_standin_holds_policy_versions_and_deletes_to_ram_rules(
        aliyun: AliyunStandin, ali_provider: AliyunProvider) -> None:
    run_role.ensure_group_role(ali_provider, LEDGER, "cn-hangzhou", OSS)
    ram = instance_role._ram_call(ali_provider)

    def code(action: str, params: dict[str, Any]) -> str:
        with pytest.raises(base.ProviderError) as got:
            ram(action, params)
        return got.value.detail.split("]")[0].lstrip("[")

    doc = json.dumps({"Version": "1", "Statement": [
        {"Effect": "Allow", "Action": ["ess:DescribeScalingGroups"], "Resource": ["*"]}]})
    for _ in range(4):  # v2..v5: RAM keeps 5 versions, then refuses without a rotation
        ram("CreatePolicyVersion", {"PolicyName": NAME, "PolicyDocument": doc})
    assert code("CreatePolicyVersion", {"PolicyName": NAME, "PolicyDocument": doc}) == (
        "LimitExceeded.Policy.Version")
    assert code("CreatePolicyVersion", {"PolicyName": NAME, "PolicyDocument": "{" * 6145}) == (
        "InvalidParameter")
    assert code("DeletePolicyVersion", {"PolicyName": NAME, "VersionId": "v1"}) == (
        "DeleteConflict.PolicyVersion.Default")
    assert code("DeleteRole", {"RoleName": NAME}) == "DeleteConflict.Role.Policy"
    ram("DetachPolicyFromRole", {"PolicyType": "Custom", "PolicyName": NAME,
                                 "RoleName": NAME})
    assert code("DeletePolicy", {"PolicyName": NAME}) == "DeleteConflict.Policy.Version"
    # the role's end still finds its way through: versions pruned, then policy and role
    run_role.delete_group_role(ali_provider, LEDGER, "cn-hangzhou", "aliyun")
    assert aliyun.state.roles == {} and aliyun.state.policies == {}


def test_aliyun_refusal_names_the_ram_action(aliyun: AliyunStandin,
                                            ali_provider: AliyunProvider) -> None:
    aliyun.ram_denied = True
    with pytest.raises(run_role.RunRoleDenied) as caught:
        run_role.delete_group_role(ali_provider, LEDGER, "cn-hangzhou", "aliyun")
    assert caught.value.action == "ram:DetachPolicyFromRole"
    assert "ram:DetachPolicyFromRole" in caught.value.message()
