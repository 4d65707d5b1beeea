"""Budgets per machine and per calendar month, and their 50/80/100 % alerts, each fired once.

A budget's identity is what defines it (scope, machine or month, cap, currency,
thresholds, action), hashed the way ``agent/rules.py`` names its rules: spend
moving, prices changing or the app restarting keep the identity, so a threshold
that fired stays fired; raising the cap (or a new month) makes a new budget
whose thresholds fire anew. What fired is kept in ``budget_alerts.json`` in the
data folder, written atomically; a corrupt file is moved aside (alerts may then
repeat once, which is better than missing one).

A machine's budget is its own, from the ledger (the Launch dialog, ``gpudesk launch
--budget``, ``gpudesk budget``): :func:`machine_budget` is the one place that says
which, for the desktop's crossings here, the agent's rules and the cloud's cap alike.
Preferences' machine budget is only the default, for a machine with no budget of its own.

The checker only reports: at 100 % it says which action (stop, terminate, warn)
to run on which machines, and the caller runs it. A stop or terminate is also
*owed* in the same file until the caller settles it (done, or the machine no
longer bills), so an action that failed is retried, and shown, until done.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gpudesk.services.core import paths
from gpudesk.services.core.files import atomic_write_text
from gpudesk.services.core.machine_states import STATE_PENDING
from gpudesk.services.core.machine_states import STATE_RUNNING
from gpudesk.services.money import spend

if TYPE_CHECKING:
    from gpudesk.services.core.settings import Settings
    from gpudesk.services.money.ledger import Ledger
    from gpudesk.services.money.ledger import Machine

log = logging.getLogger(__name__)

THRESHOLDS: tuple[float, ...] = (50.0, 80.0, 100.0)
ACTIONS: tuple[str, ...] = ("stop", "terminate", "warn")
DEFAULT_ACTION = "stop"  # a cap that only warns is what Preferences' "warn" is for
SCOPE_MACHINE = "machine"
SCOPE_MONTH = "month"
STATE_VERSION = 1


def _digest(*parts: Any) -> str:
    return hashlib.sha1(json.dumps(parts).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Budget:
    """A cap on one machine's spend (``key`` = ledger id) or one month's (``key`` = YYYY-MM)."""

    scope: str  # SCOPE_MACHINE or SCOPE_MONTH
    key: str
    cap: float  # in ``currency``
    currency: str = "USD"
    thresholds: tuple[float, ...] = THRESHOLDS
    action: str = DEFAULT_ACTION

    @property
    def id(self) -> str:
        return _digest("budget", self.scope, self.key, self.cap, self.currency,
                       list(self.thresholds), self.action)


@dataclass(frozen=True)
class Crossing:
    """Spend passed ``threshold`` % of ``budget``; ``action`` is set only at 100 % and over."""

    budget: Budget
    threshold: float
    spent: float
    at: float
    action: str | None = None
    machines: tuple[str, ...] = ()  # what the action applies to (still billing)

    @property
    def percent(self) -> float:
        return 100.0 * self.spent / self.budget.cap


def crossed(budget: Budget, spent: float, fired: Iterable[float]) -> list[float]:
    """Thresholds reached by ``spent`` that have not fired yet, lowest first."""
    done = set(fired)
    # A hair of tolerance: float sums of cents must not miss a threshold they reached.
    return [t for t in sorted(budget.thresholds)
            if t not in done and spent * 100.0 >= t * budget.cap - 1e-9]


# ---------------------------------------------------------------------------- fired state


def state_file() -> Path:
    return paths.data_dir() / "budget_alerts.json"


@dataclass
class FiredState:
    """Which thresholds of which budget (by id) have fired: survives restarts."""

    path: Path
    fired: dict[str, list[float]] = field(default_factory=dict)
    # Actions fired but not done yet, by "<budget id>/<ledger id>": kept (and retried by the
    # caller) until done or the machine no longer bills, across restarts.
    owed: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path | None = None) -> FiredState:
        path = state_file() if path is None else path
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            fired = raw["fired"]
            if not isinstance(fired, dict):
                raise ValueError("fired is not an object")
            clean = {str(k): [float(x) for x in v] for k, v in fired.items()
                     if isinstance(v, list)}
            owed_raw = raw.get("owed", {})
            owed = {str(k): dict(v) for k, v in owed_raw.items()
                    if isinstance(v, dict) and v.get("action") in ("stop", "terminate")
                    and isinstance(v.get("machine"), str)} if isinstance(owed_raw, dict) else {}
        except FileNotFoundError:
            return cls(path)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("%s: unreadable budget alert state (%s); starting afresh", path, exc)
            with contextlib.suppress(OSError):
                os.replace(path, path.with_name(path.name + ".bad"))
            return cls(path)
        return cls(path, clean, owed)

    def save(self) -> None:
        text = json.dumps({"version": STATE_VERSION, "fired": self.fired, "owed": self.owed},
                          indent=1, sort_keys=True) + "\n"
        atomic_write_text(self.path, text)

    def mark(self, budget: Budget, thresholds: Iterable[float]) -> None:
        have = self.fired.setdefault(budget.id, [])
        have.extend(t for t in thresholds if t not in have)
        have.sort()

    def owe(self, crossing: Crossing) -> None:
        """Remember a 100 % action per machine until :meth:`settle` says it is done."""
        if crossing.action not in ("stop", "terminate"):
            return
        for machine in crossing.machines:
            self.owed.setdefault(f"{crossing.budget.id}/{machine}", {
                "action": crossing.action, "machine": machine,
                "threshold": crossing.threshold, "since": crossing.at, "tries": 0,
                "error": ""})

    def owed_actions(self) -> list[Owed]:
        """What is still to do, terminations first (a terminated machine needs no stop)."""
        out = [Owed(k, str(v["action"]), str(v["machine"]), float(v.get("since", 0.0)),
                    int(v.get("tries", 0)), str(v.get("error", "")))
               for k, v in self.owed.items()]
        return sorted(out, key=lambda o: (o.action != "terminate", o.since, o.key))

    def settle(self, key: str) -> None:
        self.owed.pop(key, None)

    def failed(self, key: str, error: str) -> None:
        if key in self.owed:
            self.owed[key]["tries"] = int(self.owed[key].get("tries", 0)) + 1
            self.owed[key]["error"] = error


@dataclass(frozen=True)
class Owed:
    """A budget action fired and not done yet on one machine."""

    key: str
    action: str
    machine: str
    since: float
    tries: int = 0
    error: str = ""  # why the last try failed, in words


# ---------------------------------------------------------------------------- from settings


@dataclass(frozen=True)
class BudgetConfig:
    """The budgets the user asked for, in USD (Preferences): 0 means none."""

    monthly_usd: float = 0.0
    machine_usd: float = 0.0
    action: str = DEFAULT_ACTION
    cny_per_usd: float = 7.2
    thresholds: tuple[float, ...] = THRESHOLDS

    @classmethod
    def from_settings(cls, s: Settings) -> BudgetConfig:
        action = getattr(s, "budget_action", DEFAULT_ACTION)
        return cls(monthly_usd=s.monthly_budget_usd, machine_usd=s.machine_budget_usd,
                   action=action if action in ACTIONS else DEFAULT_ACTION,
                   cny_per_usd=s.cny_per_usd)


@dataclass(frozen=True)
class MachineBudget:
    """The budget one machine is held to: its own (``own``), or else Preferences' default.

    ``cap`` is in ``currency`` (the ledger's currency of the machine for its own budget,
    USD for the default); ``action`` is stop, terminate or warn.
    """

    cap: float
    currency: str
    action: str
    own: bool

    def usd(self, cny_per_usd: float) -> float:
        return spend.to_usd(self.cap, self.currency, cny_per_usd)

    def in_currency(self, currency: str, cny_per_usd: float) -> float:
        """The cap in ``currency`` (USD or CNY), e.g. the ledger's currency of the machine."""
        if currency == self.currency:
            return self.cap
        usd = self.usd(cny_per_usd)
        return usd * cny_per_usd if currency == "CNY" else usd


def machine_budget(m: Machine, config: BudgetConfig) -> MachineBudget | None:
    """The budget ``m`` is held to: its own from the ledger, else Preferences' default;
    None when it has neither. An own budget always acts (stop unless it says terminate)."""
    if m.budget is not None and m.budget > 0:
        action = m.on_budget if m.on_budget in ("stop", "terminate") else DEFAULT_ACTION
        return MachineBudget(m.budget, m.currency or "USD", action, True)
    if config.machine_usd > 0:
        return MachineBudget(config.machine_usd, "USD", config.action, False)
    return None


@dataclass(frozen=True)
class Status:
    """Where one budget stands now (for ``gpudesk spend`` and the dashboard)."""

    budget: Budget
    spent: float
    per_hour: float
    cap_at: float | None  # when the cap is reached at the current rate

    @property
    def percent(self) -> float:
        return 100.0 * self.spent / self.budget.cap


def statuses(hs: Iterable[spend.History], billing: Iterable[str], config: BudgetConfig,
             now: float, *, rates: dict[str, spend.Rates] | None = None,
             tz: tzinfo | None = None, machines: Mapping[str, Machine] | None = None
             ) -> list[Status]:
    """Every budget in force at ``now`` with its spend in USD (compute + storage + transfer).

    Machine budgets cover the machines that may still be billing (``billing``: ledger ids),
    each held to :func:`machine_budget` of its ledger row in ``machines`` (by ledger id);
    a machine not given there gets Preferences' default.
    """
    hs = list(hs)
    live = set(billing)
    usd = config.cny_per_usd

    def dollars(h: spend.History, c: float) -> float:
        return spend.to_usd(c, h.currency, usd)

    rows = machines or {}
    default = MachineBudget(config.machine_usd, "USD", config.action, False) \
        if config.machine_usd > 0 else None
    out: list[Status] = []
    for h in hs:
        if h.machine_id not in live or spend.rule_for(h.provider).free:
            continue
        row = rows.get(h.machine_id)
        mb = machine_budget(row, config) if row is not None else default
        if mb is not None:
            b = Budget(SCOPE_MACHINE, h.machine_id, mb.usd(usd), "USD", config.thresholds,
                       mb.action)
            spent = dollars(h, spend.cost(h, now, rates=rates, tz=tz).total)
            rate = dollars(h, spend.rate_per_hour(h, now, rates=rates, tz=tz))
            out.append(Status(b, spent, rate, spend.cap_reached_at(spent, rate, b.cap, now)))
    if config.monthly_usd > 0:
        key = spend.month_key(now, tz)
        window = spend.month_window(key, tz)
        b = Budget(SCOPE_MONTH, key, config.monthly_usd, "USD", config.thresholds, config.action)
        assert window.start is not None
        this_month = [h for h in hs if spend.last_moment(h, now) > window.start]
        spent = sum(dollars(h, spend.cost(h, now, window, rates=rates, tz=tz).total)
                    for h in this_month)
        # every disk that still exists counts, stopped machine or not
        rate = sum(dollars(h, spend.rate_per_hour(h, now, rates=rates, tz=tz))
                   for h in this_month)
        cap_at = spend.cap_reached_at(spent, rate, b.cap, now)
        if cap_at is not None and window.end is not None and cap_at >= window.end:
            cap_at = None  # the month ends first
        out.append(Status(b, spent, rate, cap_at))
    return out


# ---------------------------------------------------------------------------- the checker


Books = (tuple[list[spend.History], list[str]]
         | tuple[list[spend.History], list[str], dict[str, "Machine"]])


def _books(got: Books) -> tuple[list[spend.History], list[str], dict[str, Machine] | None]:
    if len(got) == 3:
        return got[0], got[1], got[2]
    return got[0], got[1], None


class BudgetChecker:
    """Turns spend into crossings, each reported once per budget, across restarts.

    ``source`` gives (histories, ids of machines that may be billing[, ledger rows by
    id, whose own budgets then count]) at each check; :meth:`for_ledger` builds it from
    the ledger, own budgets included.
    """

    def __init__(self, source: Callable[[], Books],
                 config: Callable[[], BudgetConfig], state: FiredState | None = None, *,
                 rates: dict[str, spend.Rates] | None = None, tz: tzinfo | None = None
                 ) -> None:
        self.source = source
        self.config = config
        self.state = state if state is not None else FiredState.load()
        self.rates = rates
        self.tz = tz

    @classmethod
    def for_ledger(cls, ledger: Ledger, config: Callable[[], BudgetConfig],
                   state: FiredState | None = None, **kw: Any) -> BudgetChecker:
        def source() -> Books:
            machines = ledger.machines()
            return ([spend.history(ledger, m) for m in machines],
                    [m.id for m in machines if m.billing], {m.id: m for m in machines})

        return cls(source, config, state, **kw)

    def statuses(self, now: float) -> list[Status]:
        hs, billing, rows = _books(self.source())
        return statuses(hs, billing, self.config(), now, rates=self.rates, tz=self.tz,
                        machines=rows)

    def check(self, now: float) -> list[Crossing]:
        """New crossings at ``now`` (already-fired thresholds are not repeated)."""
        hs, billing, rows = _books(self.source())
        found: list[Crossing] = []
        again = False
        for st in statuses(hs, billing, self.config(), now, rates=self.rates, tz=self.tz,
                           machines=rows):
            b = st.budget
            new = crossed(b, st.spent, self.state.fired.get(b.id, []))
            if not new:
                if self._runs_again(b, st, rows):
                    # over its cap and running again (started after the budget's stop): the
                    # action is owed anew, without a second alert
                    self.state.owe(Crossing(b, 100.0, st.spent, now, b.action, (b.key,)))
                    again = True
                continue
            targets = (b.key,) if b.scope == SCOPE_MACHINE else tuple(sorted(billing))
            for t in new:
                full = t >= 100.0
                found.append(Crossing(b, t, st.spent, now, b.action if full else None,
                                      targets if full else ()))
            self.state.mark(b, new)
        for c in found:
            self.state.owe(c)
        # an owed action on a machine that no longer bills has nothing left to do
        live = set(billing)
        gone = [o.key for o in self.state.owed_actions() if o.machine not in live]
        for key in gone:
            self.state.settle(key)
        if found or gone or again:
            self.state.save()
        return found

    def _runs_again(self, b: Budget, st: Status, rows: Mapping[str, Machine] | None) -> bool:
        """A machine whose budget's 100 % fired, still over it, running again with nothing
        owed: a stop that was done once does not hold a machine that was started since."""
        if b.scope != SCOPE_MACHINE or b.action not in ("stop", "terminate") or rows is None:
            return False
        row = rows.get(b.key)
        if row is None or row.state not in (STATE_PENDING, STATE_RUNNING):
            return False
        if st.spent * 100.0 < 100.0 * b.cap - 1e-9 or \
                100.0 not in self.state.fired.get(b.id, []):
            return False
        return f"{b.id}/{b.key}" not in self.state.owed


def agent_budget(status: Status, price_per_hour: float, now: float) -> dict[str, Any]:
    """The ``budget`` section of the agent's rules.json for a machine budget, same identity.

    ``price_per_hour`` in the budget's currency (USD), so that the agent's
    ``spent_before + price × hours`` continues this status's spend.
    """
    b = status.budget
    return {"id": b.id, "cap": b.cap, "currency": b.currency, "price_per_hour": price_per_hour,
            "since": now, "spent_before": status.spent, "thresholds": list(b.thresholds),
            "action": b.action}
