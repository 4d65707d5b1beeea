"""Who stops the bill of one machine, in each cloud's own terms.

An OS shutdown means what the cloud says it means: EC2 follows the instance's
``InstanceInitiatedShutdownBehavior`` (stop bills the disk, terminate bills
nothing), while a Tencent CVM shut down from inside keeps charging. So the
guard of a machine is a set of enforcers:

* ``agent`` — gpudesk's agent on the machine acts at the budget on its own;
* ``shutdown-behavior`` — EC2 turns the agent's shutdown into the chosen action;
* ``cloud-timer`` — the cloud itself terminates the machine at a time set from
  budget ÷ price (CVM ``ActionTimer``, ECS ``AutoReleaseTime``), even with
  gpudesk and the agent gone. The price is the cloud's own quote at launch
  (:class:`Quote`, recorded in the ledger with its source), in the cloud's
  currency, never a catalog estimate;
* ``instance-role`` — a role lets the agent call the cloud's stop itself.

:func:`plan` decides them at launch (and again when the budget or price
moves); :func:`sentences` says them in words for the Launch dialog,
Preferences and ``gpudesk show``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC
from datetime import datetime
from typing import Protocol
from typing import runtime_checkable

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud import instance_role
from gpudesk.services.cloud.catalog import provider_title
from gpudesk.services.cloud.instance_role import MSG_NO_ROLE
from gpudesk.services.cloud.instance_role import MSG_ROLE
from gpudesk.services.cloud.providers import aliyun_parse as ap
from gpudesk.services.core.said import Sentence
from gpudesk.services.core.said import in_english
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.money.spend import machine_spend

ENFORCERS = ("agent", "shutdown-behavior", "cloud-timer", "instance-role")
ACTIONS = ("stop", "terminate")
# CVM ActionTimer: ActionTime at least 5 minutes ahead (reference/clouds.md); a minute spare
# for the clock and the request's own trip.
TIMER_MIN_AHEAD_S = 6 * 60.0
# Each cloud's own floor, the one its provider uses too: ECS AutoReleaseTime is at least
# 30 minutes ahead, on a whole minute (aliyun_parse.RELEASE_FLOOR_S, from the API reference).
TIMER_FLOOR_S = {"tencent": TIMER_MIN_AHEAD_S, "aliyun": float(ap.RELEASE_FLOOR_S)}

CONTEXT = "Guard"  # spelled out in each mark below: lupdate reads only a literal there
MSG_NONE = QT_TRANSLATE_NOOP(
    "Guard", "No budget: nothing stops this machine's bill but you.")
MSG_TIMER = QT_TRANSLATE_NOOP(
    "Guard", "At {budget} {cloud} itself terminates this machine at {time} UTC, even if gpudesk "
    "and the machine's agent are gone.")
# ECS's release floor (aliyun_parse.RELEASE_FLOOR_S, "30 min + 1"): a budget that lasts less
# buys that much anyway, and the words say so with the figure.
MSG_ALIYUN_FLOOR = QT_TRANSLATE_NOOP(
    "Guard", "Alibaba Cloud releases a machine no sooner than {minutes} minutes after its "
    "release time is set (AutoReleaseTime at least 30 minutes ahead, plus a minute for the "
    "clock), so this budget of {budget}, which lasts under {minutes} minutes, can run up to "
    "{most} before the cloud ends it.")
MSG_AWS_TERMINATE = QT_TRANSLATE_NOOP(
    "Guard", "At {budget} the machine's agent shuts it down and EC2 terminates it (shutdown "
    "behaviour: terminate), even with gpudesk closed; nothing bills after that.")
MSG_AWS_STOP = QT_TRANSLATE_NOOP(
    "Guard", "At {budget} the machine's agent shuts it down and EC2 stops it (shutdown "
    "behaviour: stop). A stopped EC2 machine still bills its disk ({disk} GB) until you "
    "terminate it.")
MSG_TENCENT_STOP = QT_TRANSLATE_NOOP(
    "Guard", "At {budget} gpudesk stops this machine with StopInstances in STOP_CHARGING mode "
    "when the app is running: the compute stops billing, but a stopped Tencent Cloud machine "
    "still bills its disk ({disk} GB) until you terminate it. A stop from inside a Tencent "
    "Cloud machine keeps charging, so with the laptop shut nothing stops the bill: choose "
    "terminate for a cap Tencent Cloud enforces itself.")
MSG_ALIYUN_STOP = QT_TRANSLATE_NOOP(
    "Guard", "At {budget} gpudesk stops this machine with StopInstances in StopCharging mode "
    "when the app is running: the compute stops billing, but a stopped Alibaba Cloud machine "
    "still bills its disk ({disk} GB) until you release it. Where the instance type does not "
    "allow StopCharging, a stopped machine keeps charging in full (KeepCharging). A stop from "
    "inside an Alibaba Cloud machine keeps charging, so with the laptop shut nothing stops the "
    "bill: only the cloud's release timer ends it on its own, and that comes with terminate "
    "only.")
MSG_TENCENT_SPOT_STOP = QT_TRANSLATE_NOOP(
    "Guard", "A Tencent Cloud spot machine cannot be stopped without charging, so at "
    "{budget} it is terminated, not stopped.")
# Alibaba Cloud can stop a spot machine in StopCharging mode, but such a machine may never
# start again (its capacity goes back to the spot pool) while its disk bills on: a month of a
# 100 GB disk is many times a spot machine's budget (issue 29's matrix: 32x). So a spot
# machine ends released at its budget on every cloud (AWS: one-time spot terminates).
MSG_ALIYUN_SPOT_STOP = QT_TRANSLATE_NOOP(
    "Guard", "An Alibaba Cloud spot machine that is stopped may not start again (the cloud "
    "can give its capacity away) while its disk bills on, so at {budget} it is released, "
    "not stopped; keep the run's work in its bucket.")
SPOT_STOP_WORDS = {"tencent": MSG_TENCENT_SPOT_STOP, "aliyun": MSG_ALIYUN_SPOT_STOP}
# Tencent Cloud and Alibaba Cloud with "stop": the desktop's stop is the only one that ends
# the bill (the agent does not power off: an OS shutdown there keeps charging).
MSG_DESKTOP_ONLY = QT_TRANSLATE_NOOP(
    "Guard", "This stop needs gpudesk running and online: while the desktop has no network, "
    "nothing stops the bill.")
# Tencent Cloud and Alibaba Cloud "terminate" before the launch: the cloud's own timer (CVM
# ActionTimer, ECS AutoReleaseTime) is set from the price it quotes just before the call, so
# until that quote its moment is not known, but it is the cloud, not the agent, that ends it.
MSG_TIMER_AT_QUOTE = QT_TRANSLATE_NOOP(
    "Guard", "At {budget} {cloud} itself terminates this machine, at a time set from the "
    "budget and the price it quotes just before the launch, even if gpudesk and the machine's "
    "agent are gone.")
# A machine its keep-alive group replaces (issue 23): the group's own end is the cap, said
# the same on every screen (the Launch dialog, Instances, the quit box, gpudesk show).
MSG_GROUP_GUARD = QT_TRANSLATE_NOOP(
    "Guard", "At {budget} the group ends itself: its own scheduled action, set from the "
    "cloud's price before anything is made, takes it to 0 machines, even with gpudesk and "
    "every agent gone. Each machine's agent ends the group sooner when the run's spend over "
    "all its machines reaches the budget. Nothing is left billing: each machine's disk goes "
    "with it.")
MSG_AGENT_ONLY = QT_TRANSLATE_NOOP(
    "Guard", "At {budget} the machine's agent shuts it down ({action}).")
# The {action} of the sentences, translated as a value of the sentence's context.
ACTION_WORDS = (QT_TRANSLATE_NOOP("Guard", "stop"), QT_TRANSLATE_NOOP("Guard", "terminate"))
MSG_DESKTOP = QT_TRANSLATE_NOOP(
    "Guard", "While gpudesk runs, it also {action}s the machine through the cloud's API at "
    "{budget}.")
# Tencent Cloud and Alibaba Cloud with "stop" and the machine's role (issue 21): the agent
# asks for the stop-charging stop itself (MSG_ROLE), from the first-boot guard on (the role is
# named at creation and the boot bundle carries cloud_stop, issue 29); what a machine stopped
# so still bills.
MSG_ROLE_STOPPED = QT_TRANSLATE_NOOP(
    "Guard", "{cloud} then stops it in {mode} mode: the compute stops billing, but a stopped "
    "machine still bills its disk ({disk} GB) until you delete it.")
STOP_MODE = {"tencent": "STOP_CHARGING", "aliyun": "StopCharging"}
# After any sentence saying a stopped machine still bills its disk: what that disk costs, so
# the risk a "stop" leaves is said in money, not only in GB (issue 29: a cheap spot machine's
# budget can be a small part of a month of its disk).
MSG_DISK_COST = QT_TRANSLATE_NOOP(
    "Guard", "Stopped, that disk costs about {day} a day ({month} a month at list price); "
    "gpudesk counts it in the month's spend as it accrues.")
# Clouds where an OS shutdown keeps charging: at the budget, "stop" is the desktop's
# stop-charging StopInstances only, and the agent just records that the budget was reached.
STOP_BY_DESKTOP = {"tencent": MSG_TENCENT_STOP, "aliyun": MSG_ALIYUN_STOP}

# The system disk bills while the machine runs too, so every cap counts it with the compute.
# List prices per GB-month, pay-as-you-go, of the disk gpudesk launches with, in the cloud's
# currency: CVM Premium Cloud Disk (CLOUD_PREMIUM) 0.35 CNY, ECS ESSD PL1 (cloud_essd)
# 1.0 CNY; EC2 gp3 from the bundled per-region rates (region_rates.csv), else 0.08 USD.
DISK_PER_GB_MONTH = {"aws": (0.08, "USD"), "tencent": (0.35, "CNY"), "aliyun": (1.0, "CNY")}
DISK_MONTH_H = 730.0  # the clouds' own proration of a monthly disk price


def disk_per_hour(provider: str, region: str, disk_gb: float, currency: str,
                  cny_per_usd: float = 7.2) -> float:
    """What the machine's system disk bills per hour, in ``currency`` (0 when unknown)."""
    if disk_gb <= 0 or provider not in DISK_PER_GB_MONTH:
        return 0.0
    per_month, own = DISK_PER_GB_MONTH[provider]
    if provider == "aws":
        from gpudesk.services.money import region_rates

        found = region_rates.bundled().get((provider, region))
        if found is not None:
            per_month, own = found.storage_per_gb_month, "USD"
    hourly = disk_gb * per_month / DISK_MONTH_H
    if own == currency or cny_per_usd <= 0:
        return hourly
    return hourly * cny_per_usd if currency == "CNY" else hourly / cny_per_usd


@dataclass(frozen=True)
class Guard:
    """The money guard of one machine (budget in the machine's currency)."""

    budget: float | None = None
    action: str = "stop"
    enforced_by: tuple[str, ...] = ()
    cloud_timer_at: float | None = None  # unix seconds, UTC

    def as_json(self) -> dict[str, object]:
        return {"budget": self.budget, "action": self.action,
                "enforced_by": list(self.enforced_by),
                "cloud_timer_at": iso_utc(self.cloud_timer_at)}


@dataclass(frozen=True)
class Amount:
    """A budget in a sentence's values: "5.00 USD" as written (the CLI, the ledger's
    currency), which a window shows in the user's own currency instead (issue 31)."""

    value: float
    currency: str = "USD"

    def __str__(self) -> str:
        return f"{self.value:.2f} {self.currency}"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


QUOTE_STEP = "price-quote"  # the ledger event that records the cloud's quote at launch
_QUOTE_RE = re.compile(r"^(?P<price>[0-9.]+) (?P<currency>USD|CNY)/h from (?P<source>.+?) "
                       r"in (?P<where>\S*) at (?P<rate>[0-9.]+) CNY/USD$")


@dataclass(frozen=True)
class Quote:
    """The price per hour the cloud itself quoted at launch, in the cloud's currency.

    ``source`` names the answer (``InquiryPriceRunInstances``, ``DescribePrice``, the AWS
    price list file and its date, ``DescribeSpotPriceHistory``); ``cny_per_usd`` is the
    rate the launch converted the USD budget and ledger price with, so the cloud's cap is
    budget ÷ quote in the cloud's own currency, whatever the rate in Preferences becomes.
    """

    price: float
    currency: str  # USD or CNY
    source: str
    cny_per_usd: float = 7.2
    region: str = ""
    zone: str = ""

    @property
    def usd(self) -> float:
        """The quote in USD per hour (the ledger's currency of machines gpudesk launches)."""
        if self.currency == "CNY":
            return round(self.price / self.cny_per_usd, 6) if self.cny_per_usd > 0 else 0.0
        return round(self.price, 6)

    def convert(self, amount: float, currency: str) -> float:
        """``amount`` in ``currency`` (the ledger's), in the quote's currency."""
        if currency == self.currency or self.cny_per_usd <= 0:
            return amount
        return amount * self.cny_per_usd if self.currency == "CNY" else amount / self.cny_per_usd

    def detail(self) -> str:
        """The ledger event's words, e.g. ``7.43 CNY/h from InquiryPriceRunInstances in
        ap-guangzhou-3 at 7.2 CNY/USD`` (read back by :meth:`parse`)."""
        where = self.zone or self.region or "-"
        return (f"{self.price:g} {self.currency}/h from {self.source} in {where} at "
                f"{self.cny_per_usd:g} CNY/USD")

    @classmethod
    def parse(cls, detail: str) -> Quote | None:
        found = _QUOTE_RE.match(detail.strip())
        if found is None:
            return None
        where = found["where"] if found["where"] != "-" else ""
        try:
            return cls(float(found["price"]), found["currency"], found["source"],
                       float(found["rate"]), zone=where)
        except ValueError:
            return None


def record_quote(ledger: Ledger, machine_id: str, quote: Quote) -> None:
    """Write the cloud's quote into the machine's history (the cap is counted from it)."""
    ledger.log(machine_id, QUOTE_STEP, quote.detail())


def launch_quote(ledger: Ledger, m: Machine) -> Quote | None:
    """The last quote the cloud gave for ``m`` at launch; None for a machine without one
    (adopted, launched before quotes were recorded, or an own machine)."""
    for event in reversed(ledger.events(m.id)):
        if event.step == QUOTE_STEP:
            quote = Quote.parse(event.detail)
            if quote is not None and quote.price > 0:
                return quote
    return None


def iso_utc(t: float | None) -> str | None:
    """ISO 8601 UTC with a ``Z``, whole seconds (what CVM's ActionTime takes)."""
    if t is None:
        return None
    return datetime.fromtimestamp(math.floor(t), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def timer_at(budget: float, spent: float, price_per_hour: float, now: float,
             provider: str = "tencent") -> float | None:
    """When ``spent`` reaches ``budget`` at ``price_per_hour`` from ``now``.

    Never sooner than ``provider``'s cloud accepts (:data:`TIMER_FLOOR_S`: CVM 5 minutes
    ahead, ECS 30 and on a whole minute, each with a minute spare), so the ledger says the
    moment the cloud will hold; None without a price.
    """
    if price_per_hour <= 0:
        return None
    at = now + max(0.0, budget - spent) / price_per_hour * 3600.0
    if provider == "aliyun":
        return ap.release_at(at, now)
    floor_s = TIMER_FLOOR_S.get(provider, TIMER_MIN_AHEAD_S)
    return max(math.floor(at), math.ceil(now + floor_s))


def plan(provider: str, budget: float | None, action: str, price_per_hour: float,
         spent: float, now: float, *, agent: bool = True, quote: Quote | None = None,
         currency: str = "USD", disk_gb: float = 0.0, region: str = "",
         cny_per_usd: float = 7.2, market: str = "on-demand", role: bool = False) -> Guard:
    """The guard a machine gets: which enforcers, and the cloud timer's moment if any.

    ``budget``, ``spent`` and ``price_per_hour`` are in ``currency`` (the ledger's). With
    the cloud's ``quote`` the timer is budget ÷ the quoted price in the cloud's currency
    (the budget and spend converted at the quote's rate), never a catalog estimate. The
    system disk (``disk_gb`` in ``region``) bills while the machine runs, so its price per
    hour is added to the compute's: the cap covers both. A Tencent Cloud spot machine
    cannot stop charging (STOP_CHARGING is for pay-as-you-go machines), so its "stop" is a
    terminate (:data:`MSG_TENCENT_SPOT_STOP` says so), and so is an Alibaba Cloud spot
    machine's (:data:`MSG_ALIYUN_SPOT_STOP`). ``role``: the machine will carry the
    role that lets its agent stop it through the cloud (named at creation, the default), as
    a plan's words should say before the launch.
    """
    action = action if action in ACTIONS else "stop"
    if action == "stop" and spot_cannot_stop(provider, market):
        action = "terminate"
    if budget is None or budget <= 0 or provider == "own":
        return Guard(None, action, ("agent",) if agent and provider != "own" else ())
    by: list[str] = ["agent"] if agent else []
    when: float | None = None
    if provider == "aws":
        by.append("shutdown-behavior")
    elif provider in ("tencent", "aliyun") and action == "terminate":
        if quote is not None and quote.price > 0:
            disk = disk_per_hour(provider, region, disk_gb, quote.currency, quote.cny_per_usd)
            when = timer_at(quote.convert(budget, currency), quote.convert(spent, currency),
                            quote.price + disk, now, provider)
        elif price_per_hour > 0:
            disk = disk_per_hour(provider, region, disk_gb, currency, cny_per_usd)
            when = timer_at(budget, spent, price_per_hour + disk, now, provider)
        if when is not None:
            by.append("cloud-timer")
    if role and provider in instance_role.CLOUDS:
        by.append("instance-role")
    return Guard(budget, action, tuple(by), when)


def spot_cannot_stop(provider: str, market: str) -> bool:
    """A "stop" budget of this spot machine ends it instead: CVM refuses STOP_CHARGING for
    spot machines (UnsupportedOperation.StoppedModeStopCharging); an ECS spot machine
    stopped may never start again while its disk bills (:data:`MSG_ALIYUN_SPOT_STOP`)."""
    return provider in SPOT_STOP_WORDS and market == "spot"


def of(m: Machine) -> Guard:
    """The guard the ledger recorded for ``m``."""
    by = tuple(x for x in m.enforced_by.split(",") if x in ENFORCERS)
    return Guard(m.budget, m.on_budget or "stop", by, m.cloud_timer_at)


def sentences(m: Machine, g: Guard | None = None, role_why: str | None = None
              ) -> list[Sentence]:
    """What protects ``m``'s bill, as (template, values) pairs to translate and fill.

    ``role_why``: why the machine has no role (``instance_role.why_not``: the cloud's
    refusal, or the user's choice); given, the words say what stays unprotected
    (:data:`MSG_NO_ROLE`). None where it is not known (a plan, an adopted machine).
    """
    g = of(m) if g is None else g
    if m.group_live and g.budget is not None:  # the group's end, whatever a member's action
        return [(MSG_GROUP_GUARD, {"budget": Amount(g.budget, m.currency)})]
    no_role: list[Sentence] = []
    if role_why is not None and "instance-role" not in g.enforced_by:
        no_role = [(MSG_NO_ROLE, {"cloud": provider_title(m.provider), "why": role_why})]
    if g.budget is None:
        return [(MSG_NONE, {}), *no_role]
    budget = Amount(g.budget, m.currency)
    out: list[Sentence] = []
    if g.action == "stop" and spot_cannot_stop(m.provider, m.market):
        g = Guard(g.budget, "terminate", g.enforced_by, g.cloud_timer_at)
    if g.action == "terminate" and spot_cannot_stop(m.provider, m.market):
        out.append((SPOT_STOP_WORDS[m.provider], {"budget": budget}))
    if "cloud-timer" in g.enforced_by and g.cloud_timer_at is not None:
        clock = datetime.fromtimestamp(g.cloud_timer_at, UTC).strftime("%Y-%m-%d %H:%M")
        out.append((MSG_TIMER, {"budget": budget, "cloud": provider_title(m.provider),
                                "time": clock}))
        out += _under_release_floor(m, g.budget or 0.0)
    if m.provider == "aws" and "shutdown-behavior" in g.enforced_by:
        out.append((MSG_AWS_TERMINATE if g.action == "terminate" else MSG_AWS_STOP,
                    {"budget": budget, "disk": f"{m.disk_gb:g}"}))
        # a one-time spot machine is terminated, not stopped (aws.shutdown_behavior)
        out += _disk_cost(m) if g.action == "stop" and m.market != "spot" else []
    elif m.provider in STOP_BY_DESKTOP and g.action == "stop" and \
            "instance-role" in g.enforced_by:
        # the agent's stop is the role's stop-charging StopInstances (machine_rules), not a
        # shutdown from inside: not the desktop's alone, once the full agent is there
        cloud = provider_title(m.provider)
        out += [(MSG_ROLE, {"budget": budget, "cloud": cloud, "action": g.action}),
                (MSG_ROLE_STOPPED, {"cloud": cloud, "mode": STOP_MODE[m.provider],
                                    "disk": f"{m.disk_gb:g}"}),
                *_disk_cost(m),
                (MSG_DESKTOP, {"budget": budget, "action": g.action})]
        return out
    elif m.provider in STOP_BY_DESKTOP and g.action == "stop":
        out.append((STOP_BY_DESKTOP[m.provider], {"budget": budget,
                                                  "disk": f"{m.disk_gb:g}"}))
        out += _disk_cost(m)
        out.append((MSG_DESKTOP_ONLY, {}))
        return out + no_role
    elif m.provider in TIMER_FLOOR_S and g.action == "terminate" and not m.cloud_id \
            and "cloud-timer" not in g.enforced_by:
        # a plan before the cloud's quote: the timer comes with the launch (issue 31)
        out.append((MSG_TIMER_AT_QUOTE, {"budget": budget, "cloud": provider_title(m.provider)}))
    elif "agent" in g.enforced_by and "cloud-timer" not in g.enforced_by:
        out.append((MSG_AGENT_ONLY, {"budget": budget, "action": g.action}))
    if "instance-role" in g.enforced_by:  # the agent asks the cloud itself (instance_role.py)
        out.append((MSG_ROLE, {"budget": budget, "cloud": provider_title(m.provider),
                               "action": g.action}))
    out += no_role
    out.append((MSG_DESKTOP, {"budget": budget, "action": g.action}))
    return out


def _under_release_floor(m: Machine, budget: float) -> list[Sentence]:
    """ECS's floor, said with its figures where the budget lasts less than it at the machine's
    price (with its disk): the cloud's release comes at the floor, not at the budget."""
    if m.provider != "aliyun" or m.price_per_hour <= 0:
        return []
    per_hour = m.price_per_hour + disk_per_hour(m.provider, m.region, m.disk_gb,
                                                m.currency or "USD")
    floor_h = ap.RELEASE_FLOOR_S / 3600.0
    if budget >= per_hour * floor_h:
        return []
    return [(MSG_ALIYUN_FLOOR, {"minutes": f"{ap.RELEASE_FLOOR_S // 60:g}",
                                "budget": Amount(budget, m.currency),
                                "most": Amount(per_hour * floor_h, m.currency)})]


def _disk_cost(m: Machine) -> list[Sentence]:
    """:data:`MSG_DISK_COST` for ``m``'s disk in the currency of the cloud's list price (no
    exchange rate guessed); nothing where the disk's size or price is not known."""
    if m.provider not in DISK_PER_GB_MONTH:
        return []
    currency = DISK_PER_GB_MONTH[m.provider][1]
    hourly = disk_per_hour(m.provider, m.region, m.disk_gb, currency)
    if hourly <= 0:
        return []
    return [(MSG_DISK_COST, {"day": f"{hourly * 24:.2f} {currency}",
                             "month": f"{hourly * DISK_MONTH_H:.2f} {currency}"})]


def english(m: Machine, g: Guard | None = None, role_why: str | None = None) -> list[str]:
    """:func:`sentences` untranslated (the CLI)."""
    return [in_english(s) for s in sentences(m, g, role_why)]


@runtime_checkable
class GuardedProvider(Protocol):
    """A provider that can change a machine's cloud-side guard after launch."""

    def set_guard(self, region: str, cloud_id: str, action: str, market: str,
                  timer_at: float | None = None) -> None: ...


@runtime_checkable
class TimerReader(Protocol):
    """A provider that can say the cloud-side timer the cloud itself holds (CVM
    DescribeInstancesActionTimer, ECS DescribeInstances AutoReleaseTime)."""

    def guard_at(self, region: str, cloud_id: str) -> float | None: ...


def read_timer(provider: object, region: str, cloud_id: str) -> tuple[bool, float | None]:
    """(whether the cloud answered, the timer it holds or None)."""
    if not isinstance(provider, TimerReader):
        return False, None
    try:
        return True, provider.guard_at(region, cloud_id)
    except Exception:  # noqa: BLE001 - no answer: the caller keeps what it knew
        return False, None


def with_timer(enforced_by: str, at: float | None) -> str:
    """``enforced_by`` with ``cloud-timer`` in it exactly when the cloud holds a timer."""
    by = [x for x in enforced_by.split(",") if x and x != "cloud-timer"]
    if at is not None:
        by.append("cloud-timer")
    return ",".join(by)


def apply(ledger: Ledger, m: Machine, provider: object, budget: float | None, action: str,
          now: float) -> Guard:
    """Blocking: give a running machine a new budget/action, in the cloud and the ledger.

    The ledger is written before the cloud call (the guard asked for) and after it,
    like every call that can change a bill. Budget and spend are in the ledger's
    currency; the timer is counted from the price the cloud quoted at launch, in the
    cloud's currency, where the ledger recorded one (else from the ledger's price).
    """
    spent = machine_spend(ledger, m, now).total
    g = plan(m.provider, budget, action, m.price_per_hour, spent, now,
             agent="agent" in of(m).enforced_by, quote=launch_quote(ledger, m),
             currency=m.currency or "USD", disk_gb=m.disk_gb, region=m.region,
             market=m.market)
    if "instance-role" in of(m).enforced_by:  # the machine keeps its role whatever the budget
        g = Guard(g.budget, g.action, (*g.enforced_by, "instance-role"), g.cloud_timer_at)
    ledger.update(m.id, budget=g.budget, on_budget=g.action if g.budget else "",
                  enforced_by=",".join(g.enforced_by), cloud_timer_at=g.cloud_timer_at,
                  step="guard-requested", detail=",".join(g.enforced_by) or "none")
    if m.cloud_id and isinstance(provider, GuardedProvider):
        try:
            provider.set_guard(m.region, m.cloud_id, g.action, m.market, g.cloud_timer_at)
        except Exception:
            # the old guard stays, but the timer is what the cloud now holds (a CVM timer
            # is deleted before the new one is imported: after a failed import there may be
            # none): read back, and recorded only as the cloud says it
            answered, held = read_timer(provider, m.region, m.cloud_id)
            at = held if answered else m.cloud_timer_at
            ledger.update(m.id, budget=m.budget, on_budget=m.on_budget,
                          enforced_by=with_timer(m.enforced_by, at) if answered
                          else m.enforced_by, cloud_timer_at=at,
                          step="guard-failed", detail=",".join(g.enforced_by) or "none")
            raise
        answered, held = read_timer(provider, m.region, m.cloud_id)
        if answered and held != g.cloud_timer_at:
            # the cloud's own moment (ECS keeps whole minutes, a floor may have moved it)
            by = with_timer(",".join(g.enforced_by), held)
            g = Guard(g.budget, g.action, tuple(x for x in by.split(",") if x), held)
            ledger.update(m.id, enforced_by=",".join(g.enforced_by),
                          cloud_timer_at=held, step="guard-read", detail=iso_utc(held) or "none")
        ledger.log(m.id, "guard", iso_utc(g.cloud_timer_at) or g.action)
    return g
