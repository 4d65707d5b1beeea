"""What a machine has cost: price × billed time by each provider's rules, plus disk and transfer.

Pure functions over plain data (a :class:`History`), so that the money can be
checked against ledgers worked out by hand; :func:`history` reads one from the
ledger.

The model:

* **Compute.** Each running stretch is billed from its start for
  ``max(minimum, duration rounded up to the step)`` seconds (EC2 Linux: per
  second, 60 s minimum *each time the machine starts*; Tencent pay-as-you-go:
  per second; the user's own machine: free). Billed stretches may overlap (a
  restart 10 s after a stop pays its own minimum) and are never merged. The
  price in force at each moment comes from the price history (spot moves), so a
  change mid-stretch splits its cost; before the first known price the first
  one applies.
  A stretch is time the cloud bills the compute: running, and also stopped where
  the cloud keeps charging (CVM ``KEEP_CHARGING``, ECS ``KeepCharging``: the
  ledger keeps the stretch open, see ``machine_states.bills_compute``); a machine
  stopped without charge (EC2, ``STOP_CHARGING``, ``StopCharging``) pays its disk only.
* **Storage.** The root disk bills from the first start until the machine ends,
  stopped or not, at a price per GB-month prorated by the second over the
  calendar month it falls in.
* **Transfer.** Bytes sent out of the machine, per GiB (clouds' "GB" here is 2^30).

Everything can be restricted to a time window (a run) or split by calendar
month in local time; a piece of a stretch that crosses midnight at a month's end
goes to each month. Amounts are in the machine's currency.
"""

from __future__ import annotations

import csv
import io
import math
import time
from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import replace
from datetime import datetime
from datetime import tzinfo
from typing import TextIO

from gpudesk.services.money import region_rates
from gpudesk.services.money.billing import RULES as RULES
from gpudesk.services.money.billing import BillingRule as BillingRule
from gpudesk.services.money.billing import rule_for as rule_for
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.money.ledger import PriceChange
from gpudesk.services.money.ledger import Transfer

GIB = 1 << 30


@dataclass(frozen=True)
class Rates:
    """Storage and transfer prices, in ``currency``; ``known`` False means "not counted".

    A machine's own region's list prices come from ``region_rates.csv`` (AWS Price
    List, dated); these defaults are for a region the file lacks: the public
    us-east-1 list prices (gp3 volumes $0.08 per GB-month; data transfer out to
    the internet $0.09 per GB, first 10 TB/month). Tencent's and Aliyun's depend
    on region and disk type and are not bundled: pass your own ``Rates``.
    """

    storage_per_gb_month: float = 0.0
    transfer_per_gb: float = 0.0
    currency: str = "USD"
    known: bool = False


DEFAULT_RATES: dict[str, Rates] = {
    "aws": Rates(storage_per_gb_month=0.08, transfer_per_gb=0.09, currency="USD", known=True),
    "tencent": Rates(currency="CNY"),
    "aliyun": Rates(currency="CNY"),
    "own": Rates(known=True),
}


@dataclass(frozen=True)
class Stretch:
    """Time the compute bills (running, or stopped but still charged): ``end`` None means
    it still does."""

    start: float
    end: float | None = None


@dataclass(frozen=True)
class History:
    """Everything the spend of one machine depends on."""

    machine_id: str
    provider: str
    currency: str = "USD"
    stretches: tuple[Stretch, ...] = ()
    prices: tuple[PriceChange, ...] = ()
    disk_gb: float = 0.0
    disk_from: float | None = None  # None: from the first start
    disk_to: float | None = None  # None: still exists
    transfers: tuple[Transfer, ...] = ()
    approximate: bool = False  # rebuilt from totals (a row older than the history tables)
    name: str = ""
    instance_type: str = ""
    market: str = ""
    region: str = ""  # picks the region's disk and data-out prices (region_rates.csv)


@dataclass(frozen=True)
class Cost:
    compute: float = 0.0
    storage: float = 0.0
    transfer: float = 0.0
    currency: str = "USD"

    @property
    def total(self) -> float:
        return self.compute + self.storage + self.transfer

    def __add__(self, other: Cost) -> Cost:
        if self.currency != other.currency:
            raise ValueError(f"cannot add {self.currency} to {other.currency}")
        return Cost(self.compute + other.compute, self.storage + other.storage,
                    self.transfer + other.transfer, self.currency)


@dataclass(frozen=True)
class Window:
    """A half-open time span [start, end); ``None`` ends are unbounded."""

    start: float | None = None
    end: float | None = None

    def clip(self, a: float, b: float) -> tuple[float, float]:
        lo = a if self.start is None else max(a, self.start)
        hi = b if self.end is None else min(b, self.end)
        return lo, max(lo, hi)


ALL_TIME = Window()

# ---------------------------------------------------------------------------- compute


def billed_spans(stretches: Iterable[Stretch], rule: BillingRule, now: float
                 ) -> list[tuple[float, float]]:
    """Each stretch as the billed span ``(start, start + billed seconds)``; open ones end now."""
    if rule.free:
        return []
    out = []
    for s in stretches:
        if s.start > now:
            continue  # starts after the moment asked about
        end = now if s.end is None else min(s.end, now)
        duration = max(0.0, end - s.start)
        if rule.step_s > 0:
            # round() first: 3599.9999999 from float sums is not a 3600th second
            duration = math.ceil(round(duration / rule.step_s, 6)) * rule.step_s
        out.append((s.start, s.start + max(duration, rule.min_s)))
    return out


def _is_sorted(prices: Sequence[PriceChange]) -> bool:
    return all(prices[i].since <= prices[i + 1].since for i in range(len(prices) - 1))


def price_integral(prices: Sequence[PriceChange], a: float, b: float) -> float:
    """∫ price dt over [a, b], in price-hours: the compute cost of that span."""
    if b <= a or not prices:
        return 0.0
    points = prices if _is_sorted(prices) else sorted(prices, key=lambda p: p.since)
    total = 0.0
    for i, p in enumerate(points):
        lo = -math.inf if i == 0 else p.since  # the first price also covers earlier time
        hi = points[i + 1].since if i + 1 < len(points) else math.inf
        x, y = max(a, lo), min(b, hi)
        if y > x:
            total += p.price * (y - x)
    return total / 3600.0


def compute_cost(h: History, now: float, window: Window = ALL_TIME) -> float:
    spans = billed_spans(h.stretches, rule_for(h.provider), now)
    prices = sorted(h.prices, key=lambda p: p.since)
    total = 0.0
    for a, b in spans:
        lo, hi = window.clip(a, b)
        if hi > lo:
            total += price_integral(prices, lo, hi)
    return total


def price_at(h: History, t: float) -> float:
    """The price per hour in force at ``t``."""
    return price_in_force(h.prices, t)


def price_in_force(prices: Sequence[PriceChange], t: float) -> float:
    """The price per hour at ``t``; the first price also covers earlier time (0 if none)."""
    points = sorted(prices, key=lambda p: p.since)
    current = points[0].price if points else 0.0
    for p in points:
        if p.since <= t:
            current = p.price
    return current


# ---------------------------------------------------------------------------- months


def month_key(t: float, tz: tzinfo | None = None) -> str:
    d = datetime.fromtimestamp(t, tz)
    return f"{d.year:04d}-{d.month:02d}"


def month_window(key: str, tz: tzinfo | None = None) -> Window:
    """The calendar month ``YYYY-MM`` in ``tz`` (None: local time) as a window."""
    year, month = (int(x) for x in key.split("-"))
    nxt = (year + 1, 1) if month == 12 else (year, month + 1)
    start = datetime(year, month, 1, tzinfo=tz).timestamp()
    end = datetime(nxt[0], nxt[1], 1, tzinfo=tz).timestamp()
    return Window(start, end)


def months_between(a: float, b: float, tz: tzinfo | None = None) -> list[str]:
    """Every month key that [a, b] touches, in order."""
    keys = [month_key(a, tz)]
    while True:
        end = month_window(keys[-1], tz).end
        assert end is not None
        if end > b:
            return keys
        keys.append(month_key(end, tz))


# ---------------------------------------------------------------------------- storage, transfer


def _disk_span(h: History, now: float) -> tuple[float, float] | None:
    start = h.disk_from
    if start is None:
        start = min((s.start for s in h.stretches), default=None)
    if start is None or h.disk_gb <= 0:
        return None
    end = now if h.disk_to is None else min(h.disk_to, now)
    return (start, end) if end > start else None


def storage_cost(h: History, rates: Rates, now: float, window: Window = ALL_TIME,
                 tz: tzinfo | None = None) -> float:
    """GB × price per GB-month × the share of each calendar month the disk existed."""
    span = _disk_span(h, now)
    if span is None or not rates.storage_per_gb_month:
        return 0.0
    a, b = window.clip(*span)
    if b <= a:
        return 0.0
    total = 0.0
    for key in months_between(a, b, tz):
        m = month_window(key, tz)
        assert m.start is not None and m.end is not None
        x, y = m.clip(a, b)
        total += h.disk_gb * rates.storage_per_gb_month * (y - x) / (m.end - m.start)
    return total


def stored_gib_months(samples: Iterable[tuple[float, int]], window: Window,
                      now: float) -> float:
    """GiB-months a bucket folder held in ``window`` (a month), as of ``now``.

    The clouds bill object storage by byte-hours over the month: each sample
    ``(time, bytes)`` holds until the next one, the last until ``now``, and
    nothing is held before the first. The byte-seconds inside the window,
    divided by GiB × the window's seconds, are the GB-months on the bill.
    """
    if window.start is None or window.end is None or window.end <= window.start:
        raise ValueError("a bounded window (a month) is needed")
    points = sorted(samples)
    total = 0.0
    for i, (t, held) in enumerate(points):
        until = points[i + 1][0] if i + 1 < len(points) else now
        lo, hi = window.clip(t, min(until, now))
        if hi > lo and held > 0:
            total += held * (hi - lo)
    return total / GIB / (window.end - window.start)


def transfer_cost(h: History, rates: Rates, now: float, window: Window = ALL_TIME) -> float:
    sent = sum(t.bytes_out for t in h.transfers if t.at <= now
               and (window.start is None or t.at >= window.start)
               and (window.end is None or t.at < window.end))
    return sent / GIB * rates.transfer_per_gb


# ---------------------------------------------------------------------------- totals


def rates_for(h: History, rates: dict[str, Rates] | None = None) -> Rates:
    """The storage/transfer rates for ``h``; none when they are in another currency.

    Without rates passed in, the machine's own region's bundled list prices
    (``region_rates.csv``) come first, then the provider's default.
    """
    r: Rates | None = None
    if rates is None and h.region:
        found = region_rates.bundled().get((h.provider, h.region))
        if found is not None and found.transfer_out_per_gb is not None:
            r = Rates(storage_per_gb_month=found.storage_per_gb_month,
                      transfer_per_gb=found.transfer_out_per_gb, currency="USD", known=True)
    if r is None:
        r = (rates or DEFAULT_RATES).get(h.provider, Rates(currency=h.currency))
    return r if r.currency == h.currency else Rates(currency=h.currency)


def cost(h: History, now: float, window: Window = ALL_TIME, *,
         rates: dict[str, Rates] | None = None, tz: tzinfo | None = None) -> Cost:
    """What ``h`` cost inside ``window`` as of ``now``; a run's cost is its window's."""
    r = rates_for(h, rates)
    return Cost(compute=compute_cost(h, now, window),
                storage=storage_cost(h, r, now, window, tz),
                transfer=transfer_cost(h, r, now, window), currency=h.currency)


def last_moment(h: History, now: float) -> float:
    """After this nothing more is billed (as of ``now``)."""
    if running(h) or (h.disk_gb > 0 and h.disk_to is None):
        return now
    rule = rule_for(h.provider)
    ends = [b for _, b in billed_spans(h.stretches, rule, now)]
    ends += [t.at for t in h.transfers]
    if h.disk_to is not None:
        ends.append(h.disk_to)
    return max(ends, default=-math.inf)


def first_moment(h: History) -> float | None:
    times = [s.start for s in h.stretches] + [t.at for t in h.transfers]
    if h.disk_from is not None:
        times.append(h.disk_from)
    return min(times, default=None)


def by_month(h: History, now: float, *, rates: dict[str, Rates] | None = None,
             tz: tzinfo | None = None) -> dict[str, Cost]:
    """Cost per calendar month ``YYYY-MM`` from the first start to the end of billing."""
    first = first_moment(h)
    if first is None:
        return {}
    spans = billed_spans(h.stretches, rule_for(h.provider), now)
    last = max([now] + [b for _, b in spans])
    return {key: cost(h, now, month_window(key, tz), rates=rates, tz=tz)
            for key in months_between(first, last, tz)}


# ---------------------------------------------------------------------------- projection


def running(h: History) -> bool:
    return any(s.end is None for s in h.stretches)


def rate_per_hour(h: History, now: float, *, rates: dict[str, Rates] | None = None,
                  tz: tzinfo | None = None) -> float:
    """What one more hour costs at the current price (compute if running, plus the disk)."""
    compute = 0.0 if rule_for(h.provider).free or not running(h) else price_at(h, now)
    r = rates_for(h, rates)
    disk = 0.0
    if h.disk_gb > 0 and h.disk_to is None and _disk_span(h, now) is not None:
        m = month_window(month_key(now, tz), tz)
        assert m.start is not None and m.end is not None
        disk = h.disk_gb * r.storage_per_gb_month * 3600.0 / (m.end - m.start)
    return compute + disk


def projected(h: History, now: float, at: float, *, rates: dict[str, Rates] | None = None,
              tz: tzinfo | None = None) -> Cost:
    """The cost at a later moment ``at`` if what runs now keeps running at today's price."""
    future = replace(h, prices=(*h.prices, PriceChange(now, price_at(h, now))))
    return cost(future, max(now, at), rates=rates, tz=tz)


def cap_reached_at(spent: float, per_hour: float, cap: float, now: float) -> float | None:
    """When spend reaches ``cap`` at ``per_hour`` from ``spent`` now; None if it never does."""
    if spent >= cap:
        return now
    if per_hour <= 0:
        return None
    return now + (cap - spent) / per_hour * 3600.0


# ---------------------------------------------------------------------------- currency


def to_usd(amount: float, currency: str, cny_per_usd: float) -> float:
    if currency == "CNY":
        return amount / cny_per_usd
    return amount


# ---------------------------------------------------------------------------- ledger


def history(ledger: Ledger, machine: Machine) -> History:
    """The spend history of one ledger row.

    Rows written before the ledger kept intervals are rebuilt from their totals:
    the closed billed seconds as one stretch from the launch, plus the open one.
    """
    stretches = tuple(Stretch(i.start, i.end) for i in ledger.intervals(machine.id))
    approximate = False
    rule = rule_for(machine.provider)
    closed = [s for s in stretches if s.end is not None]
    known = sum(b - a for a, b in billed_spans(closed, rule, math.inf))
    missing = machine.billed_seconds - known
    if missing > 1.0:  # billed before the ledger kept intervals: one lump from the launch
        approximate = True
        start = machine.launched_at or machine.created_at
        stretches = (Stretch(start, start + missing), *stretches)
    if machine.running_since is not None and not any(s.end is None for s in stretches):
        approximate = True
        stretches = (*stretches, Stretch(machine.running_since, None))
    prices = tuple(ledger.prices(machine.id))
    if not prices:
        prices = (PriceChange(machine.created_at, machine.price_per_hour),)
    return History(
        machine_id=machine.id, provider=machine.provider, currency=machine.currency,
        stretches=stretches, prices=prices, disk_gb=machine.disk_gb,
        disk_from=machine.launched_at, disk_to=machine.ended_at,
        transfers=tuple(ledger.transfers(machine.id)),
        approximate=approximate, name=machine.name, instance_type=machine.instance_type,
        market=machine.market, region=machine.region)


def histories(ledger: Ledger) -> list[History]:
    return [history(ledger, m) for m in ledger.machines()]


def machine_spend(ledger: Ledger, machine: Machine, now: float | None = None, *,
                  rates: dict[str, Rates] | None = None, tz: tzinfo | None = None) -> Cost:
    """THE spend of one machine: billed intervals × the price in force, plus disk and data out.

    Every face (Instances page, tray, ``gpudesk ls/show/spend``, Watch, budgets)
    shows this number, so one machine never has two figures.
    """
    return cost(history(ledger, machine), time.time() if now is None else now,
                rates=rates, tz=tz)


# ---------------------------------------------------------------------------- reports


@dataclass(frozen=True)
class MonthRow:
    """One machine in one month: a line of the CSV and of ``gpudesk spend``."""

    month: str
    machine_id: str
    name: str
    provider: str
    instance_type: str
    market: str
    cost: Cost
    approximate: bool = False


def month_rows(hs: Iterable[History], now: float, *, month: str | None = None,
               rates: dict[str, Rates] | None = None, tz: tzinfo | None = None
               ) -> list[MonthRow]:
    """One row per machine per month (only ``month`` when given), months in order."""
    rows = []
    for h in hs:
        for key, c in by_month(h, now, rates=rates, tz=tz).items():
            if month is not None and key != month:
                continue
            rows.append(MonthRow(key, h.machine_id, h.name, h.provider, h.instance_type,
                                 h.market, c, h.approximate))
    rows.sort(key=lambda r: (r.month, r.machine_id))
    return rows


def totals(rows: Iterable[MonthRow]) -> dict[str, Cost]:
    """Sum per currency (USD and CNY are never added together)."""
    out: dict[str, Cost] = {}
    for r in rows:
        out[r.cost.currency] = out.get(r.cost.currency, Cost(currency=r.cost.currency)) + r.cost
    return out


CSV_COLUMNS = ("month", "machine", "name", "provider", "instance_type", "market", "compute",
               "storage", "transfer", "total", "currency", "approximate")


def write_csv(rows: Iterable[MonthRow], out: TextIO) -> None:
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in rows:
        c = r.cost
        w.writerow([r.month, r.machine_id, r.name, r.provider, r.instance_type, r.market,
                    f"{c.compute:.4f}", f"{c.storage:.4f}", f"{c.transfer:.4f}",
                    f"{c.total:.4f}", c.currency, "yes" if r.approximate else "no"])


def csv_text(rows: Iterable[MonthRow]) -> str:
    buf = io.StringIO()
    write_csv(rows, buf)
    return buf.getvalue()
