"""Pure translations between Alibaba Cloud ECS JSON and gpudesk's dataclasses.

No calls here, so every rule (state mapping, times, tags, which image carries
the GPU driver, which rule is the one gpudesk wants, when to auto-release) is
tested without a server.
"""

from __future__ import annotations

import hashlib
import math
import re
from datetime import UTC
from datetime import datetime
from typing import Any

from gpudesk.services.cloud.providers import base

CHARGE_ON_DEMAND = "PostPaid"
SPOT_NONE = "NoSpot"
SPOT_CAPPED = "SpotWithPriceLimit"
SPOT_MARKET = "SpotAsPriceGo"
STOP_CHARGING = "StopCharging"
KEEP_CHARGING = "KeepCharging"
LOCK_RECYCLING = "Recycling"  # a spot machine taken back by the cloud

# ECS Status → gpudesk state. A deleted machine is simply absent from DescribeInstances.
STATES: dict[str, str] = {
    "Pending": base.STATE_PENDING,
    "Starting": base.STATE_PENDING,
    "Running": base.STATE_RUNNING,
    "Stopping": base.STATE_STOPPING,
    "Stopped": base.STATE_STOPPED,
}

INSTANCE_ID_RE = re.compile(r"^i-[a-z0-9]{8,30}$")
# AutoReleaseTime: at least 30 minutes ahead and at most three years (ECS API reference).
# ModifyInstanceAutoReleaseTime (ECS API reference, help.aliyun.com/document_detail/47576):
# "at least half an hour after the current time, at most three years; seconds other than
# 00 are taken as the start of that minute". gpudesk's floor is that half hour plus a minute
# spare for the clock and the request's trip, and its times are whole minutes, so what is
# sent is what ECS keeps. guard.plan floors at the same constant (one figure, not two).
MIN_RELEASE_AHEAD_S = 30 * 60
MAX_RELEASE_AHEAD_S = 3 * 365 * 24 * 3600
RELEASE_FLOOR_S = MIN_RELEASE_AHEAD_S + 60


def release_at(timer_at: float | None, now: float) -> float | None:
    """``timer_at`` moved into ECS's window (:data:`RELEASE_FLOOR_S` to three years ahead),
    on a whole minute as ECS keeps it; None stays None (no release time)."""
    if timer_at is None:
        return None
    at = min(max(timer_at, now + RELEASE_FLOOR_S), now + MAX_RELEASE_AHEAD_S)
    return math.floor(at / 60.0) * 60.0  # still over 30 minutes ahead: the floor's spare
GPU_IMAGE_WORDS = ("GPU", "CUDA", "NVIDIA")
VPC_NAME = base.RESOURCE_PREFIX + "vpc"
VPC_CIDR = "172.16.0.0/16"
SSH_RULE_DESCRIPTION = "gpudesk: SSH from one address"


def state_of(status: str, locks: list[str] | None = None) -> str:
    """Unknown future states count as pending; a spot machine being recycled has ended."""
    if LOCK_RECYCLING in (locks or []):
        return base.STATE_TERMINATED
    return STATES.get(status, base.STATE_PENDING)


def parse_time(text: str | None) -> float | None:
    """ECS's ``2024-04-14T22:32Z`` or ``2024-04-14T22:32:05Z`` (UTC) → unix seconds."""
    if not text:
        return None
    for fmt in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%MZ", "%Y-%m-%dT%H:%M:%S.%fZ"):
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC).timestamp()
        except ValueError:
            continue
    return None


def format_time(epoch: float) -> str:
    """Unix seconds → the ``yyyy-MM-ddTHH:mm:ssZ`` (UTC) ECS takes for AutoReleaseTime."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def tags_of(container: dict[str, Any] | None) -> dict[str, str]:
    """``{"Tag": [{"TagKey", "TagValue"}]}`` → dict (Key/Value spelled either way)."""
    items = (container or {}).get("Tag") or []
    return {str(t.get("TagKey", t.get("Key", ""))): str(t.get("TagValue", t.get("Value", "")))
            for t in items}


def tag_list(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def locks_of(raw: dict[str, Any]) -> list[str]:
    return [str(lock.get("LockReason", "")) for lock in
            (raw.get("OperationLocks") or {}).get("LockReason") or []]


def public_ip_of(raw: dict[str, Any]) -> str:
    public = (raw.get("PublicIpAddress") or {}).get("IpAddress") or []
    if public:
        return str(public[0])
    return str((raw.get("EipAddress") or {}).get("IpAddress") or "")


def state_since(raw: dict[str, Any], state: str) -> float | None:
    """When ECS says the state began, where it says: a running machine's ``StartTime`` (its
    last start, to the minute: rounded down, so a running stretch is never counted short).
    ECS gives no time for a stop; None there (gpudesk dates it when it sees it)."""
    if state != base.STATE_RUNNING:
        return None
    return parse_time(raw.get("StartTime"))


def parse_instance(raw: dict[str, Any], region: str) -> base.CloudInstance:
    spot = str(raw.get("SpotStrategy") or SPOT_NONE) != SPOT_NONE
    state = state_of(str(raw.get("Status", "")), locks_of(raw))
    return base.CloudInstance(
        provider="aliyun",
        cloud_id=str(raw.get("InstanceId", "")),
        region=region,
        zone=str(raw.get("ZoneId", "")),
        instance_type=str(raw.get("InstanceType", "")),
        state=state,
        market="spot" if spot else "on-demand",
        public_ip=public_ip_of(raw),
        launched_at=parse_time(raw.get("CreationTime")),
        tags=tags_of(raw.get("Tags")),
        reason=recycling_reason(raw),
        stopped_mode=str(raw.get("StoppedMode") or ""),  # KeepCharging bills when stopped
        image_id=str(raw.get("ImageId") or ""),
        state_since=state_since(raw, state),
    )


def recycling_reason(raw: dict[str, Any]) -> str:
    """ECS's words when it is taking a spot machine back (OperationLocks), else ""."""
    for lock in (raw.get("OperationLocks") or {}).get("LockReason") or []:
        if lock.get("LockReason") == LOCK_RECYCLING:
            return f"{LOCK_RECYCLING}: {lock.get('LockMsg') or 'spot instance reclaimed'}"
    return ""


def release_time(now: float, budget: float, price_per_hour: float) -> float | None:
    """When the budget runs out at ``price_per_hour`` (same currency), for AutoReleaseTime.

    ``None`` when there is no budget or no price to divide by. Never sooner than the
    30 minutes ECS accepts (a smaller budget still buys the minimum, said in the log),
    never later than three years; rounded down to the minute.
    """
    if not budget > 0 or not price_per_hour > 0 or not math.isfinite(budget / price_per_hour):
        return None
    ahead = budget / price_per_hour * 3600.0
    ahead = min(max(ahead, MIN_RELEASE_AHEAD_S), MAX_RELEASE_AHEAD_S)
    return math.floor((now + ahead) / 60.0) * 60.0


def is_gpu_image(image: dict[str, Any]) -> bool:
    text = f"{image.get('ImageName', '')} {image.get('Description', '')}".upper()
    return (any(word in text for word in GPU_IMAGE_WORDS)
            and image.get("Status", "Available") == "Available"
            and image.get("Architecture", "x86_64") in ("x86_64", "")
            and str(image.get("OSType", "linux")).lower() == "linux")


def newest_gpu_image(images: list[dict[str, Any]]) -> str:
    """The newest public Ubuntu image whose name says it carries the GPU driver; "" if none."""
    gpu = [i for i in images if i.get("ImageOwnerAlias", "system") == "system"
           and "ubuntu" in str(i.get("Platform", i.get("OSName", ""))).lower()
           and is_gpu_image(i)]
    gpu.sort(key=lambda i: parse_time(i.get("CreationTime")) or 0.0, reverse=True)
    return str(gpu[0]["ImageId"]) if gpu else ""


def newest_ubuntu_image(images: list[dict[str, Any]]) -> str:
    """The newest public Ubuntu image (a GPU driver or not); "" if none."""
    ubuntu = [i for i in images if i.get("ImageOwnerAlias", "system") == "system"
              and "ubuntu" in str(i.get("Platform", i.get("OSName", ""))).lower()
              and i.get("Status", "Available") == "Available"
              and i.get("Architecture", "x86_64") in ("x86_64", "")]
    ubuntu.sort(key=lambda i: parse_time(i.get("CreationTime")) or 0.0, reverse=True)
    return str(ubuntu[0]["ImageId"]) if ubuntu else ""


def image_list(images: list[dict[str, Any]], most: int = 6) -> str:
    """"id (name)" of the newest ``most`` images, for a choice by hand (``--image``)."""
    newest = sorted(images, key=lambda i: parse_time(i.get("CreationTime")) or 0.0,
                    reverse=True)[:most]
    return ", ".join(f"{i.get('ImageId')} ({i.get('ImageName') or i.get('OSName') or '?'})"
                     for i in newest)


def ssh_permission(address: str) -> dict[str, str]:
    """The one ingress rule gpudesk wants: TCP 22 from one address."""
    rule = {"IpProtocol": "TCP", "PortRange": "22/22", "Policy": "Accept", "Priority": "1",
            "Description": SSH_RULE_DESCRIPTION}
    rule["Ipv6SourceCidrIp" if ":" in address else "SourceCidrIp"] = address
    return rule


def is_gpudesk_rule(rule: dict[str, Any]) -> bool:
    return str(rule.get("Description", "")) == SSH_RULE_DESCRIPTION


def source_of(rule: dict[str, Any]) -> str:
    return str(rule.get("SourceCidrIp") or rule.get("Ipv6SourceCidrIp") or "")


def _rule_key(rule: dict[str, Any]) -> tuple[str, str, str, str, str]:
    return (str(rule.get("IpProtocol", "")).upper(), str(rule.get("PortRange", "")),
            str(rule.get("SourceCidrIp", "") or ""), str(rule.get("Ipv6SourceCidrIp", "") or ""),
            str(rule.get("Policy", "Accept")).lower())


def same_rule(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Same protocol, ports, source and policy (ids, priorities and descriptions aside)."""
    return _rule_key(a) == _rule_key(b)


def vswitch_cidr(zones: list[str], zone: str) -> str:
    """A /24 of the gpudesk VPC per zone, the same one every time for the same zone list."""
    index = sorted(zones).index(zone) if zone in zones else 200
    return f"172.16.{index + 1}.0/24"


def client_token(ledger_id: str, token: str = "") -> str:
    """At most 64 ASCII characters; the same request always sends the same token."""
    token = token or f"{base.RESOURCE_PREFIX}{ledger_id}"
    if token.isascii() and len(token) <= 64:
        return token
    return base.RESOURCE_PREFIX + hashlib.sha256(token.encode()).hexdigest()[:56]


def price_text(value: float) -> str:
    return f"{value:.4f}".rstrip("0").rstrip(".")


def sdk_method(action: str) -> str:
    """``DescribeVSwitches`` → ``describe_vswitches``, the SDK's method stem."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", action.replace("VSwitch", "Vswitch")).lower()


def unknown_keys(params: dict[str, Any], model: dict[str, Any], path: str = "") -> list[str]:
    """Names in ``params`` the SDK model dropped (a typo would otherwise be sent as nothing)."""
    out: list[str] = []
    for key, value in params.items():
        if key not in model:
            out.append(path + key)
        elif isinstance(value, dict) and isinstance(model[key], dict):
            out += unknown_keys(value, model[key], f"{path}{key}.")
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            sent = model[key] if isinstance(model[key], list) and model[key] else [{}]
            out += unknown_keys(value[0], sent[0], f"{path}{key}.")
    return out


def stock_of(zone: dict[str, Any], instance_type: str) -> str:
    """WithStock / ClosedWithStock / WithoutStock for ``instance_type`` in one zone."""
    if zone.get("Status") not in (None, "Available"):
        return str(zone.get("StatusCategory") or zone.get("Status"))
    for resource in (zone.get("AvailableResources") or {}).get("AvailableResource") or []:
        for item in (resource.get("SupportedResources") or {}).get("SupportedResource") or []:
            if item.get("Value") == instance_type:
                if item.get("Status") == "Available":
                    return str(item.get("StatusCategory") or "WithStock")
                return str(item.get("StatusCategory") or item.get("Status") or "SoldOut")
    return ""


def code_of(exc: Exception) -> tuple[str, str]:
    """(code, message) of an SDK exception; a transport failure is ClientNetworkError."""
    data = getattr(exc, "data", None)
    code = getattr(exc, "code", None)
    if isinstance(data, dict) and data.get("Code"):
        return str(data["Code"]), str(data.get("Message") or "")
    if isinstance(code, str) and code:  # the SDK's own refusal before a call, too
        return code, str(getattr(exc, "message", "") or "")
    return "ClientNetworkError", type(exc).__name__


def key_digest(public_key: str) -> str:
    return hashlib.sha256(" ".join(public_key.split()[:2]).encode()).hexdigest()[:8]


def same_key(existing: dict[str, Any], public_key: str) -> bool:
    """Same key when ECS shows the body (IncludePublicKey); trusted by name otherwise."""
    shown = str(existing.get("PublicKey") or "")
    return not shown or shown.split()[:2] == public_key.split()[:2]
