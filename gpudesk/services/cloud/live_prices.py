"""Refresh the bundled catalog's prices from the providers, keeping it as the fallback.

A live price replaces the bundled one only for the same provider, instance
type and region; the cheapest available zone sets the region's spot price.
Tencent quotes CNY; the catalog is in USD, converted at the user's rate.
AWS on-demand comes from the public price list (no account needed,
``aws_price_list``); EC2 spot from DescribeSpotPriceHistory with an account.
Whatever the providers did not answer keeps its bundled price and date. Where a
region's spot market answered without a quote for a type (no ``SPOTPAID`` item,
no EC2 spot price history), that type is not sold as spot there: it has no spot
price, whatever an earlier answer said. Where a region's own listing answered
without a type at all (CVM's DescribeZoneInstanceConfigInfos lists every type a
region sells, both charge types: ``LISTS_EVERY_TYPE``), the region sells it
neither way: its row is dropped, now and from the cache. Each refreshed offer's
``price_source`` says where each of its prices came from (the price list file and
its date).

Every answer is kept in a small cache (``live-prices.json``) so the next run
shows it as ``cached <date>`` instead of falling back to the bundle; a spot
price is only ever such a quote, never a fraction of on-demand. A spot quote
under 5 % of the on-demand price (moto's $0.00001) is not believed
(:mod:`spot_sanity`): the offer gets no spot price and its source says why, so a
launch counts the on-demand price, the most spot bills, instead.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from datetime import UTC
from datetime import date
from datetime import datetime
from datetime import time
from pathlib import Path

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud import aws_price_list
from gpudesk.services.cloud import spot_sanity
from gpudesk.services.cloud.accounts import ProviderFactory
from gpudesk.services.cloud.accounts import provider_from_keyring
from gpudesk.services.cloud.catalog import Catalog
from gpudesk.services.cloud.catalog import Offer
from gpudesk.services.cloud.credentials import configured_providers
from gpudesk.services.cloud.price_cache import apply_cache
from gpudesk.services.cloud.price_cache import not_sold_rows
from gpudesk.services.cloud.price_cache import save_cache
from gpudesk.services.cloud.providers.base import LiveOffer
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.base import ProviderName
from gpudesk.services.core.paths import cache_dir

MSG_PRICE_LIST = QT_TRANSLATE_NOOP(
    "ProviderError", "The AWS price list for {region} could not be read ({detail}); its "
    "bundled prices are shown, dated.")
log = logging.getLogger(__name__)
# Providers whose live answer for a region is its whole listing (every type it sells, on
# demand and spot): a type missing from an answer is not sold there at all. Not Alibaba
# Cloud: its answer leaves out a type whose DescribePrice failed, sold or not.
LISTS_EVERY_TYPE: tuple[ProviderName, ...] = ("tencent",)


@dataclass
class RefreshReport:
    catalog: Catalog
    updated: int = 0  # offers whose price changed source to "live"
    sold_out: list[str] = field(default_factory=list)  # "type region" with no zone available
    errors: dict[str, ProviderError] = field(default_factory=dict)  # "provider region" → why
    # "provider type region" whose region answered without listing the type: price kept
    # (dropped from the catalog where the provider lists every type, ``LISTS_EVERY_TYPE``)
    not_listed: list[str] = field(default_factory=list)


def merge_live(catalog: Catalog, live: list[LiveOffer], cny_per_usd: float,
               today: date | None = None,
               spot_asked: set[tuple[str, str]] | None = None,
               sources: dict[tuple[str, str], str] | None = None,
               listed: set[tuple[str, str]] | None = None
               ) -> tuple[Catalog, int, list[str]]:
    """``catalog`` with the live prices applied; (new catalog, offers updated, sold out).

    ``listed``: the (provider, region) pairs whose answer is the region's whole listing
    (``LISTS_EVERY_TYPE``); an offer there without any quote is not sold there either way
    and is left out of the new catalog (counted as updated).

    ``spot_asked``: the (provider, region) pairs whose spot market was asked in this
    refresh. There an offer without a spot quote is not sold as spot: its spot price is
    cleared, whatever an earlier answer said. Elsewhere (``None``: everywhere a quote
    came) a spot price is only ever this refresh's quote; none is kept from before
    under a "live" label. ``sources``: (provider, region) → where its on-demand prices
    came from, in words (the AWS price list's file and date); ``price_source`` says it.
    """
    today = today or date.today()
    by_key: dict[tuple[str, str, str], list[LiveOffer]] = {}
    for item in live:
        by_key.setdefault((item.provider, item.instance_type, item.region), []).append(item)
    asked = spot_asked if spot_asked is not None else {(o.provider, o.region) for o in live
                                                        if o.market == "spot"}
    offers: list[Offer] = []
    updated = 0
    sold_out: list[str] = []
    for offer in catalog.offers:
        quotes = by_key.get((offer.provider, offer.instance_type, offer.region))
        if not quotes and (offer.provider, offer.region) in (listed or set()):
            updated += 1  # the region sells it neither way: no row
            continue
        if not quotes:
            if offer.spot_price is not None and (offer.provider, offer.region) in asked:
                offer = replace(offer, spot_price=None)  # the cloud sells no spot of it there
                updated += 1
            offers.append(offer)
            continue
        usable = [q for q in quotes if q.available and q.price_per_hour > 0]
        if not usable:
            sold_out.append(f"{offer.instance_type} {offer.region}")
            offers.append(offer)
            continue

        def usd(q: LiveOffer) -> float:
            return q.price_per_hour / cny_per_usd if q.currency == "CNY" else q.price_per_hour

        ondemand = [q for q in usable if q.market == "on-demand"]
        price = min(usd(q) for q in ondemand) if ondemand else offer.ondemand_price
        quoted = [q for q in usable if q.market == "spot"]
        now = datetime.combine(today, time(), UTC).timestamp()
        doubts = {id(q): spot_sanity.doubt(q.provider, usd(q), now, price, now)
                  for q in quoted}
        spot = [q for q in quoted if not doubts[id(q)]]
        doubted = next((d for d in doubts.values() if d), "") if not spot else ""
        spot_price = min(usd(q) for q in spot) if spot else None
        new = replace(
            offer,
            ondemand_price=round(price, 6) if price is not None else None,
            spot_price=round(spot_price, 6) if spot_price is not None else None,
            price_source=_source(offer, ondemand, spot, today,
                                 (sources or {}).get((offer.provider, offer.region), ""),
                                 (offer.provider, offer.region) in asked, doubted),
            price_date=today, price_kind="live" if ondemand else offer.price_kind)
        updated += new != offer
        offers.append(new)
    return Catalog(catalog.gpus, tuple(offers)), updated, sold_out


def _source(offer: Offer, ondemand: list[LiveOffer], spot: list[LiveOffer], today: date,
            origin: str, spot_asked: bool, doubted: str = "") -> str:
    """Where each of the offer's prices came from, in words."""
    def where(quotes: list[LiveOffer]) -> str:
        zones = sorted({q.zone for q in quotes if q.zone})
        return ", ".join(zones) or offer.region

    parts: list[str] = []
    if ondemand:
        parts.append(f"on-demand: {origin or f'live from {offer.provider}'}, read "
                     f"{today.isoformat()} ({where(ondemand)})")
    if spot:
        parts.append(f"spot: live from {offer.provider} on {today.isoformat()} ({where(spot)})")
    elif doubted:
        parts.append(f"spot: none believed, {offer.provider}'s {doubted}")
    elif spot_asked:
        parts.append(f"spot: none, {offer.provider} quoted no spot price here")
    else:
        parts.append("spot: not asked (no account)")
    return "; ".join(parts) + f"; bundled: {offer.price_source}"


def price_list_offers(catalog: Catalog, opener: aws_price_list.Opener | None = None,
                      cache: Path | None = None
                      ) -> tuple[list[LiveOffer], dict[str, ProviderError],
                                 dict[tuple[str, str], str]]:
    """AWS on-demand list prices from the public price list, for every AWS region of the
    catalog (no keys): (offers, errors, (provider, region) → the file read and its date)."""
    offers: list[LiveOffer] = []
    errors: dict[str, ProviderError] = {}
    sources: dict[tuple[str, str], str] = {}
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
        sources[("aws", region)] = (f"AWS Price List {prices.source.split()[0]}, published "
                                    f"{prices.published or 'undated'}")
        offers += [LiveOffer("aws", region, "", itype, "on-demand", price, "USD")
                   for itype, price in sorted(prices.ondemand.items())]
    return offers, errors, sources


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
    if cache is not None:  # rows an earlier answer left out are asked about again
        catalog = not_sold_rows(cache, catalog)
    live: list[LiveOffer] = []
    report = RefreshReport(catalog)
    sources: dict[tuple[str, str], str] = {}
    spot_asked: set[tuple[str, str]] = set()  # regions whose spot market answered
    answered: set[tuple[str, str]] = set()  # (provider, region) whose on-demand answered
    if price_list:
        listed, errors, sources = await asyncio.to_thread(price_list_offers, catalog, opener,
                                                          cache)
        live += listed
        report.errors.update(errors)
        answered |= set(sources)
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
                spot_asked.add((name, region))
                if name != "aws":
                    answered.add((name, region))
            except ProviderError as error:
                log.warning("live prices %s %s: %s", name, region, error)
                report.errors[f"{name} {region}"] = error
    whole: set[tuple[str, str]] = {(name, region) for name, region in answered
                                   if name in LISTS_EVERY_TYPE}
    report.catalog, report.updated, report.sold_out = merge_live(
        catalog, live, cny_per_usd, spot_asked=spot_asked, sources=sources, listed=whole)
    quoted = {(o.provider, o.instance_type, o.region) for o in live if o.market == "on-demand"}
    report.not_listed = [f"{o.provider} {o.instance_type} {o.region}" for o in catalog.offers
                         if (o.provider, o.region) in answered
                         and (o.provider, o.instance_type, o.region) not in quoted]
    if cache is not None:
        kept = {(o.provider, o.instance_type, o.region) for o in report.catalog.offers}
        save_cache(cache, report.catalog, not_sold=[
            f"{o.provider} {o.instance_type} {o.region}" for o in catalog.offers
            if (o.provider, o.instance_type, o.region) not in kept])
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
    report = asyncio.run(refresh_prices(catalog, configured_providers(), cny_per_usd, providers,
                                        price_list=True, opener=opener, cache=directory))
    return report.catalog, report
