"""S3 list prices from AWS's public Price List (the ``AmazonS3`` offer): no account, no keys.

The same bulk offer files as :mod:`gpudesk.services.cloud.aws_price_list` reads for
EC2, offer ``AmazonS3``, one per region:
``https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonS3/current/<region>/index.csv``
(five metadata rows with ``"Publication Date"``, a header, one row per price
dimension; https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/reading-service-price-list-file-for-services.html).
gpudesk keeps, from on-demand rows in USD:

* S3 Standard storage: ``Storage Class`` ``General Purpose``, ``Volume Type``
  ``Standard``, usage type ``[<REGION>-]TimedStorage-ByteHrs``, unit ``GB-Mo``, the
  tier with ``StartingRange`` 0 (a run's folder is far below the first tier's end);
* requests: group ``S3-API-Tier1`` (PUT, COPY, POST, LIST) and ``S3-API-Tier2`` (GET
  and all others), usage type ``[<REGION>-]Requests-Tier1/2``, unit ``Requests``,
  USD per request;
* data out to the internet (``AWS Outbound`` to ``External``), first paid tier, only
  if the file carries it (AWS publishes it in the ``AWSDataTransfer`` offer);
* data out to another AWS region (``InterRegion Outbound``, ``From Region Code`` this
  region, ``To Region Code`` the other), USD per GB, one figure per destination: what a
  dataset's bucket-to-bucket copy to a machine's region costs (``dataset_copy``).

Rows are matched on the product columns when the file fills them and on the usage type
otherwise: S3's file leaves ``Product Family`` empty on many rows, so it is not used.
A first-tier storage price that is missing or not one single figure makes the file
unusable (ValueError): a guess is worse than "unknown".

Each answer is cached per region (``aws-s3-price-list-<region>.json`` in the cache
folder) and reused for a day; a failed refresh keeps the cached answer and is noted
beside it (``….failed.json``: when and why) so that the cost line can say the price is
an older read, or why there is none.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import time
from collections.abc import Callable
from collections.abc import Iterable
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from datetime import date
from datetime import datetime
from pathlib import Path
from typing import IO
from typing import Any

from gpudesk.services.cloud import aws_price_list
from gpudesk.services.core.paths import cache_dir

log = logging.getLogger(__name__)

OFFER = "AmazonS3"
TIMEOUT_S = 20.0  # the region's S3 file is small; the CLI waits at most this long
MAX_AGE_S = 24 * 3600.0  # AWS republishes offers often; a day-old read is fresh enough
RETRY_AFTER_S = 15 * 60.0  # after a failed read the CLI does not wait on another for this long
STANDARD = ("General Purpose", "Standard")  # (Storage Class, Volume Type) of S3 Standard
TIER_GROUPS = {"S3-API-Tier1": "tier1", "S3-API-Tier2": "tier2"}

Opener = Callable[[str, float], IO[bytes]]


@dataclass(frozen=True)
class S3Prices:
    """One region's S3 list prices, as the AmazonS3 offer published them."""

    region: str
    published: str  # YYYY-MM-DD, the file's "Publication Date"
    url: str  # the offer file read
    fetched_at: float  # when it was read (epoch seconds)
    storage_gb_month: float  # S3 Standard, first tier, USD per GB-month (GiB, as AWS bills)
    tier1_request: float | None = None  # PUT/COPY/POST/LIST, USD per request
    tier2_request: float | None = None  # GET and all other requests, USD per request
    transfer_out_gb: float | None = None  # to the internet, first paid tier, USD per GB
    # to another AWS region, USD per GB, by destination region code
    inter_region_gb: dict[str, float] = field(default_factory=dict)

    @property
    def published_date(self) -> date:
        return date.fromisoformat(self.published)

    @property
    def fetched_date(self) -> date:
        return datetime.fromtimestamp(self.fetched_at).date()


def offer_url(region: str) -> str:
    base = os.environ.get(aws_price_list.BASE_ENV, "").strip().rstrip("/") or aws_price_list.BASE
    return aws_price_list.URL.format(base=base, offer=OFFER, region=region)


def _usage_is(row: dict[str, str], suffix: str) -> bool | None:
    """Whether the row's usage type is ``suffix`` (region prefix allowed); None if blank."""
    usage = row.get("usageType", "")
    if not usage:
        return None
    return usage == suffix or usage.endswith("-" + suffix)


def _number(text: str | None) -> float | None:
    try:
        return float(text or "")
    except ValueError:
        return None


def _is_standard_storage(row: dict[str, str]) -> bool:
    product = (row.get("Storage Class", ""), row.get("Volume Type", ""))
    by_product = None if product == ("", "") else product == STANDARD
    by_usage = _usage_is(row, "TimedStorage-ByteHrs")
    if by_product is None and by_usage is None:
        return False  # nothing says what this row is
    return by_product is not False and by_usage is not False and row.get("Unit") == "GB-Mo"


def _request_tier(row: dict[str, str]) -> str | None:
    if row.get("Unit") != "Requests":
        return None
    group = row.get("Group", "")
    if group:
        return TIER_GROUPS.get(group)
    for name in ("tier1", "tier2"):
        if _usage_is(row, f"Requests-{name.title()}"):
            return name
    return None


def _one(prices: set[float]) -> float | None:
    return next(iter(prices)) if len(prices) == 1 else None


def parse_offer_csv(lines: Iterable[str], region: str, url: str,
                    fetched_at: float | None = None) -> S3Prices:
    """The prices gpudesk uses from one AmazonS3 offer file; ValueError if it has no single
    first-tier S3 Standard storage price or is not an offer file."""
    stream = iter(lines)
    meta, header = aws_price_list._metadata(stream)
    if not header or "PricePerUnit" not in header:
        raise ValueError("not an AWS price list offer file (no PricePerUnit column)")
    if meta.get("OfferCode", OFFER) != OFFER:
        raise ValueError(f"offer file of {meta.get('OfferCode')}, not {OFFER}")
    published = aws_price_list._published(meta)
    if not published:
        raise ValueError("the offer file has no publication date")
    storage: set[float] = set()
    requests: dict[str, set[float]] = {"tier1": set(), "tier2": set()}
    transfer: list[tuple[float, float]] = []
    inter_region: dict[str, set[float]] = {}
    for values in csv.reader(stream):
        row = dict(zip(header, values, strict=False))
        if row.get("TermType") != "OnDemand" or row.get("Currency", "USD") != "USD":
            continue
        codes = {row.get("Region Code", ""), row.get("From Region Code", "")} - {""}
        if codes and region not in codes:
            continue  # another region's row (a file may carry inter-region ones)
        price, start = _number(row.get("PricePerUnit")), _number(row.get("StartingRange") or "0")
        if price is None or start is None:
            continue
        if _is_standard_storage(row):
            if start == 0:
                storage.add(price)
        elif (tier := _request_tier(row)) is not None:
            requests[tier].add(price)
        elif row.get("Transfer Type") == "AWS Outbound" and row.get("To Location") == "External" \
                and row.get("Unit") == "GB" and price > 0:
            transfer.append((start, price))
        elif row.get("Transfer Type") == "InterRegion Outbound" and row.get("Unit") == "GB" \
                and row.get("From Region Code") == region and row.get("To Region Code"):
            inter_region.setdefault(row["To Region Code"], set()).add(price)
    amount = _one(storage)
    if amount is None:
        raise ValueError(f"{len(storage)} first-tier S3 Standard storage prices in the "
                         f"offer for {region}, not one")
    return S3Prices(region, published, url, time.time() if fetched_at is None else fetched_at,
                    amount, _one(requests["tier1"]), _one(requests["tier2"]),
                    min(transfer)[1] if transfer else None,
                    {to: one for to, found in sorted(inter_region.items())
                     if (one := _one(found)) is not None})


def _open(url: str, timeout: float) -> IO[bytes]:
    import urllib.request  # here, not at start-up: http.client and email are ~15 ms

    return urllib.request.urlopen(url, timeout=timeout)  # type: ignore[no-any-return]  # noqa: S310


def fetch(region: str, *, timeout: float = TIMEOUT_S, opener: Opener | None = None) -> S3Prices:
    """Read ``region``'s AmazonS3 offer file now; raise OSError/ValueError."""
    url = offer_url(region)
    with (opener or _open)(url, timeout) as handle:
        return parse_offer_csv(aws_price_list._lines(handle), region, url)


# --------------------------------------------------------------------------- cache


def cache_file(directory: Path, region: str) -> Path:
    return directory / f"aws-s3-price-list-{region}.json"


def save(directory: Path, prices: S3Prices) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    path = cache_file(directory, prices.region)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(asdict(prices)), encoding="utf-8")
    tmp.replace(path)


def load(region: str, directory: Path | None = None) -> S3Prices | None:
    """The cached answer for ``region``; None when absent or unreadable."""
    try:
        data: dict[str, Any] = json.loads(
            cache_file(directory or cache_dir(), region).read_text("utf-8"))
        tier1, tier2, out = (None if data.get(k) is None else float(data[k])
                             for k in ("tier1_request", "tier2_request", "transfer_out_gb"))
        prices = S3Prices(
            str(data["region"]), str(data["published"]), str(data["url"]),
            float(data["fetched_at"]), float(data["storage_gb_month"]), tier1, tier2, out,
            {str(to): float(v) for to, v in dict(data.get("inter_region_gb") or {}).items()})
        prices.published_date  # noqa: B018 - a bad date makes the file unreadable
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return prices if prices.region == region else None


def _failure_file(directory: Path, region: str) -> Path:
    return directory / f"aws-s3-price-list-{region}.failed.json"


def failure(region: str, directory: Path | None = None) -> tuple[float, str] | None:
    """When and why the last read of ``region`` failed (None: the last read worked)."""
    try:
        data = json.loads(_failure_file(directory or cache_dir(), region).read_text("utf-8"))
        return float(data["at"]), str(data["why"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def refresh(region: str, *, directory: Path | None = None, max_age_s: float = MAX_AGE_S,
            timeout: float = TIMEOUT_S, opener: Opener | None = None) -> S3Prices | None:
    """``region``'s prices: the cached read when younger than ``max_age_s``, else read now.
    A failed read keeps the cached answer (None without one) and is noted with why."""
    folder = directory or cache_dir()
    cached = load(region, folder)
    if cached is not None and time.time() - cached.fetched_at < max_age_s:
        return cached
    try:
        prices = fetch(region, timeout=timeout, opener=opener)
    except (OSError, ValueError) as exc:
        why = type(exc).__name__ if isinstance(exc, OSError) else str(exc)
        log.warning("AWS price list %s %s: %s", OFFER, region, why)
        folder.mkdir(parents=True, exist_ok=True)
        _failure_file(folder, region).write_text(
            json.dumps({"at": time.time(), "why": why}), encoding="utf-8")
        return cached
    save(folder, prices)
    _failure_file(folder, region).unlink(missing_ok=True)
    return prices


def refresh_regions(regions: Iterable[str], **kwargs: Any) -> dict[str, S3Prices | None]:
    """:func:`refresh` for each region (one after another: each file is small)."""
    return {region: refresh(region, **kwargs) for region in sorted(set(regions)) if region}


def ensure_fresh(regions: Iterable[str], *, timeout: float = TIMEOUT_S) -> None:
    """Before the CLI prices a bucket: read each region whose cached answer is missing or
    older than a day, waiting at most ``timeout`` per file. A region whose read failed in
    the last ``RETRY_AFTER_S`` is not asked again; offline, the older read (or "unknown"
    with the reason) stands."""
    now = time.time()
    due = [r for r in set(regions)
           if r and ((failed := failure(r)) is None or now - failed[0] >= RETRY_AFTER_S)]
    refresh_regions(due, timeout=timeout)
