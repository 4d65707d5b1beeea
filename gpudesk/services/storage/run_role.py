"""The role a keep-alive group's machines carry: its run's folder and its own group, nothing else.

A machine the cloud starts in a keep-alive group (issue 23) comes up with no desktop
around and no key on it. What it may do comes from the role the group's launch template
or configuration names (``create_group(request, role_name=...)``), read from the metadata
service: read and write its run's folder in the bucket (the uploader, the resume) and,
when the run has ended, set its own group to size 0 and delete it (``agent/group_end.py``).
One role per group, named as the group (``gpudesk-run-<ledger id>``), tagged ``gpudesk=1``
and with the ledger id, trusted by the cloud's compute service:

* AWS: an IAM role and an instance profile of that name (trusted by ``ec2.amazonaws.com``)
  with one inline policy (``PutRolePolicy`` replaces it whole):
  ``autoscaling:UpdateAutoScalingGroup``/``DeleteAutoScalingGroup`` on the group's ARN
  (``autoScalingGroup:*:autoScalingGroupName/<name>``) and only while the group carries
  the run's ledger id (``autoscaling:ResourceTag/gpudesk-ledger-id``);
  ``autoscaling:DescribeAutoScalingGroups`` on ``*`` (it has no resource-level permission).
* Tencent Cloud: a CAM role (trusted by ``cvm.qcloud.com``) with one custom policy of that
  name, attached; ``UpdatePolicy`` replaces its document. ``name/as:ModifyAutoScalingGroup``,
  ``DeleteAutoScalingGroup`` and ``DescribeAutoScalingGroups`` on
  ``qcs::as:<region>:uin/<owner uin>:auto-scaling-group/<group id>`` once the id is known;
  before, on the region's groups carrying the ledger id (``qcs:resource_tag``).
* Alibaba Cloud: a RAM role (trusted by ``ecs.aliyuncs.com``) with one custom policy of that
  name, attached; ``CreatePolicyVersion`` (``SetAsDefault``) replaces its document and the
  old version is deleted, so a policy never nears RAM's 5 versions. ``ess:ModifyScalingGroup``,
  ``DeleteScalingGroup`` and ``DescribeScalingGroups`` on
  ``acs:ess:<region>:<account>:scalinggroup/<id>`` once known; before, on the region's
  groups tagged with the ledger id (``acs:ResourceTag/gpudesk-ledger-id``).

The bucket part is the statements of :mod:`~gpudesk.services.storage.sts`'s session
policies for ``runs/<run id>/`` (objects, multipart, a listing held to the prefix), and it
is absent until :func:`set_run`: a group made before its run is known can reach no object.
A refusal is an :class:`RunRoleDenied` naming the denied action (``iam:CreateRole``,
``cam:UpdatePolicy``, ``ram:CreatePolicyVersion``), never a traceback.

Blocking (boto3, the Tencent and Alibaba Cloud SDKs through the provider's keys, retries
and error typing): call from a worker thread.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud import instance_role as ir
from gpudesk.services.cloud.catalog import provider_title
from gpudesk.services.cloud.keep_alive import group_name
from gpudesk.services.cloud.providers import base
from gpudesk.services.storage import sts
from gpudesk.services.storage.errors import MSG_CLOUD
from gpudesk.services.storage.errors import AccessDenied
from gpudesk.services.storage.errors import StorageError
from gpudesk.services.storage.uri import StoreUri

AWS_POLICY = "gpudesk-run"  # the role's one inline policy
SERVICES = {"aws": "ec2.amazonaws.com", "tencent": "cvm.qcloud.com",
            "aliyun": "ecs.aliyuncs.com"}
DESCRIPTION = "gpudesk: a keep-alive group's machines: their run's folder and their group"
# What in a policy is the bucket part (replaced by set_run) and what the group part:
# the actions' service prefixes, in each cloud's spelling ("name/cos:" on CAM).
_BUCKET_PREFIXES = ("s3:", "cos:", "name/cos:", "oss:")
AWS_GROUP_ACTIONS = ("autoscaling:UpdateAutoScalingGroup", "autoscaling:DeleteAutoScalingGroup")
AWS_READ_ACTION = "autoscaling:DescribeAutoScalingGroups"
TENCENT_GROUP_ACTIONS = ("name/as:ModifyAutoScalingGroup", "name/as:DeleteAutoScalingGroup",
                         "name/as:DescribeAutoScalingGroups")
ALIYUN_GROUP_ACTIONS = ("ess:ModifyScalingGroup", "ess:DeleteScalingGroup")
ALIYUN_READ_ACTION = "ess:DescribeScalingGroups"
# RAM's answers that mean "already gone" or "already so" (the RAM API reference's tables)
RAM_GONE = frozenset({"EntityNotExist.Role", "EntityNotExist.Policy",
                      "EntityNotExist.Role.Policy", "EntityNotExist.PolicyVersion"})
CAM_GONE = frozenset({"InvalidParameter.RoleNotExist", "ResourceNotFound.RoleNotExist",
                      "ResourceNotFound.PolicyIdNotFound", "InvalidParameter.PolicyIdNotExist",
                      "ResourceNotFound.PolicyIdNotExist", "InvalidParameter.PolicyIdError"})

MSG_ROLE_DENIED = QT_TRANSLATE_NOOP(
    "Storage", "The cloud refused to set up the role of the run's machines: {action} was "
    "denied for this account on {target}. Allow {action} in the account's policy and try "
    "again.")
MSG_ROLE_TAKEN = QT_TRANSLATE_NOOP(
    "Storage", "A role named {role} already exists and is not trusted by {service}, so it is "
    "not gpudesk's and gpudesk does not change it. Rename or delete it and try again.")
MSG_NO_KEYS = QT_TRANSLATE_NOOP(
    "Storage", "gpudesk has no API keys for {cloud} to set up the role of the run's machines.")


class RunRoleDenied(AccessDenied):
    """The account may not make, change or delete the group's role; ``action`` names it."""


def role_name(ledger_id: str) -> str:
    """The role (and on AWS the instance profile, on Tencent/Aliyun the policy) of a group:
    the group's own name."""
    return group_name(ledger_id)


# ------------------------------------------------------------------ policy documents

def _is_bucket(statement: dict[str, Any]) -> bool:
    actions = statement.get("Action", statement.get("action", []))
    actions = [actions] if isinstance(actions, str) else list(actions)
    return bool(actions) and all(str(a).startswith(_BUCKET_PREFIXES) for a in actions)


def aws_group_statements(ledger_id: str, region: str, account: str,
                         partition: str = "aws") -> list[dict[str, Any]]:
    """Size and delete this group only (name and ledger tag); describe has no resource."""
    arn = (f"arn:{partition}:autoscaling:{region}:{account}:autoScalingGroup:*:"
           f"autoScalingGroupName/{group_name(ledger_id)}")
    return [
        {"Sid": "EndItsGroup", "Effect": "Allow", "Action": list(AWS_GROUP_ACTIONS),
         "Resource": arn,
         "Condition": {"StringEquals": {f"autoscaling:ResourceTag/{base.TAG_LEDGER}":
                                        ledger_id}}},
        # DescribeAutoScalingGroups supports no resource-level permission (IAM's table)
        {"Sid": "ReadGroups", "Effect": "Allow", "Action": AWS_READ_ACTION, "Resource": "*"}]


def tencent_group_statements(ledger_id: str, region: str, uin: str,
                             group_id: str = "") -> list[dict[str, Any]]:
    """AS: the group by id when known; else the region's groups tagged with the ledger id."""
    where = f"qcs::as:{region}:uin/{uin}:auto-scaling-group/"
    if group_id:
        return [{"effect": "allow", "action": list(TENCENT_GROUP_ACTIONS),
                 "resource": [where + group_id]}]
    return [{"effect": "allow", "action": list(TENCENT_GROUP_ACTIONS),
             "resource": [where + "*"],
             "condition": {"for_any_value:string_equal": {
                 "qcs:resource_tag": [f"{base.TAG_LEDGER}&{ledger_id}"]}}}]


def aliyun_group_statements(ledger_id: str, region: str, account: str,
                            group_id: str = "") -> list[dict[str, Any]]:
    """ESS: the group by id when known; else the region's groups tagged with the ledger id
    (describe on the region's groups: a listing carries no tag to match)."""
    where = f"acs:ess:{region}:{account}:scalinggroup/"
    if group_id:
        return [{"Effect": "Allow", "Action": [*ALIYUN_GROUP_ACTIONS, ALIYUN_READ_ACTION],
                 "Resource": [where + group_id]}]
    return [{"Effect": "Allow", "Action": list(ALIYUN_GROUP_ACTIONS), "Resource": [where + "*"],
             "Condition": {"StringEquals": {f"acs:ResourceTag/{base.TAG_LEDGER}": ledger_id}}},
            {"Effect": "Allow", "Action": [ALIYUN_READ_ACTION], "Resource": [where + "*"]}]


def bucket_statements(store: StoreUri, run_id: str, region: str,
                      partition: str = "aws") -> list[dict[str, Any]]:
    """The run's folder only: the statements of sts's session policy for the run."""
    if store.cloud == "aws":
        return list(sts.aws_policy(store, run_id, partition)["Statement"])
    if store.cloud == "tencent":
        return list(sts.tencent_policy(store, run_id, region)["statement"])
    return list(sts.aliyun_policy(store, run_id)["Statement"])


def _document(cloud: str, group: list[dict[str, Any]], bucket: list[dict[str, Any]]
              ) -> dict[str, Any]:
    if cloud == "tencent":
        return {"version": "2.0", "statement": [*group, *bucket]}
    return {"Version": "2012-10-17" if cloud == "aws" else "1", "Statement": [*group, *bucket]}


def _statements(document: Any) -> list[dict[str, Any]]:
    """A policy's statements from what the cloud answered (text or decoded)."""
    if isinstance(document, str):
        try:
            document = json.loads(document or "{}")
        except ValueError:
            return []
    if not isinstance(document, dict):
        return []
    found = document.get("Statement", document.get("statement", []))
    found = [found] if isinstance(found, dict) else found
    return [s for s in found if isinstance(s, dict)] if isinstance(found, list) else []


def merged(cloud: str, current: Any, group: list[dict[str, Any]] | None,
           bucket: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The new document: ``group`` (or the current group part when None) and ``bucket``
    (or the current bucket part when None, none at first)."""
    now = _statements(current)
    keep_group = [s for s in now if not _is_bucket(s)]
    keep_bucket = [s for s in now if _is_bucket(s)]
    return _document(cloud, keep_group if group is None else group,
                     keep_bucket if bucket is None else bucket)


def _keep_group(current: Any, group_id: str) -> bool:
    """Whether to keep the policy's group part as it is: no new id is given and there is
    one (a group id, once written, is not widened back to the tag condition)."""
    return not group_id and any(not _is_bucket(s) for s in _statements(current))


# ------------------------------------------------------------------ errors

def _denied(action: str, target: str) -> RunRoleDenied:
    return RunRoleDenied(MSG_ROLE_DENIED, action=action, target=target)


def _aws(fn: Callable[[], Any], action: str, target: str, *, gone_ok: bool = False) -> Any:
    """One IAM call; a refusal names ``iam:<action>``; "no such entity" is None when
    ``gone_ok``."""
    from botocore.exceptions import BotoCoreError
    from botocore.exceptions import ClientError

    try:
        return fn()
    except ClientError as err:
        error = (err.response or {}).get("Error", {})
        code, message = str(error.get("Code", "")), str(error.get("Message", ""))
        if gone_ok and code == "NoSuchEntity":
            return None
        if code in ir.DENIED_CODES or code in sts.DENIED_CODES:
            raise _denied(f"iam:{action}", target) from None
        raise StorageError(MSG_CLOUD, code=code or "Error",
                           detail=(message or action)[:300]) from None
    except BotoCoreError as err:
        raise StorageError(MSG_CLOUD, code=type(err).__name__, detail=action) from None


Call = Callable[[str, dict[str, Any]], dict[str, Any]]


def _sdk(call: Call, service: str, gone: frozenset[str]
         ) -> Callable[..., dict[str, Any] | None]:
    """CAM/RAM calls through the provider's client; a refusal names ``<service>:<action>``;
    an answer in ``gone`` is None when the caller says it may be."""
    def run(action: str, params: dict[str, Any], target: str, *, gone_ok: bool = False,
            ok: frozenset[str] = frozenset()) -> dict[str, Any] | None:
        try:
            return call(action, params)
        except base.ProviderError as err:
            code = ir._code_of(err)
            if (gone_ok and code in gone) or code in ok:
                return None
            if ir._denied(err):
                raise _denied(f"{service}:{action}", target) from None
            raise StorageError(MSG_CLOUD, code=code or err.kind,
                               detail=ir.words(err) or action) from None
    return run


def _refuse_untrusted(cloud: str, name: str, trust: Any) -> None:
    """A role of the group's name that the cloud's compute service may not assume is not
    gpudesk's: refused, never rewritten (CAM writes its trust document's keys in lower case)."""
    if not ir._trusts(trust, SERVICES[cloud], lower=cloud == "tencent"):
        raise StorageError(MSG_ROLE_TAKEN, role=name, service=SERVICES[cloud])


# CAM (Tencent Cloud) and RAM (Alibaba Cloud): the provider's client, the service's name in a
# refused action, and its answers that mean "already gone"
_ROLE_SERVICES: dict[str, tuple[Callable[[Any], Call], str, frozenset[str]]] = {
    "tencent": (ir._cam_call, "cam", CAM_GONE), "aliyun": (ir._ram_call, "ram", RAM_GONE)}


# GetRole's answer and the trust document's field in it, in CAM's and RAM's spelling
_ROLE_FIELDS = {"tencent": ("RoleInfo", "PolicyDocument"),
                "aliyun": ("Role", "AssumeRolePolicyDocument")}


def _role_service(provider: Any, cloud: str, ledger_id: str
                  ) -> tuple[Callable[..., dict[str, Any] | None], str, str]:
    """CAM's or RAM's calls with the provider's keys, the group's role name, and the role
    as a refusal names it (``CAM role <name>``)."""
    if not isinstance(getattr(provider, "_credentials", None), base.Credentials):
        raise StorageError(MSG_NO_KEYS, cloud=provider_title(cloud))
    client, service, gone = _ROLE_SERVICES[cloud]
    name = role_name(ledger_id)
    return _sdk(client(provider), service, gone), name, f"{service.upper()} role {name}"


def _sdk_role(call: Callable[..., dict[str, Any] | None], cloud: str, name: str, target: str,
              trust: dict[str, Any], create: dict[str, Any]) -> dict[str, Any]:
    """The group's CAM or RAM role as GetRole answers it. A missing one is made, trusted as
    ``trust`` says, with ``create`` (the cloud's own fields); one that exists must be
    trusted by the cloud's compute service (:func:`_refuse_untrusted`)."""
    key, trust_field = _ROLE_FIELDS[cloud]
    info = (call("GetRole", {"RoleName": name}, target, gone_ok=True) or {}).get(key)
    if info is not None:
        _refuse_untrusted(cloud, name, info.get(trust_field))
        return dict(info)
    made = call("CreateRole", {"RoleName": name, trust_field: json.dumps(trust),
                               "Description": DESCRIPTION, **create}, target)
    # RAM answers with the role, CAM with its id only
    return dict((made or {}).get(key) or (call("GetRole", {"RoleName": name}, target)
                                          or {}).get(key) or {})


_GROUP_STATEMENTS = {"tencent": tencent_group_statements, "aliyun": aliyun_group_statements}


def _sdk_document(cloud: str, current: Any, account: str, ledger_id: str, region: str,
                  store: StoreUri, group_id: str, run_id: str | None) -> str:
    """The CAM or RAM policy's next document (``current`` is its present one, None when
    there is no policy yet): the group part kept once it names a group (:func:`_keep_group`),
    else written for ``group_id`` or the ledger tag; the bucket part for ``run_id``, or
    kept when None."""
    group = None if _keep_group(current, group_id) else _GROUP_STATEMENTS[cloud](
        ledger_id, region, account, group_id)
    bucket = None if run_id is None else bucket_statements(store, run_id, region)
    return json.dumps(merged(cloud, current, group, bucket))


# ------------------------------------------------------------------ AWS

def _aws_iam(provider: Any, region: str) -> Any:
    client = getattr(provider, "_client", None)
    if client is None:
        raise StorageError(MSG_NO_KEYS, cloud="AWS")
    return client("iam", region)


def _aws_arn_parts(arn: str) -> tuple[str, str]:
    """(partition, account) of an IAM ARN ``arn:<partition>:iam::<account>:role/...``."""
    parts = arn.split(":")
    return (parts[1] or "aws", parts[4]) if len(parts) > 5 else ("aws", "*")


def _aws_ensure(provider: Any, ledger_id: str, region: str, store: StoreUri,
                group_id: str, run_id: str | None) -> str:
    iam = _aws_iam(provider, region)
    name = role_name(ledger_id)
    target = f"IAM role {name}"
    tags = ir.role_tags(ledger_id)
    found = _aws(lambda: iam.get_role(RoleName=name), "GetRole", target, gone_ok=True)
    if found is None:
        found = _aws(lambda: iam.create_role(
            RoleName=name, AssumeRolePolicyDocument=json.dumps(ir.aws_trust_policy()),
            Description=DESCRIPTION, MaxSessionDuration=3600, Tags=tags), "CreateRole", target)
    role = found["Role"]
    trust = role.get("AssumeRolePolicyDocument") or {}
    _refuse_untrusted("aws", name, trust if isinstance(trust, str) else json.dumps(trust))
    partition, account = _aws_arn_parts(str(role.get("Arn", "")))
    current = _aws(lambda: iam.get_role_policy(RoleName=name, PolicyName=AWS_POLICY),
                   "GetRolePolicy", target, gone_ok=True)
    document = merged("aws", (current or {}).get("PolicyDocument"),
                      aws_group_statements(ledger_id, region, account, partition),
                      None if run_id is None else bucket_statements(store, run_id, region,
                                                                    partition))
    _aws(lambda: iam.put_role_policy(RoleName=name, PolicyName=AWS_POLICY,
                                     PolicyDocument=json.dumps(document)),
         "PutRolePolicy", target)
    profile = _aws(lambda: iam.get_instance_profile(InstanceProfileName=name),
                   "GetInstanceProfile", f"instance profile {name}", gone_ok=True)
    if profile is None:
        profile = _aws(lambda: iam.create_instance_profile(InstanceProfileName=name, Tags=tags),
                       "CreateInstanceProfile", f"instance profile {name}")
    if not any(r.get("RoleName") == name for r in profile["InstanceProfile"].get("Roles", [])):
        _aws(lambda: iam.add_role_to_instance_profile(InstanceProfileName=name, RoleName=name),
             "AddRoleToInstanceProfile", f"instance profile {name}")
    return name


def _aws_delete(provider: Any, ledger_id: str, region: str) -> None:
    iam = _aws_iam(provider, region)
    name = role_name(ledger_id)
    target = f"IAM role {name}"
    profile = _aws(lambda: iam.get_instance_profile(InstanceProfileName=name),
                   "GetInstanceProfile", f"instance profile {name}", gone_ok=True)
    if profile is not None:
        for r in profile["InstanceProfile"].get("Roles", []):
            role = str(r.get("RoleName", ""))
            _aws(lambda role=role: iam.remove_role_from_instance_profile(  # type: ignore[misc]
                InstanceProfileName=name, RoleName=role),
                "RemoveRoleFromInstanceProfile", f"instance profile {name}", gone_ok=True)
        _aws(lambda: iam.delete_instance_profile(InstanceProfileName=name),
             "DeleteInstanceProfile", f"instance profile {name}", gone_ok=True)
    inline = _aws(lambda: iam.list_role_policies(RoleName=name), "ListRolePolicies", target,
                  gone_ok=True)
    if inline is None:
        return  # no role
    for policy in inline.get("PolicyNames", []):
        _aws(lambda policy=policy: iam.delete_role_policy(  # type: ignore[misc]
            RoleName=name, PolicyName=policy), "DeleteRolePolicy", target, gone_ok=True)
    attached = _aws(lambda: iam.list_attached_role_policies(RoleName=name),
                    "ListAttachedRolePolicies", target, gone_ok=True) or {}
    for policy in attached.get("AttachedPolicies", []):
        arn = str(policy.get("PolicyArn", ""))
        _aws(lambda arn=arn: iam.detach_role_policy(  # type: ignore[misc]
            RoleName=name, PolicyArn=arn), "DetachRolePolicy", target, gone_ok=True)
    _aws(lambda: iam.delete_role(RoleName=name), "DeleteRole", target, gone_ok=True)


# ------------------------------------------------------------------ Tencent Cloud (CAM)

def _tc_policy_id(cam: Callable[..., dict[str, Any] | None], name: str) -> int | None:
    answer = cam("ListPolicies", {"Keyword": name, "Scope": "Local", "Rp": 200},
                 f"CAM policy {name}") or {}
    found = [p for p in answer.get("List") or [] if p.get("PolicyName") == name]
    return int(found[0]["PolicyId"]) if found else None


def _tencent_ensure(provider: Any, ledger_id: str, region: str, store: StoreUri,
                    group_id: str, run_id: str | None) -> str:
    cam, name, target = _role_service(provider, "tencent", ledger_id)
    tags = ir.role_tags(ledger_id)
    info = _sdk_role(cam, "tencent", name, target, ir.tencent_documents()[0],
                     {"ConsoleLogin": 0, "SessionDuration": 3600, "Tags": tags})
    arn = str(info.get("RoleArn") or "")  # qcs::cam::uin/<owner uin>:roleName/<name>
    uin = arn.split("uin/", 1)[1].split(":", 1)[0] if "uin/" in arn else ""
    if not uin:
        uin = str((cam("GetUserAppId", {}, "cam") or {}).get("OwnerUin") or "*")
    pid = _tc_policy_id(cam, name)
    current = None
    if pid is not None:
        current = (cam("GetPolicy", {"PolicyId": pid}, f"CAM policy {name}") or {}).get(
            "PolicyDocument")
    document = _sdk_document("tencent", current, uin, ledger_id, region, store, group_id,
                             run_id)
    if pid is None:
        pid = int((cam("CreatePolicy", {"PolicyName": name, "PolicyDocument": document,
                                        "Description": DESCRIPTION, "Tags": tags},
                       f"CAM policy {name}") or {})["PolicyId"])
    else:
        cam("UpdatePolicy", {"PolicyId": pid, "PolicyDocument": document},
            f"CAM policy {name}")
    cam("AttachRolePolicy", {"PolicyId": pid, "AttachRoleName": name}, target)
    return name


def _tencent_delete(provider: Any, ledger_id: str, region: str) -> None:
    cam, name, target = _role_service(provider, "tencent", ledger_id)
    pid = _tc_policy_id(cam, name)
    if pid is not None:
        cam("DetachRolePolicy", {"PolicyId": pid, "DetachRoleName": name}, target,
            gone_ok=True)
        cam("DeletePolicy", {"PolicyId": [pid]}, f"CAM policy {name}", gone_ok=True)
    cam("DeleteRole", {"RoleName": name}, target, gone_ok=True)


# ------------------------------------------------------------------ Alibaba Cloud (RAM)

def _aliyun_ensure(provider: Any, ledger_id: str, region: str, store: StoreUri,
                   group_id: str, run_id: str | None) -> str:
    ram, name, target = _role_service(provider, "aliyun", ledger_id)
    tags = ir.role_tags(ledger_id)
    role = _sdk_role(ram, "aliyun", name, target, ir.aliyun_documents()[0],
                     {"MaxSessionDuration": 3600, "Tag": tags})
    arn = str(role.get("Arn") or "")  # acs:ram::<account>:role/<name>
    account = arn.split(":")[3] if arn.count(":") >= 4 and arn.split(":")[3] else "*"
    policy_target = f"RAM policy {name}"
    got = ram("GetPolicy", {"PolicyName": name, "PolicyType": "Custom"}, policy_target,
              gone_ok=True)
    default = (got or {}).get("DefaultPolicyVersion") or {}
    current = default.get("PolicyDocument") if got is not None else None
    document = _sdk_document("aliyun", current, account, ledger_id, region, store, group_id,
                             run_id)
    if got is None:
        ram("CreatePolicy", {"PolicyName": name, "PolicyDocument": document,
                             "Description": DESCRIPTION, "Tag": tags}, policy_target)
    else:
        ram("CreatePolicyVersion", {
            "PolicyName": name, "PolicyDocument": document, "SetAsDefault": "true",
            "RotateStrategy": "DeleteOldestNonDefaultVersionWhenLimitExceeded"}, policy_target)
        _ram_prune(ram, name)
    ram("AttachPolicyToRole", {"PolicyType": "Custom", "PolicyName": name, "RoleName": name},
        target, ok=frozenset({"EntityAlreadyExists.Role.Policy"}))
    return name


def _ram_prune(ram: Callable[..., dict[str, Any] | None], name: str) -> None:
    """Delete the policy's versions that are not its default (DeletePolicy refuses a policy
    that still has them, and RAM keeps at most 5)."""
    listed = ram("ListPolicyVersions", {"PolicyType": "Custom", "PolicyName": name},
                 f"RAM policy {name}", gone_ok=True) or {}
    for version in (listed.get("PolicyVersions") or {}).get("PolicyVersion") or []:
        if not version.get("IsDefaultVersion"):
            ram("DeletePolicyVersion", {"PolicyName": name,
                                        "VersionId": str(version.get("VersionId"))},
                f"RAM policy {name}", gone_ok=True)


def _aliyun_delete(provider: Any, ledger_id: str, region: str) -> None:
    ram, name, target = _role_service(provider, "aliyun", ledger_id)
    ram("DetachPolicyFromRole", {"PolicyType": "Custom", "PolicyName": name, "RoleName": name},
        target, gone_ok=True)
    _ram_prune(ram, name)
    ram("DeletePolicy", {"PolicyName": name}, f"RAM policy {name}", gone_ok=True)
    ram("DeleteRole", {"RoleName": name}, target, gone_ok=True)


# ------------------------------------------------------------------ the entry points

_ENSURE: dict[str, Callable[[Any, str, str, StoreUri, str, str | None], str]] = {
    "aws": _aws_ensure, "tencent": _tencent_ensure, "aliyun": _aliyun_ensure}
_DELETE: dict[str, Callable[[Any, str, str], None]] = {
    "aws": _aws_delete, "tencent": _tencent_delete, "aliyun": _aliyun_delete}


def ensure_group_role(provider: Any, ledger_id: str, region: str, store: StoreUri, *,
                      group_id: str = "") -> str:
    """Blocking: the group's role, found or made, with its policy: the group's end actions
    (on ``group_id`` where the cloud names groups by id and it is known, else by the ledger
    tag) and no bucket access, or the run's folder kept where :func:`set_run` gave it. The
    role's name: pass it to ``create_group(request, role_name=...)`` (the instance profile's
    name on AWS). Raises :class:`RunRoleDenied` or :class:`StorageError`."""
    if store.cloud not in _ENSURE:
        raise ValueError(f"no group role on {store.cloud!r}")
    return _ENSURE[store.cloud](provider, ledger_id, region, store, group_id, None)


def set_run(provider: Any, ledger_id: str, region: str, store: StoreUri, run_id: str, *,
            group_id: str = "") -> str:
    """Blocking: the role's bucket part becomes ``runs/<run_id>/`` of ``store`` only (the
    previous run's, if any, is gone); the group part is kept (narrowed to ``group_id`` when
    given). Makes the role if it is missing. The role's name."""
    if store.cloud not in _ENSURE:
        raise ValueError(f"no group role on {store.cloud!r}")
    store.run(run_id)  # a bad run id is refused before any call
    return _ENSURE[store.cloud](provider, ledger_id, region, store, group_id, run_id)


def delete_group_role(provider: Any, ledger_id: str, region: str, cloud: str) -> None:
    """Blocking: the group's role, its policy and (AWS) instance profile, gone. What is
    already gone is success: a second call changes nothing."""
    if cloud not in _DELETE:
        raise ValueError(f"no group role on {cloud!r}")
    _DELETE[cloud](provider, ledger_id, region)
