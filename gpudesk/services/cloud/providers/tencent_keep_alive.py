"""Tencent Cloud keep-alive groups: an Auto Scaling (AS, 2018-04-19) group of one spot machine.

A mixin of :class:`~gpudesk.services.cloud.providers.tencent.TencentProvider`, which
supplies the keys, the endpoint, the retry loop and the CVM/VPC calls. AS is called
through the SDK's ``CommonClient("as", "2018-04-19", …)`` (the split package
``tencentcloud-sdk-python-as`` is not on the registry); it signs TC3 for service ``as``
and honours the same ``HttpProfile`` endpoint override as the CVM client (tests point
both at the stand-in).

What it makes, all named ``gpudesk-run-<ledger id>`` and tagged like a machine:

* a launch configuration (CreateLaunchConfiguration): the request's image, type,
  system disk, security group, key, base64 user data, SPOTPAID with the bid in
  ``InstanceMarketOptions``, the CAM role, ``InstanceTags``;
* a group (CreateAutoScalingGroup) of Max 1 / Min 0 in the default VPC,
  one subnet per zone that sells the type as spot (the chosen zone first: PRIORITY
  order), ``RetryPolicy=INCREMENTAL_INTERVALS`` (IMMEDIATE_RETRY gives up after five
  failures; spot stock often returns later), ``CapacityRebalance`` (AS replaces a spot
  machine as its reclaim notice comes instead of after it is gone),
  ``HealthCheckType=CVM`` (there is no load balancer; the default CLB checks nothing);
* its size-0 scheduled action ``gpudesk-end`` (CreateScheduledAction, ONCE), at the
  request's ``cloud_timer_at``, written in Beijing time as the reference asks
  (``YYYY-MM-DDThh:mm:ss+08:00``) and read back with DescribeScheduledActions;
* only then DesiredCapacity 1 (ModifyAutoScalingGroup): the group is made at 0, so nothing
  bills before its end is in place.

``end_group`` sizes the group to 0, waits for AS to let its members go (DeleteAutoScalingGroup
refuses while a member is IN_SERVICE or an activity runs), then deletes the group and the
launch configuration. Every step reads back; nothing here trusts what it only asked for.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
import time
from collections.abc import Callable
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from datetime import timezone
from typing import TYPE_CHECKING
from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.keep_alive import SCHEDULE_MIN_AHEAD_S
from gpudesk.services.cloud.keep_alive import GroupMember
from gpudesk.services.cloud.keep_alive import GroupState
from gpudesk.services.cloud.keep_alive import group_name
from gpudesk.services.cloud.providers import base
from gpudesk.services.cloud.providers import tencent_parse as tp
from gpudesk.services.cloud.providers import user_data as sent_user_data
from gpudesk.services.cloud.providers.sdk_provider import Refused
from gpudesk.services.cloud.providers.tencent_errors import PROVIDER_LABEL
from gpudesk.services.cloud.providers.tencent_errors import CallContext
from gpudesk.services.cloud.providers.tencent_errors import sdk_answer

AS_SERVICE = "as"
AS_VERSION = "2018-04-19"
AS_PAGE = 100  # Limit: "默认为20，最大值为100" (DescribeAutoScalingGroups & co.)
END_ACTION_NAME = base.RESOURCE_PREFIX + "end"  # the size-0 scheduled action, one per group
# Name limits (tencentcloud/autoscaling/v20180419/models.py): a group name at most 55 bytes,
# a launch configuration or scheduled action name at most 60; Chinese, letters, digits,
# "_", "-" and "." only.
GROUP_NAME_MAX = 55
CONFIG_NAME_MAX = 60
_NAME_OK = re.compile(r"^[A-Za-z0-9_.\-]+$")
USER_DATA_MAX = 16 * 1024  # UserData: "经过 Base64 编码后的自定义数据，最大长度不超过16KB"
BEIJING = timezone(timedelta(hours=8))  # StartTime: "北京时间（UTC+8）… YYYY-MM-DDThh:mm:ss+08:00"
# How long end_group waits for AS to let the members go before DeleteAutoScalingGroup.
END_TRIES = 8
END_BACKOFF_S = 2.0
_GONE = frozenset({"ResourceNotFound.AutoScalingGroupNotFound",
                   "ResourceNotFound.AutoScalingGroupIdNotFound"})
_CONFIG_GONE = frozenset({"ResourceNotFound.LaunchConfigurationIdNotFound",
                          "InvalidParameterValue.LaunchConfigurationNotFound",
                          "InvalidLaunchConfigurationId"})
_STILL_BUSY = frozenset({"ResourceInUse.InstanceInGroup", "ResourceInUse.ActivityInProgress",
                         "ResourceUnavailable.AutoScalingGroupInActivity"})

MSG_BUDGET_SPENT = QT_TRANSLATE_NOOP(
    "ProviderError", "The budget of {name} is already spent: {provider} would end the group "
    "before its first machine started, so none was made.")
MSG_USER_DATA_TOO_LONG = QT_TRANSLATE_NOOP(
    "ProviderError", "The first-boot script is {size} bytes once encoded; {provider} Auto "
    "Scaling takes at most {limit}.")
MSG_USER_DATA_NOT_KEPT = QT_TRANSLATE_NOOP(
    "ProviderError", "{provider} accepted new first-boot data for the group {group} but does "
    "not hold it: its next machine would start without it.")
MSG_NO_SUBNET = QT_TRANSLATE_NOOP(
    "ProviderError", "{provider} has no subnet of the default VPC in {where} for an Auto "
    "Scaling group; make one in the VPC console (or pick another zone) and try again.")


def beijing_time(at: float) -> str:
    """``at`` (unix s) as AS wants StartTime: Beijing time, whole seconds, ``+08:00``."""
    return datetime.fromtimestamp(math.floor(at), BEIJING).strftime("%Y-%m-%dT%H:%M:%S+08:00")


def parse_as_time(text: str | None) -> float | None:
    """AS's ``…+08:00`` (StartTime) or ``…Z`` (CreatedTime, AddTime) → unix s."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def legal_name(name: str, limit: int) -> str:
    """``name`` when AS takes it, else a stable shorter one (same input, same name)."""
    if len(name.encode()) <= limit and _NAME_OK.match(name):
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()
    return f"{base.RESOURCE_PREFIX}run-{digest}"[:limit]


def _tags(tags: dict[str, str], resource_type: str = "") -> list[dict[str, str]]:
    items = tp.tag_list(tags)
    if resource_type:
        items = [dict(t, ResourceType=resource_type) for t in items]
    return items


class TencentKeepAlive:
    """The AS calls behind :class:`~gpudesk.services.cloud.keep_alive.KeepAliveGroups`.

    The attributes and the methods declared below come from the provider (``SdkProvider``
    and ``TencentProvider``), which is first in the method order.
    """

    _credentials: base.Credentials
    _endpoint: str | None
    _protocol: str
    _clients: dict[tuple[str, str], Any]
    _lock: threading.Lock
    _regions: list[str]
    _known_types: set[str]
    _sleep: Callable[[float], None]

    if TYPE_CHECKING:  # supplied by SdkProvider and TencentProvider
        def _retrying(self, ctx: CallContext, attempt: Callable[[], dict[str, Any] | Refused],
                      ok_codes: frozenset[str]) -> dict[str, Any]: ...

        def _check_region(self, region: str) -> None: ...

        def _vpc(self, region: str, action: str, params: dict[str, Any],
                 **ctx: Any) -> dict[str, Any]: ...

        def ensure_security_group(self, region: str, allow_from: str) -> str: ...

        def zone_choices(self, region: str, instance_type: str,
                         market: base.Market = "on-demand") -> list[base.ZoneChoice]: ...

        def first_available_zone(self, region: str, instance_type: str = "",
                                 market: base.Market = "on-demand") -> str: ...

        def find_image(self, region: str, instance_type: str) -> str: ...

        def _on_demand_price(self, region: str, zone: str, instance_type: str) -> float: ...

    # ------------------------------------------------------------------ plumbing

    def _as_client(self, region: str) -> Any:
        from tencentcloud.common import credential
        from tencentcloud.common.common_client import CommonClient
        from tencentcloud.common.profile.client_profile import ClientProfile
        from tencentcloud.common.profile.http_profile import HttpProfile

        with self._lock:
            client = self._clients.get((AS_SERVICE, region))
            if client is None:
                http = HttpProfile(protocol=self._protocol, reqTimeout=30,
                                   endpoint=self._endpoint or "as.tencentcloudapi.com")
                profile = ClientProfile(httpProfile=http, language="en-US",
                                        disable_region_breaker=True)
                cred = credential.Credential(self._credentials.key_id, self._credentials.secret,
                                             self._credentials.session_token or None)
                client = CommonClient(AS_SERVICE, AS_VERSION, cred, region, profile)
                self._clients[(AS_SERVICE, region)] = client  # close() closes it too
            return client

    def _as(self, region: str, action: str, params: dict[str, Any],
            ok_codes: frozenset[str] = frozenset(), **ctx: Any) -> dict[str, Any]:
        """One AS call: signed by the SDK, throttling retried, errors typed (tencent_errors)."""
        client = self._as_client(region)
        context = CallContext(AS_SERVICE, action, region, **ctx)
        return self._retrying(context, lambda: sdk_answer(
            lambda: client.call_json(action, params)), ok_codes)

    def _as_pages(self, region: str, action: str, params: dict[str, Any],
                  items: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        while True:
            answer = self._as(region, action, dict(params, Offset=len(found), Limit=AS_PAGE))
            batch = [i for i in answer.get(items) or [] if isinstance(i, dict)]
            found += batch
            if not batch or len(found) >= int(answer.get("TotalCount") or 0):
                return found

    # ------------------------------------------------------------------ create

    def create_group(self, request: base.LaunchRequest, *, role_name: str = "") -> GroupState:
        """The launch configuration, the group of one spot machine and its size-0 action.

        Refused before any call when the request cannot be right or its budget is spent.
        Idempotent on ``request.ledger_id``: each part is found by name before it is made.
        """
        region = request.region
        name = group_name(request.ledger_id)
        base.validate_request("tencent", request, self._regions, self._known_types)
        now = time.time()
        spent = request.budget is not None and request.budget <= 0
        if spent or (request.cloud_timer_at is not None
                     and request.cloud_timer_at < now + SCHEDULE_MIN_AHEAD_S):
            raise base.ProviderError("invalid", MSG_BUDGET_SPENT, name=name,
                                     provider=PROVIDER_LABEL)
        user_data = sent_user_data.encode_base64("tencent", request.user_data)  # of the gzip
        if len(user_data) > USER_DATA_MAX:
            raise base.ProviderError("invalid", MSG_USER_DATA_TOO_LONG, size=len(user_data),
                                     limit=USER_DATA_MAX, provider=PROVIDER_LABEL)
        group_label = legal_name(name, GROUP_NAME_MAX)
        config_label = legal_name(name, CONFIG_NAME_MAX)

        existing = self._group_by_name(region, group_label)
        if existing is None:
            security_group, zones = self._group_place(request)
            vpc, subnets = self._subnets(region, zones)
            config_id = self._launch_configuration(request, config_label, security_group,
                                                   zones[0], user_data, role_name)
            created = self._as(region, "CreateAutoScalingGroup", {
                "AutoScalingGroupName": group_label, "LaunchConfigurationId": config_id,
                "MaxSize": 1, "MinSize": 0, "DesiredCapacity": 0,  # 1 once the end is set
                "VpcId": vpc, "SubnetIds": subnets, "MultiZoneSubnetPolicy": "PRIORITY",
                "RetryPolicy": "INCREMENTAL_INTERVALS", "HealthCheckType": "CVM",
                "CapacityRebalance": True,
                "ServiceSettings": {"ScalingMode": "CLASSIC_SCALING", "ReplaceMode": "RECREATE"},
                "TerminationPolicies": ["OLDEST_INSTANCE"],
                "Tags": _tags(request.tags(), "auto-scaling-group")},
                resource=group_label, instance_type=request.instance_type)
            group_id = str(created.get("AutoScalingGroupId") or "")
        else:
            group_id = str(existing["AutoScalingGroupId"])
        if request.cloud_timer_at is not None:
            self.schedule_end(region, group_id, request.cloud_timer_at)
        # Only now a machine: nothing bills before the group's end is in place. A retry
        # finishes what a crash left (a group at 0 that was never started).
        raw = self._raw_group(region, group_id) or {}
        if raw.get("MaxSize") == 1 and raw.get("DesiredCapacity") == 0:
            self._as(region, "ModifyAutoScalingGroup", {
                "AutoScalingGroupId": group_id, "DesiredCapacity": 1}, resource=group_id)
        state = self.describe_group(region, group_id)
        if state is None:  # made a moment ago and already gone: say so, do not invent it
            raise base.ProviderError("not-found", base.MSG_NOT_FOUND, provider=PROVIDER_LABEL,
                                     what="Auto Scaling group", name=group_id, region=region)
        return state

    def _group_place(self, request: base.LaunchRequest) -> tuple[str, list[str]]:
        """(security group, zones in priority order): the request's zone, else every zone
        that sells the type as spot now, cheapest first (the capacity refusal when none)."""
        region = request.region
        group = request.security_group
        if not group:
            if not request.allow_from:
                raise base.ProviderError("invalid", base.MSG_NEED_GROUP)
            group = self.ensure_security_group(
                region, request.allow_from)
        if request.zone:
            return group, [request.zone]
        choices = self.zone_choices(
            region, request.instance_type, request.market)
        zones = [c.zone for c in choices if c.sells]
        if not zones:
            zones = [self.first_available_zone(
                region, request.instance_type, request.market)]  # raises, with reasons
        return group, zones

    def _subnets(self, region: str, zones: list[str]) -> tuple[str, list[str]]:
        """The default VPC and one of its subnets per zone, in the zones' order."""
        vpcs = self._vpc(region, "DescribeVpcs", {
            "Filters": [{"Name": "is-default", "Values": ["true"]}],
            "Offset": "0", "Limit": str(AS_PAGE)}).get("VpcSet") or []
        if not vpcs:
            raise base.ProviderError("not-found", MSG_NO_SUBNET, provider=PROVIDER_LABEL,
                                     where=region)
        vpc = str(vpcs[0]["VpcId"])
        subnets = self._vpc(region, "DescribeSubnets", {
            "Filters": [{"Name": "vpc-id", "Values": [vpc]}],
            "Offset": "0", "Limit": str(AS_PAGE)}).get("SubnetSet") or []
        by_zone: dict[str, str] = {}
        for subnet in subnets:
            by_zone.setdefault(str(subnet.get("Zone", "")), str(subnet.get("SubnetId", "")))
        picked = [by_zone[z] for z in zones if by_zone.get(z)]
        if not picked:
            raise base.ProviderError("not-found", MSG_NO_SUBNET, provider=PROVIDER_LABEL,
                                     where=", ".join(zones))
        return vpc, picked

    def _launch_configuration(self, request: base.LaunchRequest, label: str,
                              security_group: str, zone: str, user_data: str,
                              role_name: str) -> str:
        """The configuration's id: found by name (a retry), else made."""
        region = request.region
        found = self._as(region, "DescribeLaunchConfigurations", {
            "Filters": [{"Name": "launch-configuration-name", "Values": [label]}],
            "Limit": AS_PAGE}).get("LaunchConfigurationSet") or []
        for config in found:
            if config.get("LaunchConfigurationName") == label:
                return str(config["LaunchConfigurationId"])
        params: dict[str, Any] = {
            "LaunchConfigurationName": label,
            "ImageId": request.image_id or self.find_image(
                region, request.instance_type),
            "InstanceType": request.instance_type,
            "SystemDisk": {"DiskType": "CLOUD_PREMIUM", "DiskSize": request.disk_gb},
            "InternetAccessible": {"PublicIpAssigned": True,
                                   "InternetChargeType": "TRAFFIC_POSTPAID_BY_HOUR",
                                   "InternetMaxBandwidthOut": 100},
            "SecurityGroupIds": [security_group],
            "InstanceChargeType": tp.CHARGE_ON_DEMAND,
            "InstanceTags": tp.tag_list(request.tags()),
            "Tags": _tags(request.tags(), "launch-configuration"),
        }
        if request.key_name:
            params["LoginSettings"] = {"KeyIds": [request.key_name]}
        if request.user_data:
            params["UserData"] = user_data
        if role_name:
            params["CamRoleName"] = role_name
        if request.market == "spot":
            bid = request.max_price
            if bid is None:  # Tencent never charges spot above the on-demand price
                bid = self._on_demand_price(
                    region, zone, request.instance_type)
            params["InstanceChargeType"] = tp.CHARGE_SPOT
            params["InstanceMarketOptions"] = {
                "MarketType": "spot",
                "SpotOptions": {"MaxPrice": f"{bid:.4f}".rstrip("0").rstrip("."),
                                "SpotInstanceType": "one-time"}}
        made = self._as(region, "CreateLaunchConfiguration", params, resource=label,
                        instance_type=request.instance_type, max_price=request.max_price)
        return str(made.get("LaunchConfigurationId") or "")

    # ------------------------------------------------------------------ new user data

    def set_user_data(self, region: str, group_id: str, user_data: str) -> str:
        """The group's next members boot from ``user_data``: the group's launch
        configuration changed in place (ModifyLaunchConfigurationAttributes: "existing
        instances are not changed; new ones are made from the modified configuration"),
        then read back. Returns the configuration's id."""
        self._check_region(region)
        encoded = sent_user_data.encode_base64("tencent", user_data)  # of the gzip
        if len(encoded) > USER_DATA_MAX:
            raise base.ProviderError("invalid", MSG_USER_DATA_TOO_LONG, size=len(encoded),
                                     limit=USER_DATA_MAX, provider=PROVIDER_LABEL)
        raw = self._raw_group(region, group_id)
        config_id = str((raw or {}).get("LaunchConfigurationId") or "")
        if not config_id:
            raise base.ProviderError("not-found", base.MSG_NOT_FOUND, provider=PROVIDER_LABEL,
                                     what="Auto Scaling group", name=group_id, region=region)
        self._as(region, "ModifyLaunchConfigurationAttributes", {
            "LaunchConfigurationId": config_id, "UserData": encoded}, resource=config_id)
        found = self._as(region, "DescribeLaunchConfigurations", {
            "LaunchConfigurationIds": [config_id], "Limit": AS_PAGE},
            resource=config_id).get("LaunchConfigurationSet") or []
        held = next((str(c.get("UserData") or "") for c in found
                     if c.get("LaunchConfigurationId") == config_id), None)
        if held != encoded:
            raise base.ProviderError("other", MSG_USER_DATA_NOT_KEPT, provider=PROVIDER_LABEL,
                                     group=group_id)
        return config_id

    # ------------------------------------------------------------------ schedule

    def _end_action(self, region: str, group_id: str) -> dict[str, Any] | None:
        found = self._as(region, "DescribeScheduledActions", {
            "Filters": [{"Name": "auto-scaling-group-id", "Values": [group_id]},
                        {"Name": "scheduled-action-name", "Values": [END_ACTION_NAME]}],
            "Limit": AS_PAGE}).get("ScheduledActionSet") or []
        return next((a for a in found if a.get("ScheduledActionName") == END_ACTION_NAME
                     and a.get("AutoScalingGroupId") == group_id), None)

    def schedule_end(self, region: str, group_id: str, at: float) -> float:
        """Create or move the group's size-0 action to ``at``; the time AS reads back.

        A time less than a minute ahead is refused before any call: AS refuses a past
        StartTime, and such a budget is spent (the caller ends the group instead).
        """
        self._check_region(region)
        if at < time.time() + SCHEDULE_MIN_AHEAD_S:
            raise base.ProviderError("invalid", MSG_BUDGET_SPENT, name=group_id,
                                     provider=PROVIDER_LABEL)
        when = beijing_time(at)
        action = self._end_action(region, group_id)
        if action is None:
            self._as(region, "CreateScheduledAction", {
                "AutoScalingGroupId": group_id, "ScheduledActionName": END_ACTION_NAME,
                "MaxSize": 0, "MinSize": 0, "DesiredCapacity": 0, "StartTime": when},
                resource=group_id)
        else:
            self._as(region, "ModifyScheduledAction", {
                "ScheduledActionId": str(action["ScheduledActionId"]), "MaxSize": 0,
                "MinSize": 0, "DesiredCapacity": 0, "StartTime": when}, resource=group_id)
        read = self._end_action(region, group_id)
        back = parse_as_time(str((read or {}).get("StartTime") or ""))
        if back is None:
            raise base.error_with_detail("other", base.MSG_OTHER,
                                         f"DescribeScheduledActions: no {END_ACTION_NAME} "
                                         f"on {group_id} after it was written",
                                         provider=PROVIDER_LABEL)
        return back

    # ------------------------------------------------------------------ read

    def _group_by_name(self, region: str, label: str) -> dict[str, Any] | None:
        self._check_region(region)
        found = self._as(region, "DescribeAutoScalingGroups", {
            "Filters": [{"Name": "auto-scaling-group-name", "Values": [label]}],
            "Limit": AS_PAGE}).get("AutoScalingGroupSet") or []
        return next((g for g in found if g.get("AutoScalingGroupName") == label), None)

    def _raw_group(self, region: str, group_id: str) -> dict[str, Any] | None:
        found = self._as(region, "DescribeAutoScalingGroups", {
            "AutoScalingGroupIds": [group_id], "Limit": AS_PAGE},
            resource=group_id).get("AutoScalingGroupSet") or []
        return next((g for g in found if g.get("AutoScalingGroupId") == group_id), None)

    def _members(self, region: str, group_id: str) -> list[GroupMember]:
        raw = self._as_pages(region, "DescribeAutoScalingInstances", {
            "Filters": [{"Name": "auto-scaling-group-id", "Values": [group_id]}]},
            "AutoScalingInstanceSet")
        return [GroupMember(cloud_id=str(m.get("InstanceId", "")),
                            state=str(m.get("LifeCycleState", "")),
                            zone=str(m.get("Zone", "")),
                            launched_at=parse_as_time(m.get("AddTime")))
                for m in raw if m.get("AutoScalingGroupId", group_id) == group_id]

    def _state(self, region: str, raw: dict[str, Any]) -> GroupState:
        group_id = str(raw.get("AutoScalingGroupId", ""))
        action = self._end_action(region, group_id)
        status = str(raw.get("AutoScalingGroupStatus") or "")
        if raw.get("InActivityStatus") == "IN_ACTIVITY":
            status = f"{status} IN_ACTIVITY".strip()
        return GroupState(
            group_id=group_id, region=region, desired=int(raw.get("DesiredCapacity") or 0),
            members=self._members(region, group_id),
            end_at=parse_as_time(str(action.get("StartTime") or "")) if action else None,
            end_action_id=str(action.get("ScheduledActionId") or "") if action else "",
            tags=tp.tags_of(raw.get("Tags")), status=status)

    def describe_group(self, region: str, group_id: str) -> GroupState | None:
        """The group as AS answers now; None when AS no longer has it."""
        self._check_region(region)
        raw = self._raw_group(region, group_id)
        return None if raw is None else self._state(region, raw)

    def list_groups(self, region: str) -> list[GroupState]:
        """Every gpudesk group in ``region`` (tag ``gpudesk``), for reconciliation."""
        self._check_region(region)
        raw = self._as_pages(region, "DescribeAutoScalingGroups", {
            "Filters": [{"Name": "tag-key", "Values": [base.TAG_MANAGED]}]},
            "AutoScalingGroupSet")
        return [self._state(region, g) for g in raw]

    # ------------------------------------------------------------------ end

    def end_group(self, region: str, group_id: str) -> None:
        """Size 0, wait for AS to let the members go, delete the group, then its launch
        configuration. A group (or configuration) already gone is success."""
        self._check_region(region)
        raw = self._raw_group(region, group_id)
        if raw is None:
            return
        config_id = str(raw.get("LaunchConfigurationId") or "")
        if (raw.get("MaxSize"), raw.get("MinSize"), raw.get("DesiredCapacity")) != (0, 0, 0):
            answer = self._as(region, "ModifyAutoScalingGroup", {
                "AutoScalingGroupId": group_id, "MaxSize": 0, "MinSize": 0,
                "DesiredCapacity": 0}, ok_codes=_GONE, resource=group_id)
            if answer.get("Code") in _GONE:
                return
        for tried in range(END_TRIES):
            answer = self._as(region, "DeleteAutoScalingGroup", {"AutoScalingGroupId": group_id},
                              ok_codes=_GONE | _STILL_BUSY, resource=group_id)
            code = answer.get("Code")
            if code not in _STILL_BUSY:
                break
            if tried + 1 == END_TRIES:  # still busy: say it in AS's words; size is 0 already
                raise base.error_with_detail("other", base.MSG_OTHER,
                                             f"[{code}] {group_id} still has members leaving",
                                             provider=PROVIDER_LABEL)
            self._sleep(END_BACKOFF_S * 2 ** tried)
            self._members(region, group_id)  # a fresh look (AS moves on meanwhile)
        if config_id:
            self._as(region, "DeleteLaunchConfiguration", {"LaunchConfigurationId": config_id},
                     ok_codes=_CONFIG_GONE, resource=config_id)
