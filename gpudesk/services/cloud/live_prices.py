"""Refresh the bundled catalog's prices from the providers, keeping it as the fallback.

A live price replaces the bundled one only for the same provider, instance
type and region; the cheapest available zone sets the region's spot price.
Tencent quotes CNY; the catalog is in USD, converted at the user's rate.
Whatever the providers did not answer keeps its bundled price and date.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, replace
from datetime import date

from gpudesk.services.cloud.accounts import ProviderFactory, provider_from_keyring
from gpudesk.services.cloud.catalog import Catalog, Offer
from gpudesk.services.cloud.providers.base import LiveOffer, ProviderError, ProviderName

log = logging.getLogger(__name__)


@dataclass
class RefreshReport:
    catalog: Catalog
    updated: int = 0  # offers whose price changed source to "live"
    sold_out: list[str] = field(default_factory=list)  # "type region" with no zone available
    errors: dict[str, ProviderError] = field(default_factory=dict)  # "provider region" → why


def merge_live(catalog: Catalog, live: list[LiveOffer], cny_per_usd: float,
               today: date | None = None) -> tuple[Catalog, int, list[str]]:
    """``catalog`` with the live prices applied; (new catalog, offers updated, sold out)."""
    today = today or date.today()
    by_key: dict[tuple[str, str, str], list[LiveOffer]] = {}
    for item in live:
        by_key.setdefault((item.provider, item.instance_type, item.region), []).append(item)
    offers: list[Offer] = []
    updated = 0
    sold_out: list[str] = []
    for offer in catalog.offers:
        quotes = by_key.get((offer.provider, offer.instance_type, offer.region))
        if not quotes:
            offers.append(offer)
            continue
        usable = [q for q in quotes if q.available and q.price_per_hour > 0]
        if not usable:
            sold_out.append(f"{offer.instance_type} {offer.region}")
            offers.append(offer)
            continue

        def usd(q: LiveOffer) -> float:
            return q.price_per_hour / cny_per_usd if q.currency == "CNY" else q.price_per_hour

        ondemand = [usd(q) for q in usable if q.market == "on-demand"]
        spot = [usd(q) for q in usable if q.market == "spot"]
        zones = sorted({q.zone for q in usable if q.zone})
        new = replace(
            offer,
            ondemand_price=round(min(ondemand), 4) if ondemand else offer.ondemand_price,
            spot_price=round(min(spot), 4) if spot else offer.spot_price,
            price_source=f"live from {offer.provider} on {today.isoformat()}"
                         f" ({', '.join(zones) or offer.region}); bundled: {offer.price_source}",
            price_date=today)
        updated += new != offer
        offers.append(new)
    return Catalog(catalog.gpus, tuple(offers)), updated, sold_out


async def refresh_prices(catalog: Catalog, names: list[ProviderName], cny_per_usd: float,
                         providers: ProviderFactory = provider_from_keyring) -> RefreshReport:
    """Ask every provider with keys for every region the catalog lists for it."""
    live: list[LiveOffer] = []
    report = RefreshReport(catalog)
    for name in names:
        try:
            provider = await asyncio.to_thread(providers, name)
        except ProviderError as error:
            report.errors[name] = error
            continue
        for region in catalog.regions(name):
            try:
                live += await asyncio.to_thread(provider.live_offers, region)
            except ProviderError as error:
                log.warning("live prices %s %s: %s", name, region, error)
                report.errors[f"{name} {region}"] = error
    report.catalog, report.updated, report.sold_out = merge_live(catalog, live, cny_per_usd)
    return report
