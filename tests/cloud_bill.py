"""What each cloud would bill: per-instance state intervals on a clock the test controls.

A :class:`Bill` is kept by a cloud stand-in (or, for AWS, by a thin layer over moto's own
state, ``tests/ec2_bill.py``): every time the stand-in's state of an instance changes, the
stand-in tells the bill (:meth:`Bill.sync`) and the bill closes the instance's current
interval and opens one in its new *billing state* at ``clock()``. The bill never reads
gpudesk's ledger or prices: only the cloud's own state and the cloud's own price table.

Billing states (what an interval costs, per the cloud's rules below):

* ``compute`` — running (or starting/stopping where the cloud bills those): compute and disk;
* ``keep`` — stopped but still charged in full (CVM ``KEEP_CHARGING``, ECS ``KeepCharging``,
  a shutdown from inside either): compute and disk;
* ``disk`` — stopped, compute not charged (EC2 stopped, CVM ``STOP_CHARGING``, ECS
  ``StopCharging``): disk only;
* ``none`` — not billed (pending, terminated, released, gone).

Prices are in the cloud's currency and units: compute per hour, disk per GB-month (a month
counted as 730 hours, the clouds' own proration of a monthly disk price).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field

Clock = Callable[[], float]
BILLING_STATES = ("compute", "keep", "disk", "none")
MONTH_S = 730 * 3600.0


@dataclass(frozen=True)
class Rules:
    """One cloud's billing rules."""

    cloud: str
    currency: str
    min_s: float  # compute billed at least this long each time the machine starts running
    step_s: float  # compute billed in multiples of this
    disk_per_gb_month: float  # the system disk's pay-as-you-go price


RULES: dict[str, Rules] = {
    # EC2 Linux On-Demand and Spot: per second with a 60-second minimum each time an
    # instance starts ("Every time you start your instance, Amazon EC2 charges a one-minute
    # minimum for instance usage, and thereafter charges per second", StopInstances API
    # reference, https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_StopInstances.html).
    # States: pending/stopping/stopped/shutting-down/terminated are not billed for instance
    # usage; EBS volumes are charged whatever the state (EC2 User Guide, "Instance state
    # changes", https://github.com/awsdocs/amazon-ec2-user-guide/blob/master/doc_source/
    # ec2-instance-lifecycle.md). gp3: 0.08 USD per GB-month in us-east-1
    # (https://aws.amazon.com/ebs/pricing/).
    "aws": Rules("aws", "USD", min_s=60.0, step_s=1.0, disk_per_gb_month=0.08),
    # CVM pay-as-you-go: billed by the second, settled hourly. "No charge when shut down"
    # (StopInstances StoppedMode=STOP_CHARGING) stops CPU and memory billing only: "Cloud
    # disks (system disk and data disk), public network bandwidth, images ... are still
    # billed"; the default KEEP_CHARGING, and a shutdown from inside the OS, keep billing
    # everything (https://intl.cloud.tencent.com/document/product/213/19922).
    # Premium cloud disk: 0.35 CNY per GB-month pay-as-you-go
    # (https://www.tencentcloud.com/document/product/362/2413).
    "tencent": Rules("tencent", "CNY", min_s=0.0, step_s=1.0, disk_per_gb_month=0.35),
    # ECS pay-as-you-go (and spot): billed by the second. Economical mode (StopInstances
    # StoppedMode=StopCharging) stops vCPU, memory and GPU billing; "system disks, data
    # disks, EIPs and snapshots" go on being billed; standard mode (KeepCharging) bills on
    # (https://www.alibabacloud.com/help/en/ecs/user-guide/economical-mode). Economical mode
    # is entered through the console or the API only, never by a shutdown command in the OS
    # (the same rule stated for ECS-style clouds, e.g. https://docs.byteplus.com/en/docs/ecs/
    # Economical_mode_for_pay-as-you-go_instances-1). ESSD PL1: 1.0 CNY per GB-month
    # (https://www.alibabacloud.com/help/en/ecs/block-storage-devices-billing).
    "aliyun": Rules("aliyun", "CNY", min_s=0.0, step_s=1.0, disk_per_gb_month=1.0),
}


@dataclass
class Interval:
    instance_id: str
    state: str  # one of BILLING_STATES
    start: float
    price_per_hour: float  # compute, in the cloud's currency
    disk_gb: float
    end: float | None = None
    starts: bool = False  # the machine started running here (the minimum applies)


@dataclass(frozen=True)
class Seen:
    """An instance as the cloud's state shows it, for :meth:`Bill.sync`."""

    state: str  # one of BILLING_STATES
    price_per_hour: float
    disk_gb: float


@dataclass
class Parts:
    """A bill split by what was billed: compute while running, compute while stopped
    (keep charging), disk."""

    running: float = 0.0
    keep: float = 0.0
    disk: float = 0.0

    @property
    def total(self) -> float:
        return self.running + self.keep + self.disk


@dataclass
class Bill:
    """One cloud's bill; ``clock()`` is the cloud's time (injected)."""

    cloud: str
    clock: Clock
    intervals: list[Interval] = field(default_factory=list)
    _open: dict[str, Interval] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def rules(self) -> Rules:
        return RULES[self.cloud]

    @property
    def currency(self) -> str:
        return self.rules.currency

    def record(self, instance_id: str, seen: Seen) -> None:
        """``instance_id`` is now in ``seen.state`` (no-op when nothing changed)."""
        if seen.state not in BILLING_STATES:
            raise ValueError(f"unknown billing state {seen.state!r}")
        now = self.clock()
        with self._lock:
            current = self._open.get(instance_id)
            if current is not None and current.state == seen.state:
                return
            if current is None and seen.state == "none":
                return
            if current is not None:
                current.end = now
                del self._open[instance_id]
            if seen.state == "none":
                return
            new = Interval(instance_id, seen.state, now, seen.price_per_hour, seen.disk_gb,
                           starts=seen.state == "compute")
            self.intervals.append(new)
            self._open[instance_id] = new

    def sync(self, view: Mapping[str, Seen]) -> None:
        """The cloud's whole state now: every instance it shows, in its billing state; an
        instance it no longer shows is gone (not billed)."""
        for instance_id, seen in view.items():
            self.record(instance_id, seen)
        with self._lock:
            gone = [i for i in self._open if i not in view]
        for instance_id in gone:
            self.record(instance_id, Seen("none", 0.0, 0.0))

    def state_of(self, instance_id: str) -> str:
        with self._lock:
            current = self._open.get(instance_id)
        return current.state if current is not None else "none"

    def instances(self) -> list[str]:
        return sorted({i.instance_id for i in self.intervals})

    def parts(self, at: float | None = None, instance_id: str | None = None) -> Parts:
        """What has been billed by ``at`` (default now); open intervals run until ``at``."""
        at = self.clock() if at is None else at
        r = self.rules
        out = Parts()
        with self._lock:
            chosen = [i for i in self.intervals
                      if instance_id is None or i.instance_id == instance_id]
        # a start's minimum spans the compute intervals that follow it without a stop
        for iv in chosen:
            end = at if iv.end is None else min(iv.end, at)
            seconds = max(0.0, end - iv.start)
            if iv.start > at:
                continue
            out.disk += iv.disk_gb * r.disk_per_gb_month * seconds / MONTH_S
            if iv.state == "compute":
                billed = seconds
                if iv.starts and r.min_s:
                    billed = max(billed, r.min_s)
                billed = math.ceil(billed / r.step_s - 1e-9) * r.step_s
                out.running += iv.price_per_hour * billed / 3600.0
            elif iv.state == "keep":
                out.keep += iv.price_per_hour * seconds / 3600.0
        return out

    def total(self, at: float | None = None) -> float:
        return self.parts(at).total

    def rate_per_hour(self) -> float:
        """What the instances still cost per hour now (0: nothing bills any more)."""
        r = self.rules
        rate = 0.0
        with self._lock:
            for iv in self._open.values():
                rate += iv.disk_gb * r.disk_per_gb_month * 3600.0 / MONTH_S
                if iv.state in ("compute", "keep"):
                    rate += iv.price_per_hour
        return rate

    def step_cost(self, price_per_hour: float) -> float:
        """One billing step at ``price_per_hour``: the cloud's minimum, else its step, and at
        least one minute (the matrix's clock step; EC2's minimum)."""
        return price_per_hour * max(self.rules.min_s, self.rules.step_s, 60.0) / 3600.0


# ------------------------------------------------------------------- each cloud's states

def tencent_state(raw: Mapping[str, object]) -> str:
    """A CVM instance's billing state from ``InstanceState`` and ``StopChargingMode``."""
    state = str(raw.get("InstanceState", ""))
    if state in ("RUNNING", "STARTING", "STOPPING", "REBOOTING"):
        return "compute"
    if state == "STOPPED":
        return "disk" if raw.get("StopChargingMode") == "STOP_CHARGING" else "keep"
    return "none"  # PENDING, LAUNCH_FAILED, TERMINATING (billing has ended), gone


def tencent_view(standin: object) -> dict[str, Seen]:
    """The Tencent stand-in's instances as the bill sees them (caller holds its lock)."""
    from tencent_standin import TYPES  # the stand-in's own price table

    out: dict[str, Seen] = {}
    for iid, raw in standin.state.instances.items():  # type: ignore[attr-defined]
        itype = str(raw["InstanceType"])
        zone = str(raw["Placement"]["Zone"])
        charge = str(raw["InstanceChargeType"])
        price = standin.price(zone, itype, charge) if itype in TYPES else 0.0  # type: ignore[attr-defined]
        disk = float((raw.get("SystemDisk") or {}).get("DiskSize") or 0)
        out[iid] = Seen(tencent_state(raw), float(price), disk)
    return out


def aliyun_state(raw: Mapping[str, object]) -> str:
    """An ECS instance's billing state from ``Status``, ``StoppedMode`` and its locks."""
    status = str(raw.get("Status", ""))
    locks = (raw.get("OperationLocks") or {}).get("LockReason") or []  # type: ignore[union-attr]
    if any(lock.get("LockReason") == "Recycling" for lock in locks):
        return "none"  # a reclaimed spot machine: ECS has taken it back
    if status in ("Running", "Starting", "Stopping"):
        return "compute"
    if status == "Stopped":
        return "disk" if raw.get("StoppedMode") == "StopCharging" else "keep"
    return "none"  # Pending, released


__all__ = ["BILLING_STATES", "Bill", "Clock", "Interval", "Parts", "RULES", "Rules", "Seen",
           "aliyun_state", "tencent_state", "tencent_view"]
