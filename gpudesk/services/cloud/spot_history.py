"""How a spot price moved, per zone, and when in the day and week it is cheapest.

EC2's DescribeSpotPriceHistory keeps 90 days, ECS's 30 ("the time span between
the start time and the end time cannot exceed 30 days"); CVM keeps none, so a
Tencent history is one point: the price now. The hour-of-day and day-of-week
bands are time-weighted means (a price that held for six hours counts six times
one that held for one), in UTC, to answer "is it cheaper at night?".
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from datetime import UTC
from datetime import datetime
from typing import Any

from gpudesk.services.cloud.providers.base import PricePoint
from gpudesk.services.cloud.providers.base import Provider

HISTORY_DAYS = {"aws": 90, "aliyun": 30, "tencent": 0}
MARGIN_S = 3600.0
SOURCES = {"aws": "EC2 DescribeSpotPriceHistory", "aliyun": "ECS DescribeSpotPriceHistory",
           "tencent": "CVM InquiryPriceRunInstances (no history kept: the price now)"}


@dataclass(frozen=True)
class SpotHistory:
    provider: str
    region: str
    instance_type: str
    since: float  # epoch seconds
    until: float
    zones: dict[str, list[PricePoint]] = field(default_factory=dict)  # zone -> oldest first
    source: str = ""

    def hour_of_day(self) -> list[float | None]:
        """24 time-weighted mean prices (UTC hour 0..23), over every zone; None: no data."""
        return _bands(self, 24, lambda t: datetime.fromtimestamp(t, UTC).hour)

    def day_of_week(self) -> list[float | None]:
        """7 time-weighted mean prices, Monday first (UTC)."""
        return _bands(self, 7, lambda t: datetime.fromtimestamp(t, UTC).weekday())

    def to_json(self) -> dict[str, Any]:
        return {"provider": self.provider, "region": self.region,
                "instance_type": self.instance_type,
                "since": datetime.fromtimestamp(self.since, UTC).isoformat(),
                "until": datetime.fromtimestamp(self.until, UTC).isoformat(),
                "source": self.source,
                "zones": {z: [{"at": datetime.fromtimestamp(p.at, UTC).isoformat(),
                               "price": p.price, "currency": p.currency} for p in points]
                          for z, points in sorted(self.zones.items())},
                "hour_of_day_utc": self.hour_of_day(), "day_of_week_utc": self.day_of_week()}


def _bands(history: SpotHistory, n: int, bucket: Any) -> list[float | None]:
    weight = [0.0] * n
    total = [0.0] * n
    for points in history.zones.values():
        for i, point in enumerate(points):
            start = max(point.at, history.since)
            end = points[i + 1].at if i + 1 < len(points) else history.until
            while start < end:  # split the step at each hour boundary
                step_end = min(end, (start // 3600 + 1) * 3600)
                b = bucket(start)
                weight[b] += step_end - start
                total[b] += point.price * (step_end - start)
                start = step_end
    return [round(total[i] / weight[i], 6) if weight[i] > 0 else None for i in range(n)]


def spot_zones(provider: Provider, region: str, instance_type: str) -> list[str]:
    """The zones where the cloud sells the type as spot (ECS: DescribeAvailableResource),
    else where it quotes a spot price for it now."""
    sells = getattr(provider, "spot_zones", None)
    if callable(sells):
        return sorted(sells(region, instance_type))
    return sorted({o.zone for o in provider.live_offers(region)
                   if o.market == "spot" and o.instance_type == instance_type and o.zone})


def price_history(provider: Provider, name: str, region: str, instance_type: str, *,
                  now: float, days: int | None = None,
                  zones: list[str] | None = None) -> SpotHistory:
    """Every spot price change of the type in each of its zones over the last ``days``
    (at most what the cloud keeps). Blocking; ProviderError as the provider raises it."""
    kept = HISTORY_DAYS.get(name, 0)
    span = kept if days is None else max(0, min(days, kept))
    # an hour short of the cloud's limit: the request reaches it a moment after ``now``
    # (ECS refuses a span over 30 days by its own clock)
    since = now - span * 86400 + (MARGIN_S if span else 0)
    wanted = zones if zones is not None else spot_zones(provider, region, instance_type)
    found = {z: provider.spot_price_history(region, z, instance_type, since) for z in wanted}
    return SpotHistory(name, region, instance_type, since, now,
                       {z: pts for z, pts in found.items() if pts},
                       f"{SOURCES.get(name, name)}, {span} days")


def history_from_account(name: str, region: str, instance_type: str, *, now: float,
                         days: int | None = None) -> SpotHistory:
    """:func:`price_history` with the account in the keyring (ProviderError without one)."""
    from gpudesk.services.cloud.accounts import provider_from_keyring  # noqa: PLC0415

    provider = provider_from_keyring(name)  # type: ignore[arg-type]
    return price_history(provider, name, region, instance_type, now=now, days=days)
