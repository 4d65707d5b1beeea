"""What a dataset's bytes cost (issue 32): kept, uploaded, copied between regions, fetched.

The month's spend shows data like compute: each figure with its price's source and date,
or "price not known" with the reason, never a guess (docs/storage.md, "Cost").

* **Storage.** A dataset's blobs are sampled into ``bucket-usage.json`` by every push,
  copy and removal (``datasets._note_usage``, entry ``data:<store>``), so their GB-months
  and requests are already in the month's bucket lines (``storage.usage``);
  :func:`storage_per_month` prices one dataset for the Data page.
* **Transfers** are kept here, in ``data-transfers.json`` in the data folder: the
  one-time upload (data in: free on all three clouds, by their own pages below), each
  bucket-to-bucket copy between regions (billed as data out of the source region: AWS's
  ``InterRegion Outbound`` price from the AmazonS3 offer, ``s3_price_list``), and
  each run's fetch from its bucket onto a machine, once (``runs/run_downloads.py``).

Which traffic is free, by each cloud's own page (read on :data:`PAGES_READ`):

* AWS, https://aws.amazon.com/s3/pricing/ (Data Transfer): data in from the internet,
  between buckets in one region, and from a bucket to any AWS service in its region;
* Tencent Cloud, https://intl.cloud.tencent.com/document/product/436/33776 (COS traffic
  billable items): public-network upstream, and private-network traffic (products in one
  region reach each other over the private network by default);
* Alibaba Cloud, https://www.alibabacloud.com/help/doc-detail/173535.htm (OSS traffic):
  inbound traffic, and outbound traffic over the *internal* network only. gpudesk's
  machines reach OSS at its public S3 endpoint (``agent/store.py``), which OSS bills as
  outbound internet traffic: no price is readable, so it is said unknown.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass
from datetime import date
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.said import Said
from gpudesk.services.storage import pricing
from gpudesk.services.storage import s3_price_list
from gpudesk.services.storage.pricing import GB

if TYPE_CHECKING:
    from gpudesk.services.storage.uri import StoreUri

log = logging.getLogger(__name__)

TRANSFERS_FILE = "data-transfers.json"
UPLOAD, COPY, DOWNLOAD = "upload", "copy", "download"
PAGES_READ = date(2026, 12, 6)

_AWS_PAGE = "https://aws.amazon.com/s3/pricing/ (Data Transfer)"
# (cloud) -> the page saying data sent into the bucket is free
FREE_IN: dict[str, str] = {
    "aws": _AWS_PAGE,
    "tencent": "https://intl.cloud.tencent.com/document/product/436/33776",
    "aliyun": "https://www.alibabacloud.com/help/doc-detail/173535.htm",
}
# (cloud) -> the page saying a bucket to a machine (or bucket) in its own region is free
FREE_SAME_REGION: dict[str, str] = {
    "aws": _AWS_PAGE,
    "tencent": "https://intl.cloud.tencent.com/document/product/436/33776",
}

MSG_NO_INTER_REGION = QT_TRANSLATE_NOOP(
    "Storage", "AWS's price list for S3 in {region} (published {published}) gives no single "
    "price for data out to {to}")
MSG_PUBLIC_ENDPOINT = QT_TRANSLATE_NOOP(
    "Storage", "machines read OSS at its public endpoint, which Alibaba Cloud bills as "
    "outbound internet traffic; no such price was read")
MSG_NO_CROSS_PRICE = QT_TRANSLATE_NOOP(
    "Storage", "{cloud} publishes no price list that can be read without an account, so "
    "gpudesk shows no figure for traffic between its regions rather than a guess")
WHAT_UPLOAD = QT_TRANSLATE_NOOP("Storage", "Upload of dataset {name} to {cloud} {region}")
WHAT_COPY = QT_TRANSLATE_NOOP("Storage", "Copy of dataset {name} from {cloud} {region} to {to}")
WHAT_DOWNLOAD = QT_TRANSLATE_NOOP(
    "Storage", "Machine download of dataset {name} from {cloud} {region} to {to}")
MSG_COST = QT_TRANSLATE_NOOP(
    "Storage", "{what}: {size} × {price} {currency}/GB = {cost} {currency} ({source}, {date})")
MSG_FREE = QT_TRANSLATE_NOOP("Storage", "{what}: {size}, free ({source}, read {date})")
MSG_UNKNOWN = QT_TRANSLATE_NOOP("Storage", "{what}: {size}, price not known ({why})")
MSG_STORAGE_MONTH = QT_TRANSLATE_NOOP(
    "Storage", "{gb} GB × {price} {currency}/GB-month = {cost} {currency} a month ({source}, "
    "{date})")
MSG_STORAGE_UNKNOWN = QT_TRANSLATE_NOOP(
    "Storage", "{gb} GB a month, price not known ({why})")

_lock = threading.Lock()


@dataclass(frozen=True)
class Charge:
    """A per-GB price for moving data: 0.0 is free (by ``source``), None is unknown."""

    per_gb: float | None
    currency: str
    source: str = ""
    as_of: date | None = None
    reason: str = ""  # a Said: why per_gb is None

    def cost(self, n_bytes: int) -> float | None:
        return None if self.per_gb is None else n_bytes / GB * self.per_gb


def figure(x: float, places: int = 4) -> str:
    """A GB count or an amount as said: ``places`` decimals, or two significant digits
    where those would all be 0 (a small dataset's copy is not "0.0000 USD")."""
    if 0 < abs(x) < 10**-places:
        return f"{x:.2g}"
    return f"{x:,.{places}f}"


def _currency(cloud: str) -> str:
    return pricing.CURRENCY.get(cloud, "")


def _free(cloud: str, page: str) -> Charge:
    return Charge(0.0, _currency(cloud), page, PAGES_READ)


def _unknown(cloud: str, reason: str) -> Charge:
    return Charge(None, _currency(cloud), reason=reason)


def upload_charge(cloud: str) -> Charge:
    """Data sent from this computer into a bucket: free on all three (their pages)."""
    return _free(cloud, FREE_IN[cloud])


def copy_charge(cloud: str, from_region: str, to_region: str) -> Charge:
    """Per GB copied from a bucket in ``from_region`` to one in ``to_region``: free in one
    region where the cloud says so, AWS's inter-region price from the AmazonS3 offer of the
    source region (read into the cache by ``s3_price_list``), else unknown with why."""
    if from_region == to_region and cloud in FREE_SAME_REGION:
        return _free(cloud, FREE_SAME_REGION[cloud])
    if cloud != "aws":
        return _unknown(cloud, Said("Storage", MSG_NO_CROSS_PRICE, cloud=cloud))
    read = s3_price_list.load(from_region)
    if read is None:
        lookup = pricing._from_list(pricing.WHAT_DATA_OUT, None, from_region)
        return _unknown(cloud, lookup.reason)
    amount = read.inter_region_gb.get(to_region)
    if amount is None:
        return _unknown(cloud, Said("Storage", MSG_NO_INTER_REGION, region=from_region,
                                    published=read.published, to=to_region))
    return Charge(amount, "USD", pricing._source(read), read.published_date)


def download_charge(cloud: str, bucket_region: str, machine_cloud: str,
                    machine_region: str) -> Charge:
    """Per GB a machine fetches from the bucket: free in the bucket's region (AWS, Tencent),
    the inter-region price from another region, internet data out from another cloud or an
    own machine; OSS's public endpoint is billed as internet traffic (unknown here)."""
    if machine_cloud != cloud or not machine_region:
        out = pricing.data_out_price(cloud, bucket_region)
        if out.price is None:
            return _unknown(cloud, out.reason)
        return Charge(out.price.amount, out.price.currency, out.price.source, out.price.as_of)
    if machine_region == bucket_region and cloud == "aliyun":
        return _unknown(cloud, Said("Storage", MSG_PUBLIC_ENDPOINT))
    return copy_charge(cloud, bucket_region, machine_region)


# ------------------------------------------------------------------ the transfers kept


@dataclass(frozen=True)
class Transfer:
    at: float
    kind: str  # UPLOAD, COPY, DOWNLOAD
    dataset: str
    cloud: str
    region: str  # where the bytes left from (the bucket; the cloud's region for an upload)
    to: str  # the destination region ("" for an upload; an own machine's address)
    bytes: int
    machine_cloud: str = ""  # a download's machine
    ref: str = ""  # what noted it ("<run>:<fetch id>" for a download): kept once


def transfers_file() -> Path:
    from gpudesk.services.core import paths

    return paths.data_dir() / TRANSFERS_FILE


def load(path: Path | None = None) -> list[Transfer]:
    """Every transfer kept; a damaged file or row is skipped, never refused."""
    try:
        data = json.loads((path or transfers_file()).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        log.warning("cannot read %s (%s); dataset transfers start counting anew", path, exc)
        return []
    out = []
    for raw in (data.get("transfers") if isinstance(data, dict) else None) or []:
        try:
            out.append(Transfer(float(raw["at"]), str(raw["kind"]), str(raw["dataset"]),
                                str(raw["cloud"]), str(raw["region"]), str(raw.get("to", "")),
                                int(raw["bytes"]), str(raw.get("machine_cloud", "")),
                                str(raw.get("ref", ""))))
        except (KeyError, TypeError, ValueError):
            log.warning("%s: a bad transfer was dropped", TRANSFERS_FILE)
    return out


def record(kind: str, dataset: str, cloud: str, region: str, n_bytes: int, *, to: str = "",
           machine_cloud: str = "", at: float | None = None, path: Path | None = None,
           ref: str = "") -> bool:
    """Keep one transfer of ``n_bytes`` (nothing for 0; nothing again for a ``ref`` already
    kept: a run's status read twice counts its download once); never raises: a cost note
    must not break a push or a copy. Returns whether it was kept."""
    if n_bytes <= 0:
        return False
    from gpudesk.services.core.files import atomic_write_text

    path = path or transfers_file()
    row = Transfer(time.time() if at is None else at, kind, dataset, cloud, region, to,
                   int(n_bytes), machine_cloud, ref)
    try:
        with _lock:
            kept = load(path)
            if ref and any(r.ref == ref for r in kept):
                return False
            rows = [*kept, row]
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, json.dumps({"version": 1, "transfers": [
                {"at": r.at, "kind": r.kind, "dataset": r.dataset, "cloud": r.cloud,
                 "region": r.region, "to": r.to, "bytes": r.bytes,
                 "machine_cloud": r.machine_cloud, **({"ref": r.ref} if r.ref else {})}
                for r in rows]}, indent=1) + "\n")
    except OSError as exc:
        log.warning("cannot note a dataset transfer in %s: %s", path, exc)
        return False
    return True


# ------------------------------------------------------------------ the month


@dataclass(frozen=True)
class DataLine:
    """One kind of transfer of one dataset along one route in a month, priced."""

    kind: str
    dataset: str
    cloud: str
    region: str
    to: str
    bytes: int
    charge: Charge

    @property
    def cost(self) -> float | None:
        return self.charge.cost(self.bytes)

    @property
    def currency(self) -> str:
        return self.charge.currency

    def said(self) -> Said:
        """The line, in the same words in ``gpudesk spend`` and the window."""
        from gpudesk.services.core.sizes import size_text

        template = {UPLOAD: WHAT_UPLOAD, COPY: WHAT_COPY}.get(self.kind, WHAT_DOWNLOAD)
        what = Said("Storage", template, name=self.dataset, cloud=self.cloud,
                    region=self.region, to=self.to)
        size = size_text(self.bytes)
        c = self.charge
        if c.per_gb is None:
            return Said("Storage", MSG_UNKNOWN, what=what, size=size, why=c.reason)
        day = c.as_of.isoformat() if c.as_of else "-"
        if c.per_gb == 0:
            return Said("Storage", MSG_FREE, what=what, size=size, source=c.source, date=day)
        return Said("Storage", MSG_COST, what=what, size=size, price=f"{c.per_gb:g}",
                    currency=c.currency, cost=figure(self.cost or 0.0), source=c.source,
                    date=day)


def charge_of(t: Transfer) -> Charge:
    if t.kind == UPLOAD:
        return upload_charge(t.cloud)
    if t.kind == COPY:
        return copy_charge(t.cloud, t.region, t.to)
    return download_charge(t.cloud, t.region, t.machine_cloud or t.cloud, t.to)


def month_lines(month: str | None = None, now: float | None = None, *,
                tz: tzinfo | None = None, path: Path | None = None) -> list[DataLine]:
    """The dataset transfers of ``month`` (default: this one), summed per dataset, kind
    and route, in the order they first happened."""
    from gpudesk.services.money import spend

    when = time.time() if now is None else now
    window = spend.month_window(month or spend.month_key(when, tz), tz)
    assert window.start is not None and window.end is not None
    sums: dict[tuple[str, str, str, str, str, str], tuple[int, Transfer]] = {}
    for t in sorted(load(path), key=lambda t: t.at):
        if not (window.start <= t.at < window.end and t.at <= when):
            continue
        key = (t.kind, t.dataset, t.cloud, t.region, t.to, t.machine_cloud)
        n, first = sums.get(key, (0, t))
        sums[key] = (n + t.bytes, first)
    return [DataLine(t.kind, t.dataset, t.cloud, t.region, t.to, n, charge_of(t))
            for n, t in sums.values()]


def totals(lines: list[DataLine]) -> dict[str, float]:
    """Known costs per currency (never mixed); free lines add 0."""
    out: dict[str, float] = {}
    for line in lines:
        if line.cost is not None:
            out[line.currency] = out.get(line.currency, 0.0) + line.cost
    return dict(sorted(out.items()))


def month_json(lines: list[DataLine]) -> dict[str, Any]:
    """For ``gpudesk spend --json``: an unknown cost is null with the reason, never 0."""
    return {
        "totals": {cur: round(v, 6) for cur, v in totals(lines).items()},
        "complete": all(line.cost is not None for line in lines),
        "lines": [{
            "kind": line.kind, "dataset": line.dataset, "cloud": line.cloud,
            "from_region": line.region, "to_region": line.to, "bytes": line.bytes,
            "price_per_gb": line.charge.per_gb, "currency": line.currency,
            "cost": None if line.cost is None else round(line.cost, 6),
            "source": line.charge.source or None,
            "as_of": line.charge.as_of.isoformat() if line.charge.as_of else None,
            "unknown_because": str(line.charge.reason) if line.cost is None else None,
            "text": str(line.said())} for line in lines]}


# ------------------------------------------------------------------ one dataset, kept


@dataclass(frozen=True)
class StorageMonth:
    """A month of keeping one dataset's bytes: ``amount`` None where the price is unknown;
    ``words`` say the sum and its source, or why there is none (a Said)."""

    amount: float | None
    currency: str
    words: str

    def cell(self) -> str:
        """The figure in ``gpudesk data ls`` and the Data page's column (which translates
        "price not known"): the sum at four places, or no figure at all."""
        return "price not known" if self.amount is None else \
            f"{self.amount:,.4f} {self.currency}"

    def as_json(self) -> dict[str, object]:
        return {"amount": self.amount, "currency": self.currency, "text": str(self.words)}


class _Kept(Protocol):
    """What of a ``datasets.Dataset`` is read here (datasets imports this module to note
    an upload: a protocol, not an import, keeps the two apart)."""

    @property
    def store(self) -> StoreUri: ...

    @property
    def region(self) -> str: ...

    @property
    def bytes(self) -> int: ...


def storage_per_month(dataset: _Kept) -> StorageMonth:
    """What keeping ``dataset`` costs a month at its bucket's Standard price (its files'
    bytes; a blob shared with another dataset is counted in each). Reads the price cache
    only: cheap enough for a widget."""
    store = dataset.store
    lookup = pricing.storage_price(store.cloud, dataset.region)
    gb = figure(dataset.bytes / GB, 3)
    p = lookup.price
    if p is None:
        return StorageMonth(None, _currency(store.cloud),
                            Said("Storage", MSG_STORAGE_UNKNOWN, gb=gb, why=lookup.reason))
    amount = dataset.bytes / GB * p.amount
    return StorageMonth(amount, p.currency, Said(
        "Storage", MSG_STORAGE_MONTH, gb=gb, price=f"{p.amount:g}", currency=p.currency,
        cost=figure(amount), source=p.source, date=p.as_of.isoformat()))
