"""Short-lived keys limited to one run's folder (issue 22, "How the machine gets in").

AWS through moto's server (GetFederationToken; moto keeps no session policy, so the policy
moto received is read off its request and evaluated with moto's own IAM policy engine),
Tencent Cloud and Alibaba Cloud through their stand-ins, which check the signatures and the
documented limits of STS GetFederationToken and AssumeRole.
"""
# ruff: noqa: F811 - pytest fixtures imported from the fixture modules arrive as parameters

from __future__ import annotations

import json
from datetime import UTC
from datetime import datetime
from typing import Any
from urllib.parse import unquote

import pytest
from aliyun_standin import ACCESS_KEY_ID
from aliyun_standin import AliyunStandin
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from tencent_standin import SECRET_ID
from tencent_standin import TencentStandin

from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.storage import sts
from gpudesk.services.storage.errors import AccessDenied
from gpudesk.services.storage.errors import StorageError
from gpudesk.services.storage.uri import StoreUri

RUN = "mnist-20260101-120000-ab12"
S3 = StoreUri("aws", "gpudesk-0123456789-eu-west-1", "team/")
COS = StoreUri("tencent", "gpudesk-ab12cd34-1250000000", "")
OSS = StoreUri("aliyun", "gpudesk-0123456789-cn-hangzhou", "lab/")


def _left(expires: datetime) -> float:
    return (expires - datetime.now(UTC)).total_seconds()


# ------------------------------------------------------------------ AWS (moto)

@pytest.fixture
def federation_log(aws: MotoAws, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What moto's GetFederationToken handler was sent (moto keeps no session policy)."""
    from moto.sts.responses import TokenResponse

    seen: list[dict[str, Any]] = []
    real = TokenResponse.get_federation_token

    def recording(self: TokenResponse) -> Any:
        seen.append({"Name": self._get_param("Name"),
                     "Policy": self._get_param("Policy"),
                     "DurationSeconds": self._get_int_param("DurationSeconds")})
        return real(self)

    monkeypatch.setattr(TokenResponse, "get_federation_token", recording)
    return seen


def test_aws_keys_are_limited_to_the_runs_prefix(aws: MotoAws,
                                                 federation_log: list[dict[str, Any]]) -> None:
    from moto.iam.access_control import IAMPolicy
    from moto.iam.access_control import PermissionResult

    keys = sts.run_credentials("aws", "eu-west-1", aws.credentials, S3, RUN, hours=2)
    assert keys.key_id and keys.secret and keys.token
    assert keys.key_id != aws.credentials.key_id
    assert 7200 - 60 < _left(keys.expires) <= 7200
    (sent,) = federation_log
    assert sent["DurationSeconds"] == 7200
    assert sent["Name"] == "gpudesk-mnist-20260101-120000-ab12"[:25] + "-" + sent["Name"][-6:]
    assert len(sent["Name"]) <= 32
    policy = json.loads(sent["Policy"])
    root = f"team/runs/{RUN}/"
    assert policy == sts.aws_policy(S3, RUN)
    objects, listing, data = policy["Statement"]
    assert objects["Resource"] == f"arn:aws:s3:::{S3.bucket}/{root}*"
    assert (data["Action"], data["Resource"]) == (  # datasets, read only (issue 32)
        "s3:GetObject", f"arn:aws:s3:::{S3.bucket}/team/data/*")
    assert listing == {"Sid": "ListRun", "Effect": "Allow", "Action": "s3:ListBucket",
                       "Resource": f"arn:aws:s3:::{S3.bucket}",
                       "Condition": {"StringLike": {"s3:prefix": [root, f"{root}*"]}}}
    engine = IAMPolicy(sent["Policy"])

    def allowed(action: str, key: str) -> bool:
        return engine.is_action_permitted(action, f"arn:aws:s3:::{key}") \
            == PermissionResult.PERMITTED

    assert allowed("s3:PutObject", f"{S3.bucket}/{root}checkpoints/ckpt-100.pt")
    assert allowed("s3:GetObject", f"{S3.bucket}/{root}manifest.json")
    assert allowed("s3:DeleteObject", f"{S3.bucket}/{root}checkpoints/ckpt-1.pt")
    assert not allowed("s3:PutObject", f"{S3.bucket}/team/runs/other-run/manifest.json")
    assert not allowed("s3:GetObject", f"{S3.bucket}/team/secret.txt")
    assert not allowed("s3:PutObject", f"other-bucket/{root}x")
    assert not allowed("s3:DeleteBucket", S3.bucket)
    assert not allowed("s3:PutBucketPolicy", S3.bucket)
    assert allowed("s3:GetObject", f"{S3.bucket}/team/data/blobs/{'0' * 64}")  # datasets
    assert not allowed("s3:PutObject", f"{S3.bucket}/team/data/sets/x/manifest.json")
    assert not allowed("s3:DeleteObject", f"{S3.bucket}/team/data/blobs/{'0' * 64}")


def test_aws_hours_are_held_to_the_clouds_range(aws: MotoAws,
                                               federation_log: list[dict[str, Any]]) -> None:
    sts.run_credentials("aws", "eu-west-1", aws.credentials, S3, RUN, hours=100)
    sts.run_credentials("aws", "eu-west-1", aws.credentials, S3, RUN, hours=0.01)
    assert [s["DurationSeconds"] for s in federation_log] == [129600, 900]
    root = sts.Caller("123456789012", root=True, arn="arn:aws:iam::123456789012:root")
    sts.run_credentials("aws", "eu-west-1", aws.credentials, S3, RUN, hours=36, caller=root)
    assert federation_log[-1]["DurationSeconds"] == 3600  # the root user's sessions: 1 h


def test_aws_denied_names_get_federation_token(aws: MotoAws) -> None:
    iam = aws.client("iam")
    iam.create_user(UserName="no-federation")
    iam.put_user_policy(UserName="no-federation", PolicyName="p", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "*", "Resource": "*"},
            {"Effect": "Deny", "Action": "sts:GetFederationToken", "Resource": "*"}]}))
    made = iam.create_access_key(UserName="no-federation")["AccessKey"]
    creds = Credentials("aws", made["AccessKeyId"], made["SecretAccessKey"])
    with aws.enforce_iam(), pytest.raises(AccessDenied) as caught:
        sts.run_credentials("aws", "eu-west-1", creds, S3, RUN, hours=1)
    assert caught.value.action == "sts:GetFederationToken"
    assert "sts:GetFederationToken" in caught.value.message()
    assert made["SecretAccessKey"] not in caught.value.message()


def test_aws_session_keys_cannot_make_run_keys(aws: MotoAws,
                                              federation_log: list[dict[str, Any]]) -> None:
    answer = aws.client("sts").assume_role(
        RoleArn="arn:aws:iam::123456789012:role/somebody", RoleSessionName="ss")["Credentials"]
    creds = Credentials("aws", answer["AccessKeyId"], answer["SecretAccessKey"],
                        answer["SessionToken"])
    with pytest.raises(StorageError) as caught:
        sts.run_credentials("aws", "eu-west-1", creds, S3, RUN, hours=1)
    assert caught.value.template == sts.MSG_SESSION_KEYS
    assert federation_log == []  # refused before the call AWS would refuse


# ------------------------------------------------------------------ Tencent Cloud (stand-in)

@pytest.fixture
def tc(tencent: TencentStandin, monkeypatch: pytest.MonkeyPatch) -> TencentStandin:
    monkeypatch.setenv(sts.TENCENT_ENDPOINT_ENV, f"http://{tencent.endpoint}")
    return tencent


def test_tencent_keys_are_limited_to_the_runs_prefix(tc: TencentStandin,
                                                     tencent_creds: Credentials) -> None:
    caller = sts.whoami("tencent", "ap-guangzhou", tencent_creds)
    assert caller == sts.Caller("100000000001", root=False, appid="1250000000")
    keys = sts.run_credentials("tencent", "ap-guangzhou", tencent_creds, COS, RUN, hours=3)
    (token,) = tc.federation_tokens
    assert (keys.key_id, keys.secret, keys.token) == (
        token["TmpSecretId"], token["TmpSecretKey"], token["Token"])
    assert int(keys.expires.timestamp()) == token["ExpiredTime"]
    assert token["DurationSeconds"] == 10800 and token["Name"] == "gpudesk"
    policy = token["Policy"]
    assert policy == sts.tencent_policy(COS, RUN, "ap-guangzhou")
    base = f"qcs::cos:ap-guangzhou:uid/1250000000:{COS.bucket}"
    objects, listing, data = policy["statement"]
    assert objects["resource"] == [f"{base}/runs/{RUN}/*"]
    assert data["resource"] == [f"{base}/data/*"]  # datasets, read only (issue 32)
    assert data["action"] == ["name/cos:GetObject", "name/cos:HeadObject"]
    assert "name/cos:DeleteBucket" not in objects["action"]
    assert listing == {"effect": "allow", "action": ["name/cos:GetBucket"],
                       "resource": [f"{base}/*"],
                       "condition": {"string_like": {"cos:prefix": f"runs/{RUN}/*"}}}
    sent = next(p for a, _, p in tc.requests if a == "GetFederationToken")
    assert sent["Policy"].startswith("%7B%22version%22")  # URL-encoded, as the API asks
    assert json.loads(unquote(sent["Policy"])) == policy


def test_tencent_duration_follows_the_account_type(tc: TencentStandin,
                                                   tencent_creds: Credentials) -> None:
    sts.run_credentials("tencent", "ap-guangzhou", tencent_creds, COS, RUN, hours=100)
    tc.main_keys.add(SECRET_ID)  # now the main account's own keys
    keys = sts.run_credentials("tencent", "ap-guangzhou", tencent_creds, COS, RUN, hours=100)
    assert [t["DurationSeconds"] for t in tc.federation_tokens] == [129600, 7200]
    assert 7200 - 60 < _left(keys.expires) <= 7200


def test_tencent_denied_names_get_federation_token(tc: TencentStandin,
                                                   tencent_creds: Credentials) -> None:
    tc.denied.add("GetFederationToken")
    with pytest.raises(AccessDenied) as caught:
        sts.run_credentials("tencent", "ap-guangzhou", tencent_creds, COS, RUN, hours=1)
    assert caught.value.action == "sts:GetFederationToken"
    assert tc.federation_tokens == []


def _tencent_sts(tc: TencentStandin, creds: Credentials, params: dict[str, Any]) -> str:
    """The stand-in's answer code to a raw, correctly signed GetFederationToken ("" = ok)."""
    try:
        sts._tencent_call(creds, "sts", sts.TENCENT_STS_VERSION, "ap-guangzhou",
                          "GetFederationToken", params, "t")
    except StorageError as err:
        return str(err.values.get("code", ""))
    return ""


def test_tencent_standin_holds_get_federation_token_to_its_limits(
        tc: TencentStandin, tencent_creds: Credentials) -> None:
    good = json.dumps({"version": "2.0", "statement": [
        {"effect": "allow", "action": ["name/cos:GetObject"], "resource": ["*"]}]})
    ok = {"Name": "gpudesk", "Policy": good, "DurationSeconds": 1800}
    assert _tencent_sts(tc, tencent_creds, ok) == ""
    assert _tencent_sts(tc, tencent_creds, {**ok, "Name": "g"}) == "InvalidParameter.ParamError"
    assert _tencent_sts(tc, tencent_creds, {**ok, "Name": "g" * 33}) \
        == "InvalidParameter.ParamError"
    assert _tencent_sts(tc, tencent_creds, {**ok, "Name": "has space"}) \
        == "InvalidParameter.ParamError"
    assert _tencent_sts(tc, tencent_creds, {**ok, "DurationSeconds": 129601}) \
        == "InvalidParameter.ParamError"
    with_principal = json.dumps({"version": "2.0", "statement": [
        {"effect": "allow", "action": ["*"], "resource": ["*"],
         "principal": {"qcs": ["qcs::cam::uin/1:uin/1"]}}]})
    assert _tencent_sts(tc, tencent_creds, {**ok, "Policy": with_principal}) \
        == "InvalidParameter.PolicyError"
    tc.main_keys.add(SECRET_ID)
    assert _tencent_sts(tc, tencent_creds, {**ok, "DurationSeconds": 7201}) \
        == "InvalidParameter.ParamError"
    assert _tencent_sts(tc, tencent_creds, {**ok, "DurationSeconds": 7200}) == ""
    assert len(tc.federation_tokens) == 2


# ------------------------------------------------------------------ Alibaba Cloud (stand-in)

@pytest.fixture
def ali(aliyun: AliyunStandin, monkeypatch: pytest.MonkeyPatch) -> AliyunStandin:
    monkeypatch.setenv(sts.ALIYUN_ENDPOINT_ENV, f"http://{aliyun.endpoint}")
    return aliyun


def test_aliyun_keys_come_from_gpudesks_role_limited_to_the_run(
        ali: AliyunStandin, aliyun_creds: Credentials) -> None:
    keys = sts.run_credentials("aliyun", "cn-hangzhou", aliyun_creds, OSS, RUN, hours=4)
    role = ali.state.roles[sts.STORE_ROLE]
    assert json.loads(role["AssumeRolePolicyDocument"])["Statement"][0]["Principal"] == {
        "RAM": ["acs:ram::1234567890123456:root"]}
    assert role["MaxSessionDuration"] == 43200 and role["_tags"] == {"gpudesk": "1"}
    assert (sts.STORE_ROLE, f"gpudesk-store-{OSS.bucket}") in ali.state.attached
    bucket_policy = json.loads(ali.state.policies[f"gpudesk-store-{OSS.bucket}"]["_document"])
    assert bucket_policy["Statement"][0]["Resource"] == [
        f"acs:oss:*:*:{OSS.bucket}", f"acs:oss:*:*:{OSS.bucket}/*"]
    (given,) = ali.assumed
    assert (keys.key_id, keys.secret, keys.token) == (
        given["AccessKeyId"], given["AccessKeySecret"], given["SecurityToken"])
    assert given["DurationSeconds"] == 14400 and given["RoleArn"] == role["Arn"]
    assert given["RoleSessionName"] == sts.session_name(RUN, 64)
    assert given["Policy"] == sts.aliyun_policy(OSS, RUN)
    objects, listing, data = given["Policy"]["Statement"]
    assert objects["Resource"] == [f"acs:oss:*:*:{OSS.bucket}/lab/runs/{RUN}/*"]
    assert (data["Action"], data["Resource"]) == (  # datasets, read only (issue 32)
        ["oss:GetObject"], [f"acs:oss:*:*:{OSS.bucket}/lab/data/*"])
    assert listing["Condition"] == {"StringLike": {"oss:Prefix": [f"lab/runs/{RUN}/*"]}}
    sts.run_credentials("aliyun", "cn-hangzhou", aliyun_creds, OSS, "second-run", hours=99)
    assert ali.calls["CreateRole"] == 1 and ali.calls["CreatePolicy"] == 1
    assert ali.assumed[-1]["DurationSeconds"] == 43200  # the role's own maximum


def test_aliyun_root_keys_are_refused_before_assume_role(
        ali: AliyunStandin, aliyun_creds: Credentials) -> None:
    ali.root_keys.add(ACCESS_KEY_ID)
    with pytest.raises(StorageError) as caught:
        sts.run_credentials("aliyun", "cn-hangzhou", aliyun_creds, OSS, RUN, hours=1)
    assert caught.value.template == sts.MSG_ALIYUN_ROOT
    assert ali.calls["AssumeRole"] == 0 and ali.calls["CreateRole"] == 0


def test_aliyun_denied_names_assume_role(ali: AliyunStandin,
                                         aliyun_creds: Credentials) -> None:
    ali.denied.add("AssumeRole")
    with pytest.raises(AccessDenied) as caught:
        sts.run_credentials("aliyun", "cn-hangzhou", aliyun_creds, OSS, RUN, hours=1)
    assert caught.value.action == "sts:AssumeRole"
    ali.denied = {"CreatePolicy"}  # a new bucket needs its policy on the role
    other = StoreUri("aliyun", "gpudesk-other-bucket", "")
    with pytest.raises(AccessDenied) as caught:
        sts.run_credentials("aliyun", "cn-hangzhou", aliyun_creds, other, RUN, hours=1)
    assert caught.value.action == "ram:CreatePolicy"
    assert len(ali.assumed) == 0


def test_aliyun_role_of_the_same_name_not_trusting_the_account_is_left_alone(
        ali: AliyunStandin, aliyun_creds: Credentials) -> None:
    call = sts._aliyun_caller(aliyun_creds)
    call(sts.RAM_VERSION, "CreateRole", {"RoleName": sts.STORE_ROLE,
                                         "AssumeRolePolicyDocument": json.dumps({
                                             "Version": "1", "Statement": [{
                                                 "Action": "sts:AssumeRole",
                                                 "Effect": "Allow", "Principal": {
                                                     "Service": ["ecs.aliyuncs.com"]}}]})},
         "ram")
    with pytest.raises(StorageError) as caught:
        sts.run_credentials("aliyun", "cn-hangzhou", aliyun_creds, OSS, RUN, hours=1)
    assert caught.value.template == sts.MSG_ROLE_NOT_OURS
    assert ali.calls["AssumeRole"] == 0 and ali.calls["CreatePolicy"] == 0


def test_aliyun_standin_holds_assume_role_to_its_limits(
        ali: AliyunStandin, aliyun_creds: Credentials) -> None:
    call = sts._aliyun_caller(aliyun_creds)
    arn, _ = sts.ensure_store_role(call, "1234567890123456", OSS.bucket)
    policy = json.dumps(sts.aliyun_policy(OSS, RUN))
    ok = {"RoleArn": arn, "RoleSessionName": "gpudesk-x", "Policy": policy,
          "DurationSeconds": 900}

    def code(params: dict[str, Any]) -> str:
        try:
            call(sts.ALIYUN_STS_VERSION, "AssumeRole", params, "t")
        except StorageError as err:
            return str(err.values.get("code", ""))
        return ""

    assert code(ok) == ""
    assert code({**ok, "DurationSeconds": 899}) == "InvalidParameter.DurationSeconds"
    assert code({**ok, "DurationSeconds": 43201}) == "InvalidParameter.DurationSeconds"
    assert code({**ok, "RoleSessionName": "x"}) == "InvalidParameter.RoleSessionName"
    assert code({**ok, "RoleSessionName": "x" * 65}) == "InvalidParameter.RoleSessionName"
    padded = {"Version": "1", "Statement": [{"Effect": "Allow", "Action": ["oss:GetObject"],
                                             "Resource": ["acs:oss:*:*:" + "b" * 2048]}]}
    assert code({**ok, "Policy": json.dumps(padded)}) == "InvalidParameter.PolicySize"
    assert code({**ok, "RoleArn": "acs:ram::1234567890123456:role/nobody"}) \
        == "EntityNotExist.Role"
    assert len(ali.assumed) == 1


def test_session_names_fit_every_cloud() -> None:
    long = "a-very-long-project-name-20260101-120000-ab12"
    name = sts.session_name(long)
    assert len(name) == 32 and name.startswith("gpudesk-a-very")
    assert sts.session_name(long) != sts.session_name(long + "x")
    assert sts.session_name("r:1/2") == "gpudesk-r-1-2"
