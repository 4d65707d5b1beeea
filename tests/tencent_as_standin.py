"""A stand-in Tencent Cloud Auto Scaling (AS, 2018-04-19) on the CVM stand-in's server.

``TencentAsStandin`` is :class:`tencent_standin.TencentStandin` with AS mounted beside
CVM/VPC/CAM/STS: the same server, the same TC3 signature check (the SDK's
``CommonClient("as", …)`` signs for service ``as``; for an IP host the server takes the
service that owns the action, as the gateway takes it from ``as.tencentcloudapi.com``),
and the same state. A group's members are real machines in the CVM state (DescribeInstances
lists them, with the group's and the configuration's tags, ``CamRoleName`` set), made
from the launch configuration as AS would make them.

Written from the API reference and the SDK's models (tencentcloud-sdk-python
``tencentcloud/autoscaling/v20180419/models.py`` and ``errorcodes.py``;
https://cloud.tencent.com/document/api/377/20438 DescribeAutoScalingGroups,
/20439 DeleteAutoScalingGroup, /20445 DescribeLaunchConfigurations, /20450
DescribeScheduledActions), holding these documented limits:

* names: Chinese, letters, digits, ``_``, ``-``, ``.``; a group name at most 55 bytes
  (unique in the account: ``GroupNameDuplicated``), a launch configuration or scheduled
  action name at most 60 (an action's unique in its group);
* ``UserData`` base64, at most 16 KB (``UserDataSizeExceeded``; not base64:
  ``UserDataFormatError``), also in ModifyLaunchConfigurationAttributes (/31298: "经过
  Base64 编码后的自定义数据，最大长度不超过16KB"; a change reaches only the members made
  after it, "已经使用该启动配置扩容的存量实例不会发生变更"); SPOTPAID needs
  ``InstanceMarketOptions`` (``MissingParameter.InstanceMarketOptions``); ImageId xor
  ImageFamily, InstanceType xor InstanceTypes (at most 10), InstanceTags at most 10, Tags
  at most 30;
* sizes in [0, 2000] with MaxSize ≥ DesiredCapacity ≥ MinSize (``InvalidParameterValue.Size``);
  a VPC group names its subnets;
* StartTime/EndTime ``YYYY-MM-DDThh:mm:ss+08:00`` (Beijing time: ``TimeFormat``), StartTime
  after now (``StartTimeBeforeCurrentTime``), EndTime and Recurrence together;
* Describe*: Limit at most 100, Ids and Filters not together, at most 10 Filters of at most
  5 values each;
* DeleteAutoScalingGroup refuses while a member is IN_SERVICE (``ResourceInUse.InstanceInGroup``)
  or an activity runs (``ResourceUnavailable.AutoScalingGroupInActivity``); a launch
  configuration a group uses cannot be deleted (``ResourceInUse.LaunchConfigurationIdInUse``).

Activities move on as the test says: a scale-out makes a member CREATING (the group
IN_ACTIVITY) and the next DescribeAutoScalingInstances shows it IN_SERVICE; a scale-in marks
the extra members TERMINATING (their machines too) and the next describe lets them go.
Test hooks: ``reclaim(instance_id)`` ends a member's machine as a spot reclaim does, ``tick()``
lets AS notice (the ended member leaves, a replacement starts while the group wants more),
``run_scheduled(now)`` applies every scheduled action whose StartTime has come on the
test's clock. VPC DescribeVpcs/DescribeSubnets answer the default VPC and a subnet per zone.
"""

from __future__ import annotations

import base64
import binascii
import re
import time
from datetime import datetime
from typing import Any
from typing import ClassVar

from standin_http import ApiError
from tencent_standin import REGIONS
from tencent_standin import TYPES
from tencent_standin import TencentStandin
from tencent_standin import _filters
from tencent_standin import _new_id
from tencent_standin import _now_iso

AS_VERSION = "2018-04-19"
AS_ACTIONS = frozenset({
    "CreateLaunchConfiguration", "DescribeLaunchConfigurations", "DeleteLaunchConfiguration",
    "ModifyLaunchConfigurationAttributes",
    "CreateAutoScalingGroup", "DescribeAutoScalingGroups", "ModifyAutoScalingGroup",
    "DeleteAutoScalingGroup", "DescribeAutoScalingInstances", "CreateScheduledAction",
    "ModifyScheduledAction", "DescribeScheduledActions", "DeleteScheduledAction",
})
VPC_EXTRA = frozenset({"DescribeVpcs", "DescribeSubnets"})
DEFAULT_VPC = "vpc-default0"
GROUP_NAME_MAX, CONFIG_NAME_MAX, ACTION_NAME_MAX = 55, 60, 60
USER_DATA_MAX = 16 * 1024
SIZE_MAX = 2000
PAGE_MAX = 100
_BEIJING = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+08:00$")
_CHARGES = ("POSTPAID_BY_HOUR", "SPOTPAID", "PREPAID", "CDCPAID")


def _name_ok(name: str, limit: int) -> bool:
    return bool(name) and len(name.encode()) <= limit and bool(
        re.match(r"^[A-Za-z0-9_.\-\u4e00-\u9fff]+$", name))


def _check_user_data(value: Any) -> None:
    """UserData: base64 text of at most 16 KB, as CreateLaunchConfiguration and
    ModifyLaunchConfigurationAttributes document it ("" clears it)."""
    text = str(value)
    if len(text) > USER_DATA_MAX:
        raise ApiError("InvalidParameterValue.UserDataSizeExceeded",
                       "UserData is longer than 16 KB.")
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ApiError("InvalidParameterValue.UserDataFormatError",
                       "UserData is not base64.") from None


def _bad_value(param: str) -> ApiError:
    return ApiError("InvalidParameterValue", f"The value of parameter `{param}` is invalid.")


def _when(text: Any, param: str) -> float:
    if not isinstance(text, str) or not _BEIJING.match(text):
        raise ApiError("InvalidParameterValue.TimeFormat",
                       f"{param} must be YYYY-MM-DDThh:mm:ss+08:00 (Beijing time).")
    return datetime.fromisoformat(text).timestamp()


def _tag_items(items: Any, limit: int, param: str) -> list[dict[str, str]]:
    items = list(items or [])
    if len(items) > limit:
        raise ApiError("InvalidParameterValue.LimitExceeded",
                       f"{param} takes at most {limit} tags.")
    return [{"Key": str(t["Key"]), "Value": str(t.get("Value", ""))} for t in items]


class TencentAsStandin(TencentStandin):
    """The CVM stand-in with AS beside it; ``groups``, ``configs``, ``actions`` by id."""

    name = "tencent-as-standin"
    versions: ClassVar[dict[str, str]] = {**TencentStandin.versions, "as": AS_VERSION}

    def _service_of(self, action: str) -> str:
        if action in AS_ACTIONS:
            return "as"
        if action in VPC_EXTRA:
            return "vpc"
        return super()._service_of(action)

    def reset(self) -> None:
        super().reset()
        with self._lock:
            self.configs: dict[str, dict[str, Any]] = {}
            self.groups: dict[str, dict[str, Any]] = {}
            self.actions: dict[str, dict[str, Any]] = {}
            self.activities: list[dict[str, Any]] = []  # what AS tried: start, end, failures

    # ------------------------------------------------------------------ test hooks

    def reclaim(self, instance_id: str) -> None:
        """The spot market takes the machine back: CVM ends it; AS notices on ``tick``."""
        with self._lock:
            instance = self.state.instances[instance_id]
            instance["InstanceState"] = "TERMINATING"
            instance["LatestOperation"] = "TerminateInstances"
            instance["_reclaimed"] = True

    def tick(self) -> list[str]:
        """AS looks at its groups: members whose machine ended leave, activities finish,
        and a group below its desired size starts replacements. The new members' ids."""
        started: list[str] = []
        with self._lock:
            for group in self.groups.values():
                self._settle(group)
                started += self._scale(group)
        return started

    def run_scheduled(self, now: float) -> list[str]:
        """Apply every scheduled action whose StartTime ≤ ``now`` (ONCE: each runs once) and
        let the scale-in it starts finish. The ids of the actions that ran."""
        ran: list[str] = []
        with self._lock:
            for action in self.actions.values():
                if action["_done"] or action["_at"] > now:
                    continue
                group = self.groups.get(action["AutoScalingGroupId"])
                action["_done"] = True
                ran.append(action["ScheduledActionId"])
                if group is None:
                    continue
                for key in ("MaxSize", "MinSize", "DesiredCapacity"):
                    group[key] = action[key]
                self._scale(group)
                self._settle(group)
        return ran

    def members(self, group_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(m) for m in self.groups[group_id]["_members"]]

    # ------------------------------------------------------------------ activities

    def _settle(self, group: dict[str, Any]) -> None:
        """One step of AS's work: CREATING → IN_SERVICE; TERMINATING (or ended) → gone."""
        kept = []
        for member in group["_members"]:
            instance = self.state.instances.get(member["InstanceId"])
            ended = instance is None or instance["InstanceState"] in (
                "TERMINATING", "LAUNCH_FAILED", "SHUTDOWN")
            if member["LifeCycleState"] == "TERMINATING" or ended:
                continue
            if member["LifeCycleState"] == "CREATING":
                member["LifeCycleState"] = "IN_SERVICE"
            kept.append(member)
        group["_members"] = kept
        group["InActivityStatus"] = "NOT_IN_ACTIVITY"

    def _scale(self, group: dict[str, Any]) -> list[str]:
        """Start members up to DesiredCapacity, or mark the oldest extra ones TERMINATING."""
        alive = [m for m in group["_members"] if m["LifeCycleState"] != "TERMINATING"]
        started: list[str] = []
        while len(alive) > group["DesiredCapacity"]:
            member = alive.pop(0)  # OLDEST_INSTANCE
            member["LifeCycleState"] = "TERMINATING"
            instance = self.state.instances.get(member["InstanceId"])
            if instance is not None:
                instance["InstanceState"] = "TERMINATING"
                instance["LatestOperation"] = "TerminateInstances"
            group["InActivityStatus"] = "IN_ACTIVITY"
        while len(alive) < group["DesiredCapacity"]:
            member = self._launch_member(group)
            if member is None:
                break
            alive.append(member)
            started.append(member["InstanceId"])
            group["InActivityStatus"] = "IN_ACTIVITY"
        return started

    def _launch_member(self, group: dict[str, Any]) -> dict[str, Any] | None:
        """A machine from the group's launch configuration in its first subnet's zone that
        CVM would launch; None (a failed activity) when none would."""
        config = self.configs[group["LaunchConfigurationId"]]
        region = group["_region"]
        itype = config["InstanceType"]
        charge = config["InstanceChargeType"]
        for subnet in group["SubnetIdSet"]:
            zone = self._subnet_zone(region, subnet)
            why = ""
            if (zone, itype, charge) in self.sold_out:
                why = f"ResourcesSoldOut.SpecifiedInstanceType: {itype} sold out in {zone}"
            elif charge == "SPOTPAID":
                bid = float(config["InstanceMarketOptions"]["SpotOptions"]["MaxPrice"])
                if bid < self.price(zone, itype, charge):
                    why = "InvalidParameterValue.InsufficientPrice: bid below the spot price"
            if why:
                self.activities.append({"AutoScalingGroupId": group["AutoScalingGroupId"],
                                        "StatusCode": "FAILED", "Cause": why, "Zone": zone})
                continue
            tags = {t["Key"]: t["Value"] for t in [*config["InstanceTags"], *group["Tags"]]}
            params = {"ImageId": config["ImageId"], "SystemDisk": config["SystemDisk"],
                      "InternetAccessible": config["InternetAccessible"],
                      "InstanceName": f"as-{group['AutoScalingGroupName']}",
                      "TagSpecification": [{"ResourceType": "instance", "Tags": [
                          {"Key": k, "Value": v} for k, v in tags.items()]}]}
            instance_id = self._create(region, zone, itype, charge, params,
                                       list(config["SecurityGroupIds"]),
                                       list(config["LoginSettings"].get("KeyIds") or []))
            instance = self.state.instances[instance_id]
            instance["VirtualPrivateCloud"] = {"VpcId": group["VpcId"], "SubnetId": subnet}
            instance["CamRoleName"] = config["CamRoleName"]
            instance["_user_data"] = config["UserData"]
            instance["_group"] = group["AutoScalingGroupId"]
            member = {"InstanceId": instance_id, "AutoScalingGroupId": group["AutoScalingGroupId"],
                      "AutoScalingGroupName": group["AutoScalingGroupName"],
                      "LaunchConfigurationId": config["LaunchConfigurationId"],
                      "LaunchConfigurationName": config["LaunchConfigurationName"],
                      "LifeCycleState": "CREATING", "HealthStatus": "HEALTHY",
                      "ProtectedFromScaleIn": False, "Zone": zone,
                      "CreationType": "AUTO_CREATION", "AddTime": _now_iso(),
                      "InstanceType": itype, "VersionNumber": 1}
            group["_members"].append(member)
            self.activities.append({"AutoScalingGroupId": group["AutoScalingGroupId"],
                                    "StatusCode": "SUCCESSFUL", "InstanceId": instance_id})
            return member
        return None

    # ------------------------------------------------------------------ VPC: the default VPC

    def _subnet_zone(self, region: str, subnet: str) -> str:
        for zone in REGIONS[region][1]:
            if subnet == f"subnet-{zone.rsplit('-', 1)[-1]}{region[3:6]}":
                return zone
        raise ApiError("InvalidParameterValue.InvalidSubnetId",
                       f"The subnet {subnet} does not exist.")

    def _subnets(self, region: str) -> list[dict[str, Any]]:
        return [{"VpcId": DEFAULT_VPC, "SubnetId": f"subnet-{z.rsplit('-', 1)[-1]}{region[3:6]}",
                 "SubnetName": f"default-{z}", "CidrBlock": f"172.16.{i * 16}.0/20",
                 "IsDefault": True, "Zone": z, "AvailableIpAddressCount": 4000}
                for i, z in enumerate(REGIONS[region][1])]

    def _DescribeVpcs(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        f = _filters(params)
        vpcs = [{"VpcId": DEFAULT_VPC, "VpcName": "Default-VPC", "CidrBlock": "172.16.0.0/16",
                 "IsDefault": True, "CreatedTime": "2024-01-01 00:00:00", "TagSet": []}]
        if f.get("is-default") == ["false"]:
            vpcs = []
        return {"TotalCount": len(vpcs), "VpcSet": vpcs}

    def _DescribeSubnets(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        f = _filters(params)
        subnets = [s for s in self._subnets(region)
                   if ("vpc-id" not in f or s["VpcId"] in f["vpc-id"])
                   and ("zone" not in f or s["Zone"] in f["zone"])]
        return {"TotalCount": len(subnets), "SubnetSet": subnets}

    # ------------------------------------------------------------------ AS: common checks

    @staticmethod
    def _describe_args(params: dict[str, Any], ids_key: str) -> dict[str, list[str]]:
        limit = params.get("Limit", 20)
        if not isinstance(limit, int) or not 0 < limit <= PAGE_MAX:
            raise _bad_value("Limit")
        filters = params.get("Filters") or []
        if params.get(ids_key) and filters:
            raise ApiError("InvalidParameterValue.Filter",
                           f"{ids_key} and Filters cannot be given together.")
        if len(filters) > 10:
            raise ApiError("InvalidParameterValue.Filter", "At most 10 Filters.")
        if any(len(f.get("Values") or []) > 5 for f in filters):
            raise ApiError("LimitExceeded.FilterValuesTooLong", "At most 5 values per filter.")
        if len(params.get(ids_key) or []) > PAGE_MAX:
            raise ApiError("InvalidParameterValue.LimitExceeded",
                           f"{ids_key} takes at most {PAGE_MAX} ids.")
        return _filters(params)

    @staticmethod
    def _page(items: list[dict[str, Any]], params: dict[str, Any]) -> list[dict[str, Any]]:
        offset = int(params.get("Offset") or 0)
        return items[offset:offset + int(params.get("Limit", 20))]

    @staticmethod
    def _sizes(params: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, int]:
        sizes = {k: (params[k] if k in params else (old or {}).get(k))
                 for k in ("MaxSize", "MinSize", "DesiredCapacity")}
        if sizes["DesiredCapacity"] is None:
            sizes["DesiredCapacity"] = sizes["MinSize"]  # "默认值等于当前 MinSize"
        for key, value in sizes.items():
            if not isinstance(value, int) or isinstance(value, bool) or \
                    not 0 <= value <= SIZE_MAX:
                raise ApiError("InvalidParameterValue.Size",
                               f"{key} must be an integer in [0, {SIZE_MAX}].")
        if not sizes["MaxSize"] >= sizes["DesiredCapacity"] >= sizes["MinSize"]:
            raise ApiError("InvalidParameterValue.Size",
                           "MaxSize >= DesiredCapacity >= MinSize must hold.")
        return sizes

    def _now(self) -> float:
        return time.time() + self.clock_offset

    @staticmethod
    def _tag_match(tags: list[dict[str, str]], f: dict[str, list[str]]) -> bool:
        keys = {t["Key"]: t["Value"] for t in tags}
        if "tag-key" in f and not any(k in keys for k in f["tag-key"]):
            return False
        if "tag-value" in f and not any(v in keys.values() for v in f["tag-value"]):
            return False
        return all(keys.get(n[4:]) in v for n, v in f.items() if n.startswith("tag:"))

    # ------------------------------------------------------------------ AS: launch configurations

    def _CreateLaunchConfiguration(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        name = str(params.get("LaunchConfigurationName") or "")
        if not _name_ok(name, CONFIG_NAME_MAX):
            raise ApiError("InvalidParameterValue.TooLong" if len(name.encode()) >
                           CONFIG_NAME_MAX else "InvalidParameterValue",
                           "LaunchConfigurationName: at most 60 bytes of Chinese, letters, "
                           "digits, '_', '-' and '.'.")
        if any(c["LaunchConfigurationName"] == name and c["_region"] == region
               for c in self.configs.values()):
            raise ApiError("InvalidParameterValue.LaunchConfigurationNameDuplicated",
                           f"A launch configuration named {name} exists.")
        if bool(params.get("ImageId")) == bool(params.get("ImageFamily")):
            raise ApiError("InvalidParameter.Conflict", "Give exactly one of ImageId and "
                           "ImageFamily.")
        if not any(i["ImageId"] == params.get("ImageId") for i in self.images):
            raise ApiError("InvalidParameterValue.ImageNotFound",
                           f"The image {params.get('ImageId')} does not exist.")
        types = params.get("InstanceTypes") or ([params["InstanceType"]]
                                                if params.get("InstanceType") else [])
        if bool(params.get("InstanceType")) == bool(params.get("InstanceTypes")):
            raise ApiError("InvalidParameter.Conflict", "Give exactly one of InstanceType and "
                           "InstanceTypes.")
        if len(types) > 10:
            raise ApiError("InvalidParameterValue.LimitExceeded", "At most 10 InstanceTypes.")
        for itype in types:
            if itype not in TYPES:
                raise ApiError("InvalidParameterValue.InvalidInstanceType",
                               f"The instance type {itype} is not valid.")
        user_data = params.get("UserData")
        if user_data is not None:
            _check_user_data(user_data)
        charge = params.get("InstanceChargeType", "POSTPAID_BY_HOUR")
        if charge not in _CHARGES:
            raise _bad_value("InstanceChargeType")
        market = params.get("InstanceMarketOptions") or {}
        if charge == "SPOTPAID" and (market.get("MarketType") != "spot"
                                     or "MaxPrice" not in (market.get("SpotOptions") or {})):
            raise ApiError("MissingParameter.InstanceMarketOptions",
                           "SPOTPAID needs InstanceMarketOptions.")
        for group in params.get("SecurityGroupIds") or []:
            if group not in self.state.groups:
                raise ApiError("InvalidSecurityGroupId.NotFound",
                               f"The security group {group} does not exist.")
        login = params.get("LoginSettings") or {}
        for key in login.get("KeyIds") or []:
            if key not in self.state.key_pairs:
                raise ApiError("InvalidKeyPairId.NotFound", f"The key pair {key} does not "
                               "exist.")
        config_id = _new_id("asc-")
        self.configs[config_id] = {
            "LaunchConfigurationId": config_id, "LaunchConfigurationName": name,
            "ProjectId": int(params.get("ProjectId") or 0), "ImageId": params["ImageId"],
            "InstanceType": types[0], "InstanceTypes": list(types),
            "SystemDisk": params.get("SystemDisk") or {"DiskType": "CLOUD_PREMIUM",
                                                       "DiskSize": 50},
            "InternetAccessible": params.get("InternetAccessible") or {},
            "LoginSettings": {"KeyIds": list(login.get("KeyIds") or [])},
            "SecurityGroupIds": list(params.get("SecurityGroupIds") or []),
            "UserData": user_data or "", "InstanceChargeType": charge,
            "InstanceMarketOptions": market or None,
            "CamRoleName": str(params.get("CamRoleName") or ""),
            "InstanceTags": _tag_items(params.get("InstanceTags"), 10, "InstanceTags"),
            "Tags": _tag_items(params.get("Tags"), 30, "Tags"),
            "LaunchConfigurationStatus": "NORMAL", "CreatedTime": _now_iso(),
            "_region": region}
        return {"LaunchConfigurationId": config_id}

    def _DescribeLaunchConfigurations(self, region: str, params: dict[str, Any]
                                      ) -> dict[str, Any]:
        f = self._describe_args(params, "LaunchConfigurationIds")
        ids = params.get("LaunchConfigurationIds") or f.get("launch-configuration-id")
        found = [c for c in self.configs.values() if c["_region"] == region
                 and (not ids or c["LaunchConfigurationId"] in ids)
                 and ("launch-configuration-name" not in f
                      or c["LaunchConfigurationName"] in f["launch-configuration-name"])
                 and self._tag_match(c["Tags"], f)]
        view = [{k: v for k, v in c.items() if not k.startswith("_")} for c in found]
        return {"TotalCount": len(view), "LaunchConfigurationSet": self._page(view, params)}

    def _ModifyLaunchConfigurationAttributes(self, region: str, params: dict[str, Any]
                                             ) -> dict[str, Any]:
        """Some simple attributes changed in place; members already made keep theirs."""
        config_id = str(params.get("LaunchConfigurationId") or "")
        config = self.configs.get(config_id)
        if config is None or config["_region"] != region:
            raise ApiError("ResourceNotFound.LaunchConfigurationIdNotFound",
                           f"The launch configuration {config_id} does not exist.")
        if "UserData" in params:
            _check_user_data(params["UserData"])
            config["UserData"] = str(params["UserData"])
        name = params.get("LaunchConfigurationName")
        if name is not None:
            if not _name_ok(str(name), CONFIG_NAME_MAX):
                raise _bad_value("LaunchConfigurationName")
            config["LaunchConfigurationName"] = str(name)
        config["UpdatedTime"] = _now_iso()
        return {}

    def _DeleteLaunchConfiguration(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        config_id = str(params.get("LaunchConfigurationId") or "")
        config = self.configs.get(config_id)
        if config is None or config["_region"] != region:
            raise ApiError("ResourceNotFound.LaunchConfigurationIdNotFound",
                           f"The launch configuration {config_id} does not exist.")
        if any(g["LaunchConfigurationId"] == config_id for g in self.groups.values()):
            raise ApiError("ResourceInUse.LaunchConfigurationIdInUse",
                           f"The launch configuration {config_id} is used by a group.")
        del self.configs[config_id]
        return {}

    # ------------------------------------------------------------------ AS: groups

    def _group_of(self, region: str, group_id: str) -> dict[str, Any]:
        group = self.groups.get(group_id)
        if group is None or group["_region"] != region:
            raise ApiError("ResourceNotFound.AutoScalingGroupNotFound",
                           f"The auto scaling group {group_id} does not exist.")
        return group

    def _CreateAutoScalingGroup(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        name = str(params.get("AutoScalingGroupName") or "")
        if not _name_ok(name, GROUP_NAME_MAX):
            raise ApiError("InvalidParameterValue.TooLong" if len(name.encode()) >
                           GROUP_NAME_MAX else "InvalidParameterValue",
                           "AutoScalingGroupName: at most 55 bytes of Chinese, letters, "
                           "digits, '_', '-' and '.'.")
        if any(g["AutoScalingGroupName"] == name for g in self.groups.values()):
            raise ApiError("InvalidParameterValue.GroupNameDuplicated",
                           f"A group named {name} exists.")
        config_id = str(params.get("LaunchConfigurationId") or "")
        config = self.configs.get(config_id)
        if config is None or config["_region"] != region:
            raise ApiError("InvalidParameterValue.LaunchConfigurationNotFound",
                           f"The launch configuration {config_id} does not exist.")
        sizes = self._sizes(params)
        vpc = str(params.get("VpcId") or "")
        if vpc != DEFAULT_VPC:
            raise ApiError("InvalidParameterValue.OnlyVpc" if vpc else "MissingParameter",
                           f"The VPC {vpc or '(none)'} does not exist.")
        subnets = [str(s) for s in params.get("SubnetIds") or []]
        if not subnets:
            raise ApiError("MissingParameter", "A VPC group must name its SubnetIds.")
        if len(set(subnets)) != len(subnets):
            raise ApiError("InvalidParameterValue.DuplicatedSubnet", "A subnet is named twice.")
        for subnet in subnets:
            self._subnet_zone(region, subnet)
        enums = {"RetryPolicy": ("IMMEDIATE_RETRY", "INCREMENTAL_INTERVALS", "NO_RETRY"),
                 "HealthCheckType": ("CVM", "CLB"),
                 "MultiZoneSubnetPolicy": ("PRIORITY", "EQUALITY"),
                 "ZonesCheckPolicy": ("ALL", "ANY")}
        for key, allowed in enums.items():
            if key in params and params[key] not in allowed:
                raise _bad_value(key)
        policies = params.get("TerminationPolicies") or ["OLDEST_INSTANCE"]
        if len(policies) > 1 or policies[0] not in ("OLDEST_INSTANCE", "NEWEST_INSTANCE"):
            raise _bad_value("TerminationPolicies")
        group_id = _new_id("asg-")
        group = {
            "AutoScalingGroupId": group_id, "AutoScalingGroupName": name,
            "AutoScalingGroupStatus": "NORMAL", "CreatedTime": _now_iso(),
            "DefaultCooldown": int(params.get("DefaultCooldown", 300)),
            "EnabledStatus": "ENABLED", "LaunchConfigurationId": config_id,
            "LaunchConfigurationName": config["LaunchConfigurationName"],
            "ProjectId": int(params.get("ProjectId") or 0), "SubnetIdSet": subnets,
            "TerminationPolicySet": policies, "VpcId": vpc, "ZoneSet": [],
            "RetryPolicy": params.get("RetryPolicy", "IMMEDIATE_RETRY"),
            "InActivityStatus": "NOT_IN_ACTIVITY",
            "Tags": [dict(t, ResourceType="auto-scaling-group")
                     for t in _tag_items(params.get("Tags"), 30, "Tags")],
            "ServiceSettings": {"ReplaceMonitorUnhealthy": False,
                                "ScalingMode": "CLASSIC_SCALING",
                                "ReplaceLoadBalancerUnhealthy": False, "ReplaceMode": "RECREATE",
                                **(params.get("ServiceSettings") or {})},
            "MultiZoneSubnetPolicy": params.get("MultiZoneSubnetPolicy", "PRIORITY"),
            "HealthCheckType": params.get("HealthCheckType", "CLB"),
            "CapacityRebalance": bool(params.get("CapacityRebalance", False)),
            "InstanceAllocationPolicy": "LAUNCH_CONFIGURATION",
            **sizes, "_region": region, "_members": []}
        self.groups[group_id] = group
        self._scale(group)
        return {"AutoScalingGroupId": group_id}

    def _as_group_view(self, group: dict[str, Any]) -> dict[str, Any]:
        view = {k: v for k, v in group.items() if not k.startswith("_")}
        view["InstanceCount"] = len(group["_members"])
        view["InServiceInstanceCount"] = sum(1 for m in group["_members"]
                                             if m["LifeCycleState"] == "IN_SERVICE")
        return view

    def _DescribeAutoScalingGroups(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        f = self._describe_args(params, "AutoScalingGroupIds")
        ids = params.get("AutoScalingGroupIds") or f.get("auto-scaling-group-id")
        found = [self._as_group_view(g) for g in self.groups.values() if g["_region"] == region
                 and (not ids or g["AutoScalingGroupId"] in ids)
                 and ("auto-scaling-group-name" not in f
                      or g["AutoScalingGroupName"] in f["auto-scaling-group-name"])
                 and ("launch-configuration-id" not in f
                      or g["LaunchConfigurationId"] in f["launch-configuration-id"])
                 and self._tag_match(g["Tags"], f)]
        return {"TotalCount": len(found), "AutoScalingGroupSet": self._page(found, params)}

    def _ModifyAutoScalingGroup(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        group = self._group_of(region, str(params.get("AutoScalingGroupId") or ""))
        sizes = self._sizes(params, group)
        if "AutoScalingGroupName" in params:
            name = str(params["AutoScalingGroupName"])
            if not _name_ok(name, GROUP_NAME_MAX):
                raise _bad_value("AutoScalingGroupName")
            group["AutoScalingGroupName"] = name
        group.update(sizes)
        self._scale(group)
        return {}

    def _DeleteAutoScalingGroup(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        group = self._group_of(region, str(params.get("AutoScalingGroupId") or ""))
        # "删除前提是伸缩组内无运行中（IN_SERVICE）状态的实例且当前未在执行伸缩活动" (377/20439)
        if any(m["LifeCycleState"] == "IN_SERVICE" for m in group["_members"]):
            raise ApiError("ResourceInUse.InstanceInGroup",
                           "The group still has instances in service.")
        if group["InActivityStatus"] == "IN_ACTIVITY":
            raise ApiError("ResourceUnavailable.AutoScalingGroupInActivity",
                           "The group is in a scaling activity.")
        group_id = group["AutoScalingGroupId"]
        del self.groups[group_id]
        for action_id in [a for a, v in self.actions.items()
                          if v["AutoScalingGroupId"] == group_id]:
            del self.actions[action_id]
        return {}

    def _DescribeAutoScalingInstances(self, region: str, params: dict[str, Any]
                                      ) -> dict[str, Any]:
        f = self._describe_args(params, "InstanceIds")
        ids = params.get("InstanceIds") or f.get("instance-id")
        groups = f.get("auto-scaling-group-id")
        found = [dict(m) for g in self.groups.values() if g["_region"] == region
                 and (not groups or g["AutoScalingGroupId"] in groups)
                 for m in g["_members"] if not ids or m["InstanceId"] in ids]
        for group in self.groups.values():  # AS moves on: the next look sees it done
            if group["_region"] == region and (not groups or group["AutoScalingGroupId"]
                                               in groups):
                self._settle(group)
        return {"TotalCount": len(found), "AutoScalingInstanceSet": self._page(found, params)}

    # ------------------------------------------------------------------ AS: scheduled actions

    def _action_fields(self, params: dict[str, Any], old: dict[str, Any] | None
                       ) -> dict[str, Any]:
        name = str(params.get("ScheduledActionName") or (old or {}).get("ScheduledActionName")
                   or "")
        if not _name_ok(name, ACTION_NAME_MAX):
            raise ApiError("InvalidParameterValue.InvalidScheduledActionNameIncludeIllegalChar"
                           if len(name.encode()) <= ACTION_NAME_MAX else
                           "InvalidParameterValue.TooLong",
                           "ScheduledActionName: at most 60 bytes of Chinese, letters, "
                           "digits, '_', '-' and '.'.")
        sizes = self._sizes(params, old)
        start_text = params.get("StartTime", (old or {}).get("StartTime"))
        start = _when(start_text, "StartTime")
        if start <= self._now():
            raise ApiError("InvalidParameterValue.StartTimeBeforeCurrentTime",
                           "StartTime is before the current time.")
        end_text = params.get("EndTime", (old or {}).get("EndTime"))
        recurrence = params.get("Recurrence", (old or {}).get("Recurrence"))
        if bool(end_text) != bool(recurrence):
            raise ApiError("InvalidParameter.Conflict",
                           "EndTime and Recurrence must be given together.")
        if end_text and _when(end_text, "EndTime") <= start:
            raise ApiError("InvalidParameterValue.EndTimeBeforeStartTime",
                           "EndTime is before StartTime.")
        return {"ScheduledActionName": name, "StartTime": start_text, "EndTime": end_text or "",
                "Recurrence": recurrence or "", "ScheduledType": "CRONTAB" if recurrence
                else "ONCE", **sizes, "_at": start, "_done": False}

    def _CreateScheduledAction(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        group = self._group_of(region, str(params.get("AutoScalingGroupId") or ""))
        fields = self._action_fields(params, None)
        if any(a["AutoScalingGroupId"] == group["AutoScalingGroupId"]
               and a["ScheduledActionName"] == fields["ScheduledActionName"]
               for a in self.actions.values()):
            raise ApiError("InvalidParameterValue.ScheduledActionNameDuplicate",
                           f"The group has an action named {fields['ScheduledActionName']}.")
        action_id = _new_id("asst-")
        self.actions[action_id] = {"ScheduledActionId": action_id,
                                   "AutoScalingGroupId": group["AutoScalingGroupId"],
                                   "CreatedTime": _now_iso(),
                                   "DisableUpdateDesiredCapacity": False, **fields}
        return {"ScheduledActionId": action_id}

    def _ModifyScheduledAction(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        action = self.actions.get(str(params.get("ScheduledActionId") or ""))
        if action is None or self.groups.get(action["AutoScalingGroupId"], {}).get(
                "_region") != region:
            raise ApiError("ResourceNotFound.ScheduledActionNotFound",
                           "The scheduled action does not exist.")
        fields = self._action_fields(params, action)
        if any(a is not action and a["AutoScalingGroupId"] == action["AutoScalingGroupId"]
               and a["ScheduledActionName"] == fields["ScheduledActionName"]
               for a in self.actions.values()):
            raise ApiError("InvalidParameterValue.ScheduledActionNameDuplicate",
                           "Another action of the group has that name.")
        action.update(fields)
        return {}

    def _DescribeScheduledActions(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        f = self._describe_args(params, "ScheduledActionIds")
        ids = params.get("ScheduledActionIds") or f.get("scheduled-action-id")
        found = [{k: v for k, v in a.items() if not k.startswith("_")}
                 for a in self.actions.values()
                 if self.groups.get(a["AutoScalingGroupId"], {}).get("_region") == region
                 and (not ids or a["ScheduledActionId"] in ids)
                 and ("auto-scaling-group-id" not in f
                      or a["AutoScalingGroupId"] in f["auto-scaling-group-id"])
                 and ("scheduled-action-name" not in f
                      or a["ScheduledActionName"] in f["scheduled-action-name"])]
        return {"TotalCount": len(found), "ScheduledActionSet": self._page(found, params)}

    def _DeleteScheduledAction(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        action_id = str(params.get("ScheduledActionId") or "")
        if action_id not in self.actions:
            raise ApiError("ResourceNotFound.ScheduledActionNotFound",
                           f"The scheduled action {action_id} does not exist.")
        del self.actions[action_id]
        return {}


def as_client(server: TencentStandin, region: str = "ap-guangzhou", secret_id: str = "",
              secret_key: str = "") -> Any:
    """The SDK's CommonClient for AS pointed at ``server`` (what the provider uses)."""
    from tencent_standin import SECRET_ID
    from tencent_standin import SECRET_KEY
    from tencentcloud.common import credential
    from tencentcloud.common.common_client import CommonClient
    from tencentcloud.common.profile.client_profile import ClientProfile
    from tencentcloud.common.profile.http_profile import HttpProfile

    profile = ClientProfile(httpProfile=HttpProfile(protocol="http", endpoint=server.endpoint,
                                                    reqTimeout=10))
    return CommonClient("as", AS_VERSION, credential.Credential(
        secret_id or SECRET_ID, secret_key or SECRET_KEY), region, profile)
