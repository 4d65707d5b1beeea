"""The ``instance-role`` enforcer: a machine that can stop its own bill, with no key on it.

Where the user allows it (``LaunchPlan.instance_role``, on by default), gpudesk gives the
machine a role that may do one thing: stop or terminate a gpudesk machine, and on AWS
only the machine itself. The agent (``gpudesk/agent/cloud_stop.py``) then calls the
cloud's ``StopInstances`` (stop-charging where the cloud offers it) or
``TerminateInstances``/``DeleteInstances`` with the short-lived credentials the metadata
service hands the machine: no long-lived key is ever on it, in a file, a log or argv.

* AWS: an IAM role ``gpudesk-self-stop`` (trusted by ``ec2.amazonaws.com``, tagged
  ``gpudesk=1``) with an inline policy allowing ``ec2:StopInstances`` and
  ``ec2:TerminateInstances`` on instances tagged ``gpudesk=1`` whose ARN is the caller's
  own (``aws:ARN`` = ``${ec2:SourceInstanceARN}``), in an instance profile of the same
  name, associated with the machine after launch (``AssociateIamInstanceProfile``).
* Tencent Cloud: a CAM role for ``cvm.qcloud.com`` (:func:`tencent_documents`), given at
  ``RunInstances.CamRoleName``; Alibaba Cloud: a RAM role for ``ecs.aliyuncs.com``
  (:func:`aliyun_documents`), attached with ``AttachInstanceRamRole``. Their policies are
  scoped to gpudesk's tag (neither cloud has a condition for "the calling machine").

An account that may not create or pass roles (AccessDenied, UnauthorizedOperation) is no
failure of the launch: the machine runs without a role, the ledger says why
(``instance-role-refused``), and the guard's words say what stays unprotected.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.providers import base
from gpudesk.services.money.ledger import Ledger, Machine

log = logging.getLogger(__name__)

ROLE_NAME = "gpudesk-self-stop"
POLICY_NAME = "gpudesk-stop-itself"
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

MSG_ROLE = QT_TRANSLATE_NOOP(
    "Guard", "At {budget} the machine's agent also asks {cloud} itself to {action} the "
    "machine, with a role that may only do that (no keys on the machine), even with gpudesk "
    "closed.")
MSG_NO_ROLE = QT_TRANSLATE_NOOP(
    "Guard", "This machine has no role to stop itself ({why}): with gpudesk closed, its "
    "agent cannot ask {cloud} to stop the bill.")


@dataclass(frozen=True)
class RoleOutcome:
    """What the machine got: a role (``attached``), or none and why in the cloud's words."""

    attached: bool
    role: str = ""
    profile: str = ""  # the AWS instance profile's ARN
    why: str = ""  # the refusal, or "off" when the user chose no role


class RoleRefused(Exception):
    """The account may not create, pass or attach the role (the cloud's words)."""


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


def tencent_documents() -> tuple[dict[str, Any], dict[str, Any]]:
    """(trust, policy) of the CVM CAM role: StopInstances/TerminateInstances on gpudesk's."""
    trust = {"version": "2.0", "statement": [{
        "action": "name/sts:AssumeRole", "effect": "allow",
        "principal": {"service": ["cvm.qcloud.com"]}}]}
    policy = {"version": "2.0", "statement": [{
        "effect": "allow", "action": ["cvm:StopInstances", "cvm:TerminateInstances"],
        "resource": ["qcs::cvm::uin/*:instance/*"],
        "condition": {"for_any_value:string_equal": {
            "qcs:resource_tag": [f"{base.TAG_MANAGED}&1"]}}}]}
    return trust, policy


def aliyun_documents() -> tuple[dict[str, Any], dict[str, Any]]:
    """(trust, policy) of the ECS RAM role: StopInstances/DeleteInstances on gpudesk's."""
    trust = {"Version": "1", "Statement": [{
        "Action": "sts:AssumeRole", "Effect": "Allow",
        "Principal": {"Service": ["ecs.aliyuncs.com"]}}]}
    policy = {"Version": "1", "Statement": [{
        "Effect": "Allow",
        "Action": ["ecs:StopInstance", "ecs:StopInstances", "ecs:DeleteInstance",
                   "ecs:DeleteInstances"],
        "Resource": "acs:ecs:*:*:instance/*",
        "Condition": {"StringEquals": {f"ecs:tag/{base.TAG_MANAGED}": "1"}}}]}
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


# ------------------------------------------------------------------ launch

def give_role(ledger: Ledger, machine_id: str, provider: Any, *, allowed: bool = True,
              sleep: Callable[[float], None] = time.sleep) -> RoleOutcome:
    """Blocking: after launch, give the machine its role where the user allows it.

    Writes the ledger before (``instance-role-requested``) and after: the role and the
    ``instance-role`` enforcer, or ``instance-role-refused`` with the cloud's words (the
    launch goes on without it). Only AWS is wired here so far; Tencent Cloud and Alibaba
    Cloud machines get none yet (recorded as such).
    """
    m = ledger.get(machine_id)
    if m is None or not m.cloud_id:
        return RoleOutcome(False, why="no machine")
    if not allowed:
        ledger.log(machine_id, STEP_OFF, "the user chose no role")
        return RoleOutcome(False, why="off")
    if m.provider != "aws":
        why = f"not yet for {m.provider}"
        ledger.log(machine_id, STEP_REFUSED, why)
        return RoleOutcome(False, why=why)
    ledger.log(machine_id, "instance-role-requested", ROLE_NAME)
    try:
        iam, ec2 = _clients(provider, m.region)
        profile = ensure_aws_role(iam)
        attach_aws_profile(ec2, m.cloud_id, ROLE_NAME, sleep=sleep)
    except RoleRefused as exc:
        ledger.log(machine_id, STEP_REFUSED, str(exc))
        return RoleOutcome(False, why=str(exc))
    except Exception as exc:  # noqa: BLE001 - a role is a bonus: the launch goes on
        why = f"{type(exc).__name__}: {_code(exc) or 'failed'}"
        log.warning("no instance role for %s: %s", machine_id, why)
        ledger.log(machine_id, STEP_REFUSED, why)
        return RoleOutcome(False, why=why)
    add_enforcer(ledger, m, f"{ROLE_NAME} ({profile})")
    return RoleOutcome(True, ROLE_NAME, profile)


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


def sentence(m: Machine, budget: str, action: str, cloud: str,
             why: str = "") -> tuple[str, dict[str, object]]:
    """The words for :func:`guard.sentences`: what the role does, or what stays open."""
    if ENFORCER in m.enforced_by.split(","):
        return MSG_ROLE, {"budget": budget, "cloud": cloud, "action": action}
    return MSG_NO_ROLE, {"cloud": cloud, "why": why or "none"}


def at_launch(ledger: Ledger, m: Machine, provider: Any, allowed: bool) -> Machine:
    """Blocking, for the launcher once the machine runs: :func:`give_role` where the cloud
    is wired (AWS), the machine as the ledger now has it. Never raises: a machine without a
    role is still a launched machine (the ledger and the guard's words say so)."""
    if m.provider == "aws" and m.cloud_id:
        try:
            give_role(ledger, m.id, provider, allowed=allowed)
        except Exception as exc:  # noqa: BLE001 - the ledger itself failed: say it, go on
            log.warning("instance role of %s: %s", m.id, type(exc).__name__)
    return ledger.get(m.id) or m


def rules_commands(m: Machine | None) -> dict[str, tuple[str, ...]]:
    """``AgentRules.commands`` for ``m``: the role's stop/terminate where it has one."""
    if m is None or ENFORCER not in m.enforced_by.split(","):
        return {}
    return agent_commands(m.provider)
