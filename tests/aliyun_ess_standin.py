"""A stand-in Alibaba Cloud Auto Scaling (ESS, 2022-02-22) API server: the actions gpudesk's
keep-alive groups use (aliyun_keep_alive.py), written from the API reference and the
request/response models of alibabacloud_ess20220222.

It speaks the SDK's wire format (RPC, POST, parameters flattened in the query string as
``VSwitchIds.1``, ``Tags.1.Key``, ``SystemDisk.Size``, ``SpotPriceLimits.1.PriceLimit``;
answers as JSON; errors as HTTP 4xx with ``{"RequestId", "HostId", "Code", "Message",
"Recommend"}``) and checks the ACS3-HMAC-SHA256 signature as the ECS stand-in does.

Given an ECS stand-in (``ecs``), it is the front door for both: a request whose
``x-acs-version`` is not ESS's is answered by the ECS stand-in, so one endpoint serves a
provider's ECS, VPC and ESS calls, as the provider's single ``endpoint`` option expects.
The group's machines are then real machines in the ECS stand-in's state, made by its own
RunInstances (so the image, vSwitch, security group, key pair and spot sale are checked as
a launch checks them), tagged with the configuration's tags and ESS's
``acs:autoscaling:scalingGroupId``; DescribeInstances sees them.

State per region: scaling groups (made Inactive; EnableScalingGroup activates them with a
configuration and starts what DesiredCapacity asks), scaling configurations, scheduled tasks
(which survive DeleteScalingGroup, as the API reference says) and members. Test hooks:
``reclaim(instance_id)`` takes a spot member back (the ECS machine is locked Recycling),
``tick()`` lets ESS act (a reclaimed member is removed and released, and while the group
wants more a replacement is started), ``run_scheduled(now)`` applies the scheduled tasks
whose LaunchTime has come (within their LaunchExpirationTime), ``sell_out_spot`` makes every
spot launch fail, so that CompensateWithOnDemand decides whether ESS falls back to
on-demand (COST_OPTIMIZED only, as documented).

Documented limits held (refused before anything else, listed in ``limit_refusals``):
names 2 to 64 characters starting with a letter or digit (ScalingGroupName,
ScalingConfigurationName, ScheduledTaskName); PageSize 1 to 50 ("Maximum value: 50") on
every Describe; VSwitchIds.N at most 5; Tags at most 20, keys not starting with ``acs:`` or
``aliyun``; MinSize <= DesiredCapacity <= MaxSize (``InvalidParameter.Conflict``);
LaunchTime exactly ``YYYY-MM-DDThh:mmZ`` (UTC, minute precision), not in the past and at most
90 days ahead; LaunchExpirationTime 0 to 21600; Description 2 to 200; UserData Base64 of at
most 32 KB (CreateScalingConfiguration and ModifyScalingConfiguration alike; a modified
configuration reaches only the members made after it); InternetMaxBandwidthOut 0 to 100;
a scaling group must be enabled to scale.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import random
import re
import string
import time
import uuid
from collections import Counter
from datetime import UTC
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl
from urllib.parse import urlsplit

from aliyun_standin import ECS_PRINCIPAL
from aliyun_standin import AliyunStandin
from aliyun_standin import check_acs3
from standin_http import ApiError
from standin_http import StandinServer

ESS_VERSION = "2022-02-22"
PAGE_MAX = 50  # DescribeScalingGroups/-Configurations/-Instances/-ScheduledTasks PageSize
NAME = re.compile(r"^[^\W_][\w.\-]{1,63}$")  # 2-64: letter/digit (or Chinese) first
SWITCHES_MAX = 5  # VSwitchIds.N: "The valid range of N is [1, 5]"
TAGS_MAX = 20  # "You can specify up to 20 tags"
USER_DATA_MAX = 32 * 1024  # "The raw data can be up to 32 KB in size."
LAUNCH_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z$")  # YYYY-MM-DDThh:mmZ, UTC
LAUNCH_AHEAD_MAX_S = 90 * 86400  # "You cannot enter a time point later than 90 days"
LAUNCH_EXPIRATION = (0, 21600)
POLICIES = frozenset({"PRIORITY", "COST_OPTIMIZED", "BALANCE", "COMPOSABLE"})
SPOT = frozenset({"NoSpot", "SpotWithPriceLimit", "SpotAsPriceGo"})
TAG_ESS_GROUP = "acs:autoscaling:scalingGroupId"
_STATUS = {"InvalidScalingGroupId.NotFound": 404, "InvalidScheduledTaskId.NotFound": 404,
           "InvalidScalingConfigurationId.NotFound": 404, "InvalidVSwitchId.NotFound": 404,
           "InvalidAccessKeyId.NotFound": 404, "Forbidden.RAM": 403,
           "Forbidden.Unauthorized": 403, "InvalidAction.NotFound": 404}
_ID = string.ascii_lowercase + string.digits
_real_time = time.time


def _new_id(prefix: str, n: int = 20) -> str:
    return prefix + "".join(random.choices(_ID, k=n))


def _minute(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%MZ")


def _listed(q: dict[str, str], name: str) -> list[str]:
    out = []
    for i in itertools.count(1):
        if f"{name}.{i}" not in q:
            return out
        out.append(q[f"{name}.{i}"])
    return out  # pragma: no cover


def _objects(q: dict[str, str], name: str) -> list[dict[str, str]]:
    out = []
    for i in itertools.count(1):
        prefix = f"{name}.{i}."
        item = {k[len(prefix):]: v for k, v in q.items() if k.startswith(prefix)}
        if not item:
            return out
        out.append(item)
    return out  # pragma: no cover


def _true(value: str | None) -> bool:
    return str(value).lower() == "true"


def _invalid(param: str) -> ApiError:
    return ApiError("InvalidParameter", f'The specified parameter "{param}" is not valid.')


def _int(q: dict[str, str], name: str, lo: int, hi: int) -> int | None:
    if name not in q:
        return None
    try:
        value = int(q[name])
    except ValueError:
        raise _invalid(name) from None
    if not lo <= value <= hi:
        raise _invalid(name)
    return value


class AliyunEssStandin(StandinServer):
    """The server; ``endpoint`` is ``127.0.0.1:PORT``. ``ecs``: the ECS stand-in it fronts."""

    name = "aliyun-ess-standin"
    methods = frozenset({"POST", "GET"})
    content_type = "application/json;charset=utf-8"

    def __init__(self, ecs: AliyunStandin | None = None) -> None:
        self.ecs = ecs
        super().__init__()

    def reset(self) -> None:
        with self._lock:
            self.groups: dict[str, dict[str, Any]] = {}
            self.configs: dict[str, dict[str, Any]] = {}
            self.tasks: dict[str, dict[str, Any]] = {}
            self.members: dict[str, list[dict[str, Any]]] = {}  # group id → members
            self.tokens: dict[tuple[str, str], str] = {}  # (action, ClientToken) → id
            self.activities: list[dict[str, Any]] = []  # every scale-out/in ESS made
            self.calls: Counter[str] = Counter()
            self.requests = []
            self.failures = []
            self.limit_refusals: list[tuple[str, str]] = []
            self.internal_errors: list[str] = []
            self.nonces: set[str] = set()
            self.no_spot = False  # every spot launch fails (sold out)
            self.elapsed = 0.0
            self.secrets = {}

    # ------------------------------------------------------------------ control

    def now(self) -> float:
        if self.ecs is not None:
            return self.ecs.now()
        return time.time() + self.elapsed

    def sell_out_spot(self) -> None:
        with self._lock:
            self.no_spot = True

    def alive(self, group_id: str) -> list[dict[str, Any]]:
        """The group's members ESS counts (not removed)."""
        with self._lock:
            return [m for m in self.members.get(group_id, []) if not m["_removed"]]

    def reclaim(self, instance_id: str) -> None:
        """The cloud takes a spot member back (the 5-minute notice, then the machine)."""
        with self._lock:
            for members in self.members.values():
                for member in members:
                    if member["InstanceId"] == instance_id and not member["_removed"]:
                        member["_reclaimed"] = True
                        if self.ecs is not None and instance_id in self.ecs.state.instances:
                            self.ecs.reclaim(instance_id)
                        return
            raise KeyError(instance_id)

    def tick(self) -> None:
        """ESS acts: reclaimed members leave (released), each active group is brought to its
        DesiredCapacity."""
        with self._lock:
            for group_id, group in list(self.groups.items()):
                for member in self.members.get(group_id, []):
                    if member.get("_reclaimed") and not member["_removed"]:
                        self._remove(member, "reclaimed")
                self._converge(group)

    def run_scheduled(self, now: float) -> list[str]:
        """Apply every enabled one-time task whose LaunchTime has come (and whose
        LaunchExpirationTime has not passed); a disabled group's task waits (retried)."""
        applied = []
        with self._lock:
            for task in self.tasks.values():
                at = datetime.strptime(task["LaunchTime"], "%Y-%m-%dT%H:%MZ").replace(
                    tzinfo=UTC).timestamp()
                if task["_done"] or not task["TaskEnabled"] or at > now:
                    continue
                if now > at + task["LaunchExpirationTime"]:
                    task["_done"] = True  # skipped, as ESS skips a task past its window
                    continue
                group = self.groups.get(task["ScalingGroupId"])
                if group is None or group["LifecycleState"] != "Active":
                    continue
                for key, field in (("MinValue", "MinSize"), ("MaxValue", "MaxSize"),
                                   ("DesiredCapacity", "DesiredCapacity")):
                    if task.get(key) is not None:
                        group[field] = task[key]
                task["_done"] = True
                applied.append(task["ScheduledTaskId"])
                self._converge(group)
        return applied

    # ------------------------------------------------------------------ request path

    def respond(self, method: str, target: str, headers: dict[str, str],
                body: bytes) -> tuple[int, dict[str, Any]]:
        version = headers.get("x-acs-version", "")
        if version != ESS_VERSION and self.ecs is not None:
            return self.ecs.respond(method, target, headers, body)
        url = urlsplit(target)
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        query.update(dict(parse_qsl(body.decode(), keep_blank_values=True))
                     if headers.get("content-type", "").startswith(
                         "application/x-www-form-urlencoded") else {})
        action = headers.get("x-acs-action", "")
        with self._lock:
            self.calls[action] += 1
            # CreateScalingConfiguration and ModifyScalingGroup take no RegionId (their SDK
            # models have none): ESS knows the region from the endpoint, here from the group.
            group = self.groups.get(query.get("ScalingGroupId", ""))
            if group is None:  # ModifyScalingConfiguration names only its configuration
                config = self.configs.get(query.get("ScalingConfigurationId", ""))
                group = self.groups.get(config["ScalingGroupId"]) if config else None
            region = query.get("RegionId") or (group["RegionId"] if group else "")
        try:
            self._authenticate(method, url.path, dict(parse_qsl(url.query,
                                                                keep_blank_values=True)),
                               headers, body)
            handler = getattr(self, "_" + action, None)
            if version != ESS_VERSION or handler is None:
                raise ApiError("InvalidAction.NotFound", f"Specified api {action} is not found.")
            with self._lock:
                self.requests.append((action, region, query))
                try:
                    self._limits(action, query)
                except ApiError as err:
                    self.limit_refusals.append((action, f"{err.code}: {err.message}"))
                    raise
                self._fail_if_asked(action, {"region": region})
                if self.ecs is not None and region not in _regions():
                    raise ApiError("InvalidRegionId.NotFound",
                                   "The specified region does not exist.")
                answer = handler(region, query)
                if self.ecs is not None:
                    self.ecs._bill_sync()
        except Exception as exc:  # noqa: BLE001 - a stand-in bug answers as ESS's own would
            if not isinstance(exc, ApiError):
                self.internal_errors.append(f"{action}: {type(exc).__name__}: {exc}")
                exc = ApiError("InternalError", "The request processing has failed due to some "
                               "unknown error.")
            return _STATUS.get(exc.code, 500 if exc.code == "InternalError" else 400), {
                "RequestId": str(uuid.uuid4()).upper(), "HostId": "ess.aliyuncs.com",
                "Code": exc.code, "Message": exc.message,
                "Recommend": f"https://api.aliyun.com/troubleshoot?q={exc.code}"}
        answer["RequestId"] = str(uuid.uuid4()).upper()
        return 200, answer

    def _authenticate(self, method: str, path: str, query: dict[str, str],
                      headers: dict[str, str], body: bytes) -> None:
        """ACS3-HMAC-SHA256, as alibabacloud-tea-openapi signs (aliyun_standin's check)."""
        check_acs3(self.secrets, self.nonces, self._lock, method, path, query, headers, body,
                   now=_real_time())

    def _limits(self, action: str, q: dict[str, str]) -> None:
        """The documented limits every action is held to before it acts."""
        if "PageSize" in q:
            _int(q, "PageSize", 1, PAGE_MAX)
        if "PageNumber" in q:
            _int(q, "PageNumber", 1, 10**9)
        for param in ("ScalingGroupName", "ScalingConfigurationName", "ScheduledTaskName"):
            if param in q and not NAME.match(q[param]):
                raise _invalid(param)
        if len(_listed(q, "VSwitchIds")) > SWITCHES_MAX:
            raise _invalid("VSwitchIds")
        tags = _objects(q, "Tags")
        if len(tags) > TAGS_MAX or any(
                re.match(r"^(aliyun|acs:)", t.get("Key", "")) or not t.get("Key")
                for t in tags):
            raise _invalid("Tags")
        if "Description" in q and not 2 <= len(q["Description"]) <= 200:
            raise _invalid("Description")
        _int(q, "LaunchExpirationTime", *LAUNCH_EXPIRATION)
        _int(q, "InternetMaxBandwidthOut", 0, 100)
        for size in ("MinSize", "MaxSize", "DesiredCapacity", "MinValue", "MaxValue"):
            _int(q, size, 0, 2000)  # the quota "Maximum number of instances per group"
        if "LaunchTime" in q:
            at = q["LaunchTime"]
            if not LAUNCH_TIME.match(at):
                raise _invalid("LaunchTime")
            when = datetime.strptime(at, "%Y-%m-%dT%H:%MZ").replace(tzinfo=UTC).timestamp()
            now = self.now()
            if when < now // 60 * 60 or when > now + LAUNCH_AHEAD_MAX_S:  # this minute: not past
                raise _invalid("LaunchTime")
        if "UserData" in q:
            try:
                raw = base64.b64decode(q["UserData"], validate=True)
            except (binascii.Error, ValueError):
                raise _invalid("UserData") from None
            if len(raw) > USER_DATA_MAX:
                raise _invalid("UserData")

    # ------------------------------------------------------------------ groups

    def _group(self, region: str, group_id: str) -> dict[str, Any]:
        group = self.groups.get(group_id)
        if group is None or group["RegionId"] != region:
            raise ApiError("InvalidScalingGroupId.NotFound",
                           "The specified scaling group does not exist.")
        return group

    @staticmethod
    def _sizes(group: dict[str, Any]) -> None:
        if not group["MinSize"] <= group["DesiredCapacity"] <= group["MaxSize"]:
            raise ApiError("InvalidParameter.Conflict", 'The value of parameter "MinSize", '
                           '"DesiredCapacity" and "MaxSize" are conflict.')

    def _CreateScalingGroup(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        token = ("CreateScalingGroup", q.get("ClientToken", ""))
        if token[1] and token in self.tokens:
            return {"ScalingGroupId": self.tokens[token]}
        if "MinSize" not in q or "MaxSize" not in q:
            raise ApiError("MissingParameter", "The input parameter \"MinSize\" or "
                           "\"MaxSize\" that is mandatory for processing this request is not "
                           "supplied.")
        name = q.get("ScalingGroupName", "")
        if name and any(g["ScalingGroupName"] == name and g["RegionId"] == region
                        for g in self.groups.values()):
            raise ApiError("InvalidScalingGroupName.Duplicate",
                           "The specified value of parameter \"ScalingGroupName\" is "
                           "duplicated.")
        policy = q.get("MultiAZPolicy", "PRIORITY")
        if policy not in POLICIES:
            raise _invalid("MultiAZPolicy")
        switches = _listed(q, "VSwitchIds") or ([q["VSwitchId"]] if q.get("VSwitchId") else [])
        vpcs = set()
        if self.ecs is not None:
            for vsw in switches:
                raw = self.ecs.state.vswitches.get(vsw)
                if raw is None or raw["RegionId"] != region:
                    raise ApiError("InvalidVSwitchId.NotFound",
                                   "The specified virtual switch does not exist.")
                vpcs.add(raw["VpcId"])
            if len(vpcs) > 1:  # "They must belong to the same VPC."
                raise _invalid("VSwitchIds")
        group_id = _new_id("asg-")
        group = {
            "ScalingGroupId": group_id, "ScalingGroupName": name or group_id,
            "RegionId": region, "LifecycleState": "Inactive",
            "MinSize": int(q["MinSize"]), "MaxSize": int(q["MaxSize"]),
            "DesiredCapacity": int(q.get("DesiredCapacity", q["MinSize"])),
            "MultiAZPolicy": policy, "VSwitchIds": switches,
            "VpcId": next(iter(vpcs), ""),
            "SpotInstanceRemedy": _true(q.get("SpotInstanceRemedy")),
            # "Default value: true." (CreateScalingGroup, CompensateWithOnDemand)
            "CompensateWithOnDemand": _true(q.get("CompensateWithOnDemand", "true")),
            "OnDemandBaseCapacity": int(q.get("OnDemandBaseCapacity") or 0),
            "OnDemandPercentageAboveBaseCapacity": int(
                q.get("OnDemandPercentageAboveBaseCapacity") or 0),
            "ScalingPolicy": q.get("ScalingPolicy", "release"),
            "ActiveScalingConfigurationId": "",
            "Tags": [{"TagKey": t["Key"], "TagValue": t.get("Value", ""),
                      "Propagate": _true(t.get("Propagate"))} for t in _objects(q, "Tags")],
            "CreationTime": _minute(self.now()),
        }
        self._sizes(group)
        self.groups[group_id] = group
        self.members[group_id] = []
        if token[1]:
            self.tokens[token] = group_id
        return {"ScalingGroupId": group_id}

    def _group_view(self, group: dict[str, Any]) -> dict[str, Any]:
        alive = [m for m in self.members.get(group["ScalingGroupId"], []) if not m["_removed"]]
        return {**group, "TotalCapacity": len(alive), "ActiveCapacity": sum(
            1 for m in alive if m["LifecycleState"] == "InService"),
            "SpotCapacity": sum(1 for m in alive if m["SpotStrategy"] != "NoSpot")}

    @staticmethod
    def _page(items: list[dict[str, Any]], q: dict[str, str], key: str) -> dict[str, Any]:
        size = int(q.get("PageSize") or 10)  # "Default value: 10."
        number = int(q.get("PageNumber") or 1)
        return {key: items[(number - 1) * size:number * size], "TotalCount": len(items),
                "PageNumber": number, "PageSize": size}

    def _DescribeScalingGroups(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        ids = set(_listed(q, "ScalingGroupIds"))
        names = set(_listed(q, "ScalingGroupNames"))
        wanted_tags = _objects(q, "Tags")
        found = []
        for group in self.groups.values():
            tags = {t["TagKey"]: t["TagValue"] for t in group["Tags"]}
            if (group["RegionId"] != region or (ids and group["ScalingGroupId"] not in ids)
                    or (names and group["ScalingGroupName"] not in names)
                    or (q.get("ScalingGroupName")
                        and group["ScalingGroupName"] != q["ScalingGroupName"])
                    or any(tags.get(t.get("Key", "")) != t.get("Value", tags.get(
                        t.get("Key", ""))) or t.get("Key") not in tags for t in wanted_tags)):
                continue
            found.append(self._group_view(group))
        return self._page(found, q, "ScalingGroups")

    def _EnableScalingGroup(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        group = self._group(region, q.get("ScalingGroupId", ""))
        if group["LifecycleState"] != "Inactive":
            raise ApiError("IncorrectScalingGroupStatus", "The current status of the specified "
                           "scaling group does not support this action.")
        config_id = q.get("ActiveScalingConfigurationId", "")
        mine = [c for c in self.configs.values()
                if c["ScalingGroupId"] == group["ScalingGroupId"]]
        config = next((c for c in mine if c["ScalingConfigurationId"] == config_id), None)
        if config_id and config is None:
            raise ApiError("InvalidScalingConfigurationId.NotFound",
                           "The specified scaling configuration does not exist.")
        if config is None:
            if len(mine) != 1:
                raise ApiError("IncorrectScalingConfigurationLifecycleState",
                               "The scaling group has no scaling configuration to activate.")
            config = mine[0]
        for other in mine:
            other["LifecycleState"] = "Inactive"
        config["LifecycleState"] = "Active"
        group["ActiveScalingConfigurationId"] = config["ScalingConfigurationId"]
        group["LifecycleState"] = "Active"
        self._converge(group)
        return {}

    def _ModifyScalingGroup(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        group = self._group(region, q.get("ScalingGroupId", ""))
        changed = dict(group)
        for field in ("MinSize", "MaxSize", "DesiredCapacity"):
            if field in q:
                changed[field] = int(q[field])
        self._sizes(changed)
        for field in ("SpotInstanceRemedy", "CompensateWithOnDemand"):
            if field in q:
                changed[field] = _true(q[field])
        group.update(changed)
        self._converge(group)
        return {}

    def _DeleteScalingGroup(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        group = self._group(region, q.get("ScalingGroupId", ""))
        group_id = group["ScalingGroupId"]
        alive = [m for m in self.members.get(group_id, []) if not m["_removed"]]
        if alive and not _true(q.get("ForceDelete")):
            # "false: … No ongoing scaling activities … The Total Capacity … is 0"
            raise ApiError("IncorrectScalingGroupStatus", "The current status of the specified "
                           "scaling group does not support this action.")
        for member in alive:
            self._remove(member, "deleted")
        for config_id in [c for c, v in self.configs.items() if v["ScalingGroupId"] == group_id]:
            del self.configs[config_id]
        del self.groups[group_id]  # its scheduled tasks stay (the API reference says so)
        return {}

    # ------------------------------------------------------------------ configurations

    def _CreateScalingConfiguration(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        token = ("CreateScalingConfiguration", q.get("ClientToken", ""))
        if token[1] and token in self.tokens:
            return {"ScalingConfigurationId": self.tokens[token]}
        group = self._group(region, q.get("ScalingGroupId", ""))
        name = q.get("ScalingConfigurationName", "")
        if name and any(c["ScalingConfigurationName"] == name and c["ScalingGroupId"]
                        == group["ScalingGroupId"] for c in self.configs.values()):
            raise ApiError("InvalidScalingConfigurationName.Duplicate",
                           "The specified value of parameter \"ScalingConfigurationName\" is "
                           "duplicated.")
        types = _listed(q, "InstanceTypes") or ([q["InstanceType"]] if q.get("InstanceType")
                                                else [])
        if not types or not q.get("ImageId") or not q.get("SecurityGroupId"):
            raise ApiError("MissingParameter", "ImageId, InstanceType(s) and SecurityGroupId "
                           "are mandatory for a scaling configuration.")
        strategy = q.get("SpotStrategy", "NoSpot")
        if strategy not in SPOT:
            raise _invalid("SpotStrategy")
        limits = {s.get("InstanceType", ""): float(s.get("PriceLimit") or 0)
                  for s in _objects(q, "SpotPriceLimits")}
        if strategy == "SpotWithPriceLimit" and not all(limits.get(t, 0) > 0 for t in types):
            raise _invalid("SpotPriceLimits")
        try:
            tags = json.loads(q["Tags"]) if q.get("Tags") else {}
        except ValueError:
            raise _invalid("Tags") from None
        if not isinstance(tags, dict) or len(tags) > TAGS_MAX or any(
                str(k).startswith(("aliyun", "acs:")) for k in tags):
            raise _invalid("Tags")
        if self.ecs is not None:
            sg = self.ecs.state.groups.get(q["SecurityGroupId"])
            if sg is None or (group["VpcId"] and sg["VpcId"] != group["VpcId"]):
                raise ApiError("InvalidSecurityGroupId.NotFound",
                               "The specified security group does not exist.")
            key = q.get("KeyPairName", "")
            if key and (region, key) not in self.ecs.state.key_pairs:
                raise ApiError("InvalidKeyPairName.NotFound",
                               "The specified KeyPairName does not exist.")
        config_id = _new_id("asc-")
        self.configs[config_id] = {
            "ScalingConfigurationId": config_id, "ScalingGroupId": group["ScalingGroupId"],
            "ScalingConfigurationName": name or config_id, "LifecycleState": "Inactive",
            "ImageId": q["ImageId"], "InstanceTypes": types, "InstanceType": types[0],
            "SecurityGroupId": q["SecurityGroupId"], "KeyPairName": q.get("KeyPairName", ""),
            "UserData": q.get("UserData", ""), "RamRoleName": q.get("RamRoleName", ""),
            "SpotStrategy": strategy,
            "SpotPriceLimits": [{"InstanceType": t, "PriceLimit": p} for t, p in limits.items()],
            "Tags": [{"Key": str(k), "Value": str(v)} for k, v in tags.items()],
            "InstanceName": q.get("InstanceName", ""),
            "SystemDiskCategory": q.get("SystemDisk.Category", "cloud_efficiency"),
            "SystemDiskSize": int(q.get("SystemDisk.Size") or 40),
            "InternetChargeType": q.get("InternetChargeType", "PayByTraffic"),
            "InternetMaxBandwidthOut": int(q.get("InternetMaxBandwidthOut") or 0),
            "PasswordInherit": _true(q.get("PasswordInherit")),
            "CreationTime": _minute(self.now()),
        }
        if token[1]:
            self.tokens[token] = config_id
        return {"ScalingConfigurationId": config_id}

    def _ModifyScalingConfiguration(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        """The configuration changed in place (UserData, name here): members already made
        keep what they were made with. UserData's limits are held by ``_limits``."""
        config = self.configs.get(q.get("ScalingConfigurationId", ""))
        if config is None or self.groups.get(config["ScalingGroupId"], {}).get(
                "RegionId") != region:
            raise ApiError("InvalidScalingConfigurationId.NotFound",
                           "The specified scaling configuration does not exist.")
        name = q.get("ScalingConfigurationName")
        if name and any(c["ScalingConfigurationName"] == name and c is not config
                        and c["ScalingGroupId"] == config["ScalingGroupId"]
                        for c in self.configs.values()):
            raise ApiError("InvalidScalingConfigurationName.Duplicate",
                           "The specified value of parameter \"ScalingConfigurationName\" is "
                           "duplicated.")
        if name:
            config["ScalingConfigurationName"] = name
        if "UserData" in q:
            config["UserData"] = q["UserData"]
        return {}

    def _DescribeScalingConfigurations(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        group_id = q.get("ScalingGroupId", "")
        ids = set(_listed(q, "ScalingConfigurationIds"))
        found = [c for c in self.configs.values()
                 if self.groups.get(c["ScalingGroupId"], {}).get("RegionId") == region
                 and (not group_id or c["ScalingGroupId"] == group_id)
                 and (not ids or c["ScalingConfigurationId"] in ids)]
        return self._page(found, q, "ScalingConfigurations")

    # ------------------------------------------------------------------ members

    def _DescribeScalingInstances(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        group = self._group(region, q.get("ScalingGroupId", ""))
        found = [{k: v for k, v in m.items() if not k.startswith("_")}
                 for m in self.members.get(group["ScalingGroupId"], []) if not m["_removed"]]
        return self._page(found, q, "ScalingInstances")

    def _converge(self, group: dict[str, Any]) -> None:
        """ESS brings an active group to DesiredCapacity: new members, or the newest out."""
        if group["LifecycleState"] != "Active":
            return
        group_id = group["ScalingGroupId"]
        alive = [m for m in self.members[group_id] if not m["_removed"]]
        while len(alive) > group["DesiredCapacity"]:
            self._remove(alive.pop(), "scale-in")
        for _ in range(group["DesiredCapacity"] - len(alive)):
            member = self._launch(group)
            if member is None:
                return
            alive.append(member)

    def _launch(self, group: dict[str, Any]) -> dict[str, Any] | None:
        """One new member from the active configuration: spot first where the configuration
        asks it; on-demand instead only when COST_OPTIMIZED and CompensateWithOnDemand say
        so. Every vSwitch in order; a failed activity is recorded, not raised."""
        config = self.configs[group["ActiveScalingConfigurationId"]]
        strategies = [config["SpotStrategy"]]
        if (config["SpotStrategy"] != "NoSpot" and group["MultiAZPolicy"] == "COST_OPTIMIZED"
                and group["CompensateWithOnDemand"]):
            strategies.append("NoSpot")
        reasons = []
        for strategy in strategies:
            for vsw in group["VSwitchIds"] or [""]:
                try:
                    iid, zone = self._run(group, config, strategy, vsw)
                except ApiError as err:
                    reasons.append(f"{err.code}: {err.message}")
                    continue
                member = {
                    "InstanceId": iid, "ScalingGroupId": group["ScalingGroupId"],
                    "ScalingConfigurationId": config["ScalingConfigurationId"],
                    "LifecycleState": "InService", "HealthStatus": "Healthy",
                    "CreationType": "AutoCreated", "ZoneId": zone, "SpotStrategy": strategy,
                    "CreationTime": _minute(self.now()), "CreatedTime": _minute(self.now()),
                    "_removed": False}
                self.members[group["ScalingGroupId"]].append(member)
                self.activities.append({"group": group["ScalingGroupId"], "status":
                                        "Successful", "instance": iid, "why": "scale-out"})
                return member
        self.activities.append({"group": group["ScalingGroupId"], "status": "Failed",
                                "why": "; ".join(reasons)})
        return None

    def _run(self, group: dict[str, Any], config: dict[str, Any], strategy: str,
             vsw: str) -> tuple[str, str]:
        """The machine, through the ECS stand-in's own RunInstances when one is given."""
        if strategy != "NoSpot" and self.no_spot:
            raise ApiError("OperationDenied.NoStock", "The requested resource is sold out.")
        if self.ecs is None:
            return _new_id("i-"), ""
        ecs = self.ecs
        switch = ecs.state.vswitches.get(vsw)
        if switch is None:
            raise ApiError("InvalidVSwitchId.NotFound", "The vSwitch does not exist.")
        tags = {t["Key"]: t["Value"] for t in config["Tags"]}
        tags.update({t["TagKey"]: t["TagValue"] for t in group["Tags"] if t["Propagate"]})
        tags[TAG_ESS_GROUP] = group["ScalingGroupId"]
        q = {"RegionId": group["RegionId"], "ZoneId": switch["ZoneId"], "VSwitchId": vsw,
             "InstanceType": config["InstanceType"], "ImageId": config["ImageId"],
             "SecurityGroupId": config["SecurityGroupId"], "KeyPairName": config["KeyPairName"],
             "InstanceChargeType": "PostPaid", "SpotStrategy": strategy,
             "InstanceName": config["InstanceName"],
             "SystemDisk.Size": str(config["SystemDiskSize"])}
        if strategy == "SpotWithPriceLimit":
            q["SpotPriceLimit"] = str(next(p["PriceLimit"] for p in config["SpotPriceLimits"]
                                           if p["InstanceType"] == config["InstanceType"]))
        for i, (key, value) in enumerate(tags.items(), 1):
            q[f"Tag.{i}.Key"], q[f"Tag.{i}.Value"] = key, value
        role = config["RamRoleName"]
        if role and role not in ecs.state.roles:
            raise ApiError("InvalidRamRole.NotFound", "The specified RAMRoleName does not "
                           "exist.")
        if role and ECS_PRINCIPAL not in ecs.state.roles[role]["_services"]:
            raise ApiError("InvalidRamRole.NotEcsRole", "The specified ram role is not "
                           "authorized for ecs, please check your role policy.")
        with ecs._lock:
            answer = ecs._RunInstances(group["RegionId"], q)
            iid = answer["InstanceIdSets"]["InstanceIdSet"][0]
            raw = ecs.state.instances[iid]
            raw["_user_data"] = base64.b64decode(config["UserData"]).decode() \
                if config["UserData"] else ""
            raw["_ram_role"] = role
        return iid, switch["ZoneId"]

    def _remove(self, member: dict[str, Any], why: str) -> None:
        """A member leaves: released (ScalingPolicy release), gone from DescribeInstances."""
        member["_removed"] = True
        member["LifecycleState"] = "Removing"
        iid = member["InstanceId"]
        if self.ecs is not None and iid in self.ecs.state.instances:
            with self.ecs._lock:
                del self.ecs.state.instances[iid]
                self.ecs.state.released.append((iid, self.now()))
        self.activities.append({"group": member["ScalingGroupId"], "status": "Successful",
                                "instance": iid, "why": why})

    # ------------------------------------------------------------------ scheduled tasks

    def _task(self, region: str, task_id: str) -> dict[str, Any]:
        task = self.tasks.get(task_id)
        if task is None or task["RegionId"] != region:
            raise ApiError("InvalidScheduledTaskId.NotFound",
                           "The specified scheduled task does not exist.")
        return task

    @staticmethod
    def _task_sizes(task: dict[str, Any]) -> None:
        lo, hi, want = task.get("MinValue"), task.get("MaxValue"), task.get("DesiredCapacity")
        if lo is not None and hi is not None and lo > hi or (
                want is not None and ((lo is not None and want < lo)
                                      or (hi is not None and want > hi))):
            raise ApiError("InvalidParameter.Conflict", 'The value of parameter "MinValue", '
                           '"DesiredCapacity" and "MaxValue" are conflict.')

    def _CreateScheduledTask(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        if q.get("ScalingGroupId") and q.get("ScheduledAction"):
            raise ApiError("InvalidParameter.Conflict", "ScheduledAction and ScalingGroupId "
                           "cannot be set at the same time.")
        if "LaunchTime" not in q:
            raise ApiError("MissingParameter", 'The input parameter "LaunchTime" that is '
                           "mandatory for processing this request is not supplied.")
        name = q.get("ScheduledTaskName", "")
        if name and any(t["ScheduledTaskName"] == name and t["RegionId"] == region
                        for t in self.tasks.values()):
            raise ApiError("InvalidScheduledTaskName.Duplicate", "The specified value of "
                           "parameter ScheduledTaskName is duplicated.")
        group_id = q.get("ScalingGroupId", "")
        if group_id:
            self._group(region, group_id)
            if not any(k in q for k in ("MinValue", "MaxValue", "DesiredCapacity")):
                raise ApiError("MissingParameter", "At least one of MinValue, MaxValue and "
                               "DesiredCapacity is required with ScalingGroupId.")
        task_id = _new_id("", 20)
        task = {"ScheduledTaskId": task_id, "ScheduledTaskName": name or task_id,
                "RegionId": region, "ScalingGroupId": group_id,
                "ScheduledAction": q.get("ScheduledAction", ""),
                "Description": q.get("Description", ""), "LaunchTime": q["LaunchTime"],
                "LaunchExpirationTime": int(q.get("LaunchExpirationTime") or 600),
                "TaskEnabled": _true(q.get("TaskEnabled", "true")), "_done": False}
        for key in ("MinValue", "MaxValue", "DesiredCapacity"):
            task[key] = int(q[key]) if key in q else None
        self._task_sizes(task)
        self.tasks[task_id] = task
        return {"ScheduledTaskId": task_id}

    def _ModifyScheduledTask(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        task = self._task(region, q.get("ScheduledTaskId", ""))
        changed = dict(task)
        for key in ("LaunchTime", "Description", "ScheduledTaskName"):
            if key in q:
                changed[key] = q[key]
        for key in ("MinValue", "MaxValue", "DesiredCapacity", "LaunchExpirationTime"):
            if key in q:
                changed[key] = int(q[key])
        if "TaskEnabled" in q:
            changed["TaskEnabled"] = _true(q["TaskEnabled"])
        self._task_sizes(changed)
        if "LaunchTime" in q:
            changed["_done"] = False
        task.update(changed)
        return {}

    def _DescribeScheduledTasks(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        ids = set(_listed(q, "ScheduledTaskIds"))
        names = set(_listed(q, "ScheduledTaskNames"))
        found = [{k: v for k, v in t.items() if not k.startswith("_") and k != "RegionId"
                  and v is not None}
                 for t in self.tasks.values()
                 if t["RegionId"] == region
                 and (not q.get("ScalingGroupId") or t["ScalingGroupId"] == q["ScalingGroupId"])
                 and (not ids or t["ScheduledTaskId"] in ids)
                 and (not names or t["ScheduledTaskName"] in names)]
        return self._page(found, q, "ScheduledTasks")

    def _DeleteScheduledTask(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        task = self._task(region, q.get("ScheduledTaskId", ""))
        del self.tasks[task["ScheduledTaskId"]]
        return {}


def _regions() -> frozenset[str]:
    from aliyun_standin import REGIONS

    return frozenset(REGIONS)


def ess_sdk_client(server: AliyunEssStandin, key_id: str, secret: str,
                   region: str = "cn-hangzhou") -> Any:
    """A real ESS SDK client pointed at ``server`` (for the signature tests)."""
    from alibabacloud_ess20220222.client import Client
    from alibabacloud_tea_openapi.utils_models import Config

    return Client(Config(access_key_id=key_id, access_key_secret=secret, region_id=region,
                         endpoint=server.endpoint, protocol="http", read_timeout=10_000))
