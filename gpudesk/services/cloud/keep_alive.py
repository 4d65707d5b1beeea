"""A spot run that keeps one machine alive with no server of ours: each cloud's own group.

When a spot machine is reclaimed, a group of size 1 that the cloud itself keeps
(an EC2 Auto Scaling group, a Tencent AS group, an Aliyun ESS scaling group)
starts another from a launch template carrying gpudesk's first-boot script; that
script resumes the run from the bucket. The group's own scheduled action sets
its size to 0 when budget ÷ price runs out, so the group cannot outlive its
budget even with the desktop and every agent gone (docs/recovery.md).

Every provider that offers it implements :class:`KeepAliveGroups`; the names of
what it creates are ``gpudesk-run-<ledger id>`` (template/configuration and
group) and every resource carries the usual gpudesk tags.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from dataclasses import field
from typing import Protocol
from typing import runtime_checkable

from gpudesk.services.cloud.providers.base import RESOURCE_PREFIX
from gpudesk.services.cloud.providers.base import LaunchRequest

GROUP_PREFIX = RESOURCE_PREFIX + "run-"  # + ledger id: launch template and group names
# A scheduled action must lie in the future when it is written; the clouds differ in how
# far (Tencent AS: StartTime later than now; ESS: LaunchTime within 90 days and not in the
# past). A minute spare for the clock and the request's trip.
SCHEDULE_MIN_AHEAD_S = 60.0
SCHEDULE_MAX_AHEAD_S = 90 * 86400.0  # ESS CreateScheduledTask: LaunchTime within 90 days


def group_name(ledger_id: str) -> str:
    return GROUP_PREFIX + ledger_id


@dataclass(frozen=True)
class GroupMember:
    """One machine the group holds (or held) now, as the cloud lists it."""

    cloud_id: str
    state: str  # the cloud's lifecycle word (InService, Pending, Terminating, IN_SERVICE, ...)
    zone: str = ""
    launched_at: float | None = None  # unix s where the cloud says


@dataclass(frozen=True)
class GroupState:
    """A keep-alive group as the cloud answers about it now (never what we asked for)."""

    group_id: str  # ASG name (AWS), AutoScalingGroupId (Tencent), ScalingGroupId (Aliyun)
    region: str
    desired: int  # the group's desired/expected capacity as read back
    members: list[GroupMember] = field(default_factory=list)
    # The size-0 scheduled action as read back: when (unix s) and its cloud id; None: none.
    end_at: float | None = None
    end_action_id: str = ""
    tags: dict[str, str] = field(default_factory=dict)
    status: str = ""  # the cloud's word on the group itself (e.g. "Delete in progress")

    @property
    def ledger_id(self) -> str:
        from gpudesk.services.cloud.providers.base import TAG_LEDGER

        return self.tags.get(TAG_LEDGER, "")


@runtime_checkable
class KeepAliveGroups(Protocol):
    """What a provider offers for keep-alive groups. All calls block; all read back."""

    def create_group(self, request: LaunchRequest) -> GroupState:
        """Launch template/configuration + a group of size 1 (spot), tagged, with the
        request's user data; the scheduled end from ``request.cloud_timer_at`` when set.
        Idempotent on ``request.ledger_id``: a second call finds what the first made."""

    def schedule_end(self, region: str, group_id: str, at: float) -> float:
        """Set (or move) the group's size-0 scheduled action to ``at``; return the time the
        cloud read back (it may round)."""

    def set_user_data(self, region: str, group_id: str, user_data: str) -> str:
        """The group's NEXT members boot from ``user_data`` (members already running keep
        theirs): the launch template/configuration changed and read back. Refused before
        any call over the cloud's documented size. Returns what the cloud names the data
        by now (AWS: the template version; Tencent, Aliyun: the configuration id)."""

    def describe_group(self, region: str, group_id: str) -> GroupState | None:
        """The group now, or None when the cloud no longer has it."""

    def end_group(self, region: str, group_id: str) -> None:
        """Size 0, then delete the group and its template/configuration. Idempotent:
        a group already gone is success."""

    def list_groups(self, region: str) -> list[GroupState]:
        """Every group gpudesk made in the region (found by tag/name), for reconciliation."""


def end_time(budget: float, spent: float, price_per_hour: float, now: float) -> float | None:
    """When the group must reach size 0: the moment the budget left runs out at this price.

    None when there is no budget or no price (no cloud-side end can be computed; the
    caller says so in words). A time less than ``SCHEDULE_MIN_AHEAD_S`` ahead means the
    budget is spent: the caller ends the group now instead of scheduling it (the clouds
    refuse a past time). At most ``SCHEDULE_MAX_AHEAD_S`` ahead; the agent moves it later.
    """
    if budget <= 0 or price_per_hour <= 0:
        return None
    left_h = max(0.0, budget - spent) / price_per_hour
    at = now + left_h * 3600.0
    return math.floor(min(at, now + SCHEDULE_MAX_AHEAD_S))
