"""Refresh the bundled catalog's prices from the providers, keeping it as the fallback.

A live price replaces the bundled one only for the same provider, instance
type and region; the cheapest available zone sets the region's spot price.
Tencent quotes CNY; the catalog is in USD, converted at the user's rate.
AWS on-demand comes from the public price list (no account needed,
``aws_price_list``); EC2 spot from DescribeSpotPriceHistory with an account.
Whatever the providers did not answer keeps its bundled price and date.

Every answer is kept in a small cache (``live-prices.json``) so the next run
shows it as ``cached <date>`` instead of falling back to the bundle; a spot
price is only ever such a quote, never a fraction of on-demand.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud import aws_price_list
from gpudesk.services.cloud.accounts import ProviderFactory, provider_from_keyring
from gpudesk.services.cloud.catalog import Catalog, Offer
from gpudesk.services.cloud.credentials import CLOUD_PROVIDERS, CredentialError, load_credentials
from gpudesk.services.cloud.price_cache import apply_cache, save_cache
from gpudesk.services.cloud.providers.base import LiveOffer, ProviderError, ProviderName
from gpudesk.services.core.paths import cache_dir

MSG_PRICE_LIST = QT_TRANSLATE_NOOP(
    "ProviderError", "The AWS price list for {region} could not be read ({detail}); its "
    "bundled prices are shown, dated.")
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
            ondemand_price=round(min(ondemand), 6) if ondemand else offer.ondemand_price,
            spot_price=round(min(spot), 6) if spot else offer.spot_price,
            price_source=f"live from {offer.provider} on {today.isoformat()}"
                         f" ({', '.join(zones) or offer.region}); bundled: {offer.price_source}",
            price_date=today, price_kind="live" if ondemand else offer.price_kind)
        updated += new != offer
        offers.append(new)
    return Catalog(catalog.gpus, tuple(offers)), updated, sold_out


def price_list_offers(catalog: Catalog, opener: aws_price_list.Opener | None = None,
                      cache: Path | None = None) -> tuple[list[LiveOffer],
                                                          dict[str, ProviderError]]:
    """AWS on-demand list prices from the public price list, region by region (no keys)."""
    offers: list[LiveOffer] = []
    errors: dict[str, ProviderError] = {}
    types = {o.instance_type for o in catalog.offers if o.provider == "aws"}
    for region in catalog.regions("aws"):
        try:
            prices = aws_price_list.fetch_region(region, types, opener)
        except (OSError, ValueError) as exc:
            log.warning("AWS price list %s: %s", region, type(exc).__name__)
            errors[f"aws-price-list {region}"] = ProviderError(
                "network", MSG_PRICE_LIST, region=region, detail=type(exc).__name__)
            continue
        if cache is not None:
            aws_price_list.save(cache, prices)
        offers += [LiveOffer("aws", region, "", itype, "on-demand", price, "USD")
                   for itype, price in sorted(prices.ondemand.items())]
    return offers, errors


async def refresh_prices(catalog: Catalog, names: list[ProviderName], cny_per_usd: float,
                         providers: ProviderFactory = provider_from_keyring, *,
                         price_list: bool = False,
                         opener: aws_price_list.Opener | None = None,
                         cache: Path | None = None) -> RefreshReport:
    """Ask every provider with keys for every region the catalog lists for it.

    ``price_list``: also read AWS on-demand prices from the public price list (no
    account needed); the AWS provider's own on-demand figures are the bundle's and
    are not counted as live. ``cache``: keep the answers there (see :func:`apply_cache`).
    """
    live: list[LiveOffer] = []
    report = RefreshReport(catalog)
    if price_list:
        listed, errors = await asyncio.to_thread(price_list_offers, catalog, opener, cache)
        live += listed
        report.errors.update(errors)
    for name in names:
        try:
            provider = await asyncio.to_thread(providers, name)
        except ProviderError as error:
            report.errors[name] = error
            continue
        for region in catalog.regions(name):
            try:
                answer = await asyncio.to_thread(provider.live_offers, region)
                # EC2 quotes no on-demand price: those figures are the bundle's own.
                live += [o for o in answer if o.provider != "aws" or o.market == "spot"]
            except ProviderError as error:
                log.warning("live prices %s %s: %s", name, region, error)
                report.errors[f"{name} {region}"] = error
    report.catalog, report.updated, report.sold_out = merge_live(catalog, live, cny_per_usd)
    if cache is not None:
        save_cache(cache, report.catalog)
    return report


def prices_for_ranking(catalog: Catalog, *, refresh: bool, cny_per_usd: float | None = None,
                       cache: Path | None = None,
                       providers: ProviderFactory = provider_from_keyring,
                       opener: aws_price_list.Opener | None = None
                       ) -> tuple[Catalog, RefreshReport | None]:
    """The catalog to rank with: cached answers over the bundle, or fresh ones (``refresh``:
    the AWS price list, plus every provider whose keys are in the keyring)."""
    directory = cache if cache is not None else cache_dir()
    catalog = apply_cache(catalog, directory)
    if not refresh:
        return catalog, None
    if cny_per_usd is None:
        from gpudesk.services.core.settings import load_settings  # noqa: PLC0415

        rate = load_settings().cny_per_usd
        cny_per_usd = rate if rate > 0 else 7.2
    names: list[ProviderName] = []
    for name in CLOUD_PROVIDERS:
        try:
            if load_credentials(name) is not None:
                names.append(name)
        except CredentialError:
            continue
    report = asyncio.run(refresh_prices(catalog, names, cny_per_usd, providers,
                                        price_list=True, opener=opener, cache=directory))
    return report.catalog, report
