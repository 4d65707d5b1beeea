"""A bill for moto's EC2, which keeps none: intervals from moto's own instance states.

moto models EC2's instances (pending, running, stopping, stopped, shutting-down,
terminated) but no bill. :class:`Ec2Bill` reads moto's in-process EC2 state (the same
objects the moto server answers from) each time :meth:`Ec2Bill.sample` is called and
hands it to a :class:`cloud_bill.Bill` on the test's clock. The matrix samples after
every step of its clock and after every gpudesk call; the clock does not move in between,
so each change is billed from the moment (on that clock) it happened. Nothing is taken
from gpudesk: states from moto, prices from :data:`PRICES` (the cloud's list prices).

:meth:`Ec2Bill.os_shutdown` is what EC2 does when the OS of an instance powers off:
it follows the instance's ``InstanceInitiatedShutdownBehavior`` (``stop``, the default,
or ``terminate``), as moto stores it from RunInstances / ModifyInstanceAttribute.
A one-time spot instance is terminated whatever the behaviour says (EC2 ends it).

:class:`RefusingProxy` sits between boto3 and moto and answers chosen actions with
EC2's own error document, for a cloud that refuses a change (moto accepts everything).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from urllib.parse import parse_qs

from cloud_bill import Bill
from cloud_bill import Seen
from moto_proxy import MotoProxy

ACCOUNT = "123456789012"  # moto's default account
# USD/hour, us-east-1 Linux: on-demand from the EC2 price list (reference/clouds.md);
# spot is the bill's own figure, since moto's spot price history is a constant 0.00001.
PRICES: dict[tuple[str, str], float] = {
    ("g5.xlarge", "on-demand"): 1.006,
    ("g5.xlarge", "spot"): 0.45,
    ("g4dn.xlarge", "on-demand"): 0.526,
    ("g4dn.xlarge", "spot"): 0.22,
}
_STATES = {"running": "compute", "stopping": "disk", "stopped": "disk",
           "shutting-down": "disk", "pending": "none", "terminated": "none"}


def _backend(region: str) -> object:
    from moto.ec2.models import ec2_backends

    return ec2_backends[ACCOUNT][region]


class Ec2Bill:
    """EC2's bill in ``region``, sampled from moto's state on ``clock``."""

    def __init__(self, clock: Callable[[], float], region: str = "us-east-1") -> None:
        self.bill = Bill("aws", clock)
        self.region = region
        self._markets: dict[str, str] = {}  # instance id → market, once known

    def market(self, inst: object) -> str:
        """``spot`` or ``on-demand``. An Auto Scaling member runs in the market its launch
        template asks for (``InstanceMarketOptions.MarketType``), as EC2 runs it; moto's
        group launches do not mark such members spot, so the template is read (once: the
        template may be deleted with the group while its members are still billed)."""
        iid = str(inst.id)  # type: ignore[attr-defined]
        if iid in self._markets:
            return self._markets[iid]
        market = "spot" if getattr(inst, "lifecycle", None) == "spot" else "on-demand"
        template = getattr(getattr(inst, "autoscaling_group", None), "ec2_launch_template",
                           None)
        if market == "on-demand" and template is not None:
            try:
                data = _backend(self.region)._get_template_from_args(  # type: ignore[attr-defined]
                    {"LaunchTemplateId": template.id}).data
            except Exception:  # noqa: BLE001 - gone: the member was priced when first seen
                data = {}
            if (data.get("InstanceMarketOptions") or {}).get("MarketType") == "spot":
                market = "spot"
        self._markets[iid] = market
        return market

    def instances(self) -> list[object]:
        backend = _backend(self.region)
        return list(backend.all_instances())  # type: ignore[attr-defined]

    def view(self) -> dict[str, Seen]:
        out: dict[str, Seen] = {}
        for inst in self.instances():
            market = self.market(inst)
            price = PRICES.get((str(inst.instance_type), market), 0.0)  # type: ignore[attr-defined]
            disk = 0.0
            for mapping in (getattr(inst, "block_device_mapping", None) or {}).values():
                disk += float(getattr(mapping, "size", 0) or 0)
            state = _STATES.get(str(inst._state.name), "none")  # type: ignore[attr-defined]
            out[str(inst.id)] = Seen(state, price, disk)  # type: ignore[attr-defined]
        return out

    def sample(self) -> None:
        self.bill.sync(self.view())

    def os_shutdown(self, instance_id: str) -> str:
        """The OS of ``instance_id`` powered off: EC2 stops or terminates it, per its
        shutdown behaviour. Returns what EC2 did."""
        backend = _backend(self.region)
        inst = backend.get_instance(instance_id)  # type: ignore[attr-defined]
        behaviour = str(inst.instance_initiated_shutdown_behavior or "stop")
        if getattr(inst, "lifecycle", None) == "spot":
            behaviour = "terminate"
        if behaviour == "terminate":
            backend.terminate_instances([instance_id])  # type: ignore[attr-defined]
        else:
            backend.stop_instances([instance_id])  # type: ignore[attr-defined]
        self.sample()
        return behaviour

    def reclaim(self, instance_id: str) -> None:
        """EC2 takes a spot instance back (an interruption): terminated."""
        _backend(self.region).terminate_instances([instance_id])  # type: ignore[attr-defined]
        self.sample()

    def group_members(self, group_name: str) -> list[str]:
        """The ids of the Auto Scaling group's members moto counts (InService or Pending)."""
        group = _asg_backend(self.region).autoscaling_groups.get(group_name)  # type: ignore[attr-defined]
        if group is None:
            return []
        return [str(s.instance.id) for s in group.instance_states
                if s.lifecycle_state in ("InService", "Pending")]


def _asg_backend(region: str) -> object:
    from moto.autoscaling.models import autoscaling_backends

    return autoscaling_backends[ACCOUNT][region]


ERROR = ('<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>'
         '<Code>{code}</Code><Message>{message}</Message></Error></Errors>'
         '<RequestID>{request}</RequestID></Response>')


class RefusingProxy(MotoProxy):
    """A pass-through proxy to moto that answers ``refuse`` actions with an EC2 error."""

    def __init__(self, upstream: str) -> None:
        super().__init__(upstream)
        self.refuse: dict[str, tuple[str, str]] = {}  # action → (code, message)
        self.refused: list[str] = []

    def intercept(self, body: bytes) -> tuple[int, str] | None:
        action = (parse_qs(body.decode("utf-8", "replace")).get("Action") or [""])[0]
        if action not in self.refuse:
            return None
        code, message = self.refuse[action]
        self.refused.append(action)
        return 400, ERROR.format(code=code, message=message, request=uuid.uuid4())
