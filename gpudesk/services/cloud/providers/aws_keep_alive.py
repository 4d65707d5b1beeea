"""Keep-alive groups on AWS: an EC2 launch template and an Auto Scaling group of one.

A mixin of :class:`~gpudesk.services.cloud.providers.aws.AwsProvider`, which supplies
the calls (``_call``/``_pages``, the image and security-group helpers). Why an Auto
Scaling group rather than an EC2 Fleet of type ``maintain``: docs/recovery.md ("AWS").

What ``create_group`` makes, all named ``gpudesk-run-<ledger id>`` and tagged:

* a launch template carrying the machine as ``run_instance`` would ask for it (image,
  key, security group, disk, IMDSv2 with hop limit 1, spot market options with the
  maximum price, gpudesk's first-boot script, the instance profile when a role is
  given, instance and volume tags);
* an Auto Scaling group (min 0, max 1, capacity rebalancing) over the default subnets
  of the request's zone (or of every zone), first at size 0;
* its size-0 scheduled action at ``request.cloud_timer_at``, read back;
* and only then size 1: nothing bills until the cloud-side end is in place.

A retried create finds what the first one made (template and group by name) and
finishes it, so a crash between two calls never leaves a group without its end.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from datetime import UTC
from datetime import datetime
from typing import TYPE_CHECKING
from typing import Any
from typing import TypeVar

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.keep_alive import GROUP_PREFIX
from gpudesk.services.cloud.keep_alive import SCHEDULE_MIN_AHEAD_S
from gpudesk.services.cloud.keep_alive import GroupMember
from gpudesk.services.cloud.keep_alive import GroupState
from gpudesk.services.cloud.keep_alive import group_name
from gpudesk.services.cloud.providers import base
from gpudesk.services.cloud.providers import user_data as sent_user_data
from gpudesk.services.cloud.providers.aws_errors import CallContext
from gpudesk.services.cloud.providers.aws_machine import machine_params
from gpudesk.services.cloud.providers.aws_machine import tag_list

_T = TypeVar("_T")

END_ACTION_SUFFIX = "-end"  # the scheduled action: <group name>-end (unique in the region)
GROUP_MAX_SIZE = 1
# The group's own lifecycle words while it goes away (DescribeAutoScalingGroups Status).
DELETING = "Delete in progress"

MSG_BUDGET_SPENT = QT_TRANSLATE_NOOP(
    "ProviderError", "The budget of this run is already spent: its end ({at}) is not at least "
    "a minute ahead. Nothing was created on {provider}.")
MSG_END_TOO_SOON = QT_TRANSLATE_NOOP(
    "ProviderError", "The group {group} cannot be set to end at {at}: that is not at least a "
    "minute ahead. End the group now instead.")
MSG_USER_DATA_TOO_BIG = QT_TRANSLATE_NOOP(
    "ProviderError", "The first-boot script is {size} bytes; {provider} takes at most {limit} "
    "for a launch template.")
MSG_USER_DATA_NOT_KEPT = QT_TRANSLATE_NOOP(
    "ProviderError", "{provider} accepted new first-boot data for the group {group} but does "
    "not hold it: its next machine would start without it.")
MSG_GROUP_UNREAD = QT_TRANSLATE_NOOP(
    "ProviderError", "{provider} accepted the group {group} but does not list it; "
    "look for it in the console before launching again.")

# RequestLaunchTemplateData UserData: "limited to 16 KB" of raw data before base64 (EC2 API
# Reference, RequestLaunchTemplateData; the same limit as RunInstances).
USER_DATA_MAX = 16 * 1024

# Refusals that mean "that is already gone": success for an end, nothing to read.
_GONE_WORDS = ("not found", "notfound", "does not exist")


def _utc(at: float) -> datetime:
    """Whole seconds, UTC: the scheduled action's StartTime (YYYY-MM-DDThh:mm:ssZ)."""
    return datetime.fromtimestamp(int(at), UTC)


def _seconds(value: object) -> float | None:
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _is_gone(err: base.ProviderError) -> bool:
    lowered = err.detail.lower()
    return err.kind == "not-found" or any(word in lowered for word in _GONE_WORDS)


def request_shaped(shape: Any, value: Any) -> Any:
    """``value`` (a DescribeLaunchTemplateVersions answer) held to the request ``shape``
    (botocore's RequestLaunchTemplateData): the answer's read-only fields (``State``,
    ``Arn``-only profiles and the like) are dropped, so it can be sent back as a new version."""
    kind = getattr(shape, "type_name", "")
    if kind == "structure" and isinstance(value, dict):
        return {k: request_shaped(shape.members[k], v) for k, v in value.items()
                if k in shape.members}
    if kind == "list" and isinstance(value, list):
        return [request_shaped(shape.member, v) for v in value]
    return value


class AwsKeepAlive:
    """:class:`~gpudesk.services.cloud.keep_alive.KeepAliveGroups` for AWS. Blocking."""

    if TYPE_CHECKING:  # supplied by AwsProvider and MachineGroups
        _regions: list[str]
        known_types: set[str]

        def _call(self, ctx: CallContext, fn: Callable[[Any], _T]) -> _T: ...

        def _pages(self, ctx: CallContext, key: str, **params: Any) -> list[Any]: ...

        def _default_vpc(self, region: str) -> str: ...

        def _launch_image(self, request: base.LaunchRequest) -> tuple[str, str]: ...

        def ensure_machine_group(self, region: str, ledger_id: str, allow_from: str) -> str: ...

        def describe(self, region: str, cloud_ids: list[str]) -> list[base.CloudInstance]: ...

    # ------------------------------------------------------------------ contexts

    def _asg(self, action: str, region: str, **ctx: Any) -> CallContext:
        return CallContext("autoscaling", action, region, **ctx)

    def _lt(self, action: str, region: str, **ctx: Any) -> CallContext:
        return CallContext("ec2", action, region, **ctx)

    # ------------------------------------------------------------------ create

    def create_group(self, request: base.LaunchRequest, *, role_name: str = "") -> GroupState:
        base.validate_request("aws", request, self._regions, self.known_types)
        now = time.time()
        at = request.cloud_timer_at
        if at is not None and at < now + SCHEDULE_MIN_AHEAD_S:
            raise base.ProviderError("invalid", MSG_BUDGET_SPENT, at=_utc(at).isoformat(),
                                     provider="AWS")
        region, name = request.region, group_name(request.ledger_id)
        if self._raw_group(region, name) is None:
            template = self._ensure_template(request, name, role_name)
            self._create_asg(request, name, template)
        if at is not None:
            self.schedule_end(region, name, at)
        self._call(self._asg("UpdateAutoScalingGroup", region, resource=name,
                             instance_type=request.instance_type, market=request.market),
                   lambda c: c.update_auto_scaling_group(
                       AutoScalingGroupName=name, MinSize=0, MaxSize=GROUP_MAX_SIZE,
                       DesiredCapacity=1))
        state = self.describe_group(region, name)
        if state is None:
            raise base.ProviderError("other", MSG_GROUP_UNREAD, provider="AWS", group=name)
        return state

    def _ensure_template(self, request: base.LaunchRequest, name: str, role_name: str) -> str:
        """The launch template ``name`` (found, or made from the request); its id."""
        region = request.region
        found = self._template_id(region, name)
        if found:
            return found
        data = self._template_data(request, role_name)
        tags = tag_list(request.tags())
        ctx = self._lt("CreateLaunchTemplate", region, resource=name,
                       instance_type=request.instance_type, market=request.market,
                       max_price=request.max_price,
                       names=(("image", str(data["ImageId"])),
                              ("key pair", request.key_name)))
        try:
            made = self._call(ctx, lambda c: c.create_launch_template(
                LaunchTemplateName=name, LaunchTemplateData=data,
                ClientToken=(request.client_token or name)[:128],
                VersionDescription=f"gpudesk run {request.ledger_id}",
                TagSpecifications=[{"ResourceType": "launch-template", "Tags": tags}]))
        except base.ProviderError as err:
            if "AlreadyExists" not in err.detail:
                raise
            found = self._template_id(region, name)  # another create won the race
            if not found:
                raise
            return found
        return str(made["LaunchTemplate"]["LaunchTemplateId"])

    def _template_id(self, region: str, name: str) -> str:
        ctx = self._lt("DescribeLaunchTemplates", region, resource=name)
        try:
            found = self._call(ctx, lambda c: c.describe_launch_templates(
                LaunchTemplateNames=[name])).get("LaunchTemplates", [])
        except base.ProviderError as err:
            if _is_gone(err):  # EC2 answers an unknown name with a NotFound error
                return ""
            raise
        return str(found[0]["LaunchTemplateId"]) if found else ""

    def _template_data(self, request: base.LaunchRequest, role_name: str) -> dict[str, Any]:
        """What each machine of the group is made from: run_instance's request, as a template."""
        region = request.region
        group = request.security_group
        if not group:
            if not request.allow_from:
                raise base.ProviderError("invalid", base.MSG_NEED_GROUP)
            group = self.ensure_machine_group(region, request.ledger_id, request.allow_from)
        image, device = self._launch_image(request)
        data = machine_params(request, image, device, group)
        # A machine of a group never stops: an OS shutdown ends it, and the group,
        # unless set to 0 first, starts the next one.
        data["InstanceInitiatedShutdownBehavior"] = "terminate"
        if role_name:
            data["IamInstanceProfile"] = {"Name": role_name}
        if request.user_data:  # a template's UserData is sent base64 (boto3 does not encode
            # it), of the gzip EC2 counts (providers/user_data.py)
            data["UserData"] = sent_user_data.encode_base64("aws", request.user_data)
        return data

    def _subnets(self, region: str, zone: str) -> list[str]:
        """The default VPC's subnets: of ``zone``, or the default one of every zone."""
        vpc = self._default_vpc(region)
        filters = [{"Name": "vpc-id", "Values": [vpc]}]
        filters.append({"Name": "availability-zone", "Values": [zone]} if zone
                       else {"Name": "default-for-az", "Values": ["true"]})
        found = self._pages(self._lt("DescribeSubnets", region, zone=zone, resource=zone),
                            "Subnets", Filters=filters)
        ids = sorted(str(s["SubnetId"]) for s in found)
        if not ids:
            raise base.ProviderError("not-found", base.MSG_NOT_FOUND, provider="AWS",
                                     what="subnet", name=zone or "(default)", region=region)
        return ids

    def _create_asg(self, request: base.LaunchRequest, name: str, template: str) -> None:
        """The group at size 0 (create_group raises it to 1 once its end is in place)."""
        region = request.region
        subnets = self._subnets(region, request.zone)
        tags = [{"Key": k, "Value": v, "PropagateAtLaunch": True,
                 "ResourceId": name, "ResourceType": "auto-scaling-group"}
                for k, v in request.tags().items()]
        ctx = self._asg("CreateAutoScalingGroup", region, resource=name, zone=request.zone,
                        instance_type=request.instance_type, market=request.market,
                        max_price=request.max_price)
        try:
            self._call(ctx, lambda c: c.create_auto_scaling_group(
                AutoScalingGroupName=name,
                LaunchTemplate={"LaunchTemplateId": template, "Version": "$Latest"},
                MinSize=0, MaxSize=GROUP_MAX_SIZE, DesiredCapacity=0,
                CapacityRebalance=True, VPCZoneIdentifier=",".join(subnets),
                Tags=tags))
        except base.ProviderError as err:
            if "AlreadyExists" not in err.detail:  # a retry after a lost answer
                raise

    # ------------------------------------------------------------------ new user data

    def set_user_data(self, region: str, group_id: str, user_data: str) -> str:
        """The group's next members boot from ``user_data``: a new launch template version
        (the latest one with only UserData changed), made the template's default, and the
        group held to ``$Latest`` (an ASG pinned to a number would keep the old data). Read
        back from the version the group launches from; returns its number."""
        raw = sent_user_data.encode("aws", user_data)  # gzip: what EC2 counts
        if len(raw) > USER_DATA_MAX:
            raise base.ProviderError("invalid", MSG_USER_DATA_TOO_BIG, size=len(raw),
                                     limit=USER_DATA_MAX, provider="AWS")
        group = self._raw_group(region, group_id)
        if group is None:
            raise base.ProviderError("not-found", base.MSG_NOT_FOUND, provider="AWS",
                                     what="Auto Scaling group", name=group_id, region=region)
        spec = dict(group.get("LaunchTemplate") or {})
        template = str(spec.get("LaunchTemplateId") or "") or self._template_id(region, group_id)
        if not template:
            raise base.ProviderError("not-found", base.MSG_NOT_FOUND, provider="AWS",
                                     what="launch template", name=group_id, region=region)
        ctx = self._lt("CreateLaunchTemplateVersion", region, resource=group_id)

        def new_version(client: Any) -> int:
            latest = client.describe_launch_template_versions(
                LaunchTemplateId=template, Versions=["$Latest"])["LaunchTemplateVersions"][0]
            shape = client.meta.service_model.shape_for("RequestLaunchTemplateData")
            data = request_shaped(shape, dict(latest.get("LaunchTemplateData") or {}))
            data["UserData"] = base64.b64encode(raw).decode()
            made = client.create_launch_template_version(
                LaunchTemplateId=template, SourceVersion=str(latest["VersionNumber"]),
                LaunchTemplateData=data, VersionDescription=f"gpudesk {group_id}: run")
            return int(made["LaunchTemplateVersion"]["VersionNumber"])

        number = self._call(ctx, new_version)
        self._call(self._lt("ModifyLaunchTemplate", region, resource=group_id),
                   lambda c: c.modify_launch_template(LaunchTemplateId=template,
                                                      DefaultVersion=str(number)))
        if str(spec.get("Version") or "$Default") not in ("$Latest", "$Default"):
            self._call(self._asg("UpdateAutoScalingGroup", region, resource=group_id),
                       lambda c: c.update_auto_scaling_group(
                           AutoScalingGroupName=group_id,
                           LaunchTemplate={"LaunchTemplateId": template, "Version": "$Latest"}))
        # Read back what the group launches from now.
        after = dict((self._raw_group(region, group_id) or {}).get("LaunchTemplate") or {})
        used = str(after.get("Version") or "$Default")
        held = self._call(self._lt("DescribeLaunchTemplateVersions", region, resource=group_id),
                          lambda c: c.describe_launch_template_versions(
                              LaunchTemplateId=template, Versions=[used]))
        versions = held.get("LaunchTemplateVersions") or [{}]
        kept = str((versions[0].get("LaunchTemplateData") or {}).get("UserData") or "")
        if int(versions[0].get("VersionNumber") or 0) != number or \
                base64.b64decode(kept or b"") != raw:
            raise base.ProviderError("other", MSG_USER_DATA_NOT_KEPT, provider="AWS",
                                     group=group_id)
        return str(number)

    # ------------------------------------------------------------------ the end

    def schedule_end(self, region: str, group_id: str, at: float) -> float:
        if at < time.time() + SCHEDULE_MIN_AHEAD_S:
            raise base.ProviderError("invalid", MSG_END_TOO_SOON, group=group_id,
                                     at=_utc(at).isoformat())
        action = group_id + END_ACTION_SUFFIX
        self._call(self._asg("PutScheduledUpdateGroupAction", region, resource=group_id),
                   lambda c: c.put_scheduled_update_group_action(
                       AutoScalingGroupName=group_id, ScheduledActionName=action,
                       StartTime=_utc(at), MinSize=0, MaxSize=0, DesiredCapacity=0))
        end_at, _ = self._end_action(region, group_id)
        if end_at is None:
            raise base.ProviderError("other", MSG_GROUP_UNREAD, provider="AWS",
                                     group=action)
        return end_at

    def _end_action(self, region: str, group_id: str) -> tuple[float | None, str]:
        """The group's size-0 action as the cloud holds it: (when, its ARN or name)."""
        for item in self._scheduled(region, group_id):
            if item.get("ScheduledActionName") == group_id + END_ACTION_SUFFIX:
                return _seconds(item.get("StartTime") or item.get("Time")), str(
                    item.get("ScheduledActionARN") or item["ScheduledActionName"])
        return None, ""

    def _scheduled(self, region: str, group_id: str = "") -> list[dict[str, Any]]:
        params: dict[str, Any] = {"AutoScalingGroupName": group_id} if group_id else {}
        ctx = self._asg("DescribeScheduledActions", region, resource=group_id)
        try:
            return [dict(a) for a in self._pages(ctx, "ScheduledUpdateGroupActions", **params)]
        except base.ProviderError as err:
            if group_id and _is_gone(err):
                return []
            raise

    def end_group(self, region: str, group_id: str) -> None:
        """Size 0, then delete the group (ForceDelete ends its machines) and its template.
        Each step finding its thing already gone is success."""
        self._tolerate_gone(self._asg("UpdateAutoScalingGroup", region, resource=group_id),
                            lambda c: c.update_auto_scaling_group(
                                AutoScalingGroupName=group_id, MinSize=0, MaxSize=0,
                                DesiredCapacity=0))
        self._tolerate_gone(self._asg("DeleteScheduledAction", region, resource=group_id),
                            lambda c: c.delete_scheduled_action(
                                AutoScalingGroupName=group_id,
                                ScheduledActionName=group_id + END_ACTION_SUFFIX))
        self._tolerate_gone(self._asg("DeleteAutoScalingGroup", region, resource=group_id),
                            lambda c: c.delete_auto_scaling_group(
                                AutoScalingGroupName=group_id, ForceDelete=True))
        # Looked up first: a template already gone is answered NotFound by EC2 but
        # MissingParameter by moto; by id, the delete names what it found.
        template = self._template_id(region, group_id)
        if template:
            self._tolerate_gone(self._lt("DeleteLaunchTemplate", region, resource=group_id),
                                lambda c: c.delete_launch_template(LaunchTemplateId=template))

    def _tolerate_gone(self, ctx: CallContext, fn: Callable[[Any], object]) -> None:
        try:
            self._call(ctx, fn)
        except base.ProviderError as err:
            if not _is_gone(err):
                raise

    # ------------------------------------------------------------------ reading

    def _raw_group(self, region: str, group_id: str) -> dict[str, Any] | None:
        ctx = self._asg("DescribeAutoScalingGroups", region, resource=group_id)
        found = self._call(ctx, lambda c: c.describe_auto_scaling_groups(
            AutoScalingGroupNames=[group_id])).get("AutoScalingGroups", [])
        return dict(found[0]) if found else None

    def describe_group(self, region: str, group_id: str) -> GroupState | None:
        raw = self._raw_group(region, group_id)
        if raw is None:
            return None
        end_at, action = self._end_action(region, group_id)
        return self._state(region, raw, end_at, action)

    def list_groups(self, region: str) -> list[GroupState]:
        ctx = self._asg("DescribeAutoScalingGroups", region)
        groups = self._pages(ctx, "AutoScalingGroups", Filters=[
            {"Name": "tag-key", "Values": [base.TAG_MANAGED]}])
        ours = [dict(g) for g in groups
                if str(g.get("AutoScalingGroupName", "")).startswith(GROUP_PREFIX)]
        if not ours:
            return []
        ends: dict[str, tuple[float | None, str]] = {}
        for item in self._scheduled(region):
            owner = str(item.get("AutoScalingGroupName", ""))
            if item.get("ScheduledActionName") == owner + END_ACTION_SUFFIX:
                ends[owner] = (_seconds(item.get("StartTime") or item.get("Time")), str(
                    item.get("ScheduledActionARN") or item["ScheduledActionName"]))
        return [self._state(region, g, *ends.get(str(g["AutoScalingGroupName"]), (None, "")))
                for g in ours]

    def _state(self, region: str, raw: dict[str, Any], end_at: float | None,
               action: str) -> GroupState:
        members = list(raw.get("Instances", []))
        ids = [str(m["InstanceId"]) for m in members]
        launched = {i.cloud_id: i.launched_at for i in self.describe(region, ids)} if ids else {}
        return GroupState(
            group_id=str(raw["AutoScalingGroupName"]), region=region,
            desired=int(raw.get("DesiredCapacity") or 0),
            members=[GroupMember(cloud_id=i, state=str(m.get("LifecycleState", "")),
                                 zone=str(m.get("AvailabilityZone", "")),
                                 launched_at=launched.get(i))
                     for i, m in zip(ids, members, strict=True)],
            end_at=end_at, end_action_id=action,
            tags={str(t["Key"]): str(t.get("Value", "")) for t in raw.get("Tags", [])},
            status=str(raw.get("Status") or ""))
