"""End the run's keep-alive group from the machine: size 0, then delete it.

A keep-alive run lives in a group of size 1 that the cloud keeps full: a machine that
stops or terminates itself is simply replaced. So when the run has ended for good, or
its budget is spent, the agent ends the *group*, through the machine's role (the
role's short-lived credentials from the metadata service, ``cloud_stop.Metadata``, and
its stdlib signers):

* AWS Auto Scaling (Query API ``2011-01-01``, SigV4 service ``autoscaling``):
  ``UpdateAutoScalingGroup`` Min/Max/Desired 0, then ``DeleteAutoScalingGroup``
  ``ForceDelete=true`` (the group's machines, this one included, are terminated);
* Tencent Cloud AS (``2018-04-19``, TC3 service ``as``): ``ModifyAutoScalingGroup``
  sizes 0, then ``DeleteAutoScalingGroup`` once no machine remains (the AS reference:
  a group with IN_SERVICE instances or a running activity cannot be deleted). The
  size-0 activity removes this machine too, so the delete is often left to the
  desktop; a group at 0 bills nothing;
* Alibaba Cloud ESS (``2022-02-22``, ACS3): ``ModifyScalingGroup`` sizes 0, then
  ``DeleteScalingGroup`` ``ForceDelete=true``.

Done means the cloud *says* so: a describe after the calls shows the group gone, or at
size 0 (being deleted). A region that is not this machine's is refused before any call:
a "not found" there would read as "already gone". Messages are words (the cloud's error
code and message), never a secret or a traceback; :class:`GroupEnder` writes them to the
event log (``group-end``, ``group-end-failed``) and tries again with backoff. stdlib
only: this runs on the rented machine.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any
from typing import Callable
from typing import Dict
from typing import List
from typing import Mapping
from typing import Optional

from .clock import SYSTEM_CLOCK
from .clock import Clock
from .cloud_stop import PROVIDERS as CLOUDS
from .cloud_stop import CloudStopError
from .cloud_stop import Creds
from .cloud_stop import Metadata
from .cloud_stop import _post
from .cloud_stop import _rfc3986
from .cloud_stop import acs3_headers
from .cloud_stop import aws_domain
from .cloud_stop import aws_sigv4
from .cloud_stop import tc3_headers
from .events import EventLog
from .i18n_marks import QT_TRANSLATE_NOOP

ASG_VERSION = "2011-01-01"
AS_VERSION = "2018-04-19"
ESS_VERSION = "2022-02-22"
TIMEOUT_S = 10.0
RETRY_S = 15.0
RETRY_MAX_S = 300.0
# ESS regions served by the central endpoint (the ESS endpoint list); others have their own
ESS_CENTRAL = ("cn-qingdao", "cn-beijing", "cn-zhangjiakou", "cn-huhehaote", "cn-hangzhou",
               "cn-shanghai", "cn-shenzhen", "cn-hongkong", "ap-southeast-1", "us-west-1",
               "us-east-1")


MSG_GONE = QT_TRANSLATE_NOOP(
    "Agent", "The run's machine group {group} was set to 0 machines and deleted.")
MSG_AT_ZERO = QT_TRANSLATE_NOOP(
    "Agent", "The run's machine group {group} is at 0 machines; it is deleted once its "
    "last machine is gone.")
MSG_FAILED = QT_TRANSLATE_NOOP(
    "Agent", "Could not end the run's machine group {group} in {region} ({error}); "
    "trying again in {retry_s} s.")
MSG_WRONG_REGION = QT_TRANSLATE_NOOP(
    "Agent", "the group is in {region}, but this machine is in {here}")
MSG_REFUSED = QT_TRANSLATE_NOOP(
    "Agent", "{service} refused {action} ({code}): {message}")
MSG_STILL_UP = QT_TRANSLATE_NOOP(
    "Agent", "the cloud still shows the group at {desired} machines")


class GroupEndError(Exception):
    """The group could not be ended (yet); the message says why in words, never a secret."""

    def __init__(self, message: str, *, code: str = "") -> None:
        super().__init__(message)
        self.code = code


class _Gone(Exception):
    """The cloud answered that the group does not exist."""


@dataclass(frozen=True)
class GroupRef:
    """run.json's ``group``: which cloud group keeps the run's machine alive."""

    cloud: str
    region: str
    group_id: str

    @classmethod
    def from_dict(cls, data: Any) -> Optional[GroupRef]:
        if not isinstance(data, dict):
            return None
        cloud, region, gid = (str(data.get(k) or "") for k in ("cloud", "region", "group_id"))
        if cloud not in CLOUDS or not region or not gid:
            return None
        return cls(cloud, region, gid)

    def to_dict(self) -> Dict[str, str]:
        """As run.json holds it (written by the desktop, ``services/runs/run_package``)."""
        return {"cloud": self.cloud, "region": self.region, "group_id": self.group_id}


@dataclass(frozen=True)
class Outcome:
    """What the cloud showed after the calls: the group gone, or at ``desired`` machines."""

    gone: bool
    desired: int = 0
    members: int = 0


def endpoint_of(cloud: str, region: str) -> str:
    if cloud == "aws":
        return f"https://autoscaling.{region}.{aws_domain(region)}/"
    if cloud == "tencent":
        return "https://as.tencentcloudapi.com/"
    return "https://ess.aliyuncs.com/" if region in ESS_CENTRAL else \
        f"https://ess.{region}.aliyuncs.com/"


def _refused(service: str, action: str, code: str, message: str) -> GroupEndError:
    text = MSG_REFUSED.format(service=service, action=action, code=code or "?",
                              message=message.strip()[:300] or "-").strip()
    return GroupEndError(text, code=code)


# ------------------------------------------------------------------ AWS Auto Scaling

_AWS_ERROR = re.compile(r"<Code>([^<]+)</Code>(?:\s*<Message>([^<]*)</Message>)?")


def _xml_values(text: str, tag: str) -> List[str]:
    return re.findall(rf"<{tag}>([^<]*)</{tag}>", text)


def _aws_call(creds: Creds, region: str, url: str, params: Mapping[str, str], now: float,
              timeout: float) -> str:
    body = urllib.parse.urlencode({**params, "Version": ASG_VERSION}).encode()
    status, text = _post(url, body, aws_sigv4(creds, region, url, body, now,
                                              service="autoscaling"), timeout)
    if status == 200:
        return text
    found = _AWS_ERROR.search(text)
    code, message = (found.group(1), found.group(2) or "") if found else (f"HTTP {status}", "")
    if code == "ValidationError" and "not found" in message:
        raise _Gone()
    raise _refused("Auto Scaling", params["Action"], code, message)


def _aws(creds: Creds, ref: GroupRef, url: str, now: float, timeout: float) -> Outcome:
    name = {"AutoScalingGroupName": ref.group_id}
    for params in ({"Action": "UpdateAutoScalingGroup", "MinSize": "0", "MaxSize": "0",
                    "DesiredCapacity": "0", **name},
                   {"Action": "DeleteAutoScalingGroup", "ForceDelete": "true", **name}):
        # gone already (an earlier try, or the desktop): the describe below says
        with contextlib.suppress(_Gone):
            _aws_call(creds, ref.region, url, params, now, timeout)
    text = _aws_call(creds, ref.region, url, {"Action": "DescribeAutoScalingGroups",
                                              "AutoScalingGroupNames.member.1": ref.group_id},
                     now, timeout)
    groups = re.findall(r"<AutoScalingGroupName>([^<]*)</AutoScalingGroupName>", text)
    if ref.group_id not in groups:
        return Outcome(gone=True)
    desired = int((_xml_values(text, "DesiredCapacity") or ["0"])[0] or 0)
    return Outcome(gone=False, desired=desired, members=len(_xml_values(text, "InstanceId")))


# ------------------------------------------------------------------ Tencent Cloud AS

def _tc_call(creds: Creds, ref: GroupRef, url: str, action: str, params: Dict[str, Any],
             now: float, timeout: float) -> Dict[str, Any]:
    body = json.dumps(params).encode()
    status, text = _post(url, body, tc3_headers(creds, action, ref.region, url, body, now,
                                                service="as", version=AS_VERSION), timeout)
    try:
        answer = json.loads(text).get("Response", {})
    except (ValueError, AttributeError):
        raise GroupEndError(f"AS {action}: HTTP {status}, not JSON") from None
    error = answer.get("Error") if isinstance(answer, dict) else None
    if status == 200 and not error:
        return dict(answer)
    code = str(error.get("Code", "")) if isinstance(error, dict) else f"HTTP {status}"
    if code.startswith("ResourceNotFound"):
        raise _Gone()
    message = str(error.get("Message", "")) if isinstance(error, dict) else ""
    raise _refused("Tencent Cloud AS", action, code, message)


def _tc_describe(creds: Creds, ref: GroupRef, url: str, now: float,
                 timeout: float) -> Optional[Dict[str, Any]]:
    try:
        got = _tc_call(creds, ref, url, "DescribeAutoScalingGroups",
                       {"AutoScalingGroupIds": [ref.group_id]}, now, timeout)
    except _Gone:
        return None
    for group in got.get("AutoScalingGroupSet") or []:
        if isinstance(group, dict) and group.get("AutoScalingGroupId") == ref.group_id:
            return group
    return None


def _tencent(creds: Creds, ref: GroupRef, url: str, now: float, timeout: float) -> Outcome:
    with contextlib.suppress(_Gone):
        _tc_call(creds, ref, url, "ModifyAutoScalingGroup",
                 {"AutoScalingGroupId": ref.group_id, "MinSize": 0, "MaxSize": 0,
                  "DesiredCapacity": 0}, now, timeout)
    group = _tc_describe(creds, ref, url, now, timeout)
    if group is None:
        return Outcome(gone=True)
    members = int(group.get("InstanceCount") or 0)
    if members == 0 and int(group.get("DesiredCapacity") or 0) == 0:
        try:
            _tc_call(creds, ref, url, "DeleteAutoScalingGroup",
                     {"AutoScalingGroupId": ref.group_id}, now, timeout)
        except _Gone:
            pass
        except GroupEndError as exc:  # a member or an activity still there: next try
            if not exc.code.startswith(("ResourceInUse", "ResourceUnavailable")):
                raise
        group = _tc_describe(creds, ref, url, now, timeout)
        if group is None:
            return Outcome(gone=True)
    return Outcome(gone=False, desired=int(group.get("DesiredCapacity") or 0),
                   members=int(group.get("InstanceCount") or 0))


# ------------------------------------------------------------------ Alibaba Cloud ESS

def _ess_call(creds: Creds, ref: GroupRef, url: str, action: str, query: Dict[str, str],
              now: float, timeout: float) -> Dict[str, Any]:
    if action != "ModifyScalingGroup":  # its request model has no RegionId: the group's
        query = {"RegionId": ref.region, **query}
    full = url.rstrip("/") + "/?" + "&".join(f"{_rfc3986(k)}={_rfc3986(v)}"
                                             for k, v in sorted(query.items()))
    status, text = _post(full, b"", acs3_headers(creds, action, url, query, now,
                                                 version=ESS_VERSION), timeout)
    try:
        answer = json.loads(text)
    except ValueError:
        answer = {}
    if not isinstance(answer, dict):
        answer = {}
    if status == 200:
        return answer
    code = str(answer.get("Code") or f"HTTP {status}")
    if code.endswith(".NotFound") and "ScalingGroup" in code:
        raise _Gone()
    raise _refused("Alibaba Cloud ESS", action, code, str(answer.get("Message") or ""))


def _aliyun(creds: Creds, ref: GroupRef, url: str, now: float, timeout: float) -> Outcome:
    gid = {"ScalingGroupId": ref.group_id}
    with contextlib.suppress(_Gone):
        _ess_call(creds, ref, url, "ModifyScalingGroup",
                  {**gid, "MinSize": "0", "MaxSize": "0", "DesiredCapacity": "0"}, now,
                  timeout)
    with contextlib.suppress(_Gone):
        _ess_call(creds, ref, url, "DeleteScalingGroup", {**gid, "ForceDelete": "true"},
                  now, timeout)
    got = _ess_call(creds, ref, url, "DescribeScalingGroups",
                    {"ScalingGroupIds.1": ref.group_id}, now, timeout)
    for group in got.get("ScalingGroups") or []:
        if isinstance(group, dict) and group.get("ScalingGroupId") == ref.group_id:
            return Outcome(gone=False, desired=int(group.get("DesiredCapacity") or 0),
                           members=int(group.get("TotalCapacity") or 0))
    return Outcome(gone=True)


_ENDERS: Dict[str, Callable[[Creds, GroupRef, str, float, float], Outcome]] = {
    "aws": _aws, "tencent": _tencent, "aliyun": _aliyun}


def end_group(ref: GroupRef, role: str, *, metadata: str = "", endpoint: str = "",
              timeout: float = TIMEOUT_S, now: Callable[[], float] = time.time) -> Outcome:
    """One try: size 0 and delete, then describe. Raises :class:`GroupEndError` (words)
    unless the cloud shows the group gone or at size 0."""
    try:
        md = Metadata(ref.cloud, metadata, timeout)
        here = md.region()
        if here != ref.region:
            raise GroupEndError(MSG_WRONG_REGION.format(region=ref.region, here=here),
                                code="WrongRegion")
        creds = md.credentials(role)
        out = _ENDERS[ref.cloud](creds, ref, endpoint or endpoint_of(ref.cloud, ref.region),
                                 now(), timeout)
    except CloudStopError as exc:  # metadata or network, already in words
        raise GroupEndError(str(exc)) from None
    except (ValueError, TypeError) as exc:  # an answer we cannot read
        raise GroupEndError(f"unreadable answer ({type(exc).__name__})") from None
    if not out.gone and out.desired != 0:
        raise GroupEndError(MSG_STILL_UP.format(desired=out.desired), code="StillUp")
    return out


class GroupEnder:
    """Ends the group with backoff and says each try in the event log.

    ``attempt()`` is one try (the guard calls it at the budget and retries on its own
    schedule); ``tick()`` tries when due after :meth:`arm`. ``confirmed`` once the
    cloud showed size 0; ``gone`` once it showed no group: a group at 0 that is not
    deleted yet (Tencent, while this machine is still in it) is tried again until gone.
    """

    def __init__(self, ref: GroupRef, role: str, events: EventLog, *,
                 clock: Clock = SYSTEM_CLOCK, metadata: str = "", endpoint: str = "",
                 timeout: float = TIMEOUT_S, end: Callable[..., Outcome] = end_group,
                 now: Callable[[], float] = time.time) -> None:
        self.ref, self.role, self.events, self.clock = ref, role, events, clock
        self.now = now  # the signatures' time: the real one (``clock`` paces the tries)
        self.metadata, self.endpoint, self.timeout = metadata, endpoint, timeout
        self._end = end
        self.why = ""
        self.attempts = 0
        self.confirmed = events.has(self.key)
        self.gone = self.confirmed
        self.next_at: Optional[float] = None
        self.delay = RETRY_S

    @property
    def key(self) -> str:
        return f"group-end:{self.ref.cloud}:{self.ref.region}:{self.ref.group_id}"

    def arm(self, why: str) -> None:
        """From now on end the group (``why``: ``ended`` or ``budget``), first try now."""
        if not self.why:
            self.why = why
            self.next_at = self.clock.monotonic()

    def tick(self) -> bool:
        if self.why and not self.gone and self.next_at is not None \
                and self.clock.monotonic() >= self.next_at:
            self.attempt(self.why)
        return self.confirmed

    def attempt(self, why: str = "") -> bool:
        """One try now; True once the cloud showed the group at size 0 or gone."""
        self.why = self.why or why or "ended"
        if self.gone:
            return True
        self.attempts += 1
        values = {"group": self.ref.group_id, "region": self.ref.region}
        fields = {"cloud": self.ref.cloud, "region": self.ref.region,
                  "group_id": self.ref.group_id, "why": self.why, "attempt": self.attempts}
        try:
            out = self._end(self.ref, self.role, metadata=self.metadata,
                            endpoint=self.endpoint, timeout=self.timeout,
                            now=self.now)
        except GroupEndError as exc:
            retry = self.delay
            self.next_at = self.clock.monotonic() + retry
            self.delay = min(self.delay * 2, RETRY_MAX_S)
            self.events.record("group-end-failed", **fields, code=exc.code, error=str(exc),
                               retry_s=retry, said=MSG_FAILED,
                               values={**values, "error": str(exc), "retry_s": f"{retry:g}"})
            return self.confirmed
        again = self.confirmed  # at 0 before: only the deletion is news
        self.confirmed, self.gone = True, out.gone
        self.delay = RETRY_S
        self.next_at = None if out.gone else self.clock.monotonic() + RETRY_S
        if again and not out.gone:
            return True
        said = MSG_GONE if out.gone else MSG_AT_ZERO
        self.events.record("group-end", **fields, gone=out.gone, desired=out.desired,
                           members=out.members, said=said, values=values,
                           **({"key": self.key} if out.gone else {}))
        return True


__all__ = ["GroupEndError", "GroupEnder", "GroupRef", "Outcome", "end_group", "endpoint_of"]
