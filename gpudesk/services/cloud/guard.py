"""Who stops the bill of one machine, in each cloud's own terms.

An OS shutdown means what the cloud says it means: EC2 follows the instance's
``InstanceInitiatedShutdownBehavior`` (stop bills the disk, terminate bills
nothing), while a Tencent CVM shut down from inside keeps charging. So the
guard of a machine is a set of enforcers:

* ``agent`` — gpudesk's agent on the machine acts at the budget on its own;
* ``shutdown-behavior`` — EC2 turns the agent's shutdown into the chosen action;
* ``cloud-timer`` — the cloud itself terminates the machine at a time set from
  budget ÷ price (CVM ``ActionTimer``, ECS ``AutoReleaseTime``), even with
  gpudesk and the agent gone;
* ``instance-role`` — a role lets the agent call the cloud's stop itself.

:func:`plan` decides them at launch (and again when the budget or price
moves); :func:`sentences` says them in words for the Launch dialog,
Preferences and ``gpudesk show``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.catalog import provider_title
from gpudesk.services.money.ledger import Ledger, Machine
from gpudesk.services.money.spend import machine_spend

ENFORCERS = ("agent", "shutdown-behavior", "cloud-timer", "instance-role")
ACTIONS = ("stop", "terminate")
# CVM ActionTimer: ActionTime at least 5 minutes ahead (reference/clouds.md); a minute spare
# for the clock and the request's own trip.
TIMER_MIN_AHEAD_S = 6 * 60.0

CONTEXT = "Guard"
MSG_NONE = QT_TRANSLATE_NOOP(CONTEXT, "No budget: nothing stops this machine's bill but you.")
MSG_TIMER = QT_TRANSLATE_NOOP(
    CONTEXT, "At {budget} {cloud} itself terminates this machine at {time} UTC, even if gpudesk "
    "and the machine's agent are gone.")
MSG_AWS_TERMINATE = QT_TRANSLATE_NOOP(
    CONTEXT, "At {budget} the machine's agent shuts it down and EC2 terminates it (shutdown "
    "behaviour: terminate), even with gpudesk closed; nothing bills after that.")
MSG_AWS_STOP = QT_TRANSLATE_NOOP(
    CONTEXT, "At {budget} the machine's agent shuts it down and EC2 stops it (shutdown "
    "behaviour: stop). A stopped EC2 machine still bills its disk ({disk} GB) until you "
    "terminate it.")
MSG_TENCENT_STOP = QT_TRANSLATE_NOOP(
    CONTEXT, "At {budget} gpudesk stops this machine with StopInstances (no charge while "
    "stopped) when the app is running. A stop from inside a Tencent Cloud machine keeps "
    "charging, so with the laptop shut nothing stops the bill: choose terminate for a cap "
    "Tencent Cloud enforces itself.")
MSG_AGENT_ONLY = QT_TRANSLATE_NOOP(
    CONTEXT, "At {budget} the machine's agent shuts it down ({action}).")
MSG_DESKTOP = QT_TRANSLATE_NOOP(
    CONTEXT, "While gpudesk runs, it also {action}s the machine through the cloud's API at "
    "{budget}.")


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


def iso_utc(t: float | None) -> str | None:
    """ISO 8601 UTC with a ``Z``, whole seconds (what CVM's ActionTime takes)."""
    if t is None:
        return None
    return datetime.fromtimestamp(math.floor(t), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def timer_at(budget: float, spent: float, price_per_hour: float, now: float) -> float | None:
    """When ``spent`` reaches ``budget`` at ``price_per_hour`` from ``now``.

    Never sooner than the cloud accepts (5 minutes ahead); None without a price.
    """
    if price_per_hour <= 0:
        return None
    at = now + max(0.0, budget - spent) / price_per_hour * 3600.0
    return max(math.floor(at), math.ceil(now + TIMER_MIN_AHEAD_S))


def plan(provider: str, budget: float | None, action: str, price_per_hour: float,
         spent: float, now: float, *, agent: bool = True) -> Guard:
    """The guard a machine gets: which enforcers, and the cloud timer's moment if any."""
    action = action if action in ACTIONS else "stop"
    if budget is None or budget <= 0 or provider == "own":
        return Guard(None, action, ("agent",) if agent and provider != "own" else ())
    by: list[str] = ["agent"] if agent else []
    when: float | None = None
    if provider == "aws":
        by.append("shutdown-behavior")
    elif provider in ("tencent", "aliyun") and action == "terminate":
        when = timer_at(budget, spent, price_per_hour, now)
        if when is not None:
            by.append("cloud-timer")
    return Guard(budget, action, tuple(by), when)


def of(m: Machine) -> Guard:
    """The guard the ledger recorded for ``m``."""
    by = tuple(x for x in m.enforced_by.split(",") if x in ENFORCERS)
    return Guard(m.budget, m.on_budget or "stop", by, m.cloud_timer_at)


def sentences(m: Machine, g: Guard | None = None) -> list[tuple[str, dict[str, object]]]:
    """What protects ``m``'s bill, as (template, values) pairs to translate and fill."""
    g = of(m) if g is None else g
    if g.budget is None:
        return [(MSG_NONE, {})]
    budget = f"{g.budget:.2f} {m.currency}"
    out: list[tuple[str, dict[str, object]]] = []
    if "cloud-timer" in g.enforced_by and g.cloud_timer_at is not None:
        clock = datetime.fromtimestamp(g.cloud_timer_at, UTC).strftime("%Y-%m-%d %H:%M")
        out.append((MSG_TIMER, {"budget": budget, "cloud": provider_title(m.provider),
                                "time": clock}))
    if m.provider == "aws" and "shutdown-behavior" in g.enforced_by:
        out.append((MSG_AWS_TERMINATE if g.action == "terminate" else MSG_AWS_STOP,
                    {"budget": budget, "disk": f"{m.disk_gb:g}"}))
    elif m.provider == "tencent" and g.action == "stop":
        out.append((MSG_TENCENT_STOP, {"budget": budget}))
    elif "agent" in g.enforced_by and "cloud-timer" not in g.enforced_by:
        out.append((MSG_AGENT_ONLY, {"budget": budget, "action": g.action}))
    out.append((MSG_DESKTOP, {"budget": budget, "action": g.action}))
    return out


def english(m: Machine, g: Guard | None = None) -> list[str]:
    """:func:`sentences` untranslated (the CLI)."""
    return [t.format(**v) for t, v in sentences(m, g)]


@runtime_checkable
class GuardedProvider(Protocol):
    """A provider that can change a machine's cloud-side guard after launch."""

    def set_guard(self, region: str, cloud_id: str, action: str, market: str,
                  timer_at: float | None = None) -> None: ...


def apply(ledger: Ledger, m: Machine, provider: object, budget: float | None, action: str,
          now: float) -> Guard:
    """Blocking: give a running machine a new budget/action, in the cloud and the ledger.

    The ledger is written before the cloud call (the guard asked for) and after it,
    like every call that can change a bill. Budget and price are both in the ledger's
    currency: the timer only needs budget ÷ price.
    """
    spent = machine_spend(ledger, m, now).total
    g = plan(m.provider, budget, action, m.price_per_hour, spent, now,
             agent="agent" in of(m).enforced_by)
    ledger.update(m.id, budget=g.budget, on_budget=g.action if g.budget else "",
                  enforced_by=",".join(g.enforced_by), cloud_timer_at=g.cloud_timer_at,
                  step="guard-requested", detail=",".join(g.enforced_by) or "none")
    if m.cloud_id and isinstance(provider, GuardedProvider):
        try:
            provider.set_guard(m.region, m.cloud_id, g.action, m.market, g.cloud_timer_at)
        except Exception:
            # the cloud kept the guard it had: so does the ledger (gpudesk says what is true)
            ledger.update(m.id, budget=m.budget, on_budget=m.on_budget,
                          enforced_by=m.enforced_by, cloud_timer_at=m.cloud_timer_at,
                          step="guard-failed", detail=",".join(g.enforced_by) or "none")
            raise
        ledger.log(m.id, "guard", iso_utc(g.cloud_timer_at) or g.action)
    return g
