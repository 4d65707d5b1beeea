"""The ``instance-role`` enforcer: a machine that can stop its own bill, with no key on it.

Where the user allows it (``LaunchPlan.instance_role``, on by default), gpudesk gives the
machine a role that may do one thing: stop or terminate that machine itself. The agent
(``gpudesk/agent/cloud_stop.py``) then calls the cloud's ``StopInstances`` (stop-charging
where the cloud offers it) or ``TerminateInstances``/``DeleteInstances`` with the
short-lived credentials the metadata service hands the machine: no long-lived key is ever
on it, in a file, a log or argv.

* AWS: an IAM role ``gpudesk-self-stop`` (trusted by ``ec2.amazonaws.com``, tagged
  ``gpudesk=1``) with an inline policy allowing ``ec2:StopInstances`` and
  ``ec2:TerminateInstances`` on instances tagged ``gpudesk=1`` whose ARN is the caller's
  own (``aws:ARN`` = ``${ec2:SourceInstanceARN}``), in an instance profile of the same
  name, associated with the machine after launch (``AssociateIamInstanceProfile``).
* Tencent Cloud: a CAM role for ``cvm.qcloud.com`` (:func:`tencent_documents`, CAM
  2019-01-16: GetRole/CreateRole, ListPolicies/CreatePolicy, AttachRolePolicy), bound to the
  launched machine with CVM ``ModifyInstancesAttribute.CamRoleName``; Alibaba Cloud: a RAM
  role for ``ecs.aliyuncs.com`` (:func:`aliyun_documents`, RAM 2015-05-01: GetRole/CreateRole,
  GetPolicy/CreatePolicy, AttachPolicyToRole), attached with ECS ``AttachInstanceRamRole``.
  Neither cloud has a condition for "the calling machine", so each machine gets a role of
  its own (issue 29, item 5): ``gpudesk-self-stop-<ledger id>`` (:func:`role_name`) with a
  policy of the same name allowing the stop and terminate calls only on instances carrying
  that machine's own ``gpudesk-ledger-id`` tag (CAM ``qcs:resource_tag`` =
  ``gpudesk-ledger-id&<id>``; RAM ``ecs:tag/gpudesk-ledger-id`` = ``<id>``). Made before
  RunInstances, named there, and deleted with the machine's other leftovers once it has
  ended (:func:`delete_machine_role`, from ``cleanup.run``). The calls are signed by the
  provider's own SDK with its keys and go through its retry and error path
  (``SdkProvider._retrying``).
* AWS keeps one role per account: its policy's ``aws:ARN`` = ``${ec2:SourceInstanceARN}``
  already lets each machine's session reach only the instance it runs on.

An account that may not create or pass roles (AccessDenied, UnauthorizedOperation) is no
failure of the launch: the machine runs without a role, the ledger says why
(``instance-role-refused``), and the guard's words say what stays unprotected.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.providers import base
from gpudesk.services.core.said import Sentence
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine

log = logging.getLogger(__name__)

ROLE_NAME = "gpudesk-self-stop"  # AWS's one role (and the prefix of a machine's own role)
POLICY_NAME = "gpudesk-stop-itself"  # AWS's inline policy
OWN_ROLE_CLOUDS = ("tencent", "aliyun")  # one role per machine (no "calling machine" key)
STEP_DELETED = "instance-role-deleted"  # ledger: the machine's own role is gone (detail: name)
STEP_DELETE_REFUSED = "instance-role-delete-refused"  # ledger: the cloud's words; asked again
ENFORCER = "instance-role"
STEP = "instance-role"  # ledger: the role the machine got (detail: name and profile)
STEP_REFUSED = "instance-role-refused"  # ledger: the cloud refused; detail: its words
STEP_OFF = "instance-role-off"  # ledger: the user chose no role
AGENT_COMMAND = "gpudesk-cloud-stop"  # = gpudesk.agent.cloud_stop.COMMAND
DENIED_CODES = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation",
                          "UnauthorizedOperation.PermissionDenied", "Forbidden.RAM",
                          "AuthFailure.UnauthorizedOperation", "NoPermission"})
# IAM is eventually consistent: a profile made a moment ago may not be usable yet
ASSOCIATE_TRIES = 6
ASSOCIATE_WAIT_S = 5.0
CLOUDS = ("aws", "tencent", "aliyun")  # where gpudesk gives a machine its role
DESCRIPTION = "gpudesk: lets a machine stop or terminate itself"
# Tencent Cloud CAM (API 2019-01-16, cam.tencentcloudapi.com): a missing role, a name taken
CAM_VERSION = "2019-01-16"
CAM_ENDPOINT = "cam.tencentcloudapi.com"
CAM_NO_ROLE = frozenset({"InvalidParameter.RoleNotExist", "ResourceNotFound.RoleNotExist"})
CAM_POLICY_TAKEN = "FailedOperation.PolicyNameInUse"
# CVM cannot use a role CAM has not spread yet (or one not trusted by cvm.qcloud.com)
CVM_ROLE_NOT_READY = "AuthFailure.CamRoleNameAuthenticateFailed"
# Alibaba Cloud RAM (API 2015-05-01, ram.aliyuncs.com) and ECS's answers about the role
RAM_VERSION = "2015-05-01"
RAM_ENDPOINT = "ram.aliyuncs.com"
RAM_TAKEN = frozenset({"EntityAlreadyExists.Role.Policy", "EntityAlreadyExists.Policy"})
ECS_ROLE_NOT_READY = frozenset({"InvalidRamRole.NotFound", "EntityNotExist.Role",
                                "InvalidRamRole.NotEcsRole"})

MSG_ROLE = QT_TRANSLATE_NOOP(
    "Guard", "At {budget} the machine's agent also asks {cloud} itself to {action} the "
    "machine, with a role that may only do that (no keys on the machine), even with gpudesk "
    "closed.")
# the {why} of MSG_NO_ROLE when the user chose no role (translated as a value of "Guard")
WHY_OFF = QT_TRANSLATE_NOOP("Guard", "you chose no role")
MSG_NO_ROLE = QT_TRANSLATE_NOOP(
    "Guard", "This machine has no role to stop itself ({why}): with gpudesk closed, its "
    "agent cannot ask {cloud} to stop the bill.")
# A "stop" budget on Tencent/Alibaba Cloud with no role: refused before anything bills
# (issue 29): an OS shutdown there keeps charging, so nothing would cap it with the app shut.
MSG_STOP_NEEDS_ROLE = QT_TRANSLATE_NOOP(
    "ProviderError", "{provider} gave gpudesk no role for this machine ({why}), and without one "
    "a stop at the budget cannot end the bill with gpudesk closed: a stop from inside the "
    "machine keeps charging there. Nothing was launched. Choose terminate at the budget (the "
    "cloud's own timer then ends the machine), or accept that only the open app stops it "
    "(--app-stop-only, or the Launch dialog's box).")
STEP_AT_CREATION = "instance-role-at-creation"  # ledger: the launch named the role
STEP_NOT_READY = "instance-role-not-ready"  # ledger: launched without it, bound once it runs
STEP_REQUESTED = "instance-role-requested"


@dataclass(frozen=True)
class RoleOutcome:
    """What the machine got: a role (``attached``), or none and why in the cloud's words."""

    attached: bool
    role: str = ""
    profile: str = ""  # the AWS instance profile's ARN
    why: str = ""  # the refusal, or "off" when the user chose no role


class RoleRefused(Exception):
    """The account may not create, pass or attach the role (the cloud's words)."""


def role_name(provider: str, ledger_id: str) -> str:
    """The role (and on Tencent/Aliyun its policy) machine ``ledger_id`` carries: its own
    ``gpudesk-self-stop-<ledger id>`` where the cloud cannot scope a policy to the calling
    machine, the account's one :data:`ROLE_NAME` on AWS (scoped by ``aws:ARN``)."""
    if provider in OWN_ROLE_CLOUDS and ledger_id:
        return f"{ROLE_NAME}-{ledger_id}"
    return ROLE_NAME


def role_tags(ledger_id: str) -> list[dict[str, str]]:
    """A role's and its policy's tags (IAM, CAM, RAM alike): gpudesk's, and the ledger id of
    the machine or group it is for."""
    return [{"Key": base.TAG_MANAGED, "Value": "1"}, {"Key": base.TAG_LEDGER, "Value": ledger_id}]


# ------------------------------------------------------------------ policy documents

def aws_trust_policy() -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"},
        "Action": "sts:AssumeRole"}]}


def aws_policy(partition: str = "aws") -> dict[str, Any]:
    """Stop or terminate: only a gpudesk machine, and only the one calling (its own ARN)."""
    return {"Version": "2012-10-17", "Statement": [{
        "Sid": "StopOrTerminateItselfOnly", "Effect": "Allow",
        "Action": ["ec2:StopInstances", "ec2:TerminateInstances"],
        "Resource": f"arn:{partition}:ec2:*:*:instance/*",
        "Condition": {"StringEquals": {
            "aws:ARN": "${ec2:SourceInstanceARN}",
            f"aws:ResourceTag/{base.TAG_MANAGED}": "1"}}}]}


def tencent_documents(ledger_id: str = "") -> tuple[dict[str, Any], dict[str, Any]]:
    """(trust, policy) of machine ``ledger_id``'s CVM CAM role: StopInstances and
    TerminateInstances only on the instance tagged with its own ledger id (CAM's resource
    tag condition, ``qcs:resource_tag`` = ``key&value``; actions as CAM writes CVM's APIs,
    ``name/cvm:<API>``). With no id the policy matches no machine (the trust alone is what a
    caller wants then)."""
    trust = {"version": "2.0", "statement": [{
        "action": "name/sts:AssumeRole", "effect": "allow",
        "principal": {"service": ["cvm.qcloud.com"]}}]}
    policy = {"version": "2.0", "statement": [{
        "effect": "allow", "action": ["name/cvm:StopInstances", "name/cvm:TerminateInstances"],
        "resource": ["qcs::cvm::uin/*:instance/*"],
        "condition": {"for_any_value:string_equal": {
            "qcs:resource_tag": [f"{base.TAG_LEDGER}&{ledger_id}"]}}}]}
    return trust, policy


def aliyun_documents(ledger_id: str = "") -> tuple[dict[str, Any], dict[str, Any]]:
    """(trust, policy) of machine ``ledger_id``'s ECS RAM role: StopInstances and
    DeleteInstances only on the instance tagged with its own ledger id (ECS's tag condition
    key ``ecs:tag/<key>``). With no id the policy matches no machine."""
    trust = {"Version": "1", "Statement": [{
        "Action": "sts:AssumeRole", "Effect": "Allow",
        "Principal": {"Service": ["ecs.aliyuncs.com"]}}]}
    policy = {"Version": "1", "Statement": [{
        "Effect": "Allow",
        "Action": ["ecs:StopInstance", "ecs:StopInstances", "ecs:DeleteInstance",
                   "ecs:DeleteInstances"],
        "Resource": "acs:ecs:*:*:instance/*",
        "Condition": {"StringEquals": {f"ecs:tag/{base.TAG_LEDGER}": ledger_id}}}]}
    return trust, policy


# ------------------------------------------------------------------ the agent's commands

def agent_commands(provider: str, role: str = ROLE_NAME, *, region: str = "",
                   instance_id: str = "") -> dict[str, tuple[str, ...]]:
    """rules.json ``commands`` for stop and terminate through the role (``AgentRules``).

    On EC2, a refused call falls back to an OS power-off (the instance's shutdown
    behaviour still ends the bill); on Tencent and Alibaba Cloud a power-off from inside
    keeps charging, so a refusal is tried again instead.
    """
    out: dict[str, tuple[str, ...]] = {}
    for action in ("stop", "terminate"):
        argv = [AGENT_COMMAND, "--provider", provider, "--role", role, "--action", action]
        if region:
            argv += ["--region", region]
        if instance_id:
            argv += ["--instance", instance_id]
        if provider == "aws":
            argv.append("--or-poweroff")
        out[action] = tuple(argv)
    return out


# ------------------------------------------------------------------ AWS

def _code(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


def _refused(exc: Exception) -> RoleRefused | None:
    code = _code(exc)
    if code in DENIED_CODES or code.startswith("UnauthorizedOperation"):
        message = str(getattr(exc, "response", {}).get("Error", {}).get("Message", ""))
        return RoleRefused(f"{code}: {message}"[:300] if message else code)
    return None


def ensure_aws_role(iam: Any, role: str = ROLE_NAME) -> str:
    """Blocking: the role, its policy and its instance profile (found or made, tagged as
    gpudesk's); the profile's ARN. Raises :class:`RoleRefused` when IAM says no."""
    tags = [{"Key": base.TAG_MANAGED, "Value": "1"}]
    try:
        try:
            iam.get_role(RoleName=role)
        except Exception as exc:
            if _code(exc) != "NoSuchEntity":
                raise
            iam.create_role(RoleName=role, Tags=tags, MaxSessionDuration=3600,
                            AssumeRolePolicyDocument=json.dumps(aws_trust_policy()),
                            Description="gpudesk: lets a machine stop or terminate itself")
        iam.put_role_policy(RoleName=role, PolicyName=POLICY_NAME,
                            PolicyDocument=json.dumps(aws_policy()))
        try:
            profile = iam.get_instance_profile(InstanceProfileName=role)["InstanceProfile"]
        except Exception as exc:
            if _code(exc) != "NoSuchEntity":
                raise
            profile = iam.create_instance_profile(InstanceProfileName=role,
                                                  Tags=tags)["InstanceProfile"]
        if not any(r.get("RoleName") == role for r in profile.get("Roles", [])):
            iam.add_role_to_instance_profile(InstanceProfileName=role, RoleName=role)
        return str(profile["Arn"])
    except Exception as exc:
        refused = _refused(exc)
        if refused is not None:
            raise refused from None
        raise


def attach_aws_profile(ec2: Any, instance_id: str, profile: str = ROLE_NAME, *,
                       tries: int = ASSOCIATE_TRIES, wait_s: float = ASSOCIATE_WAIT_S,
                       sleep: Callable[[float], None] = time.sleep) -> None:
    """Blocking: associate the instance profile with a launched machine (again while IAM
    has not yet spread a new profile: ``InvalidParameterValue``)."""
    for attempt in range(1, tries + 1):
        try:
            ec2.associate_iam_instance_profile(IamInstanceProfile={"Name": profile},
                                               InstanceId=instance_id)
            return
        except Exception as exc:
            refused = _refused(exc)
            if refused is not None:
                raise refused from None
            if _code(exc) != "InvalidParameterValue" or attempt == tries:
                raise
            sleep(wait_s)


def _clients(provider: Any, region: str) -> tuple[Any, Any]:
    client = getattr(provider, "_client", None)
    if client is None:
        raise RoleRefused("this provider gives no API clients")
    return client("iam", region), client("ec2", region)


# ------------------------------------------------------------------ Tencent Cloud and Alibaba Cloud

def _code_of(err: base.ProviderError) -> str:
    """The cloud's code in a typed error's detail (``[Code] message``)."""
    found = re.match(r"^\[([^\]]+)\]", err.detail or "")
    return found.group(1) if found else ""


def words(err: base.ProviderError) -> str:
    """``Code: message`` from a typed error, as the ledger keeps a refusal (short)."""
    code = _code_of(err)
    message = (err.detail or "")[len(code) + 2:].strip() if code else err.message()
    return (f"{code}: {message}" if code and message else code or message)[:300]


def _denied(err: base.ProviderError) -> bool:
    """The account may not do this (CAM/RAM said no): not a failure of the launch."""
    code = _code_of(err)
    return err.kind == "permission" or code in DENIED_CODES or code.startswith(
        ("UnauthorizedOperation", "AuthFailure.UnauthorizedOperation", "Forbidden.",
         "NoPermission", "OperationDenied"))


def _sdk_keys(provider: Any) -> tuple[base.Credentials, str | None, str]:
    """The provider's keys, endpoint and protocol: a CAM/RAM client signs as it does."""
    creds = getattr(provider, "_credentials", None)
    if not isinstance(creds, base.Credentials):
        raise RoleRefused("this provider gives no API keys for roles")
    return creds, getattr(provider, "_endpoint", None), str(getattr(provider, "_protocol",
                                                                   "https"))


def _cam_call(provider: Any) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
    """One CAM call: the SDK's common client with the provider's keys, signed TC3 for
    service ``cam``, throttling retried and errors typed by the provider itself."""
    from tencentcloud.common import credential
    from tencentcloud.common.common_client import CommonClient
    from tencentcloud.common.profile.client_profile import ClientProfile
    from tencentcloud.common.profile.http_profile import HttpProfile

    from gpudesk.services.cloud.providers.tencent_errors import CallContext
    from gpudesk.services.cloud.providers.tencent_errors import sdk_answer

    creds, endpoint, protocol = _sdk_keys(provider)
    http = HttpProfile(protocol=protocol, reqTimeout=30, endpoint=endpoint or CAM_ENDPOINT)
    client = CommonClient("cam", CAM_VERSION, credential.Credential(
        creds.key_id, creds.secret, creds.session_token or None), "",  # CAM takes no region
        ClientProfile(httpProfile=http, language="en-US", disable_region_breaker=True))

    def call(action: str, params: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = provider._retrying(
            CallContext("cam", action, ""),
            lambda: sdk_answer(lambda: client.call_json(action, params)), frozenset())
        return result

    return call


def ensure_tencent_role(cam: Callable[[str, dict[str, Any]], dict[str, Any]],
                        ledger_id: str) -> str:
    """Blocking: machine ``ledger_id``'s own CAM role (trusted by ``cvm.qcloud.com``, tagged
    as gpudesk's and with the ledger id) and its policy of the same name, found or made, the
    policy attached; the role's id. A role of that name that CVM may not use is refused,
    never rewritten: it is the user's."""
    role = policy_name = role_name("tencent", ledger_id)
    trust, policy = tencent_documents(ledger_id)
    tags = role_tags(ledger_id)
    got = _unless_missing(cam, "GetRole", {"RoleName": role}, CAM_NO_ROLE)
    if got is None:
        info = {"RoleId": cam("CreateRole", {
            "RoleName": role, "PolicyDocument": json.dumps(trust), "Description": DESCRIPTION,
            "ConsoleLogin": 0, "SessionDuration": 3600, "Tags": tags}).get("RoleId", "")}
    else:
        info = got.get("RoleInfo") or {}
        if not _trusts(info.get("PolicyDocument"), "cvm.qcloud.com", lower=True):
            raise RoleRefused(f"the CAM role {role} exists and is not trusted by cvm.qcloud.com")

    def policy_id() -> int | None:
        found = [p for p in cam("ListPolicies", {"Keyword": policy_name, "Scope": "Local",
                                                 "Rp": 200}).get("List") or []
                 if p.get("PolicyName") == policy_name]
        return int(found[0]["PolicyId"]) if found else None

    pid = policy_id()
    if pid is None:
        try:
            pid = int(cam("CreatePolicy", {
                "PolicyName": policy_name, "PolicyDocument": json.dumps(policy),
                "Description": DESCRIPTION, "Tags": tags})["PolicyId"])
        except base.ProviderError as err:  # made meanwhile (a second launch): use it
            if _code_of(err) != CAM_POLICY_TAKEN or (pid := policy_id()) is None:
                raise
    cam("AttachRolePolicy", {"PolicyId": pid, "AttachRoleName": role})
    return str(info.get("RoleId") or "")


def _unless_missing(call: Callable[[str, dict[str, Any]], dict[str, Any]], action: str,
                    params: dict[str, Any], missing: frozenset[str]) -> dict[str, Any] | None:
    """The answer to a Get call, or None where the cloud answers that no such thing exists
    (a code in ``missing``); any other refusal is raised."""
    try:
        return call(action, params)
    except base.ProviderError as err:
        if _code_of(err) not in missing:
            raise
        return None


def _trusts(document: Any, service: str, *, lower: bool) -> bool:
    """Whether a role's trust document lets ``service`` assume it (CAM writes its keys in
    lower case, RAM capitalised); an unreadable document trusts nobody."""
    names = ("statement", "principal", "service") if lower else (
        "Statement", "Principal", "Service")
    try:
        statements = json.loads(document or "{}").get(names[0]) or []
        for st in statements if isinstance(statements, list) else [statements]:
            given = (st.get(names[1]) or {}).get(names[2]) or []
            if service in ([given] if isinstance(given, str) else given):
                return True
    except (ValueError, AttributeError, TypeError):
        return False
    return False


def bind_tencent_role(provider: Any, region: str, instance_id: str, role: str = ROLE_NAME, *,
                      tries: int = ASSOCIATE_TRIES, wait_s: float = ASSOCIATE_WAIT_S,
                      sleep: Callable[[float], None] = time.sleep) -> None:
    """Blocking: bind the role to a launched machine (CVM ``ModifyInstancesAttribute``, one
    attribute per call), again while CAM has not spread a new role to CVM."""
    from gpudesk.services.cloud.providers.tencent_errors import CallContext

    for attempt in range(1, tries + 1):
        try:
            provider._call(CallContext("cvm", "ModifyInstancesAttribute", region,
                                       resource=instance_id),
                           {"InstanceIds": [instance_id], "CamRoleName": role})
            return
        except base.ProviderError as err:
            if _code_of(err) != CVM_ROLE_NOT_READY or attempt == tries:
                raise
            sleep(wait_s)


def _ram_call(provider: Any) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
    """One RAM call: the OpenAPI client the ECS SDK is built on, with the provider's keys
    (ACS3-HMAC-SHA256), throttling retried and errors typed by the provider itself."""
    from alibabacloud_tea_openapi import utils_models as openapi
    from alibabacloud_tea_openapi.client import Client
    from alibabacloud_tea_openapi.utils import Utils
    from darabonba.runtime import RuntimeOptions

    from gpudesk.services.cloud.providers import aliyun_parse as ap
    from gpudesk.services.cloud.providers.aliyun_errors import CallContext
    from gpudesk.services.cloud.providers.sdk_provider import Refused

    creds, endpoint, protocol = _sdk_keys(provider)
    client = Client(openapi.Config(
        access_key_id=creds.key_id, access_key_secret=creds.secret,
        security_token=creds.session_token or None, protocol=protocol,
        endpoint=endpoint or RAM_ENDPOINT, read_timeout=30_000, connect_timeout=10_000))
    runtime = RuntimeOptions(autoretry=False, max_attempts=1, read_timeout=30_000,
                             connect_timeout=10_000)

    def call(action: str, params: dict[str, Any]) -> dict[str, Any]:
        what = openapi.Params(action=action, version=RAM_VERSION, protocol="HTTPS",
                              pathname="/", method="POST", auth_type="AK", style="RPC",
                              req_body_type="formData", body_type="json")

        def attempt() -> dict[str, Any] | Refused:
            try:
                answer = client.call_api(what, openapi.OpenApiRequest(
                    query=Utils.query(params)), runtime)
            except Exception as exc:  # noqa: BLE001 - the SDK's and requests' errors alike
                return Refused(*ap.code_of(exc))
            body = answer.get("body") if isinstance(answer, dict) else None
            return body if isinstance(body, dict) else {}

        key = base.mask(creds.key_id)
        result: dict[str, Any] = provider._retrying(
            CallContext(action, "", product="ram", key_id=key), attempt, frozenset())
        return result

    return call


def ensure_aliyun_role(ram: Callable[[str, dict[str, Any]], dict[str, Any]],
                       ledger_id: str) -> str:
    """Blocking: machine ``ledger_id``'s own RAM role (trusted by ``ecs.aliyuncs.com``,
    tagged as gpudesk's and with the ledger id) and its custom policy of the same name,
    found or made, the policy attached; the role's ARN. A role of that name that ECS may
    not use is refused, never rewritten: it is the user's."""
    role = policy_name = role_name("aliyun", ledger_id)
    trust, policy = aliyun_documents(ledger_id)
    tags = role_tags(ledger_id)
    got = _unless_missing(ram, "GetRole", {"RoleName": role}, frozenset({"EntityNotExist.Role"}))
    if got is None:
        found = ram("CreateRole", {
            "RoleName": role, "AssumeRolePolicyDocument": json.dumps(trust),
            "Description": DESCRIPTION, "MaxSessionDuration": 3600, "Tag": tags}).get(
            "Role") or {}
    else:
        found = got.get("Role") or {}
        if not _trusts(found.get("AssumeRolePolicyDocument"), "ecs.aliyuncs.com", lower=False):
            raise RoleRefused(f"the RAM role {role} exists and is not trusted by "
                              "ecs.aliyuncs.com")
    if _unless_missing(ram, "GetPolicy", {"PolicyName": policy_name, "PolicyType": "Custom"},
                       frozenset({"EntityNotExist.Policy"})) is None:
        try:
            ram("CreatePolicy", {"PolicyName": policy_name, "Description": DESCRIPTION,
                                 "PolicyDocument": json.dumps(policy), "Tag": tags})
        except base.ProviderError as again:  # made meanwhile (a second launch): use it
            if _code_of(again) not in RAM_TAKEN:
                raise
    try:
        ram("AttachPolicyToRole", {"PolicyType": "Custom", "PolicyName": policy_name,
                                   "RoleName": role})
    except base.ProviderError as err:  # attached by an earlier launch
        if _code_of(err) not in RAM_TAKEN:
            raise
    return str(found.get("Arn") or found.get("RoleId") or "")


def attach_aliyun_role(provider: Any, region: str, instance_id: str, role: str = ROLE_NAME,
                       *, tries: int = ASSOCIATE_TRIES, wait_s: float = ASSOCIATE_WAIT_S,
                       sleep: Callable[[float], None] = time.sleep) -> None:
    """Blocking: ECS ``AttachInstanceRamRole`` (again while RAM has not spread a new role to
    ECS); a per-machine failure in its answer is a refusal in ECS's words."""
    for attempt in range(1, tries + 1):
        try:
            answer = provider._ecs(region, "AttachInstanceRamRole", {
                "RamRoleName": role, "InstanceIds": json.dumps([instance_id])},
                resource=instance_id)
        except base.ProviderError as err:
            if _code_of(err) not in ECS_ROLE_NOT_READY or attempt == tries:
                raise
            sleep(wait_s)
            continue
        results = (answer.get("AttachInstanceRamRoleResults") or {}).get(
            "AttachInstanceRamRoleResult") or []
        failed = [r for r in results if str(r.get("Success", "true")).lower() == "false"
                  or str(r.get("Code", "200")) != "200"]
        if int(answer.get("FailCount") or 0) or failed:
            first = failed[0] if failed else {}
            raise RoleRefused(f"{first.get('Code', 'Failed')}: {first.get('Message', '')}"
                              .strip(": ")[:300])
        return


def _give_tencent(provider: Any, m: Machine, sleep: Callable[[float], None]) -> str:
    role_id = ensure_tencent_role(_cam_call(provider), m.id)
    bind_tencent_role(provider, m.region, m.cloud_id, role_name(m.provider, m.id), sleep=sleep)
    return f"CAM role {role_id}" if role_id else "CAM role"


def _give_aliyun(provider: Any, m: Machine, sleep: Callable[[float], None]) -> str:
    arn = ensure_aliyun_role(_ram_call(provider), m.id)
    attach_aliyun_role(provider, m.region, m.cloud_id, role_name(m.provider, m.id),
                       sleep=sleep)
    return arn or "RAM role"


def _give_aws(provider: Any, m: Machine, sleep: Callable[[float], None]) -> str:
    iam, ec2 = _clients(provider, m.region)
    profile = ensure_aws_role(iam)
    attach_aws_profile(ec2, m.cloud_id, ROLE_NAME, sleep=sleep)
    return profile


_GIVE: dict[str, Callable[[Any, Machine, Callable[[float], None]], str]] = {
    "aws": _give_aws, "tencent": _give_tencent, "aliyun": _give_aliyun}


# ------------------------------------------------------------------ launch

def _ensure_aws(provider: Any, m: Machine) -> str:
    iam, _ec2 = _clients(provider, m.region)
    return ensure_aws_role(iam)


def _ensure_tencent(provider: Any, m: Machine) -> str:
    role_id = ensure_tencent_role(_cam_call(provider), m.id)
    return f"CAM role {role_id}" if role_id else "CAM role"


def _ensure_aliyun(provider: Any, m: Machine) -> str:
    return ensure_aliyun_role(_ram_call(provider), m.id) or "RAM role"


_ENSURE: dict[str, Callable[[Any, Machine], str]] = {
    "aws": _ensure_aws, "tencent": _ensure_tencent, "aliyun": _ensure_aliyun}


def before_launch(ledger: Ledger, machine_id: str, provider: Any, *, allowed: bool = True
                  ) -> RoleOutcome:
    """Blocking, before RunInstances: the role found or made, so that the launch names it
    (EC2 ``IamInstanceProfile``, CVM ``CamRoleName``, ECS ``RamRoleName``) and the machine
    can stop its own bill from its first second, before any desktop ever reaches it.

    The ledger says so first (the ``instance-role`` enforcer, the role's words), so the
    first-boot rules name the role's command. A refusal is written as today's
    ``instance-role-refused`` with the cloud's words; the caller decides whether the launch
    may go on without it (:func:`stop_needs_role`).
    """
    m = ledger.get(machine_id)
    if m is None:
        return RoleOutcome(False, why="no machine")
    if not allowed:
        ledger.log(machine_id, STEP_OFF, "the user chose no role")
        return RoleOutcome(False, why="off")
    if m.provider not in _ENSURE:
        return RoleOutcome(False, why=f"no role on {m.provider}")
    name = role_name(m.provider, m.id)
    ledger.log(machine_id, STEP_REQUESTED, f"{name} (at creation)")
    try:
        profile = _ENSURE[m.provider](provider, m)
    except RoleRefused as exc:
        ledger.log(machine_id, STEP_REFUSED, str(exc))
        return RoleOutcome(False, why=str(exc))
    except base.ProviderError as err:
        why = words(err)
        if err.kind in ("auth", "clock", "network"):
            raise  # not a refusal of the role: the launch itself cannot go on
        if not _denied(err):
            log.warning("no instance role for %s: %s", machine_id, why)
        ledger.log(machine_id, STEP_REFUSED, why)
        return RoleOutcome(False, why=why)
    add_enforcer(ledger, m, f"{name} ({profile})")
    ledger.log(machine_id, STEP_AT_CREATION, name)
    return RoleOutcome(True, name, profile)


def not_ready(err: base.ProviderError) -> bool:
    """The cloud refused a launch that named a role it has not spread yet (IAM, CAM and
    RAM are eventually consistent): launch without it, bind it once the machine runs."""
    code = _code_of(err)
    if code == CVM_ROLE_NOT_READY or code in ECS_ROLE_NOT_READY:
        return True
    return code == "InvalidParameterValue" and "iaminstanceprofile" in err.detail.lower()


def stop_needs_role(provider: str, action: str, budget: float | None) -> bool:
    """A budget whose "stop" only a role can make: Tencent Cloud and Alibaba Cloud, where a
    stop from inside keeps charging (``guard.STOP_BY_DESKTOP``). EC2's own shutdown
    behaviour stops the compute bill; "terminate" has the cloud's own timer there."""
    return bool(budget) and action == "stop" and provider in ("tencent", "aliyun")


def give_role(ledger: Ledger, machine_id: str, provider: Any, *, allowed: bool = True,
              sleep: Callable[[float], None] = time.sleep) -> RoleOutcome:
    """Blocking: after launch, give the machine its role where the user allows it.

    Writes the ledger before (``instance-role-requested``) and after: the role and the
    ``instance-role`` enforcer, or ``instance-role-refused`` with the cloud's words (the
    launch goes on without it). AWS (IAM), Tencent Cloud (CAM) and Alibaba Cloud (RAM).
    """
    m = ledger.get(machine_id)
    if m is None or not m.cloud_id:
        return RoleOutcome(False, why="no machine")
    if not allowed:
        ledger.log(machine_id, STEP_OFF, "the user chose no role")
        return RoleOutcome(False, why="off")
    if m.provider not in _GIVE:
        why = f"no role on {m.provider}"
        ledger.log(machine_id, STEP_REFUSED, why)
        return RoleOutcome(False, why=why)
    name = role_name(m.provider, m.id)
    ledger.log(machine_id, STEP_REQUESTED, name)
    try:
        profile = _GIVE[m.provider](provider, m, sleep)
    except RoleRefused as exc:
        ledger.log(machine_id, STEP_REFUSED, str(exc))
        return RoleOutcome(False, why=str(exc))
    except base.ProviderError as err:  # CAM/RAM or the machine's cloud said no
        why = words(err)
        if not _denied(err):
            log.warning("no instance role for %s: %s", machine_id, why)
        ledger.log(machine_id, STEP_REFUSED, why)
        return RoleOutcome(False, why=why)
    except Exception as exc:  # noqa: BLE001 - a role is a bonus: the launch goes on
        why = f"{type(exc).__name__}: {_code(exc) or 'failed'}"
        log.warning("no instance role for %s: %s", machine_id, why)
        ledger.log(machine_id, STEP_REFUSED, why)
        return RoleOutcome(False, why=why)
    add_enforcer(ledger, m, f"{name} ({profile})")
    return RoleOutcome(True, name, profile)


def add_enforcer(ledger: Ledger, m: Machine, detail: str) -> None:
    by = [x for x in m.enforced_by.split(",") if x]
    if ENFORCER not in by:
        by.append(ENFORCER)
    ledger.update(m.id, enforced_by=",".join(by), step=STEP, detail=detail)


def role_of(ledger: Ledger, m: Machine) -> tuple[bool, str]:
    """(has a role, why not): from the ledger's last instance-role event."""
    for event in reversed(ledger.events(m.id)):
        if event.step == STEP:
            return True, ""
        if event.step in (STEP_REFUSED, STEP_OFF):
            return False, "off" if event.step == STEP_OFF else event.detail
    return ENFORCER in m.enforced_by.split(","), ""


def why_not(ledger: Ledger, m: Machine) -> str | None:
    """Why ``m`` has no role, for the guard's words (``guard.sentences(role_why=…)``): the
    cloud's refusal or :data:`WHY_OFF`; None when it has one or nothing was recorded (an
    adopted or own machine: gpudesk does not know)."""
    if m.provider not in CLOUDS or ENFORCER in m.enforced_by.split(","):
        return None
    for event in reversed(ledger.events(m.id)):
        if event.step == STEP:
            return None
        if event.step == STEP_OFF:
            return WHY_OFF
        if event.step == STEP_REFUSED:
            return event.detail or "refused"
    return None


def sentence(m: Machine, budget: str, action: str, cloud: str,
             why: str = "") -> Sentence:
    """The words for :func:`guard.sentences`: what the role does, or what stays open."""
    if ENFORCER in m.enforced_by.split(","):
        return MSG_ROLE, {"budget": budget, "cloud": cloud, "action": action}
    return MSG_NO_ROLE, {"cloud": cloud, "why": why or "none"}


def at_launch(ledger: Ledger, m: Machine, provider: Any, allowed: bool) -> Machine:
    """Blocking, for the launcher once the machine runs: :func:`give_role` on the clouds
    gpudesk gives roles on (:data:`CLOUDS`), the machine as the ledger now has it. Never
    raises: a machine without a role is still a launched machine (the ledger and the
    guard's words say so)."""
    if m.provider in CLOUDS and m.cloud_id and _bind_after(ledger, m):
        try:
            give_role(ledger, m.id, provider, allowed=allowed)
        except Exception as exc:  # noqa: BLE001 - the ledger itself failed: say it, go on
            log.warning("instance role of %s: %s", m.id, type(exc).__name__)
    return ledger.get(m.id) or m


def _bind_after(ledger: Ledger, m: Machine) -> bool:
    """Is the role still to be bound now that the machine runs? Only where the cloud had
    not spread it at RunInstances (:data:`STEP_NOT_READY`), or where no launch step spoke
    of a role at all (a machine launched before roles were named at creation)."""
    for event in reversed(ledger.events(m.id)):
        if event.step == STEP_NOT_READY:
            return True
        if event.step in (STEP_AT_CREATION, STEP, STEP_REFUSED, STEP_OFF):
            return False
    return True


def drop_enforcer(ledger: Ledger, m: Machine, why: str) -> Machine:
    """The cloud refused the role at RunInstances: the machine goes without it, and the
    ledger says why in the cloud's words (the guard's no-role sentence reads it)."""
    by = [x for x in m.enforced_by.split(",") if x and x != ENFORCER]
    return ledger.update(m.id, enforced_by=",".join(by), step=STEP_REFUSED, detail=why)


def rules_commands(m: Machine | None) -> dict[str, tuple[str, ...]]:
    """``AgentRules.commands`` for ``m``: the role's stop/terminate where it has one.

    On Tencent Cloud and Alibaba Cloud the region and the instance id are named: CVM signs
    with the region (``X-TC-Region``) and ECS wants ``RegionId``, and the ledger knows both,
    so the agent need not read them from a metadata path that differs between images. The
    first-boot rules, written before the cloud has chosen either, leave both to the metadata.
    """
    if m is None or ENFORCER not in m.enforced_by.split(","):
        return {}
    role = role_name(m.provider, m.id)
    if not m.cloud_id:  # first boot: the launch may still fail over to another region, so
        return agent_commands(m.provider, role)  # the machine's metadata names region and id
    if m.provider in ("tencent", "aliyun"):
        return agent_commands(m.provider, role, region=m.region, instance_id=m.cloud_id)
    return agent_commands(m.provider, role)


# ------------------------------------------------------------------ the end of a machine

# CAM's and RAM's answers that mean "already gone" (their API references' error tables)
CAM_GONE = frozenset({"InvalidParameter.RoleNotExist", "ResourceNotFound.RoleNotExist",
                      "ResourceNotFound.PolicyIdNotFound", "InvalidParameter.PolicyIdNotExist",
                      "ResourceNotFound.PolicyIdNotExist"})
RAM_GONE = frozenset({"EntityNotExist.Role", "EntityNotExist.Policy",
                      "EntityNotExist.Role.Policy"})


def _gone_ok(call: Callable[[str, dict[str, Any]], dict[str, Any]], gone: frozenset[str]
             ) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
    def run(action: str, params: dict[str, Any]) -> dict[str, Any]:
        try:
            return call(action, params)
        except base.ProviderError as err:
            if _code_of(err) in gone:
                return {}
            raise
    return run


def _delete_tencent(provider: Any, ledger_id: str) -> None:
    cam = _gone_ok(_cam_call(provider), CAM_GONE)
    name = role_name("tencent", ledger_id)
    listed = cam("ListPolicies", {"Keyword": name, "Scope": "Local", "Rp": 200})
    for p in listed.get("List") or []:
        if p.get("PolicyName") == name:
            pid = int(p["PolicyId"])
            cam("DetachRolePolicy", {"PolicyId": pid, "DetachRoleName": name})
            cam("DeletePolicy", {"PolicyId": [pid]})
    cam("DeleteRole", {"RoleName": name})


def _delete_aliyun(provider: Any, ledger_id: str) -> None:
    ram = _gone_ok(_ram_call(provider), RAM_GONE)
    name = role_name("aliyun", ledger_id)
    ram("DetachPolicyFromRole", {"PolicyType": "Custom", "PolicyName": name, "RoleName": name})
    ram("DeletePolicy", {"PolicyName": name})
    ram("DeleteRole", {"RoleName": name})


_DELETE: dict[str, Callable[[Any, str], None]] = {
    "tencent": _delete_tencent, "aliyun": _delete_aliyun}


def role_to_delete(ledger: Ledger, m: Machine) -> str:
    """The name of ``m``'s own role while it is still to be deleted ("" for none): gpudesk
    asked for it (it may exist even where binding it failed) and has not deleted it."""
    if m.provider not in _DELETE:
        return ""
    steps = {e.step for e in ledger.events(m.id)}
    if STEP_REQUESTED not in steps or STEP_DELETED in steps:
        return ""
    return role_name(m.provider, m.id)


def delete_machine_role(ledger: Ledger, m: Machine, provider: Any) -> bool:
    """Blocking, once ``m`` has ended: its own role and policy deleted (what is already gone
    is success), the ledger says so (``instance-role-deleted``). False while the cloud
    refused (its words in ``instance-role-delete-refused``, one event per new answer): the
    caller (``cleanup.run``) asks again at the next reconcile. A live machine keeps it."""
    name = role_to_delete(ledger, m)
    if not name or not m.ended:
        return True
    try:
        _DELETE[m.provider](provider, m.id)
    except Exception as exc:  # noqa: BLE001 - a refusal or no answer: asked again later
        why = words(exc) if isinstance(exc, base.ProviderError) else type(exc).__name__
        last = next((e.detail for e in reversed(ledger.events(m.id))
                     if e.step == STEP_DELETE_REFUSED), None)
        if last != why:
            ledger.log(m.id, STEP_DELETE_REFUSED, why)
        return False
    ledger.log(m.id, STEP_DELETED, name)
    return True
