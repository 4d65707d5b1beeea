"""A pass-through HTTP proxy in front of moto that answers EC2 ``GetSpotPlacementScores``.

moto (5.2) does not implement the action. This proxy answers it the way the EC2 API
reference and botocore's model describe, and sends every other request to moto
unchanged. It holds the request to the documented limits botocore itself does not
check (botocore validates only minimums): ``TargetCapacity`` 1..2,000,000,000 and
required, ``RegionNames`` at most 10, ``InstanceTypes`` at most 1000, ``MaxResults``
10..1000, ``TargetCapacityUnitType`` one of vcpu/memory-mib/units, and
``InstanceTypes`` not together with ``InstanceRequirementsWithMetadata`` ("If you
specify InstanceRequirementsWithMetadata, you can't specify InstanceTypes."). A
violation is answered with EC2's ``InvalidParameterValue`` error document.

Scores (1..10) come from ``scores[(region, availability zone id)]``; a Region
whose zones have none scores 1, as EC2 answers for capacity it cannot place.
``asked`` records each request's form.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qs

from moto_proxy import MotoProxy

ERROR = ('<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>'
         '<Code>{code}</Code><Message>{message}</Message></Error></Errors>'
         '<RequestID>{request}</RequestID></Response>')
NS = "http://ec2.amazonaws.com/doc/2016-11-15/"


def _listed(form: dict[str, list[str]], name: str) -> list[str]:
    keys = sorted((k for k in form if k.startswith(name + ".")),
                  key=lambda k: int(k.rsplit(".", 1)[1]))
    return [form[k][0] for k in keys]


def violation(form: dict[str, list[str]]) -> str:
    """The documented limit a request breaks ("" when none)."""
    def number(name: str) -> int | None:
        try:
            return int(form[name][0]) if name in form else None
        except ValueError:
            return -1

    capacity = number("TargetCapacity")
    if capacity is None or not 1 <= capacity <= 2_000_000_000:
        return "TargetCapacity"
    if len(_listed(form, "RegionName")) > 10:
        return "RegionNames"
    types = _listed(form, "InstanceType")
    if len(types) > 1000:
        return "InstanceTypes"
    if types and any(k.startswith("InstanceRequirementsWithMetadata") for k in form):
        return "InstanceTypes"
    most = number("MaxResults")
    if most is not None and not 10 <= most <= 1000:
        return "MaxResults"
    unit = form.get("TargetCapacityUnitType", ["units"])[0]
    if unit not in ("vcpu", "memory-mib", "units"):
        return "TargetCapacityUnitType"
    return ""


class PlacementScores(MotoProxy):
    """``url`` is what ``AWS_ENDPOINT_URL`` takes."""

    def __init__(self, upstream: str) -> None:
        super().__init__(upstream)
        self.scores: dict[tuple[str, str], int] = {}
        self.asked: list[dict[str, list[str]]] = []
        self._lock = threading.Lock()

    def intercept(self, body: bytes) -> tuple[int, str] | None:
        form = parse_qs(body.decode("utf-8", "replace"))
        return self.answer(form) if form.get("Action") == ["GetSpotPlacementScores"] else None

    def answer(self, form: dict[str, list[str]]) -> tuple[int, str]:
        with self._lock:
            self.asked.append(form)
            scores = dict(self.scores)
        bad = violation(form)
        if bad:
            return 400, ERROR.format(code="InvalidParameterValue",
                                     message=f"The value supplied for {bad} is not valid.",
                                     request=uuid.uuid4())
        regions = _listed(form, "RegionName") or sorted({r for r, _ in scores})
        single = form.get("SingleAvailabilityZone", ["false"])[0] == "true"
        items = []
        for region in regions:
            zones = {az: s for (r, az), s in scores.items() if r == region}
            if single:
                items += [f"<item><region>{region}</region><availabilityZoneId>{az}"
                          f"</availabilityZoneId><score>{s}</score></item>"
                          for az, s in sorted(zones.items())]
            else:
                items.append(f"<item><region>{region}</region><score>"
                             f"{max(zones.values(), default=1)}</score></item>")
        return 200, (f'<?xml version="1.0" encoding="UTF-8"?>\n<GetSpotPlacementScoresResponse '
                     f'xmlns="{NS}"><requestId>{uuid.uuid4()}</requestId>'
                     f'<spotPlacementScoreSet>{"".join(items)}</spotPlacementScoreSet>'
                     f'</GetSpotPlacementScoresResponse>')



@contextmanager
def placement_scores(upstream: str) -> Iterator[PlacementScores]:
    proxy = PlacementScores(upstream).start()
    try:
        yield proxy
    finally:
        proxy.stop()
