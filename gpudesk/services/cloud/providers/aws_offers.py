"""The pure parts of the AWS provider: picking an image, reading prices, mapping states.

Kept apart from the calls so they are tested on plain data: moto answers
with one constant spot price and no Deep Learning AMIs, so the choices made
here (newest image, latest price per zone) would go untested against it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from datetime import UTC
from datetime import datetime
from typing import Any

from gpudesk.services.cloud.providers import base

# The AWS Deep Learning AMI line gpudesk rents: NVIDIA's open driver, PyTorch, Ubuntu
# (the launcher logs in as "ubuntu"). AWS publishes one SSM parameter per PyTorch
# version and Ubuntu release, e.g. .../oss-nvidia-driver-gpu-pytorch-2.9-ubuntu-24.04/
# latest/ami-id, and retires old versions, so gpudesk lists the tree instead of
# naming one version.
DLAMI_SSM_ROOT = "/aws/service/deeplearning/ami/{arch}"
_DLAMI_PARAMETER = re.compile(
    r"/oss-nvidia-driver-gpu-pytorch-(?P<torch>\d+(?:\.\d+)*)-ubuntu-(?P<ubuntu>\d+\.\d+)"
    r"/latest/ami-id$")
DLAMI_NAME_FILTER = "Deep Learning OSS Nvidia Driver AMI GPU PyTorch*(Ubuntu*"
_DLAMI_NAME = re.compile(r"^Deep Learning (?:ARM64 )?(?:AMI )?OSS Nvidia Driver (?:AMI )?GPU "
                         r"PyTorch .*\(Ubuntu \d+\.\d+\)")
_AMI_ID = re.compile(r"^ami-[0-9a-f]{8,17}$")
DLAMI_TITLE = "Deep Learning OSS Nvidia Driver AMI GPU PyTorch (Ubuntu)"

STATES = {
    "pending": base.STATE_PENDING,
    "running": base.STATE_RUNNING,
    "stopping": base.STATE_STOPPING,
    "stopped": base.STATE_STOPPED,
    "shutting-down": base.STATE_TERMINATED,
    "terminated": base.STATE_TERMINATED,
}
LIVE_STATES = ("pending", "running", "stopping", "stopped")  # not (being) terminated
USING_STATES = (*LIVE_STATES, "shutting-down")  # still holds its key pair / security group


def architecture(instance_type: str) -> str:
    """``arm64`` for Graviton families (``g5g``), else ``x86_64``: the DLAMI tree to list."""
    family = instance_type.split(".", 1)[0]
    return "arm64" if re.fullmatch(r"[a-z]+\d+[a-z]*g[a-z]*", family) else "x86_64"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def best_dlami_parameter(parameters: Iterable[Mapping[str, Any]]) -> str:
    """The AMI id of the newest PyTorch, then newest Ubuntu, DLAMI parameter; "" if none."""
    best: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    found = ""
    for param in parameters:
        match = _DLAMI_PARAMETER.search(str(param.get("Name", "")))
        value = str(param.get("Value", "")).strip()
        if not match or not _AMI_ID.match(value):
            continue
        rank = (_version(match["torch"]), _version(match["ubuntu"]))
        if best is None or rank > best:
            best, found = rank, value
    return found


def newest_dlami_image(images: Iterable[Mapping[str, Any]], arch: str) -> str:
    """The newest available DLAMI (PyTorch, Ubuntu) by CreationDate; "" if none."""
    newest = ""
    found = ""
    for image in images:
        if (image.get("State", "available") != "available"
                or image.get("Architecture", arch) != arch
                or not _DLAMI_NAME.match(str(image.get("Name", "")))
                or not _AMI_ID.match(str(image.get("ImageId", "")))):
            continue
        created = str(image.get("CreationDate", ""))
        if not found or created > newest:  # ISO 8601 in UTC: text order is time order
            newest, found = created, str(image["ImageId"])
    return found


def _spot_rows(history: Iterable[Mapping[str, Any]]
               ) -> Iterator[tuple[str, str, datetime | str, float]]:
    """(zone, instance type, timestamp, USD/hour) of each record with a usable price."""
    for record in history:
        zone = str(record.get("AvailabilityZone", ""))
        itype = str(record.get("InstanceType", ""))
        try:
            price = float(record.get("SpotPrice", ""))
        except (TypeError, ValueError):
            continue
        if zone and itype and price > 0:
            yield zone, itype, record.get("Timestamp") or "", price


def latest_spot_prices(
        history: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], float]:
    """(zone, instance type) → the most recent spot price (USD/hour) in ``history``.

    DescribeSpotPriceHistory returns every change in its window, newest first
    on AWS but in no promised order; records with no usable price are skipped.
    """
    latest: dict[tuple[str, str], tuple[datetime | str, float]] = {}
    for zone, itype, stamp, price in _spot_rows(history):
        key = (zone, itype)
        if key not in latest or _later(stamp, latest[key][0]):
            latest[key] = (stamp, price)
    return {key: price for key, (_, price) in latest.items()}


def spot_price_points(history: Iterable[Mapping[str, Any]], zone: str,
                      instance_type: str) -> list[tuple[float, float]]:
    """(epoch seconds, USD/hour) of one zone and type, oldest first, repeats dropped.

    The first record may be older than the window asked for: it is the price
    that was in force at its start (AWS's documented behaviour).
    """
    points: list[tuple[float, float]] = []
    for z, itype, stamp, price in _spot_rows(history):
        if (z, itype) != (zone, instance_type):
            continue
        try:
            at = (stamp if isinstance(stamp, datetime)
                  else datetime.fromisoformat(stamp.replace("Z", "+00:00"))).timestamp()
        except ValueError:
            continue
        points.append((at, price))
    points.sort()
    kept: list[tuple[float, float]] = []
    for at, price in points:
        if not kept or price != kept[-1][1]:
            kept.append((at, price))
    return kept


def _later(a: datetime | str, b: datetime | str) -> bool:
    if isinstance(a, datetime) and isinstance(b, datetime):
        return a > b
    return str(a) > str(b)


_UNKNOWN_TYPES = re.compile(r"\[([^\]]*)\]")


def unknown_types(message: str) -> set[str]:
    """The types named in "The following supplied instance types do not exist: [a, b]"."""
    match = _UNKNOWN_TYPES.search(message)
    if match:
        return {t.strip() for t in match.group(1).split(",") if t.strip()}
    single = re.search(r"instance type '([^']+)'", message)
    return {single.group(1)} if single else set()


def to_instance(region: str, data: Mapping[str, Any]) -> base.CloudInstance:
    """A DescribeInstances / RunInstances instance record as gpudesk's CloudInstance."""
    state = str(data.get("State", {}).get("Name", "pending"))
    launched = data.get("LaunchTime")
    tags = {str(t["Key"]): str(t.get("Value", "")) for t in data.get("Tags", []) if "Key" in t}
    market: base.Market = "spot" if data.get("InstanceLifecycle") == "spot" else "on-demand"
    return base.CloudInstance(
        provider="aws", cloud_id=str(data["InstanceId"]), region=region,
        zone=str(data.get("Placement", {}).get("AvailabilityZone", "")),
        instance_type=str(data.get("InstanceType", "")),
        state=STATES.get(state, base.STATE_PENDING), market=market,
        public_ip=str(data.get("PublicIpAddress", "") or ""),
        launched_at=launched.timestamp() if isinstance(launched, datetime) else None,
        tags=tags, reason=state_reason(data) if state in _ENDED else "",
        state_since=state_since(data, state), image_id=str(data.get("ImageId") or ""))


# EC2 writes "GMT" (moto "UTC"): the same clock either way
_TRANSITION_AT = re.compile(r"\((\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) (?:GMT|UTC)\)")


def state_since(data: Mapping[str, Any], state: str) -> float | None:
    """EC2's own time of the current state: LaunchTime while running (it moves at each
    start), else the ``(… GMT)`` moment in ``StateTransitionReason`` (a stop, a
    termination, a spot interruption), e.g. ``User initiated (2026-12-03 19:10:34 GMT)``."""
    if state in ("running", "pending"):
        launched = data.get("LaunchTime")
        return launched.timestamp() if isinstance(launched, datetime) else None
    found = _TRANSITION_AT.search(str(data.get("StateTransitionReason") or ""))
    if found is None:
        return None
    return datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S").replace(
        tzinfo=UTC).timestamp()


_ENDED = frozenset({"shutting-down", "terminated", "stopping", "stopped"})


def state_reason(data: Mapping[str, Any]) -> str:
    """EC2's own ``StateReason`` (e.g. ``Server.SpotInstanceTermination: …``); "" if none."""
    reason = data.get("StateReason") or {}
    code, message = str(reason.get("Code") or ""), str(reason.get("Message") or "")
    if message.startswith(code):
        return message
    return f"{code}: {message}" if code and message else code or message
