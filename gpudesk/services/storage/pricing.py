"""What a run's folder costs: GB-month storage and data out to the laptop, per cloud/region.

Only prices read from the cloud's own price list or price page are used, each with its
source and date. AWS S3's come from AWS's public Price List (the ``AmazonS3`` offer,
:mod:`.s3_price_list`), read into a cache off the GUI thread; the lookups here only read
that cache, so they are cheap enough for a widget. Where no price was read, the lookup
says why and the cost is None: a guessed price is worse than an honest "unknown"
(docs/storage.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from datetime import datetime

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.said import Said
from gpudesk.services.storage import s3_price_list

GB = 1024**3

MSG_NO_PRICE = QT_TRANSLATE_NOOP(
    "Storage", "No {what} price for {cloud} in {region} was read from the cloud's price "
    "page, so gpudesk shows no figure rather than a guess.")
MSG_NO_PRICE_LIST = QT_TRANSLATE_NOOP(
    "Storage", "No {what} price for {cloud} in {region}: this cloud publishes no price "
    "list that can be read without an account, so gpudesk shows no figure rather than a "
    "guess.")
MSG_LIST_NOT_READ = QT_TRANSLATE_NOOP(
    "Storage", "No {what} price for {cloud} in {region} yet: AWS's public price list "
    "(AmazonS3) has not been read for this region. Tools → Refresh prices from my clouds, "
    "gpudesk spend and gpudesk outputs read it.")
MSG_LIST_FAILED = QT_TRANSLATE_NOOP(
    "Storage", "No {what} price for {cloud} in {region}: AWS's public price list "
    "(AmazonS3) could not be read ({detail}), so gpudesk shows no figure rather than a "
    "guess.")
MSG_NOT_IN_LIST = QT_TRANSLATE_NOOP(
    "Storage", "No {what} price for {cloud} in {region}: AWS's price list for S3 there "
    "(published {published}) gives no single such price.")
WHAT_STORAGE = QT_TRANSLATE_NOOP("Storage", "storage (GB-month)")
WHAT_DATA_OUT = QT_TRANSLATE_NOOP("Storage", "data-out")
WHAT_TIER1 = QT_TRANSLATE_NOOP("Storage", "PUT, COPY, POST or LIST request")
WHAT_TIER2 = QT_TRANSLATE_NOOP("Storage", "GET request")


@dataclass(frozen=True)
class Price:
    amount: float  # per GB (GiB) per month for storage, per GB for data out, per request
    currency: str
    source: str
    as_of: date  # the price list's publication date (or the page's date)


@dataclass(frozen=True)
class PriceLookup:
    price: Price | None
    reason: str = ""  # why price is None (a Said, translated where shown)


@dataclass(frozen=True)
class RequestPrices:
    """Per-request prices (Tier1 PUT/COPY/POST/LIST, Tier2 GET and others): counted runs
    are priced with them (usage.py)."""

    tier1: PriceLookup  # PUT, COPY, POST, LIST
    tier2: PriceLookup  # GET and all other requests


# The currency each cloud bills a bucket in (its own price pages: USD for AWS, CNY on
# Tencent Cloud's and Alibaba Cloud's China sites); costs in two currencies never add up.
CURRENCY: dict[str, str] = {"aws": "USD", "tencent": "CNY", "aliyun": "CNY"}

# Standard-class storage prices bundled with gpudesk, per GB-month: none. AWS's are read
# at run time from the public Price List (the AmazonS3 offer, s3_price_list) with its
# publication date. Tencent Cloud and Alibaba Cloud publish no price list that can be
# read without an account (their price APIs, COS's and OSS's included, need signed
# calls), and their price pages were not readable here (docs/storage.md, "Cost"):
# searched on 2026-12-05,
# - Tencent Cloud: the COS billing pages (tencentcloud.com/document/product/436/40099,
#   /16871, /32534, /54354) give the billing rules but link to the price table
#   (cloud.tencent.com/document/product/436/6239), which is not in the stored pages;
# - Alibaba Cloud: alibabacloud.com/help/en/oss/product-overview/storage-fees gives a
#   Standard LRS figure only as a worked example for no named region; the price page
#   (aliyun.com/price/product#/oss) is not stored.
STORAGE_PRICES: dict[tuple[str, str], Price] = {}
# Data out to the internet, first paid tier: the AWS Price List gpudesk already bundles
# (resources/catalog/region_rates.csv, published 2025-06-01); S3 data out is billed at
# the same internet data-transfer rate as EC2's. The AmazonS3 offer's own figure, when
# the file carries one, replaces it (data_out_price).
_AWS_LIST = "AWS Price List, data transfer out to the internet, first paid tier"
DATA_OUT_PRICES: dict[tuple[str, str], Price] = {
    ("aws", region): Price(0.09, "USD", _AWS_LIST, date(2025, 6, 1))
    for region in ("us-east-1", "us-west-2", "eu-west-1")
}


def _unknown(template: str, what: str, cloud: str, region: str, **values: object) -> PriceLookup:
    return PriceLookup(None, Said("Storage", template, what=Said("Storage", what), cloud=cloud,
                                  region=region, **values))


def _day(t: float) -> str:
    return datetime.fromtimestamp(t).date().isoformat()


def _source(read: s3_price_list.S3Prices) -> str:
    """The offer file and when it was read; a later read that failed is said too."""
    text = f"AWS Price List {read.url} (read {_day(read.fetched_at)}"
    failed = s3_price_list.failure(read.region)
    if failed is not None and failed[0] > read.fetched_at:
        text += f"; reading it again on {_day(failed[0])} failed: {failed[1]}"
    return text + ")"


def _from_list(what: str, amount: float | None, region: str) -> PriceLookup:
    """An AWS price from the cached AmazonS3 offer, or why there is none."""
    read = s3_price_list.load(region)
    if read is None:
        failed = s3_price_list.failure(region)
        if failed is not None:
            return _unknown(MSG_LIST_FAILED, what, "aws", region, detail=failed[1])
        return _unknown(MSG_LIST_NOT_READ, what, "aws", region)
    if amount is None:
        return _unknown(MSG_NOT_IN_LIST, what, "aws", region, published=read.published)
    return PriceLookup(Price(amount, "USD", _source(read), read.published_date))


def storage_price(cloud: str, region: str) -> PriceLookup:
    """Standard-class storage per GB-month (GiB, as the clouds bill it)."""
    found = STORAGE_PRICES.get((cloud, region))
    if found is not None:
        return PriceLookup(found)
    if cloud != "aws":
        return _unknown(MSG_NO_PRICE_LIST, WHAT_STORAGE, cloud, region)
    read = s3_price_list.load(region)
    return _from_list(WHAT_STORAGE, read.storage_gb_month if read else None, region)


def data_out_price(cloud: str, region: str) -> PriceLookup:
    """Data out to the internet per GB: the AmazonS3 offer's own when it has one, else the
    bundled AWS Price List figure."""
    read = s3_price_list.load(region) if cloud == "aws" else None
    if read is not None and read.transfer_out_gb is not None:
        return PriceLookup(Price(read.transfer_out_gb, "USD", _source(read),
                                 read.published_date))
    found = DATA_OUT_PRICES.get((cloud, region))
    if found is not None:
        return PriceLookup(found)
    if cloud != "aws":
        return _unknown(MSG_NO_PRICE_LIST, WHAT_DATA_OUT, cloud, region)
    return _unknown(MSG_NO_PRICE, WHAT_DATA_OUT, cloud, region)


def request_prices(cloud: str, region: str) -> RequestPrices:
    """Per-request prices (USD per request on AWS), with source and date where read."""
    if cloud != "aws":
        return RequestPrices(_unknown(MSG_NO_PRICE_LIST, WHAT_TIER1, cloud, region),
                             _unknown(MSG_NO_PRICE_LIST, WHAT_TIER2, cloud, region))
    read = s3_price_list.load(region)
    return RequestPrices(_from_list(WHAT_TIER1, read.tier1_request if read else None, region),
                         _from_list(WHAT_TIER2, read.tier2_request if read else None, region))


def monthly_cost(stored_bytes: int, price: Price | None) -> float | None:
    """A month of keeping ``stored_bytes`` at ``price`` (None when the price is unknown)."""
    return None if price is None else stored_bytes / GB * price.amount


def data_out_cost(sent_bytes: int, price: Price | None) -> float | None:
    """Downloading ``sent_bytes`` to the laptop (same-region traffic is free; this is not)."""
    return None if price is None else sent_bytes / GB * price.amount
