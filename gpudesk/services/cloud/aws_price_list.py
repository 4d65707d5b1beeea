"""AWS list prices from the public Price List (bulk offer files): no account, no keys.

AWS publishes one offer file per service and region, e.g.
``https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/us-east-1/index.csv``.
The CSV form is read here, line by line, because the EC2 file of a large region
is hundreds of megabytes: five metadata rows (``"Publication Date"`` among
them), a header, then one row per price dimension. gpudesk keeps:

* on-demand Linux instance hours: product family ``Compute Instance``, tenancy
  ``Shared``, operating system ``Linux``, licence ``No License required``,
  pre-installed software ``NA``, capacity status ``Used``, unit ``Hrs``;
* gp3 volume storage (``Storage``, volume API name ``gp3``, ``GB-Mo``);
* data out to the internet (``Data Transfer``, ``AWS Outbound`` to
  ``External``): the first paid tier. EC2's file may not carry it; it is also
  in the ``AWSDataTransfer`` offer.

The answer is dated by the file's own publication date and cached, so a price
shown later says "cached <date>", never "live".
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import time
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from datetime import date
from datetime import datetime
from pathlib import Path
from typing import IO
from typing import Any

log = logging.getLogger(__name__)

BASE = "https://pricing.us-east-1.amazonaws.com"
URL = "{base}/offers/v1.0/aws/{offer}/current/{region}/index.csv"
BASE_ENV = "GPUDESK_AWS_PRICE_LIST_URL"  # tests (and mirrors) serve the same paths elsewhere
OFFERS = ("AmazonEC2", "AWSDataTransfer")
TIMEOUT_S = 60

Opener = Callable[[str], IO[bytes]]


@dataclass(frozen=True)
class RegionPrices:
    """One region's list prices, as the price list published them on ``published``."""

    region: str
    published: str  # YYYY-MM-DD, the file's "Publication Date"
    ondemand: dict[str, float] = field(default_factory=dict)  # instance type → USD/hour
    storage_gb_month: float | None = None  # gp3, USD per GB-month
    transfer_out_gb: float | None = None  # to the internet, USD per GB (first paid tier)
    source: str = ""  # the URL(s) read

    @property
    def published_date(self) -> date:
        return date.fromisoformat(self.published)


def _metadata(lines: Iterator[str]) -> tuple[dict[str, str], list[str]]:
    """The rows before the header (``"Key","Value"``) and the header itself."""
    meta: dict[str, str] = {}
    for line in lines:
        row = next(csv.reader([line]))
        if len(row) == 2:
            meta[row[0]] = row[1]
            continue
        return meta, row
    return meta, []


def _published(meta: dict[str, str]) -> str:
    text = meta.get("Publication Date", "")
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).date().isoformat()
    except ValueError:
        return ""


def _price(row: dict[str, str]) -> float | None:
    try:
        value = float(row.get("PricePerUnit") or "")
    except ValueError:
        return None
    return value if row.get("Currency", "USD") == "USD" else None


def _is_linux_hour(row: dict[str, str]) -> bool:
    return (row.get("TermType") == "OnDemand" and row.get("Product Family") == "Compute Instance"
            and row.get("Tenancy") == "Shared" and row.get("Operating System") == "Linux"
            and row.get("License Model") in ("No License required", "")
            and row.get("Pre Installed S/W") in ("NA", "")
            and row.get("CapacityStatus") in ("Used", "") and row.get("Unit") == "Hrs")


def parse_offer_csv(lines: Iterable[str], region: str, types: set[str] | None = None,
                    into: RegionPrices | None = None) -> RegionPrices:
    """The prices gpudesk uses from one offer file (CSV lines), merged into ``into``."""
    stream = iter(lines)
    meta, header = _metadata(stream)
    if not header or "PricePerUnit" not in header:
        raise ValueError("not an AWS price list offer file (no PricePerUnit column)")
    prices = into or RegionPrices(region, _published(meta))
    ondemand = dict(prices.ondemand)
    storage, transfer = prices.storage_gb_month, prices.transfer_out_gb
    tiers: list[tuple[float, float]] = []
    # A large region's file holds millions of rows, most of them reserved terms and other
    # families: a substring test skips those before the CSV parser sees them.
    wanted = (line for line in stream if '"OnDemand"' in line and (
        '"Compute Instance"' in line or '"Storage"' in line or '"Data Transfer"' in line))
    for values in csv.reader(wanted):
        row = dict(zip(header, values, strict=False))
        if row.get("Region Code", region) != region and row.get("From Region Code",
                                                                 region) != region:
            continue
        price = _price(row)
        if price is None:
            continue
        family = row.get("Product Family", "")
        if _is_linux_hour(row):
            itype = row.get("Instance Type", "")
            if price > 0 and (types is None or itype in types):
                ondemand[itype] = price
        elif family == "Storage" and row.get("Volume API Name") == "gp3" \
                and row.get("Unit") == "GB-Mo" and row.get("TermType") == "OnDemand":
            storage = price
        elif family == "Data Transfer" and row.get("Transfer Type") == "AWS Outbound" \
                and row.get("To Location") == "External" and row.get("Unit") == "GB":
            try:
                tiers.append((float(row.get("StartingRange") or 0), price))
            except ValueError:
                continue
    paid = sorted(t for t in tiers if t[1] > 0)
    if paid:
        transfer = paid[0][1]
    published = prices.published or _published(meta)
    return RegionPrices(region, published, ondemand, storage, transfer, prices.source)


def _lines(handle: IO[bytes]) -> Iterator[str]:
    yield from io.TextIOWrapper(handle, encoding="utf-8-sig", newline="")


def fetch_region(region: str, types: set[str] | None = None,
                 opener: Opener | None = None) -> RegionPrices:
    """Read ``region``'s EC2 (and data transfer) offer files; raise OSError/ValueError."""
    def default_open(url: str) -> IO[bytes]:
        import urllib.request  # here, not at start-up: http.client and email are ~15 ms

        return urllib.request.urlopen(url, timeout=TIMEOUT_S)  # type: ignore[no-any-return]  # noqa: S310

    open_url = opener or default_open
    prices: RegionPrices | None = None
    urls: list[str] = []
    for offer in OFFERS:
        if prices is not None and prices.transfer_out_gb is not None:
            break  # EC2's own file carried data out already
        base = os.environ.get(BASE_ENV, "").strip().rstrip("/") or BASE
        url = URL.format(base=base, offer=offer, region=region)
        try:
            with open_url(url) as handle:
                prices = parse_offer_csv(_lines(handle), region, types, prices)
        except (OSError, ValueError) as exc:
            if prices is None:
                raise  # no instance prices at all: the region did not answer
            # The data-transfer file is a refinement: the instance prices read stand.
            log.warning("AWS price list %s %s: %s", offer, region, type(exc).__name__)
            continue
        urls.append(url)
    assert prices is not None
    return RegionPrices(prices.region, prices.published, prices.ondemand,
                        prices.storage_gb_month, prices.transfer_out_gb, " ".join(urls))


# --------------------------------------------------------------------------- cache


def cache_file(directory: Path, region: str) -> Path:
    return directory / f"aws-price-list-{region}.json"


def save(directory: Path, prices: RegionPrices) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    path = cache_file(directory, prices.region)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({**asdict(prices), "fetched_at": time.time()}), encoding="utf-8")
    tmp.replace(path)


def load(directory: Path, region: str) -> RegionPrices | None:
    """The cached answer for ``region``; None when absent or unreadable."""
    try:
        data: dict[str, Any] = json.loads(cache_file(directory, region).read_text("utf-8"))
        return RegionPrices(str(data["region"]), str(data["published"]),
                            {str(k): float(v) for k, v in data["ondemand"].items()},
                            data.get("storage_gb_month"), data.get("transfer_out_gb"),
                            str(data.get("source", "")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
