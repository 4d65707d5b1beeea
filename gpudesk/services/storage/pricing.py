"""What a run's folder costs: GB-month storage and data out to the laptop, per cloud/region.

Only prices read from the cloud's own price page or price list are kept here, each with
its source and date. Where none was found, the lookup says so and the cost is None:
a guessed price is worse than an honest "unknown" (docs/storage.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.said import Said

GB = 1024**3

MSG_NO_PRICE = QT_TRANSLATE_NOOP(
    "Storage", "No {what} price for {cloud} in {region} was read from the cloud's price "
    "page, so gpudesk shows no figure rather than a guess.")
WHAT_STORAGE = QT_TRANSLATE_NOOP("Storage", "storage (GB-month)")
WHAT_DATA_OUT = QT_TRANSLATE_NOOP("Storage", "data-out")


@dataclass(frozen=True)
class Price:
    amount: float  # per GB (GiB) per month for storage, per GB for data out
    currency: str
    source: str
    as_of: date


@dataclass(frozen=True)
class PriceLookup:
    price: Price | None
    reason: str = ""  # why price is None (a Said, translated where shown)


# The currency each cloud bills a bucket in (its own price pages: USD for AWS, CNY on
# Tencent Cloud's and Alibaba Cloud's China sites); costs in two currencies never add up.
CURRENCY: dict[str, str] = {"aws": "USD", "tencent": "CNY", "aliyun": "CNY"}

# Standard-class storage, per GB-month: none read from a price page yet. Searched on
# 2026-12-05 (docs/storage.md, "What it costs"):
# - AWS: aws.amazon.com/s3/pricing/ as stored shows its price cells as unrendered
#   template tokens, and the bundled AWS Price List (resources/catalog) has no AmazonS3
#   rows; third-party articles quoting S3 Standard are not a source.
# - Tencent Cloud: the COS billing pages read (tencentcloud.com/document/product/436/
#   40099, /16871, /32534, /54354) give the billing rules (1 GB = 1024 MB, storage billed
#   from 5-minute samples, monthly price / 30 per day) but link to the price table
#   (cloud.tencent.com/document/product/436/6239), which is not in the stored pages.
# - Alibaba Cloud: alibabacloud.com/help/en/oss/product-overview/storage-fees gives a
#   Standard LRS figure only as a worked example for no named region, in USD for the
#   international site; the price page (aliyun.com/price/product#/oss) is not stored.
STORAGE_PRICES: dict[tuple[str, str], Price] = {}
# Data out to the internet, first paid tier: the AWS Price List gpudesk already bundles
# (resources/catalog/region_rates.csv, published 2025-06-01); S3 data out is billed at
# the same internet data-transfer rate as EC2's.
_AWS_LIST = "AWS Price List, data transfer out to the internet, first paid tier"
DATA_OUT_PRICES: dict[tuple[str, str], Price] = {
    ("aws", region): Price(0.09, "USD", _AWS_LIST, date(2025, 6, 1))
    for region in ("us-east-1", "us-west-2", "eu-west-1")
}


def _lookup(table: dict[tuple[str, str], Price], what: str, cloud: str,
            region: str) -> PriceLookup:
    found = table.get((cloud, region))
    if found is not None:
        return PriceLookup(found)
    return PriceLookup(None, Said("Storage", MSG_NO_PRICE, what=Said("Storage", what),
                                  cloud=cloud, region=region))


def storage_price(cloud: str, region: str) -> PriceLookup:
    return _lookup(STORAGE_PRICES, WHAT_STORAGE, cloud, region)


def data_out_price(cloud: str, region: str) -> PriceLookup:
    return _lookup(DATA_OUT_PRICES, WHAT_DATA_OUT, cloud, region)


def monthly_cost(stored_bytes: int, price: Price | None) -> float | None:
    """A month of keeping ``stored_bytes`` at ``price`` (None when the price is unknown)."""
    return None if price is None else stored_bytes / GB * price.amount


def data_out_cost(sent_bytes: int, price: Price | None) -> float | None:
    """Downloading ``sent_bytes`` to the laptop (same-region traffic is free; this is not)."""
    return None if price is None else sent_bytes / GB * price.amount
