"""Alibaba Cloud keep-alive groups: an ESS (Auto Scaling, 2022-02-22) scaling group of one
spot machine, a mixin of :class:`AliyunProvider` (keep_alive.py says what a group is for).

What gpudesk makes for run ``<ledger id>`` (all named ``gpudesk-run-<ledger id>``):

* a scaling group (MinSize 0, MaxSize 1, DesiredCapacity 1) over gpudesk's vSwitches in the
  zones that sell the type, ``MultiAZPolicy=COST_OPTIMIZED`` with no on-demand share:
  ESS's spot policy. ``SpotInstanceRemedy=true``: on the 5-minute reclaim notice ESS starts
  the replacement before the machine is taken. ``CompensateWithOnDemand=false``: when no
  spot machine can be had, ESS must NOT start an on-demand one instead (it defaults to
  true): that would bill several times the price the user chose, silently;
* its scaling configuration: the run's image, type, security group, key pair, user data
  (base64), ``SpotAsPriceGo`` or ``SpotWithPriceLimit`` with the request's cap, the RAM
  role for the bucket and the group's own end, and gpudesk's tags on every machine;
* a scheduled task ``gpudesk-run-<ledger id>-end`` setting MinValue, MaxValue and
  DesiredCapacity to 0 at ``request.cloud_timer_at``: the budget's end, kept by ESS itself.

Order matters for money: the group is made disabled (ESS starts nothing then), the
configuration and the end are set and read back, and only then is the group enabled with
that configuration: no moment exists in which a machine runs without its end.

ESS keeps LaunchTime to the minute (``YYYY-MM-DDThh:mmZ``, within 90 days): the end is
rounded DOWN to its minute, so a group never runs later than its budget allows, and
what ESS read back is returned. DeleteScalingGroup with ForceDelete releases the machines
and deletes the configuration, but leaves the group's scheduled tasks (the API
reference says so): :meth:`end_group` deletes them too.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import math
import time
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

from alibabacloud_tea_openapi.utils_models import Config
from darabonba.runtime import RuntimeOptions

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.keep_alive import SCHEDULE_MAX_AHEAD_S
from gpudesk.services.cloud.keep_alive import SCHEDULE_MIN_AHEAD_S
from gpudesk.services.cloud.keep_alive import GroupMember
from gpudesk.services.cloud.keep_alive import GroupState
from gpudesk.services.cloud.keep_alive import group_name
from gpudesk.services.cloud.providers import aliyun_gpu_driver
from gpudesk.services.cloud.providers import aliyun_parse as ap
from gpudesk.services.cloud.providers import base
from gpudesk.services.cloud.providers.aliyun_errors import CallContext
from gpudesk.services.cloud.providers.aliyun_errors import is_throttle
from gpudesk.services.cloud.providers.aliyun_errors import map_error
from gpudesk.services.cloud.providers.sdk_provider import Refused

ESS_PAGE = 50  # DescribeScalingGroups/-Instances/-ScheduledTasks: "Maximum value: 50"
MAX_ZONES = 5  # VSwitchIds.N: "The valid range of N is [1, 5]" (CreateScalingGroup)
END_SUFFIX = "-end"
NAME_MAX = 64  # ScalingGroupName, ScalingConfigurationName, ScheduledTaskName: 2 to 64
LAUNCH_EXPIRATION_S = 1800  # retry a refused end for 30 minutes (0 to 21600 allowed)
# ESS's own tag on the machines it makes (a system tag: users may not set acs: keys)
TAG_ESS_GROUP = "acs:autoscaling:scalingGroupId"
_REQ_TIMEOUT_MS = 30_000
# ModifyScalingConfiguration / CreateScalingConfiguration UserData: Base64 of raw data "up to
# 32 KB" (ESS API reference, 2022-02-22).
USER_DATA_MAX = 32 * 1024
ESS_LABEL = "Alibaba Cloud Auto Scaling"

MSG_BUDGET_SPENT = QT_TRANSLATE_NOOP(
    "ProviderError", "The budget of {name} is already spent: its end would come in under a "
    "minute, so gpudesk did not ask Alibaba Cloud for a group that would have to end at once.")
MSG_RAM_ESS = QT_TRANSLATE_NOOP(
    "ProviderError", "The keys are valid but the RAM user may not {action}. Ask the account "
    "owner to grant {permission} (for example the AliyunESSFullAccess policy): a machine that "
    "recovers by itself is kept by an Auto Scaling (ESS) group.")
MSG_ESS_NOT_AUTHORIZED = QT_TRANSLATE_NOOP(
    "ProviderError", "Auto Scaling (ESS) may not act in this Alibaba Cloud account yet ({detail}). "
    "Open the Auto Scaling console once and let it create its service-linked role "
    "(AliyunServiceRoleForAutoScaling), then try again.")
MSG_USER_DATA_TOO_BIG = QT_TRANSLATE_NOOP(
    "ProviderError", "The first-boot script is {size} bytes; {provider} takes at most {limit} "
    "for a scaling configuration.")
MSG_USER_DATA_NOT_KEPT = QT_TRANSLATE_NOOP(
    "ProviderError", "{provider} accepted new first-boot data for the group {group} but does "
    "not hold it: its next machine would start without it.")
MSG_GROUP_GONE = QT_TRANSLATE_NOOP(
    "ProviderError", "Alibaba Cloud no longer has the scaling group {name} in {region}.")

_NOT_FOUND = frozenset({"InvalidScalingGroupId.NotFound", "InvalidScheduledTaskId.NotFound",
                        "InvalidScalingConfigurationId.NotFound"})


@functools.cache
def _ess_sdk() -> tuple[Any, Any]:
    """The ESS SDK's models and client, imported on the first ESS call (its models take a
    third of a second to load, which the window's start should not pay)."""
    from alibabacloud_ess20220222 import models as ess_models  # noqa: PLC0415
    from alibabacloud_ess20220222.client import Client as EssClient  # noqa: PLC0415

    return ess_models, EssClient


def map_ess_error(code: str, message: str, ctx: CallContext) -> base.ProviderError:
    """ESS's own answers first (its API reference's error tables), then ECS's table."""
    detail = base.detail_of(code, message)
    if code == "Forbidden.Unauthorized":  # ESS itself lacks its service-linked role
        return base.error_with_detail("permission", MSG_ESS_NOT_AUTHORIZED, detail)
    if code in ("Forbidden.RAM", "Forbidden", "NoPermission", "Forbidden.NotAuthorized"):
        return base.ProviderError("permission", MSG_RAM_ESS, detail, action=f"call {ctx.action}",
                                  permission=f"ess:{ctx.action}")
    if code in _NOT_FOUND:
        return base.ProviderError("not-found", MSG_GROUP_GONE, detail,
                                  name=ctx.resource or "?", region=ctx.region)
    if code.startswith(("IncorrectScalingGroupStatus", "InvalidScalingGroupName",
                        "InvalidScheduledTaskName", "IncorrectScalingConfiguration",
                        "ScalingActivityInProgress")):
        return base.error_with_detail("invalid", base.MSG_OTHER, detail,
                                      provider="Alibaba Cloud Auto Scaling")
    return map_error(code, message, ctx)


def end_minute(at: float) -> float:
    """``at`` rounded down to its minute: ESS keeps LaunchTime to the minute, and the end
    must never come later than the budget allows."""
    return math.floor(at / 60.0) * 60.0


def launch_time(at: float) -> str:
    """Unix seconds → ESS's ``YYYY-MM-DDThh:mmZ`` (UTC), rounded down to the minute."""
    return ap.format_time(end_minute(at))[:16] + "Z"


def _bool(value: Any) -> bool:
    return value is True or str(value).lower() == "true"


class KeepAliveAliyun:
    """ESS keep-alive groups; the ECS calls, the credentials and the retry settings come
    from :class:`AliyunProvider`."""

    _credentials: base.Credentials
    _endpoint: str | None
    _protocol: str
    _clients: dict[tuple[str, str], Any]
    _regions: list[str]
    _known_types: set[str]
    _max_tries: int
    _backoff_s: float
    _sleep: Callable[[float], None]
    _lock: Any  # SdkProvider's threading.Lock
    name: base.ProviderName

    def _check_region(self, region: str) -> None:
        raise NotImplementedError

    def _launch_place(self, request: base.LaunchRequest) -> tuple[str, str]:
        raise NotImplementedError

    def ensure_network(self, region: str, zone: str) -> tuple[str, str]:
        raise NotImplementedError

    def zone_choices(self, region: str, instance_type: str,
                     market: base.Market = "on-demand") -> list[base.ZoneChoice]:
        raise NotImplementedError

    def find_image(self, region: str, instance_type: str) -> str:
        raise NotImplementedError

    def _driver_images(self) -> set[str]:
        raise NotImplementedError

    def _with_driver(self, image_id: str, user_data: str) -> str:
        """A group member's user data: on a public image without the GPU driver (the one
        ``find_image`` picked, or a plain Ubuntu typed in), the driver's install beside
        gpudesk's first boot, as a single machine gets it (``aliyun.run_instance``); a
        replacement at 3 a.m. would otherwise train on a machine with no driver."""
        if image_id in self._driver_images() or aliyun_gpu_driver.is_plain_ubuntu(image_id):
            return aliyun_gpu_driver.with_driver(user_data)
        return user_data

    def _tag_shared(self, region: str, ledger_id: str, group: str, key_name: str) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ plumbing

    def _ess_client(self, region: str) -> Any:
        """The ESS client for ``region``; the provider's ``endpoint`` (a stand-in) serves it
        as it serves ECS and VPC, else the SDK's own (``ess.aliyuncs.com`` & co.)."""
        with self._lock:
            client = self._clients.get(("ess", region))
            if client is None:
                client = _ess_sdk()[1](Config(
                    access_key_id=self._credentials.key_id,
                    access_key_secret=self._credentials.secret,
                    security_token=self._credentials.session_token or None,
                    region_id=region, protocol=self._protocol,
                    endpoint=self._endpoint or None,
                    read_timeout=_REQ_TIMEOUT_MS, connect_timeout=10_000))
                self._clients[("ess", region)] = client
            return client

    def _ess(self, region: str, action: str, params: dict[str, Any], *, resource: str = "",
             ok_codes: frozenset[str] = frozenset()) -> dict[str, Any]:
        """One ESS call: checked against the SDK model, signed by the SDK, throttling retried
        with backoff, refusals typed (:func:`map_ess_error`)."""
        models = _ess_sdk()[0]
        request = getattr(models, f"{action}Request")().from_map({"RegionId": region, **params})
        unknown = ap.unknown_keys(params, request.to_map())
        if unknown:  # a programming error, not the user's: say which name
            raise TypeError(f"{action} has no parameter {', '.join(unknown)}")
        method = getattr(self._ess_client(region), f"{ap.sdk_method(action)}_with_options")
        runtime = RuntimeOptions(autoretry=False, max_attempts=1, read_timeout=_REQ_TIMEOUT_MS,
                                 connect_timeout=10_000)
        ctx = CallContext(action, region, resource=resource, product="ess",
                          key_id=base.mask(self._credentials.key_id))
        for tried in range(self._max_tries):
            try:
                body = getattr(method(request, runtime), "body", None)
            except Exception as exc:  # noqa: BLE001 - the SDK's and requests' errors alike
                refused = Refused(*ap.code_of(exc))
                if refused.code in ok_codes:
                    return {"Code": refused.code}
                if is_throttle(refused.code) and tried + 1 < self._max_tries:
                    self._sleep(self._backoff_s * 2 ** tried)
                    continue
                raise map_ess_error(refused.code, refused.message, ctx) from None
            answer = body.to_map() if body is not None else {}
            return answer if isinstance(answer, dict) else {}
        raise AssertionError("unreachable")  # pragma: no cover

    def _ess_pages(self, region: str, action: str, params: dict[str, Any],
                   key: str) -> Iterator[dict[str, Any]]:
        """Every item of a paged ESS Describe call (PageNumber/PageSize, at most 50)."""
        number = 1
        while True:
            answer = self._ess(region, action, dict(params, PageNumber=number,
                                                    PageSize=ESS_PAGE))
            batch = answer.get(key) or []
            yield from batch
            if not batch or number * ESS_PAGE >= int(answer.get("TotalCount") or 0):
                return
            number += 1

    # ------------------------------------------------------------------ KeepAliveGroups

    def create_group(self, request: base.LaunchRequest, *, role_name: str = "") -> GroupState:
        """A disabled group, its configuration, its end (read back), then enabled.

        Refused before any call when the request cannot be right or its budget is spent.
        Idempotent on ``request.ledger_id``: what an earlier try made is found by name and
        finished, never made twice.
        """
        base.validate_request(self.name, request, self._regions, self._known_types)
        name = _name(group_name(request.ledger_id))
        end = self._end_at(request, name)
        security_group, zone = self._launch_place(request)
        region = request.region
        switches = self._switches(region, request, zone)
        group_id = self._find_group_id(region, name) or self._create_scaling_group(
            region, request, name, switches)
        config_id = self._configuration(region, group_id, request, name, security_group,
                                        role_name)
        if end is not None:
            self._set_end(region, group_id, name, end)
        self._tag_shared(region, request.ledger_id, security_group, request.key_name)
        raw = self._group_raw(region, group_id)
        if raw is not None and raw.get("LifecycleState") == "Inactive":
            self._ess(region, "EnableScalingGroup", {
                "ScalingGroupId": group_id, "ActiveScalingConfigurationId": config_id},
                resource=group_id)
        state = self.describe_group(region, group_id)
        if state is None:
            raise base.ProviderError("not-found", MSG_GROUP_GONE, name=group_id, region=region)
        return state

    def _end_at(self, request: base.LaunchRequest, name: str) -> float | None:
        """The end to schedule (to the minute, down), or the refusal of a spent budget."""
        if request.budget is not None and request.budget <= 0:
            raise base.ProviderError("invalid", MSG_BUDGET_SPENT, name=name)
        if request.cloud_timer_at is None:
            return None
        return self._checked_end(request.cloud_timer_at, name)

    @staticmethod
    def _checked_end(at: float, name: str, now: float | None = None) -> float:
        now = time.time() if now is None else now
        end = end_minute(min(at, now + SCHEDULE_MAX_AHEAD_S))
        if end < now + SCHEDULE_MIN_AHEAD_S:
            raise base.ProviderError("invalid", MSG_BUDGET_SPENT, name=name)
        return end

    def _switches(self, region: str, request: base.LaunchRequest, zone: str) -> list[str]:
        """gpudesk's vSwitch in the chosen zone first, then in up to four other zones that sell
        the type now: a reclaim often means the zone is short, and ESS may go elsewhere."""
        zones = [zone]
        for choice in self.zone_choices(region, request.instance_type, request.market):
            if choice.sells and choice.zone not in zones and len(zones) < MAX_ZONES:
                zones.append(choice.zone)
        return [self.ensure_network(region, z)[1] for z in zones]

    def _find_group_id(self, region: str, name: str) -> str:
        found = [g for g in self._ess_pages(region, "DescribeScalingGroups", {
            "ScalingGroupName": name}, "ScalingGroups") if g.get("ScalingGroupName") == name]
        return str(found[0]["ScalingGroupId"]) if found else ""

    def _create_scaling_group(self, region: str, request: base.LaunchRequest, name: str,
                              switches: list[str]) -> str:
        spot = request.market == "spot"
        params: dict[str, Any] = {
            "ScalingGroupName": name, "MinSize": 0, "MaxSize": 1, "DesiredCapacity": 1,
            # release, not recycle: a machine taken out is deleted, not kept stopped (a
            # stopped machine's disk still bills)
            "VSwitchIds": switches, "ScalingPolicy": "release",
            "Tags": [{"Key": k, "Value": v, "Propagate": False}
                     for k, v in request.tags().items()],
            "ClientToken": ap.client_token(request.ledger_id, f"{name}-group"),
        }
        if spot:  # ESS's spot policy, never on-demand instead (money)
            params.update(MultiAZPolicy="COST_OPTIMIZED", OnDemandBaseCapacity=0,
                          OnDemandPercentageAboveBaseCapacity=0, SpotInstanceRemedy=True,
                          CompensateWithOnDemand=False)
        else:
            params["MultiAZPolicy"] = "PRIORITY"
        answer = self._ess(region, "CreateScalingGroup", params, resource=name)
        return str(answer.get("ScalingGroupId") or "")

    def _configuration(self, region: str, group_id: str, request: base.LaunchRequest,
                       name: str, security_group: str, role_name: str) -> str:
        """The group's scaling configuration (found again by name on a retry)."""
        found = [c for c in self._ess_pages(region, "DescribeScalingConfigurations", {
            "ScalingGroupId": group_id}, "ScalingConfigurations")
            if c.get("ScalingConfigurationName") == name]
        if found:
            return str(found[0]["ScalingConfigurationId"])
        image = request.image_id or self.find_image(region, request.instance_type)
        params: dict[str, Any] = {
            "ScalingGroupId": group_id, "ScalingConfigurationName": name,
            "ImageId": image,
            "InstanceTypes": [request.instance_type], "SecurityGroupId": security_group,
            "InstanceName": name, "PasswordInherit": False,
            "SystemDisk": {"Category": "cloud_essd", "Size": request.disk_gb},
            "InternetChargeType": "PayByTraffic", "InternetMaxBandwidthOut": 100,
            "Tags": json.dumps(request.tags(), separators=(",", ":")),
            "ClientToken": ap.client_token(request.ledger_id, f"{name}-config"),
        }
        if request.key_name:
            params["KeyPairName"] = request.key_name
        if role_name:
            params["RamRoleName"] = role_name
        user_data = self._with_driver(image, request.user_data)
        if user_data:
            params["UserData"] = base64.b64encode(user_data.encode()).decode()
        if request.market == "spot":
            if request.max_price is not None:
                params["SpotStrategy"] = ap.SPOT_CAPPED
                params["SpotPriceLimits"] = [{"InstanceType": request.instance_type,
                                              "PriceLimit": float(ap.price_text(
                                                  request.max_price))}]
            else:
                params["SpotStrategy"] = ap.SPOT_MARKET
        else:
            params["SpotStrategy"] = ap.SPOT_NONE
        answer = self._ess(region, "CreateScalingConfiguration", params, resource=group_id)
        return str(answer.get("ScalingConfigurationId") or "")

    def _end_task(self, region: str, group_id: str) -> dict[str, Any] | None:
        """gpudesk's size-0 task of the group (named ``…-end``), as ESS describes it."""
        tasks = [t for t in self._ess_pages(region, "DescribeScheduledTasks", {
            "ScalingGroupId": group_id}, "ScheduledTasks")
            if str(t.get("ScheduledTaskName", "")).endswith(END_SUFFIX)
            and t.get("ScalingGroupId") == group_id]
        return tasks[0] if tasks else None

    def _set_end(self, region: str, group_id: str, name: str, end: float) -> float:
        """Create or move the size-0 task to ``end`` (already on its minute); the time read back."""
        task = self._end_task(region, group_id)
        when = launch_time(end)
        sizes = {"MinValue": 0, "MaxValue": 0, "DesiredCapacity": 0}
        if task is None:
            self._ess(region, "CreateScheduledTask", {
                "ScheduledTaskName": _name(name + END_SUFFIX, END_SUFFIX),
                "Description": "gpudesk: the run's budget ends here (size 0)",
                "ScalingGroupId": group_id, "LaunchTime": when,
                "LaunchExpirationTime": LAUNCH_EXPIRATION_S, "TaskEnabled": True, **sizes},
                resource=group_id)
        else:
            self._ess(region, "ModifyScheduledTask", {
                "ScheduledTaskId": str(task["ScheduledTaskId"]), "LaunchTime": when,
                "TaskEnabled": True, **sizes}, resource=group_id)
        read = self._end_task(region, group_id)
        at = ap.parse_time(str((read or {}).get("LaunchTime") or ""))
        if at is None:
            raise base.error_with_detail("other", base.MSG_OTHER,
                                         f"DescribeScheduledTasks shows no end for {group_id}",
                                         provider="Alibaba Cloud Auto Scaling")
        return at

    def schedule_end(self, region: str, group_id: str, at: float) -> float:
        """Move (or set) the group's end to ``at`` rounded down to its minute; what ESS read
        back. A time under a minute ahead is refused before any call: end the group instead."""
        self._check_region(region)
        end = self._checked_end(at, group_id)
        raw = self._group_raw(region, group_id)
        if raw is None:
            raise base.ProviderError("not-found", MSG_GROUP_GONE, name=group_id, region=region)
        return self._set_end(region, group_id, str(raw.get("ScalingGroupName") or group_id), end)

    def _group_raw(self, region: str, group_id: str) -> dict[str, Any] | None:
        found = [g for g in self._ess_pages(region, "DescribeScalingGroups", {
            "ScalingGroupIds": [group_id]}, "ScalingGroups")
            if g.get("ScalingGroupId") == group_id]
        return found[0] if found else None

    def _state(self, region: str, raw: dict[str, Any]) -> GroupState:
        group_id = str(raw.get("ScalingGroupId", ""))
        members = [GroupMember(
            cloud_id=str(m.get("InstanceId", "")), state=str(m.get("LifecycleState", "")),
            zone=str(m.get("ZoneId") or ""),
            launched_at=ap.parse_time(str(m.get("CreatedTime") or m.get("CreationTime") or "")))
            for m in self._ess_pages(region, "DescribeScalingInstances", {
                "ScalingGroupId": group_id}, "ScalingInstances")]
        task = self._end_task(region, group_id)
        tags = {str(t.get("TagKey", t.get("Key", ""))): str(t.get("TagValue", t.get("Value", "")))
                for t in raw.get("Tags") or []}
        return GroupState(
            group_id=group_id, region=region, desired=int(raw.get("DesiredCapacity") or 0),
            members=members,
            end_at=ap.parse_time(str(task.get("LaunchTime") or "")) if task else None,
            end_action_id=str(task.get("ScheduledTaskId") or "") if task else "",
            tags=tags, status=str(raw.get("LifecycleState") or ""))

    def set_user_data(self, region: str, group_id: str, user_data: str) -> str:
        """The group's next members boot from ``user_data``: its active scaling
        configuration changed in place (ModifyScalingConfiguration; machines already made
        keep theirs), then read back. Returns the configuration's id."""
        self._check_region(region)
        if len(user_data.encode()) > USER_DATA_MAX:
            raise base.ProviderError("invalid", MSG_USER_DATA_TOO_BIG,
                                     size=len(user_data.encode()), limit=USER_DATA_MAX,
                                     provider=ESS_LABEL)
        group = self._group_raw(region, group_id)
        if group is None:
            raise base.ProviderError("not-found", MSG_GROUP_GONE, name=group_id, region=region)
        configs = list(self._ess_pages(region, "DescribeScalingConfigurations",
                                       {"ScalingGroupId": group_id}, "ScalingConfigurations"))
        config_id = str(group.get("ActiveScalingConfigurationId") or "")
        if not config_id:  # a group never enabled: its one configuration, by name
            name = str(group.get("ScalingGroupName") or "")
            config_id = next((str(c["ScalingConfigurationId"]) for c in configs
                              if c.get("ScalingConfigurationName") == name), "")
        if not config_id:
            raise base.ProviderError("not-found", MSG_GROUP_GONE, name=group_id, region=region)
        image = next((str(c.get("ImageId") or "") for c in configs
                      if c.get("ScalingConfigurationId") == config_id), "")
        raw = self._with_driver(image, user_data).encode()  # the driver stays with it
        if len(raw) > USER_DATA_MAX:
            raise base.ProviderError("invalid", MSG_USER_DATA_TOO_BIG, size=len(raw),
                                     limit=USER_DATA_MAX, provider=ESS_LABEL)
        encoded = base64.b64encode(raw).decode()
        self._ess(region, "ModifyScalingConfiguration", {
            "ScalingConfigurationId": config_id, "UserData": encoded}, resource=group_id)
        held = next((str(c.get("UserData") or "") for c in self._ess_pages(
            region, "DescribeScalingConfigurations", {
                "ScalingGroupId": group_id, "ScalingConfigurationIds": [config_id]},
            "ScalingConfigurations") if c.get("ScalingConfigurationId") == config_id), None)
        if held != encoded:
            raise base.ProviderError("other", MSG_USER_DATA_NOT_KEPT, provider=ESS_LABEL,
                                     group=group_id)
        return config_id

    def describe_group(self, region: str, group_id: str) -> GroupState | None:
        self._check_region(region)
        raw = self._group_raw(region, group_id)
        return None if raw is None else self._state(region, raw)

    def end_group(self, region: str, group_id: str) -> None:
        """Size 0, ForceDelete (machines released, configuration deleted), then the group's
        scheduled tasks, which ESS keeps after the group. A group already gone is success."""
        self._check_region(region)
        if self._group_raw(region, group_id) is not None:
            try:
                self._ess(region, "ModifyScalingGroup", {
                    "ScalingGroupId": group_id, "MinSize": 0, "MaxSize": 0,
                    "DesiredCapacity": 0}, resource=group_id)
            except base.ProviderError as err:  # a group mid-activity: ForceDelete still ends it
                if err.kind in ("auth", "clock", "network", "permission", "throttled"):
                    raise
            self._ess(region, "DeleteScalingGroup", {
                "ScalingGroupId": group_id, "ForceDelete": True}, resource=group_id,
                ok_codes=frozenset({"InvalidScalingGroupId.NotFound"}))
        for task in list(self._ess_pages(region, "DescribeScheduledTasks", {
                "ScalingGroupId": group_id}, "ScheduledTasks")):
            if task.get("ScalingGroupId") == group_id:
                self._ess(region, "DeleteScheduledTask", {
                    "ScheduledTaskId": str(task["ScheduledTaskId"])}, resource=group_id,
                    ok_codes=frozenset({"InvalidScheduledTaskId.NotFound"}))

    def list_groups(self, region: str) -> list[GroupState]:
        """Every group carrying gpudesk's tag (and name) in ``region``."""
        self._check_region(region)
        prefix = group_name("")
        found = self._ess_pages(region, "DescribeScalingGroups", {
            "Tags": [{"Key": base.TAG_MANAGED, "Value": "1"}]}, "ScalingGroups")
        return [self._state(region, raw) for raw in list(found)
                if str(raw.get("ScalingGroupName", "")).startswith(prefix)
                and any(t.get("TagKey") == base.TAG_MANAGED and t.get("TagValue") == "1"
                        for t in raw.get("Tags") or [])]


def _name(name: str, keep: str = "") -> str:
    """At most 64 characters (ESS's names): a long ledger id is shortened in the middle,
    keeping ``keep`` (the suffix) and a digest so two runs never share a name."""
    if len(name) <= NAME_MAX:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    return name[:NAME_MAX - len(keep) - 11] + "-" + digest + keep

