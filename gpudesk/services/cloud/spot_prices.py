"""Spot prices of running spot machines into the ledger, so spend uses the price in force.

EC2 bills a spot instance at the spot price of each moment, which moves while
it runs; the ledger only knows the price at launch. This asks the cloud for
every change since the last one recorded (EC2's DescribeSpotPriceHistory; CVM
keeps no history, so its spot price now) and records the changes, converted
to the ledger's USD. It is safe to call often: a price already in force is
not recorded again. A price :mod:`spot_sanity` does not believe (older than the
cloud's kept history, or under 5 % of on-demand, like moto's $0.00001 of 2006) is
never recorded: the spend keeps the price the launch counted, and the report says why.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from dataclasses import field

from gpudesk.services.cloud import spot_sanity
from gpudesk.services.cloud.accounts import ProviderFactory
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.cloud.providers.base import PricePoint
from gpudesk.services.cloud.providers.base import Provider
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.money.ledger import PriceChange
from gpudesk.services.money.spend import price_in_force

log = logging.getLogger(__name__)


@dataclass
class SpotPriceReport:
    machines: int = 0  # spot machines asked about
    recorded: int = 0  # price changes written to the ledger
    errors: dict[str, str] = field(default_factory=dict)  # ledger id -> the cloud's words
    doubted: dict[str, str] = field(default_factory=dict)  # ledger id -> why a price was refused


def _asked(machine: Machine) -> bool:
    return (machine.market == "spot" and machine.billing and bool(machine.zone)
            and machine.provider in ("aws", "tencent", "aliyun") and bool(machine.instance_type))


def spot_machines(ledger: Ledger) -> list[Machine]:
    """The billing spot machines whose price can be asked (zone and type known)."""
    return [m for m in ledger.machines(include_ended=False) if _asked(m)]


def in_usd(point: PricePoint, cny_per_usd: float) -> float | None:
    if point.currency == "USD":
        return point.price
    if point.currency == "CNY" and cny_per_usd > 0:
        return point.price / cny_per_usd
    return None


def record_spot_prices(ledger: Ledger, providers: ProviderFactory, cny_per_usd: float, *,
                       now: float | None = None) -> SpotPriceReport:
    """Record every spot price change of each billing spot machine since the last one known."""
    report = SpotPriceReport()
    cache: dict[str, Provider] = {}
    at_now = time.time() if now is None else now
    for machine in spot_machines(ledger):
        report.machines += 1
        try:
            provider = cache.get(machine.provider) or providers(
                machine.provider)  # type: ignore[arg-type]
            cache[machine.provider] = provider
            report.recorded += _record_one(ledger, provider, machine, cny_per_usd, at_now,
                                           report.doubted)
        except ProviderError as error:  # prices are a refinement: say so, keep the others
            log.warning("spot prices of %s: %s", machine.id, error)
            report.errors[machine.id] = str(error)
    return report


def on_demand_usd(machine: Machine) -> float | None:
    """The machine's on-demand price in USD to judge its spot prices by: the bundled
    catalog's for its type and region, else what its launch counted (None: neither)."""
    for offer in load_catalog().filter(provider=machine.provider, region=machine.region):
        if offer.instance_type == machine.instance_type and offer.ondemand_price:
            return offer.ondemand_price
    return machine.price_per_hour if machine.currency == "USD" and machine.price_per_hour > 0 \
        else None


def _record_one(ledger: Ledger, provider: Provider, machine: Machine, cny_per_usd: float,
                now: float, doubted: dict[str, str]) -> int:
    start = machine.launched_at or machine.created_at
    known = ledger.prices(machine.id)
    since = max([start, *(p.since for p in known)])
    points = provider.spot_price_history(machine.region, machine.zone, machine.instance_type,
                                         since)
    on_demand = on_demand_usd(machine)
    recorded = 0
    for point in points:
        price = in_usd(point, cny_per_usd)
        if price is None:
            continue
        why = spot_sanity.doubt(machine.provider, price, point.at, on_demand, now)
        if why:  # not the price in force: the launch's (or the last believed) price stays
            log.warning("spot price of %s refused: %s", machine.id, why)
            doubted[machine.id] = why
            continue
        at = min(max(point.at, since), now)  # the first point is the price in force at `since`
        in_force = price_in_force(known, at) if known else machine.price_per_hour
        if abs(price - in_force) < 1e-9:
            continue
        if not known:  # keep the launch price for the time before this change
            ledger.record_price(machine.id, machine.price_per_hour, since=machine.created_at)
            known = [PriceChange(machine.created_at, machine.price_per_hour)]
        price = round(price, 6)
        ledger.record_price(machine.id, price, since=at)
        known.append(PriceChange(at, price))
        recorded += 1
    return recorded
