"""Short-lived keys limited to one run's folder: what a rented machine writes its bucket with.

A role shared by all of an account's machines cannot be limited to one run's prefix, so
the machine gets STS keys whose session policy allows only ``<bucket>/<prefix>runs/<id>/*``
(objects) and listing with that prefix (docs/storage.md, "How the machine gets in"). The
instance role stays the guard's (stop only). Per cloud:

* AWS: STS ``GetFederationToken`` (``Policy``, ``DurationSeconds`` 900..129600; the root
  user's sessions end within 3600 s; session keys may not call it).
* Tencent Cloud: STS ``GetFederationToken`` (2018-08-13; ``Policy`` URL-encoded CAM JSON,
  ``DurationSeconds`` up to 7200 for the main account, 129600 for a sub-account). CAM
  ``GetUserAppId`` says whose keys they are and the APPID COS bucket names end with.
* Alibaba Cloud: STS ``AssumeRole`` (2015-04-01) of gpudesk's RAM role ``gpudesk-store``
  (trusted by the account itself, allowed OSS on the buckets it is used with, one custom
  policy per bucket), with a session policy (at most 2048 characters) and
  ``DurationSeconds`` 900..the role's MaxSessionDuration. The account's own (root) keys
  may not call AssumeRole: a RAM user's keys are needed.

Blocking (boto3, the Tencent and Alibaba Cloud SDKs): call from a worker thread. Tests
point AWS at moto (``AWS_ENDPOINT_URL``) and the others at their stand-ins
(``GPUDESK_TENCENT_ENDPOINT``, ``GPUDESK_ALIYUN_ENDPOINT``, as for their providers).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any
from urllib.parse import quote
from urllib.parse import urlsplit

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.storage.access import TempCredentials
from gpudesk.services.storage.errors import MSG_CLOUD
from gpudesk.services.storage.errors import MSG_DENIED
from gpudesk.services.storage.errors import AccessDenied
from gpudesk.services.storage.errors import StorageError
from gpudesk.services.storage.uri import StoreUri
from gpudesk.services.storage.uri import cos_appid

TENCENT_ENDPOINT_ENV = "GPUDESK_TENCENT_ENDPOINT"  # = cloud.accounts.TENCENT_ENDPOINT_ENV
ALIYUN_ENDPOINT_ENV = "GPUDESK_ALIYUN_ENDPOINT"  # = cloud.accounts.ALIYUN_ENDPOINT_ENV

MIN_SECONDS = 900
AWS_MAX_S, AWS_ROOT_MAX_S = 129_600, 3_600
TENCENT_MAX_S, TENCENT_ROOT_MAX_S = 129_600, 7_200
ALIYUN_ROLE_MAX_S = 43_200  # RAM CreateRole MaxSessionDuration: 3600..43200
ALIYUN_POLICY_MAX = 2048
TENCENT_STS_VERSION, CAM_VERSION = "2018-08-13", "2019-01-16"
ALIYUN_STS_VERSION, RAM_VERSION = "2015-04-01", "2015-05-01"
STORE_ROLE = "gpudesk-store"
STORE_POLICY_PREFIX = "gpudesk-store-"  # + the bucket: one custom policy per bucket used
DENIED_CODES = frozenset({
    "AccessDenied", "AccessDeniedException", "UnauthorizedOperation",
    "AuthFailure.UnauthorizedOperation", "NoPermission", "Forbidden.RAM",
    "Forbidden.NoPermission", "Forbidden", "NoPermission.Role"})

MSG_SESSION_KEYS = QT_TRANSLATE_NOOP(
    "Storage", "The AWS keys gpudesk has are themselves short-lived (a role's or a session's), "
    "and AWS lets only an IAM user's long-lived keys call sts:GetFederationToken. Add an IAM "
    "user's keys on the Accounts page to give machines keys limited to their run.")
MSG_ALIYUN_ROOT = QT_TRANSLATE_NOOP(
    "Storage", "These are the Alibaba Cloud account's own (root) keys, and Alibaba Cloud lets "
    "only a RAM user or role call sts:AssumeRole. Add a RAM user's keys (with "
    "AliyunSTSAssumeRoleAccess) on the Accounts page to give machines keys limited to their "
    "run.")
MSG_ROLE_NOT_OURS = QT_TRANSLATE_NOOP(
    "Storage", "A RAM role named {role} exists but does not trust this account, so gpudesk "
    "does not use or change it. Rename or delete it, or let acs:ram::{account}:root assume it.")
MSG_POLICY_TOO_LONG = QT_TRANSLATE_NOOP(
    "Storage", "The session policy for {target} is {length} characters long; {cloud} takes at "
    "most {limit}. Choose a shorter bucket prefix.")

TAG_MANAGED = "gpudesk"  # = cloud.providers.base.TAG_MANAGED, value "1"
_NAME_OK = re.compile(r"[^\w+=,.@-]")


@dataclass(frozen=True)
class Caller:
    """Whose keys they are: the account (and COS's APPID), whether they are the account's
    own root keys, and whether they are already short-lived."""

    account_id: str
    root: bool = False
    temporary: bool = False
    appid: str = ""
    arn: str = ""


# ------------------------------------------------------------------ policies

def _compact(doc: dict[str, Any]) -> str:
    return json.dumps(doc, separators=(",", ":"))


def aws_policy(store: StoreUri, run_id: str, partition: str = "aws") -> dict[str, Any]:
    """IAM: the run's objects, and ListBucket only with its prefix (``s3:prefix``)."""
    root = store.run(run_id).root
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "RunObjects", "Effect": "Allow",
         "Action": ["s3:PutObject", "s3:GetObject", "s3:DeleteObject",
                    "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"],
         "Resource": f"arn:{partition}:s3:::{store.bucket}/{root}*"},
        {"Sid": "ListRun", "Effect": "Allow", "Action": "s3:ListBucket",
         "Resource": f"arn:{partition}:s3:::{store.bucket}",
         "Condition": {"StringLike": {"s3:prefix": [root, f"{root}*"]}}},
        {"Sid": "ReadData", "Effect": "Allow", "Action": "s3:GetObject",  # issue 32
         "Resource": f"arn:{partition}:s3:::{store.bucket}/{store.prefix}data/*"}]}


def tencent_policy(store: StoreUri, run_id: str, region: str) -> dict[str, Any]:
    """CAM: the run's objects in the COS bucket, GetBucket only with its prefix."""
    root = store.run(run_id).root
    base = f"qcs::cos:{region}:uid/{cos_appid(store.bucket)}:{store.bucket}"
    return {"version": "2.0", "statement": [
        {"effect": "allow",
         "action": ["name/cos:PutObject", "name/cos:InitiateMultipartUpload",
                    "name/cos:UploadPart", "name/cos:CompleteMultipartUpload",
                    "name/cos:AbortMultipartUpload", "name/cos:ListParts",
                    "name/cos:GetObject", "name/cos:HeadObject", "name/cos:DeleteObject"],
         "resource": [f"{base}/{root}*"]},
        {"effect": "allow", "action": ["name/cos:GetBucket"], "resource": [f"{base}/*"],
         "condition": {"string_like": {"cos:prefix": f"{root}*"}}},
        {"effect": "allow", "action": ["name/cos:GetObject", "name/cos:HeadObject"],
         "resource": [f"{base}/{store.prefix}data/*"]}]}  # datasets (issue 32)


def aliyun_policy(store: StoreUri, run_id: str) -> dict[str, Any]:
    """RAM session policy: the run's OSS objects, ListObjects only with its prefix."""
    root = store.run(run_id).root
    return {"Version": "1", "Statement": [
        {"Effect": "Allow",
         "Action": ["oss:PutObject", "oss:GetObject", "oss:DeleteObject",
                    "oss:AbortMultipartUpload", "oss:ListParts"],
         "Resource": [f"acs:oss:*:*:{store.bucket}/{root}*"]},
        {"Effect": "Allow", "Action": ["oss:ListObjects"],
         "Resource": [f"acs:oss:*:*:{store.bucket}"],
         "Condition": {"StringLike": {"oss:Prefix": [f"{root}*"]}}},
        {"Effect": "Allow", "Action": ["oss:GetObject"],  # datasets (issue 32)
         "Resource": [f"acs:oss:*:*:{store.bucket}/{store.prefix}data/*"]}]}


def aliyun_role_documents(account_id: str, bucket: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(trust, policy) of ``gpudesk-store``: assumed by the account's own users; OSS object
    and list actions on ``bucket`` (the session policy narrows it to one run)."""
    trust = {"Version": "1", "Statement": [{
        "Action": "sts:AssumeRole", "Effect": "Allow",
        "Principal": {"RAM": [f"acs:ram::{account_id}:root"]}}]}
    policy = {"Version": "1", "Statement": [{
        "Effect": "Allow",
        "Action": ["oss:PutObject", "oss:GetObject", "oss:DeleteObject",
                   "oss:AbortMultipartUpload", "oss:ListParts", "oss:ListObjects"],
        "Resource": [f"acs:oss:*:*:{bucket}", f"acs:oss:*:*:{bucket}/*"]}]}
    return trust, policy


def session_name(run_id: str, limit: int = 32) -> str:
    """A federated user / role session name for the run: ``gpudesk-<run>``, within the
    clouds' character set ``[\\w+=,.@-]``, cut to ``limit`` with a hash kept."""
    name = _NAME_OK.sub("-", f"gpudesk-{run_id}")
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(run_id.encode()).hexdigest()[:6]
    return f"{name[:limit - 7]}-{digest}"


def _seconds(hours: float, high: int) -> int:
    return max(MIN_SECONDS, min(high, int(round(hours * 3600))))


def max_seconds(cloud: str, caller: Caller) -> int:
    """The longest session the cloud allows these keys (before a role's own limit)."""
    if cloud == "aws":
        return AWS_ROOT_MAX_S if caller.root else AWS_MAX_S
    if cloud == "tencent":
        return TENCENT_ROOT_MAX_S if caller.root else TENCENT_MAX_S
    return ALIYUN_ROLE_MAX_S


def _when(value: Any, fallback_s: int) -> datetime:
    """An expiry as the clouds give it (datetime, ISO 8601 text, unix seconds), in UTC."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, int | float) or (isinstance(value, str) and value.isdigit()):
        return datetime.fromtimestamp(int(value), UTC)
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
        except ValueError:
            pass
    return datetime.now(UTC) + timedelta(seconds=fallback_s)


def _refusal(code: str, message: str, cloud: str, action: str, target: str) -> StorageError:
    if code in DENIED_CODES or code.startswith(("UnauthorizedOperation", "Forbidden",
                                                "AuthFailure.Unauthorized", "NoPermission")):
        return AccessDenied(MSG_DENIED, action=action, target=target)
    return StorageError(MSG_CLOUD, code=code or "Error", detail=(message or action)[:300])


# ------------------------------------------------------------------ AWS

def _aws_client(service: str, region: str, creds: Credentials) -> Any:
    import boto3
    from botocore.config import Config

    session = boto3.session.Session(
        aws_access_key_id=creds.key_id, aws_secret_access_key=creds.secret,
        aws_session_token=creds.session_token or None, region_name=region)
    return session.client(service, config=Config(  # type: ignore[call-overload]
        region_name=region, retries={"max_attempts": 3, "mode": "standard"},
        connect_timeout=10, read_timeout=30))


def _aws_call(fn: Callable[[], Any], action: str, target: str) -> Any:
    from botocore.exceptions import BotoCoreError
    from botocore.exceptions import ClientError

    try:
        return fn()
    except ClientError as err:
        error = (err.response or {}).get("Error", {})
        raise _refusal(str(error.get("Code", "")), str(error.get("Message", "")), "aws",
                       action, target) from None
    except BotoCoreError as err:
        raise StorageError(MSG_CLOUD, code=type(err).__name__, detail=action) from None


def _aws_whoami(region: str, creds: Credentials) -> Caller:
    sts = _aws_client("sts", region, creds)
    me = _aws_call(sts.get_caller_identity, "sts:GetCallerIdentity", "sts")
    arn = str(me.get("Arn", ""))
    return Caller(str(me.get("Account", "")), root=arn.endswith(":root"),
                  temporary=bool(creds.session_token) or ":assumed-role/" in arn
                  or ":federated-user/" in arn, arn=arn)


def _aws_keys(region: str, creds: Credentials, store: StoreUri, run_id: str, hours: float,
              caller: Caller) -> TempCredentials:
    if caller.temporary:
        raise StorageError(MSG_SESSION_KEYS)
    partition = caller.arn.split(":")[1] if caller.arn.count(":") >= 2 else "aws"
    policy = _compact(aws_policy(store, run_id, partition or "aws"))
    seconds = _seconds(hours, max_seconds("aws", caller))
    sts = _aws_client("sts", region, creds)
    answer = _aws_call(lambda: sts.get_federation_token(
        Name=session_name(run_id), Policy=policy, DurationSeconds=seconds),
        "sts:GetFederationToken", store.run(run_id).uri)["Credentials"]
    return TempCredentials(str(answer["AccessKeyId"]), str(answer["SecretAccessKey"]),
                           str(answer["SessionToken"]), _when(answer.get("Expiration"),
                                                              seconds))


# ------------------------------------------------------------------ Tencent Cloud

def _endpoint(env: str, default: str) -> tuple[str, str]:
    """(host[:port], protocol) of a cloud's API, honouring the test/private override."""
    given = os.environ.get(env, "").strip()
    if not given:
        return default, "https"
    parts = urlsplit(given if "://" in given else f"https://{given}")
    return parts.netloc, parts.scheme or "https"


def _tencent_call(creds: Credentials, service: str, version: str, region: str, action: str,
                  params: dict[str, Any], target: str) -> dict[str, Any]:
    """One signed (TC3) call through the SDK's common client; errors as StorageError."""
    from tencentcloud.common import credential
    from tencentcloud.common.common_client import CommonClient
    from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException
    from tencentcloud.common.profile.client_profile import ClientProfile
    from tencentcloud.common.profile.http_profile import HttpProfile

    host, protocol = _endpoint(TENCENT_ENDPOINT_ENV, f"{service}.tencentcloudapi.com")
    http = HttpProfile(protocol=protocol, reqTimeout=30, endpoint=host)
    client = CommonClient(service, version, credential.Credential(
        creds.key_id, creds.secret, creds.session_token or None), region,
        ClientProfile(httpProfile=http, language="en-US", disable_region_breaker=True))
    try:
        data = client.call_json(action, params)
    except TencentCloudSDKException as exc:
        raise _refusal(str(exc.code or ""), str(exc.message or ""), "tencent",
                       f"{service}:{action}", target) from None
    except Exception as exc:  # noqa: BLE001 - transport errors the SDK lets through
        raise StorageError(MSG_CLOUD, code=type(exc).__name__, detail=f"{service}:{action}"
                           ) from None
    answer = data.get("Response") if isinstance(data, dict) else None
    if not isinstance(answer, dict):
        raise StorageError(MSG_CLOUD, code="ServerNetworkError", detail=action)
    return answer


def _tencent_whoami(region: str, creds: Credentials) -> Caller:
    me = _tencent_call(creds, "cam", CAM_VERSION, "", "GetUserAppId", {}, "cam")
    uin, owner = str(me.get("Uin", "")), str(me.get("OwnerUin", ""))
    return Caller(owner, root=bool(uin) and uin == owner, temporary=bool(creds.session_token),
                  appid=str(me.get("AppId", "")))


def _tencent_keys(region: str, creds: Credentials, store: StoreUri, run_id: str, hours: float,
                  caller: Caller) -> TempCredentials:
    seconds = _seconds(hours, max_seconds("tencent", caller))
    policy = quote(_compact(tencent_policy(store, run_id, region)), safe="")
    answer = _tencent_call(creds, "sts", TENCENT_STS_VERSION, region, "GetFederationToken", {
        # Name: letters per the API reference's example ("readOnly"): one name for all runs
        "Name": "gpudesk", "Policy": policy, "DurationSeconds": seconds},
        store.run(run_id).uri)
    keys = answer.get("Credentials") or {}
    return TempCredentials(str(keys.get("TmpSecretId", "")), str(keys.get("TmpSecretKey", "")),
                           str(keys.get("Token", "")),
                           _when(answer.get("Expiration") or answer.get("ExpiredTime"),
                                 seconds))


# ------------------------------------------------------------------ Alibaba Cloud

def _aliyun_caller(creds: Credentials) -> Callable[[str, str, dict[str, Any], str],
                                                    dict[str, Any]]:
    """(version, action, params, target) → the answer's body; ACS3-signed by the OpenAPI
    client the ECS SDK is built on."""
    from alibabacloud_tea_openapi import utils_models as openapi
    from alibabacloud_tea_openapi.client import Client
    from alibabacloud_tea_openapi.utils import Utils
    from darabonba.runtime import RuntimeOptions

    clients: dict[str, Any] = {}
    runtime = RuntimeOptions(autoretry=False, max_attempts=1, read_timeout=30_000,
                             connect_timeout=10_000)

    def call(version: str, action: str, params: dict[str, Any], target: str
             ) -> dict[str, Any]:
        product = "sts" if version == ALIYUN_STS_VERSION else "ram"
        client = clients.get(product)
        if client is None:
            host, protocol = _endpoint(ALIYUN_ENDPOINT_ENV, f"{product}.aliyuncs.com")
            client = clients[product] = Client(openapi.Config(
                access_key_id=creds.key_id, access_key_secret=creds.secret,
                security_token=creds.session_token or None, protocol=protocol,
                endpoint=host, read_timeout=30_000, connect_timeout=10_000))
        what = openapi.Params(action=action, version=version, protocol="HTTPS", pathname="/",
                              method="POST", auth_type="AK", style="RPC",
                              req_body_type="formData", body_type="json")
        try:
            answer = client.call_api(what, openapi.OpenApiRequest(
                query=Utils.query(params)), runtime)
        except Exception as exc:  # noqa: BLE001 - the SDK's and requests' errors alike
            code, message = _aliyun_code(exc)
            raise _refusal(code, message, "aliyun", f"{product}:{action}", target) from None
        body = answer.get("body") if isinstance(answer, dict) else None
        return body if isinstance(body, dict) else {}

    return call


def _aliyun_code(exc: Exception) -> tuple[str, str]:
    """(code, message) of an Alibaba Cloud SDK error; a transport failure has none."""
    data, code = getattr(exc, "data", None), getattr(exc, "code", None)
    if isinstance(data, dict) and data.get("Code"):
        return str(data["Code"]), str(data.get("Message") or "")
    if isinstance(code, str) and code:
        return code, str(getattr(exc, "message", "") or "")
    return "ClientNetworkError", type(exc).__name__


def _aliyun_whoami(region: str, creds: Credentials) -> Caller:
    me = _aliyun_caller(creds)(ALIYUN_STS_VERSION, "GetCallerIdentity", {}, "sts")
    kind = str(me.get("IdentityType", ""))
    return Caller(str(me.get("AccountId", "")), root=kind == "Account",
                  temporary=kind == "AssumedRoleUser" or bool(creds.session_token),
                  arn=str(me.get("Arn", "")))


def _code_of(err: StorageError) -> str:
    return str(err.values.get("code", "")) if err.template == MSG_CLOUD else ""


def ensure_store_role(call: Callable[[str, str, dict[str, Any], str], dict[str, Any]],
                      account_id: str, bucket: str) -> tuple[str, int]:
    """Blocking: ``gpudesk-store`` (found or made, tagged as gpudesk's) with the policy for
    ``bucket`` attached; (its ARN, its MaxSessionDuration). A role of that name that does
    not trust the account is the user's: refused, never rewritten."""
    trust, policy = aliyun_role_documents(account_id, bucket)
    tags = {"Tag": [{"Key": TAG_MANAGED, "Value": "1"}]}
    try:
        role = call(RAM_VERSION, "GetRole", {"RoleName": STORE_ROLE}, "ram").get("Role") or {}
    except StorageError as err:
        if _code_of(err) != "EntityNotExist.Role":
            raise
        role = call(RAM_VERSION, "CreateRole", {
            "RoleName": STORE_ROLE, "AssumeRolePolicyDocument": _compact(trust),
            "Description": "gpudesk: short-lived keys limited to one run's folder",
            "MaxSessionDuration": ALIYUN_ROLE_MAX_S, **tags}, "ram").get("Role") or {}
    else:
        principals = [p for st in json.loads(str(role.get("AssumeRolePolicyDocument") or
                                                 "{}")).get("Statement", [])
                      for p in (st.get("Principal") or {}).get("RAM", [])]
        if f"acs:ram::{account_id}:root" not in principals:
            raise StorageError(MSG_ROLE_NOT_OURS, role=STORE_ROLE, account=account_id)
    name = (STORE_POLICY_PREFIX + bucket)[:128]
    try:
        call(RAM_VERSION, "GetPolicy", {"PolicyName": name, "PolicyType": "Custom"}, "ram")
    except StorageError as err:
        if _code_of(err) != "EntityNotExist.Policy":
            raise
        try:
            call(RAM_VERSION, "CreatePolicy", {
                "PolicyName": name, "PolicyDocument": _compact(policy),
                "Description": f"gpudesk: OSS objects of {bucket} for run keys", **tags},
                "ram")
        except StorageError as again:  # made meanwhile: use it
            if _code_of(again) != "EntityAlreadyExists.Policy":
                raise
    try:
        call(RAM_VERSION, "AttachPolicyToRole", {"PolicyType": "Custom", "PolicyName": name,
                                                 "RoleName": STORE_ROLE}, "ram")
    except StorageError as err:
        if _code_of(err) != "EntityAlreadyExists.Role.Policy":
            raise
    arn = str(role.get("Arn") or f"acs:ram::{account_id}:role/{STORE_ROLE}")
    return arn, int(role.get("MaxSessionDuration") or 3600)


def _aliyun_keys(region: str, creds: Credentials, store: StoreUri, run_id: str, hours: float,
                 caller: Caller) -> TempCredentials:
    if caller.root:
        raise StorageError(MSG_ALIYUN_ROOT)
    target = store.run(run_id).uri
    policy = _compact(aliyun_policy(store, run_id))
    if len(policy) > ALIYUN_POLICY_MAX:
        raise StorageError(MSG_POLICY_TOO_LONG, target=target, length=len(policy),
                           cloud="Alibaba Cloud", limit=ALIYUN_POLICY_MAX)
    call = _aliyun_caller(creds)
    arn, role_max = ensure_store_role(call, caller.account_id, store.bucket)
    seconds = _seconds(hours, min(role_max, ALIYUN_ROLE_MAX_S))
    answer = call(ALIYUN_STS_VERSION, "AssumeRole", {
        "RoleArn": arn, "RoleSessionName": session_name(run_id, 64), "Policy": policy,
        "DurationSeconds": seconds}, target)
    keys = answer.get("Credentials") or {}
    return TempCredentials(str(keys.get("AccessKeyId", "")), str(keys.get("AccessKeySecret", "")),
                           str(keys.get("SecurityToken", "")),
                           _when(keys.get("Expiration"), seconds))


# ------------------------------------------------------------------ the entry points

_WHOAMI: dict[str, Callable[[str, Credentials], Caller]] = {
    "aws": _aws_whoami, "tencent": _tencent_whoami, "aliyun": _aliyun_whoami}
_KEYS: dict[str, Callable[[str, Credentials, StoreUri, str, float, Caller],
                          TempCredentials]] = {
    "aws": _aws_keys, "tencent": _tencent_keys, "aliyun": _aliyun_keys}


def whoami(cloud: str, region: str, credentials: Credentials) -> Caller:
    """Whose keys ``credentials`` are (account, root or not, COS APPID). Blocking."""
    if cloud not in _WHOAMI:
        raise ValueError(f"unknown cloud {cloud!r}")
    return _WHOAMI[cloud](region, credentials)


def run_credentials(cloud: str, region: str, credentials: Credentials, store: StoreUri,
                    run_id: str, *, hours: float, caller: Caller | None = None
                    ) -> TempCredentials:
    """Short-lived keys that may only read, write and list ``<prefix>runs/<run_id>/`` of
    ``store``, for ``hours`` (held to 900 s..the cloud's maximum for these keys).

    Raises :class:`StorageError` (:class:`AccessDenied` naming ``sts:…`` when the account
    may not make them). Blocking."""
    if cloud not in _KEYS or store.cloud != cloud:
        raise ValueError(f"no STS keys for {store} on {cloud!r}")
    store.run(run_id)  # a bad run id is refused before any call
    caller = caller or whoami(cloud, region, credentials)
    return _KEYS[cloud](region, credentials, store, run_id, hours, caller)
