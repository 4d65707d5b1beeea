"""Pure translations between Tencent CVM/VPC JSON and gpudesk's dataclasses.

No calls here, so every rule (state mapping, legal key names, which image is
a GPU image, which security-group rule is the one gpudesk wants) is tested
without a server.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC
from datetime import datetime
from typing import Any

from gpudesk.services.cloud.providers import base

CHARGE_ON_DEMAND = "POSTPAID_BY_HOUR"
CHARGE_SPOT = "SPOTPAID"

# CVM InstanceState → gpudesk state. LAUNCH_FAILED never billed; SHUTDOWN is
# "isolated, waiting to be destroyed" (billing has ended); STARTING and
# REBOOTING bill like a running machine.
STATES: dict[str, str] = {
    "PENDING": base.STATE_PENDING,
    "LAUNCH_FAILED": base.STATE_TERMINATED,
    "RUNNING": base.STATE_RUNNING,
    "STARTING": base.STATE_PENDING,
    "REBOOTING": base.STATE_RUNNING,
    "STOPPING": base.STATE_STOPPING,
    "STOPPED": base.STATE_STOPPED,
    "SHUTDOWN": base.STATE_TERMINATED,
    "TERMINATING": base.STATE_TERMINATED,
}

INSTANCE_ID_RE = re.compile(r"^ins-[a-z0-9]{8}$")
_KEY_NAME_MAX = 25
_KEY_ILLEGAL = re.compile(r"[^A-Za-z0-9_]")
GPU_IMAGE_WORDS = ("GPU", "CUDA", "NVIDIA")


def state_of(cvm_state: str) -> str:
    """Unknown future states count as pending: still possibly billing, never hidden."""
    return STATES.get(cvm_state, base.STATE_PENDING)


def parse_time(text: str | None) -> float | None:
    """CVM's ``2025-06-01T08:00:00Z`` (UTC) → unix seconds; ``None`` if absent or odd."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def tags_of(items: list[dict[str, Any]] | None) -> dict[str, str]:
    return {str(t.get("Key", "")): str(t.get("Value", "")) for t in items or []}


def tag_list(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def state_since(raw: dict[str, Any], state: str) -> float | None:
    """When CVM says the state began, where it says. DescribeInstances dates only the
    creation (``CreatedTime``) and names the latest operation without its time, so: a
    machine running since its RunInstances runs since ``CreatedTime``; after any later stop
    or start CVM gives no time (None: gpudesk dates it when it sees it)."""
    if state == base.STATE_RUNNING and raw.get("LatestOperation") == "RunInstances":
        return parse_time(raw.get("CreatedTime"))
    return None


def parse_instance(raw: dict[str, Any], region: str) -> base.CloudInstance:
    public = raw.get("PublicIpAddresses") or []
    state = state_of(str(raw.get("InstanceState", "")))
    return base.CloudInstance(
        provider="tencent",
        cloud_id=str(raw.get("InstanceId", "")),
        region=region,
        zone=str((raw.get("Placement") or {}).get("Zone", "")),
        instance_type=str(raw.get("InstanceType", "")),
        state=state,
        market="spot" if raw.get("InstanceChargeType") == CHARGE_SPOT else "on-demand",
        public_ip=str(public[0]) if public else "",
        launched_at=parse_time(raw.get("CreatedTime")),
        tags=tags_of(raw.get("Tags")),
        reason=failure_of(raw),
        stopped_mode=str(raw.get("StopChargingMode") or ""),
        image_id=str(raw.get("ImageId") or ""),
        state_since=state_since(raw, state),
    )


# Why CVM cannot stop charging a stopped machine ("No charge when shut down" applies to
# pay-as-you-go machines whose disks are all cloud disks): the charge type, or a local disk.
CHARGE_PREPAID = "PREPAID"
LOCAL_DISKS = frozenset({"LOCAL_BASIC", "LOCAL_SSD", "LOCAL_NVME", "LOCAL_PRO"})


def stop_charging_refusal(raw: dict[str, Any]) -> str:
    """Why ``STOP_CHARGING`` cannot apply to this DescribeInstances item, in CVM's terms
    ("" when nothing in the description rules it out)."""
    charge = str(raw.get("InstanceChargeType") or "")
    if charge == CHARGE_SPOT:
        return "spot (SPOTPAID)"
    if charge and charge != CHARGE_ON_DEMAND:
        return f"charge type {charge}"
    disks = [raw.get("SystemDisk") or {}, *(raw.get("DataDisks") or [])]
    local = sorted({str(d.get("DiskType")) for d in disks
                    if isinstance(d, dict) and d.get("DiskType") in LOCAL_DISKS})
    if local:
        return f"local disk ({', '.join(local)})"
    return ""


def failure_of(raw: dict[str, Any]) -> str:
    """CVM's own words for a failed launch or operation (``LatestOperationErrorMsg``)."""
    state = str(raw.get("InstanceState", ""))
    if state != "LAUNCH_FAILED" and raw.get("LatestOperationState") != "FAILED":
        return ""
    message = str(raw.get("LatestOperationErrorMsg") or "").strip()
    return f"{state}: {message}" if message else state


def price_of(item: dict[str, Any]) -> float | None:
    """Hourly price of an ItemPrice: the discounted one when quoted, else the list one."""
    price = item.get("Price") or {}
    for key in ("UnitPriceDiscount", "UnitPrice"):
        value = price.get(key)
        if isinstance(value, int | float) and value > 0:
            return float(value)
    return None


def parse_offer(item: dict[str, Any], region: str) -> base.LiveOffer | None:
    """One DescribeZoneInstanceConfigInfos item; ``None`` for one without an hourly price."""
    charge = item.get("InstanceChargeType")
    if charge not in (CHARGE_ON_DEMAND, CHARGE_SPOT):
        return None
    price = price_of(item)
    status = str(item.get("Status", ""))
    if price is None and status == "SELL":
        return None
    available = status == "SELL"
    return base.LiveOffer(
        provider="tencent", region=region, zone=str(item.get("Zone", "")),
        instance_type=str(item.get("InstanceType", "")),
        market="spot" if charge == CHARGE_SPOT else "on-demand",
        price_per_hour=price or 0.0, currency="CNY", available=available,
        reason="" if available else str(item.get("SoldOutReason") or status))


def key_name(name: str) -> str:
    """A legal Tencent key name (letters, digits, ``_``; at most 25) derived from ``name``.

    Kept as is when already legal; otherwise a readable prefix plus 8 hex digits
    of the original's SHA-256, so two different names never meet.
    """
    legal = _KEY_ILLEGAL.sub("_", name)
    if legal == name and 0 < len(name) <= _KEY_NAME_MAX:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{legal[:_KEY_NAME_MAX - 9]}_{digest}"


def key_digest(public_key: str) -> str:
    """8 hex digits naming one public key (type and body; the comment aside)."""
    return hashlib.sha256(" ".join(public_key.split()[:2]).encode()).hexdigest()[:8]


def same_public_key(a: str, b: str) -> bool:
    """Compare the type and base64 body only; the comment is not part of the key."""
    return a.split()[:2] == b.split()[:2]


def is_gpu_image(image: dict[str, Any]) -> bool:
    text = f"{image.get('ImageName', '')} {image.get('ImageDescription', '')}".upper()
    return (any(word in text for word in GPU_IMAGE_WORDS)
            and image.get("ImageState", "NORMAL") == "NORMAL"
            and image.get("Architecture", "x86_64") in ("x86_64", "")
            and not image.get("ImageDeprecated", False))


def newest_gpu_image(images: list[dict[str, Any]]) -> str:
    """The newest public image whose name says it carries the GPU driver; "" if none."""
    gpu = [i for i in images if i.get("ImageType") == "PUBLIC_IMAGE" and is_gpu_image(i)]
    gpu.sort(key=lambda i: parse_time(i.get("CreatedTime")) or 0.0, reverse=True)
    return str(gpu[0]["ImageId"]) if gpu else ""


SSH_RULE_DESCRIPTION = "gpudesk: SSH from one address"  # marks the rule gpudesk owns


def is_gpudesk_rule(rule: dict[str, Any]) -> bool:
    """An ingress rule gpudesk made (TCP 22 with its description), not one the user added."""
    return (str(rule.get("PolicyDescription", "")) == SSH_RULE_DESCRIPTION
            and str(rule.get("Protocol", "")).upper() == "TCP" and str(rule.get("Port")) == "22")


def rule_fields(rule: dict[str, Any]) -> dict[str, str]:
    """A listed rule as DeleteSecurityGroupPolicies takes it by content (no index)."""
    keys = ("Protocol", "Port", "CidrBlock", "Ipv6CidrBlock", "Action")
    return {k: str(rule[k]) for k in keys if rule.get(k)}


def ssh_rule(address: str) -> dict[str, str]:
    """The one ingress rule gpudesk wants: TCP 22 from one address."""
    rule = {"Protocol": "TCP", "Port": "22", "Action": "ACCEPT",
            "PolicyDescription": SSH_RULE_DESCRIPTION}
    rule["Ipv6CidrBlock" if ":" in address else "CidrBlock"] = address
    return rule


EGRESS_RULES: tuple[dict[str, str], ...] = (
    # Outbound only (pip, apt, checkpoints to COS); nothing inbound but SSH from one address.
    {"Protocol": "ALL", "Port": "ALL", "CidrBlock": "0.0.0.0/0", "Action": "ACCEPT"},
    {"Protocol": "ALL", "Port": "ALL", "Ipv6CidrBlock": "::/0", "Action": "ACCEPT"},
)


def _rule_key(rule: dict[str, Any]) -> tuple[str, str, str, str, str]:
    return (str(rule.get("Protocol", "")).upper(), str(rule.get("Port", "")).upper() or "ALL",
            str(rule.get("CidrBlock", "") or ""), str(rule.get("Ipv6CidrBlock", "") or ""),
            str(rule.get("Action", "")).upper())


def same_rule(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Same protocol, port, address and action (indexes and descriptions aside)."""
    return _rule_key(a) == _rule_key(b)
