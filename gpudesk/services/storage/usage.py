"""What the user's buckets cost in a month: GB-months per run folder and data out to here.

The clouds bill object storage by byte-hours, so one listing is not enough: each time
gpudesk learns how much a run's folder holds (the Run page or ``gpudesk outputs`` lists
it, the Watch page reads the agent's ``store.json``, a delete empties it) it keeps a
sample ``(time, bytes)`` in ``bucket-usage.json`` in the data folder, which survives
restarts. A month's GB-months are the integral of those samples over the month
(:func:`gpudesk.services.money.spend.stored_gib_months`); the cost is GB-months × the
sourced price of :mod:`.pricing`, or None with the reason where no price was read.
Downloads to this computer are data out, kept as transfers with their bytes.

Requests are counted by S3's billing classes (tier1: PUT, COPY, POST, LIST; tier2: GET
and all others; DELETE free). The agent's ``store.json`` gives cumulative counts since
its ``since``; each read keeps a sample ``(time, tier1, tier2, since)``, and a month's
requests are the increase observed within it, per ``since`` (a new state file starts
from 0; a count that went down is such a reset too). The listing, download and delete
requests this computer sends itself are kept as increments. The cost is the counts ×
:func:`.pricing.request_prices`, or None with the reason (docs/storage.md).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from datetime import tzinfo
from pathlib import Path
from typing import Any

from gpudesk.services.core import paths
from gpudesk.services.core.files import atomic_write_text
from gpudesk.services.money import spend
from gpudesk.services.storage import pricing
from gpudesk.services.storage.pricing import Price
from gpudesk.services.storage.pricing import PriceLookup
from gpudesk.services.storage.pricing import RequestPrices

log = logging.getLogger(__name__)

USAGE_FILE = "bucket-usage.json"
VERSION = 1
SOURCE_LISTING = "listing"  # the laptop listed the folder: exact
SOURCE_AGENT = "agent"  # the agent's store.json: what it put there and still holds
SOURCE_DELETED = "deleted"  # "Delete from bucket" emptied it

_lock = threading.Lock()

Lookup = Callable[[str, str], PriceLookup]
RequestLookup = Callable[[str, str], RequestPrices]


def usage_file() -> Path:
    return paths.data_dir() / USAGE_FILE


@dataclass(frozen=True)
class Sample:
    at: float
    bytes: int
    source: str = SOURCE_LISTING


@dataclass(frozen=True)
class Download:
    at: float
    bytes: int


@dataclass(frozen=True)
class RequestSample:
    """The agent's cumulative request count at ``at``, counted since ``since``."""

    at: float
    tier1: int
    tier2: int
    since: str = ""


@dataclass(frozen=True)
class Requests:
    """Requests sent to the bucket, by S3 billing class (at ``at``: this computer's own)."""

    tier1: int = 0
    tier2: int = 0
    at: float = 0.0

    @property
    def total(self) -> int:
        return self.tier1 + self.tier2


@dataclass
class RunUsage:
    """What gpudesk has seen of one run's folder."""

    run: str
    cloud: str
    region: str
    uri: str = ""
    samples: list[Sample] = field(default_factory=list)
    downloads: list[Download] = field(default_factory=list)
    request_samples: list[RequestSample] = field(default_factory=list)  # the agent's
    own_requests: list[Requests] = field(default_factory=list)  # this computer's


# ------------------------------------------------------------------------------ the file


def _run_from(run: str, data: Any) -> RunUsage | None:
    if not isinstance(data, dict):
        return None
    usage = RunUsage(run, str(data.get("cloud") or ""), str(data.get("region") or ""),
                     str(data.get("uri") or ""))
    for raw in data.get("samples") or []:
        try:
            usage.samples.append(Sample(float(raw[0]), int(raw[1]),
                                        str(raw[2]) if len(raw) > 2 else SOURCE_LISTING))
        except (TypeError, ValueError, IndexError):
            log.warning("%s: a bad sample of run %s was dropped", USAGE_FILE, run)
    for raw in data.get("downloads") or []:
        try:
            usage.downloads.append(Download(float(raw[0]), int(raw[1])))
        except (TypeError, ValueError, IndexError):
            log.warning("%s: a bad download of run %s was dropped", USAGE_FILE, run)
    for raw in data.get("request_samples") or []:
        try:
            usage.request_samples.append(RequestSample(float(raw[0]), int(raw[1]),
                                                       int(raw[2]), str(raw[3])))
        except (TypeError, ValueError, IndexError):
            log.warning("%s: a bad request sample of run %s was dropped", USAGE_FILE, run)
    for raw in data.get("own_requests") or []:
        try:
            usage.own_requests.append(Requests(int(raw[1]), int(raw[2]), float(raw[0])))
        except (TypeError, ValueError, IndexError):
            log.warning("%s: a bad request count of run %s was dropped", USAGE_FILE, run)
    usage.samples.sort(key=lambda s: s.at)
    usage.downloads.sort(key=lambda d: d.at)
    usage.request_samples.sort(key=lambda s: s.at)
    usage.own_requests.sort(key=lambda r: r.at)
    return usage


def load(path: Path | None = None) -> dict[str, RunUsage]:
    """Every run's samples; a damaged file is read as far as it goes, never refused."""
    path = path or usage_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("cannot read %s (%s); bucket storage starts counting anew", path, exc)
        return {}
    runs = data.get("runs") if isinstance(data, dict) else None
    out: dict[str, RunUsage] = {}
    for run, raw in (runs or {}).items():
        usage = _run_from(str(run), raw)
        if usage is not None:
            out[usage.run] = usage
    return out


def _save(runs: dict[str, RunUsage], path: Path) -> None:
    data = {"version": VERSION, "runs": {
        u.run: {"cloud": u.cloud, "region": u.region, "uri": u.uri,
                "samples": [[s.at, s.bytes, s.source] for s in u.samples],
                "downloads": [[d.at, d.bytes] for d in u.downloads],
                "request_samples": [[r.at, r.tier1, r.tier2, r.since]
                                    for r in u.request_samples],
                "own_requests": [[r.at, r.tier1, r.tier2] for r in u.own_requests]}
        for u in sorted(runs.values(), key=lambda u: u.run)}}
    atomic_write_text(path, json.dumps(data, indent=1) + "\n")


def _update(run: str, cloud: str, region: str, uri: str, path: Path | None,
            change: Callable[[RunUsage], bool]) -> bool:
    """Read, change one run, write; never raises (a cost note must not break a listing)."""
    path = path or usage_file()
    try:
        with _lock:
            runs = load(path)
            usage = runs.get(run) or RunUsage(run, cloud, region, uri)
            usage.cloud, usage.region = cloud or usage.cloud, region or usage.region
            usage.uri = uri or usage.uri
            if not change(usage):
                return False
            runs[run] = usage
            _save(runs, path)
            return True
    except OSError as exc:
        log.warning("cannot note bucket usage of run %s in %s: %s", run, path, exc)
        return False


def record_sample(run: str, cloud: str, region: str, stored_bytes: int, *, uri: str = "",
                  at: float | None = None, source: str = SOURCE_LISTING,
                  path: Path | None = None) -> bool:
    """Note that ``run``'s folder holds ``stored_bytes`` now (or at ``at``).

    Only a change is kept: the size holds from one sample to the next, so a repeat
    adds nothing to the integral. Returns whether the file changed."""
    when = time.time() if at is None else at
    size = max(0, int(stored_bytes))

    def change(usage: RunUsage) -> bool:
        before = [s for s in usage.samples if s.at <= when]
        if before and before[-1].bytes == size:
            return False
        usage.samples.append(Sample(when, size, source))
        usage.samples.sort(key=lambda s: s.at)
        return True

    return _update(run, cloud, region, uri, path, change)


def record_download(run_id: str, cloud: str, region: str, sent_bytes: int, *,
                    at: float | None = None, path: Path | None = None) -> bool:
    """Bytes of ``run_id``'s folder downloaded to this computer: data out, billed."""
    if sent_bytes <= 0:
        return False
    when = time.time() if at is None else at

    def change(usage: RunUsage) -> bool:
        usage.downloads.append(Download(when, int(sent_bytes)))
        return True

    return _update(run_id, cloud, region, "", path, change)


def record_agent_requests(run: str, cloud: str, region: str, tier1: int, tier2: int,
                          since: str, *, uri: str = "", at: float | None = None,
                          path: Path | None = None) -> bool:
    """Note the agent's cumulative request counts (``store.json``'s ``requests``); only a
    change is kept. Returns whether the file changed."""
    when = time.time() if at is None else at
    sample = RequestSample(when, max(0, int(tier1)), max(0, int(tier2)), since)

    def change(usage: RunUsage) -> bool:
        same = [r for r in usage.request_samples if r.since == since and r.at <= when]
        if same and (same[-1].tier1, same[-1].tier2) == (sample.tier1, sample.tier2):
            return False
        usage.request_samples.append(sample)
        usage.request_samples.sort(key=lambda r: r.at)
        return True

    return _update(run, cloud, region, uri, path, change)


def record_requests(run: str, cloud: str, region: str, tier1: int, tier2: int, *,
                    uri: str = "", at: float | None = None, path: Path | None = None) -> bool:
    """Requests this computer sent to ``run``'s folder (listing, downloading)."""
    if tier1 <= 0 and tier2 <= 0:
        return False
    counted = Requests(max(0, tier1), max(0, tier2), time.time() if at is None else at)

    def change(usage: RunUsage) -> bool:
        usage.own_requests.append(counted)
        return True

    return _update(run, cloud, region, uri, path, change)


def agent_requests(state: dict[str, Any]) -> RequestSample | None:
    """``store.json``'s ``requests`` ``{"tier1", "tier2", "since"}`` (at 0: the caller's
    time), None where the agent counts none (an older agent) or the entry is bad."""
    value = state.get("requests")
    if not isinstance(value, dict):
        return None
    tier1, tier2 = _count(value.get("tier1")), _count(value.get("tier2"))
    if tier1 is None or tier2 is None:
        return None
    return RequestSample(0.0, tier1, tier2, str(value.get("since") or ""))


def _count(value: Any) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return int(value) if ok else None


def month_requests(usage: RunUsage, start: float, end: float, now: float) -> Requests:
    """The requests counted in ``[start, end)`` up to ``now``: the agent's increase per
    state file (``since``), each increase at the time it was seen, plus this computer's."""
    tier1 = tier2 = 0
    series: dict[str, list[RequestSample]] = {}
    for r in usage.request_samples:
        series.setdefault(r.since, []).append(r)
    for samples in series.values():
        prev = (0, 0)  # a new state file counts from 0
        for r in sorted(samples, key=lambda r: r.at):
            if r.tier1 < prev[0] or r.tier2 < prev[1]:
                prev = (0, 0)  # the count went down: a new state file under the same name
            if start <= r.at < end and r.at <= now:
                tier1 += r.tier1 - prev[0]
                tier2 += r.tier2 - prev[1]
            prev = (r.tier1, r.tier2)
    for own in usage.own_requests:
        if start <= own.at < end and own.at <= now:
            tier1, tier2 = tier1 + own.tier1, tier2 + own.tier2
    return Requests(tier1, tier2)


def agent_bytes(state: dict[str, Any]) -> int | None:
    """What the agent's ``store.json`` says the run's folder holds (``bucket_bytes``:
    the manifest's checkpoints, the log parts and the outputs), None if it says nothing."""
    value = state.get("bucket_bytes")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


# ------------------------------------------------------------------------------ the month


@dataclass(frozen=True)
class RunMonth:
    """One run's folder in one month; a cost is None where its price is unknown."""

    run: str
    cloud: str
    region: str
    uri: str
    gib_months: float
    storage_price: Price | None
    storage_cost: float | None
    storage_reason: str  # a Said when the price is unknown
    data_out_bytes: int
    data_out_price: Price | None
    data_out_cost: float | None
    data_out_reason: str
    currency: str
    requests: Requests = Requests()
    request_prices: RequestPrices | None = None
    requests_cost: float | None = 0.0
    requests_reason: str = ""  # a Said when a count has no price

    @property
    def unknown(self) -> bool:
        """Something was billed that gpudesk cannot price."""
        return ((self.gib_months > 0 and self.storage_cost is None)
                or (self.data_out_bytes > 0 and self.data_out_cost is None)
                or (self.requests.total > 0 and self.requests_cost is None))

    @property
    def known_cost(self) -> float:
        return (self.storage_cost or 0.0) + (self.data_out_cost or 0.0) + (
            self.requests_cost or 0.0)

    @property
    def requests_price(self) -> Price | None:
        """The request price whose source and date the line shows (both come from one read)."""
        p = self.request_prices
        return None if p is None else p.tier1.price or p.tier2.price


@dataclass(frozen=True)
class MonthStorage:
    month: str
    runs: tuple[RunMonth, ...] = ()

    @property
    def gib_months(self) -> float:
        return sum(r.gib_months for r in self.runs)

    @property
    def requests(self) -> Requests:
        return Requests(sum(r.requests.tier1 for r in self.runs),
                        sum(r.requests.tier2 for r in self.runs))

    def totals(self) -> dict[str, float]:
        """Known costs per currency (USD and CNY are never added together)."""
        out: dict[str, float] = {}
        for r in self.runs:
            if r.storage_cost is not None or r.data_out_cost is not None \
                    or (r.requests.total and r.requests_cost is not None):
                out[r.currency] = out.get(r.currency, 0.0) + r.known_cost
        return dict(sorted(out.items()))

    @property
    def unknown(self) -> tuple[RunMonth, ...]:
        return tuple(r for r in self.runs if r.unknown)


def requests_cost(counted: Requests, prices: RequestPrices) -> tuple[float | None, str]:
    """Counts × per-request prices; (None, why) when a counted class has no price."""
    cost = 0.0
    for n, lookup in ((counted.tier1, prices.tier1), (counted.tier2, prices.tier2)):
        if not n:
            continue
        if lookup.price is None:
            return None, lookup.reason
        cost += n * lookup.price.amount
    return cost, ""


def run_month(usage: RunUsage, window: spend.Window, now: float, *,
              storage_price: Lookup = pricing.storage_price,
              data_out_price: Lookup = pricing.data_out_price,
              request_prices: RequestLookup = pricing.request_prices) -> RunMonth:
    gib_months = spend.stored_gib_months(((s.at, s.bytes) for s in usage.samples), window, now)
    assert window.start is not None and window.end is not None
    sent = sum(d.bytes for d in usage.downloads if window.start <= d.at < window.end
               and d.at <= now)
    stored = storage_price(usage.cloud, usage.region)
    out = data_out_price(usage.cloud, usage.region)
    counted = month_requests(usage, window.start, window.end, now)
    per_request = request_prices(usage.cloud, usage.region)
    known = [p.price for p in (stored, out, per_request.tier1, per_request.tier2) if p.price]
    currency = known[0].currency if known else pricing.CURRENCY.get(usage.cloud, "")
    if any(p.currency != currency for p in known):
        raise ValueError(f"{usage.cloud} {usage.region}: the storage, data-out and request "
                         "prices are in different currencies")
    cost, why = requests_cost(counted, per_request)
    return RunMonth(
        usage.run, usage.cloud, usage.region, usage.uri, gib_months, stored.price,
        None if stored.price is None else gib_months * stored.price.amount, stored.reason,
        sent, out.price, pricing.data_out_cost(sent, out.price), out.reason, currency,
        counted, per_request, cost, why)


def month_storage(month: str | None = None, now: float | None = None, *,
                  tz: tzinfo | None = None, path: Path | None = None,
                  storage_price: Lookup = pricing.storage_price,
                  data_out_price: Lookup = pricing.data_out_price,
                  request_prices: RequestLookup = pricing.request_prices) -> MonthStorage:
    """Every run folder that held data or was downloaded in ``month`` (default: this one)."""
    when = time.time() if now is None else now
    key = month or spend.month_key(when, tz)
    window = spend.month_window(key, tz)
    rows = []
    for usage in load(path).values():
        row = run_month(usage, window, when, storage_price=storage_price,
                        data_out_price=data_out_price, request_prices=request_prices)
        if row.gib_months > 0 or row.data_out_bytes > 0 or row.requests.total > 0:
            rows.append(row)
    rows.sort(key=lambda r: r.run)
    return MonthStorage(key, tuple(rows))


def month_json(m: MonthStorage) -> dict[str, Any]:
    """For ``gpudesk spend --json``: unknown costs are null with the reason, never 0."""
    def price(p: Price | None) -> dict[str, Any] | None:
        return None if p is None else {"amount": p.amount, "currency": p.currency,
                                       "source": p.source, "as_of": p.as_of.isoformat()}

    def requests(r: RunMonth) -> dict[str, Any]:
        p, prices = r.requests_price, r.request_prices
        return {"tier1": r.requests.tier1, "tier2": r.requests.tier2,
                "cost": None if r.requests_cost is None else round(r.requests_cost, 6),
                "currency": r.currency,
                "tier1_price": prices.tier1.price.amount if prices and prices.tier1.price
                else None,
                "tier2_price": prices.tier2.price.amount if prices and prices.tier2.price
                else None,
                "source": p.source if p else None,
                "as_of": p.as_of.isoformat() if p else None,
                "unknown_because": None if r.requests_cost is not None
                else str(r.requests_reason)}

    return {
        "month": m.month, "gib_months": round(m.gib_months, 6),
        "requests": {"tier1": m.requests.tier1, "tier2": m.requests.tier2},
        "totals": {cur: round(v, 6) for cur, v in m.totals().items()},
        "complete": not m.unknown,
        "runs": [{
            "run": r.run, "cloud": r.cloud, "region": r.region, "uri": r.uri,
            "gib_months": round(r.gib_months, 6), "currency": r.currency,
            "storage_cost": None if r.storage_cost is None else round(r.storage_cost, 6),
            "storage_price": price(r.storage_price),
            "storage_unknown_because": None if r.storage_price else str(r.storage_reason),
            "data_out_bytes": r.data_out_bytes,
            "data_out_cost": None if r.data_out_cost is None else round(r.data_out_cost, 6),
            "data_out_price": price(r.data_out_price),
            "data_out_unknown_because": None if r.data_out_price else str(r.data_out_reason),
            "requests": requests(r),
        } for r in m.runs]}
