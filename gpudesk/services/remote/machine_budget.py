"""Change one machine's budget, and move all three that hold it: ledger, agent and cloud.

:func:`change_budget` is what ``gpudesk budget ID AMOUNT`` and the Instances page
call. In this order:

1. the ledger: the new budget and action, as a ``budget`` event, before any cloud
   call. From then on the desktop's crossings (``budgets.BudgetChecker``) hold the
   machine to it: on Tencent Cloud and Alibaba Cloud with "stop", the desktop's
   StopInstances is the only thing that ends the bill;
2. the cloud's own cap from the budget left (``guard.apply``: EC2 shutdown
   behaviour, CVM ``ActionTimer``, ECS ``AutoReleaseTime``), then what the cloud
   says it now holds, read back from the cloud itself;
3. the agent's ``rules.json`` when the machine is reachable (pinned host key
   only); when it is not, the next connect writes the rules from the ledger.

Blocking; the window calls it through ``asyncio.to_thread``. Errors a researcher
can act on are ``ProviderError`` (bad amount or action, unknown or ended machine).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from datetime import UTC
from datetime import datetime
from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud import guard
from gpudesk.services.cloud import keep_alive_launch
from gpudesk.services.cloud.accounts import ProviderFactory
from gpudesk.services.cloud.accounts import provider_from_keyring
from gpudesk.services.cloud.catalog import provider_title
from gpudesk.services.cloud.machines import resolve
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.core.said import Sentence
from gpudesk.services.core.said import in_english
from gpudesk.services.core.said import said_of
from gpudesk.services.core.settings import Settings
from gpudesk.services.core.settings import load_settings
from gpudesk.services.money import budgets
from gpudesk.services.money import spend
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote import guard_push
from gpudesk.services.remote.machine_rules import agent_rules
from gpudesk.services.remote.ssh import SshConnection

MSG_BAD_BUDGET = QT_TRANSLATE_NOOP(
    "ProviderError", "A budget must be more than 0 (got {amount}).")
MSG_BAD_ACTION = QT_TRANSLATE_NOOP(
    "ProviderError", "At its budget a machine can be stopped or terminated, not '{action}'.")
MSG_BAD_CURRENCY = QT_TRANSLATE_NOOP(
    "ProviderError", "A budget is in USD or CNY, not '{currency}'.")
MSG_OWN = QT_TRANSLATE_NOOP(
    "ProviderError", "{name} is your own machine: nothing bills it, so it has no budget.")
MSG_ENDED = QT_TRANSLATE_NOOP(
    "ProviderError", "{name} has ended ({state}): it bills nothing any more, so its budget "
    "cannot change.")

# What the agent and the cloud now say, as (template, values) for the window to translate.
MSG_AGENT_PUSHED = QT_TRANSLATE_NOOP(
    "Guard", "The machine's agent has the new rules: {action} at {cap} USD ({spent} USD "
    "spent so far).")
MSG_AGENT_LATER = QT_TRANSLATE_NOOP(
    "Guard", "The machine's agent could not be reached now ({why}): it gets the new rules at "
    "the next connect.")
MSG_AGENT_NOT_RUNNING = QT_TRANSLATE_NOOP(
    "Guard", "The machine is {state}: its agent gets the new rules at the next connect.")
MSG_AGENT_NO_ADDRESS = QT_TRANSLATE_NOOP(
    "Guard", "gpudesk knows no address of the machine yet: its agent gets the new rules at "
    "the next connect.")
MSG_CLOUD_BEHAVIOUR = QT_TRANSLATE_NOOP(
    "Guard", "EC2 says: an OS shutdown {value}s the machine (shutdown behaviour).")
MSG_CLOUD_TIMER = QT_TRANSLATE_NOOP(
    "Guard", "{cloud} says: it terminates the machine itself at {time} UTC.")
MSG_CLOUD_NO_TIMER = QT_TRANSLATE_NOOP(
    "Guard", "{cloud} says: no time is set at which it ends the machine itself.")
MSG_CLOUD_SKIPPED = QT_TRANSLATE_NOOP(
    "Guard", "The machine has no cloud machine yet ({state}): the cloud's cap comes with its "
    "launch.")
MSG_CLOUD_UNREAD = QT_TRANSLATE_NOOP(
    "Guard", "{cloud} could not be asked what it holds now: {why}")
MSG_CLOUD_FAILED = QT_TRANSLATE_NOOP(
    "Guard", "The cloud's cap did not change and stays as it was: {why}")
MSG_GROUP_END = QT_TRANSLATE_NOOP(
    "Guard", "{cloud} says: the group {group} goes to 0 machines at {time} UTC (its own "
    "scheduled action).")
MSG_GROUP_NO_END = QT_TRANSLATE_NOOP(
    "Guard", "{cloud} says: the group {group} holds no scheduled end.")
MSG_GROUP_ENDED = QT_TRANSLATE_NOOP(
    "Guard", "The new budget is already spent: the group {group} was ended, so it starts no "
    "machine and bills nothing more.")


@dataclass(frozen=True)
class BudgetChange:
    """What holds the machine to its budget now, each in its own words."""

    machine: Machine  # the ledger row after the change
    budget: float  # the new budget, in ``machine.currency`` (the ledger's)
    action: str  # stop or terminate
    previous_budget: float | None
    previous_action: str
    desktop: budgets.Status | None  # the desktop's budget (USD) and spend; None: not billing
    agent_pushed: bool
    agent_cap_usd: float | None  # the rules the agent has (or gets at the next connect)
    agent_action: str
    agent_says: Sentence
    guard: guard.Guard | None  # the guard asked of the cloud; None: not asked
    cloud_says: list[Sentence] = field(default_factory=list)  # read back from the cloud
    cloud_error: str = ""  # why the cloud's cap did not change, in words; "" = it did
    agent_pid: int = 0  # the agent's process on the machine, when pushed

    @property
    def ok(self) -> bool:
        return not self.cloud_error

    def as_json(self) -> dict[str, Any]:
        m = self.machine
        d = self.desktop
        return {
            "id": m.id, "provider": m.provider, "cloud_id": m.cloud_id, "state": m.state,
            "ledger": {"budget": self.budget, "currency": m.currency, "action": self.action,
                       "previous_budget": self.previous_budget,
                       "previous_action": self.previous_action or None},
            "desktop": None if d is None else {
                "cap_usd": round(d.budget.cap, 6), "spent_usd": round(d.spent, 6),
                "percent": round(d.percent, 2), "action": d.budget.action},
            "agent": {"pushed": self.agent_pushed, "cap_usd": self.agent_cap_usd,
                      "action": self.agent_action, "says": in_english(self.agent_says),
                      "pid": self.agent_pid or None},
            "cloud": {"guard": None if self.guard is None else self.guard.as_json(),
                      "says": [in_english(s) for s in self.cloud_says],
                      "guard_says": guard.english(m, self.guard) if self.guard else [],
                      "error": self.cloud_error or None},
        }


def _usd(x: float) -> str:
    return f"{x:.2f}"


def _validate(amount: float, action: str | None, currency: str | None) -> None:
    if not isinstance(amount, (int, float)) or not math.isfinite(amount) or amount <= 0:
        raise ProviderError("invalid", MSG_BAD_BUDGET, amount=amount)
    if action is not None and action not in guard.ACTIONS:
        raise ProviderError("invalid", MSG_BAD_ACTION, action=action)
    if currency is not None and currency not in ("USD", "CNY"):
        raise ProviderError("invalid", MSG_BAD_CURRENCY, currency=currency)


def _action_for(m: Machine, action: str | None, settings: Settings) -> str:
    """The action asked, else the machine's own, else Preferences' (when it acts), else stop."""
    for candidate in (action, m.on_budget, settings.budget_action):
        if candidate in guard.ACTIONS:
            return str(candidate)
    return "stop"


def _in_ledger_currency(m: Machine, amount: float, currency: str | None, rate: float
                        ) -> float:
    have = currency or m.currency or "USD"
    return budgets.MachineBudget(amount, have, "stop", True).in_currency(m.currency or "USD",
                                                                         rate)


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M")


def _parse_utc(text: str) -> float | None:
    for fmt in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%MZ"):
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC).timestamp()
        except ValueError:
            continue
    return None


def cloud_reads(provider: object, m: Machine) -> list[Sentence]:
    """What the cloud itself now holds for ``m``'s cap, asked of the cloud (blocking)."""
    cloud = provider_title(m.provider)
    behaviour = getattr(provider, "shutdown_behavior_of", None)
    if m.provider == "aws" and callable(behaviour):
        return [(MSG_CLOUD_BEHAVIOUR, {"value": str(behaviour(m.region, m.cloud_id))})]
    timers = getattr(provider, "action_timers", None)
    if m.provider == "tencent" and callable(timers):
        found = [t for t in timers(m.region, m.cloud_id)
                 if t.get("TimerAction") == "TerminateInstances"]
        moments = [at for at in (_parse_utc(str(t.get("ActionTime", ""))) for t in found)
                   if at is not None]
        if not moments:
            return [(MSG_CLOUD_NO_TIMER, {"cloud": cloud})]
        return [(MSG_CLOUD_TIMER, {"cloud": cloud, "time": _iso(min(moments))})]
    raw = getattr(provider, "describe_raw", None)
    if m.provider == "aliyun" and callable(raw):
        rows = raw(m.region, [m.cloud_id])
        text = str(rows[0].get("AutoReleaseTime") or "") if rows else ""
        at = _parse_utc(text) if text else None
        if at is None:
            return [(MSG_CLOUD_NO_TIMER, {"cloud": cloud})]
        return [(MSG_CLOUD_TIMER, {"cloud": cloud, "time": _iso(at)})]
    return []


def _move_group_end(ledger: Ledger, m: Machine, providers: ProviderFactory, budget: float,
                    action: str, now: float) -> tuple[guard.Guard | None, str, list[Sentence]]:
    """A kept-alive machine's cap is its group's scheduled end, not a timer on the member
    (the group would replace a member that ended): the end moves to the new budget's
    moment and is read back from the group (``keep_alive_launch.move_end``)."""
    cloud = provider_title(m.provider)
    try:
        provider = providers(m.provider)  # type: ignore[arg-type]
        groups = keep_alive_launch.groups_of(provider, m.provider)
        row = keep_alive_launch.move_end(ledger, m, groups, budget, now)
    except (ProviderError, TemplatedError) as exc:
        why = exc.message()
        return None, why, [(MSG_CLOUD_FAILED, {"why": said_of(exc)})]
    if not row.group_live:
        return None, "", [(MSG_GROUP_ENDED, {"group": m.group_id})]
    held = row.cloud_timer_at
    applied = guard.Guard(budget, action, tuple(x for x in row.enforced_by.split(",") if x),
                          held)
    if held is None:
        return applied, "", [(MSG_GROUP_NO_END, {"cloud": cloud, "group": m.group_id})]
    return applied, "", [(MSG_GROUP_END, {"cloud": cloud, "group": m.group_id,
                                          "time": _iso(held)})]


def change_budget(ledger: Ledger, machine_id: str, amount: float, action: str | None = None,
                  *, currency: str | None = None, settings: Settings | None = None,
                  providers: ProviderFactory = provider_from_keyring,
                  connect: Callable[[Machine], SshConnection] = guard_push._connect,
                  now: float | None = None) -> BudgetChange:
    """Give ``machine_id`` (ledger id, cloud id or name) a budget of ``amount`` in
    ``currency`` (default: the ledger's currency of the machine, USD for every machine
    gpudesk launches) with ``action`` at it (default: its own, else Preferences', else
    stop), and move the ledger, the cloud's cap and the agent's rules to it."""
    _validate(amount, action, currency)
    settings = load_settings() if settings is None else settings
    now = time.time() if now is None else now
    m = resolve(ledger, machine_id)
    name = m.name or m.id
    if m.provider == "own":
        raise ProviderError("invalid", MSG_OWN, name=name)
    if m.ended and not m.group_live:  # a group between members still bills: it has one
        raise ProviderError("invalid", MSG_ENDED, name=name, state=m.state)
    chosen = _action_for(m, action, settings)
    budget = _in_ledger_currency(m, float(amount), currency, settings.cny_per_usd)
    previous_budget, previous_action = m.budget, m.on_budget
    was = "none" if not m.budget else f"{m.budget:.2f} {m.currency} {m.on_budget}"
    # 1. the ledger, before any cloud call: the desktop holds the machine to it from now on
    m = ledger.update(m.id, budget=budget, on_budget=chosen, step="budget",
                      detail=f"{budget:.2f} {m.currency} {chosen} (was {was})")

    # 2. the cloud's own cap, from the budget left
    applied: guard.Guard | None = None
    cloud_error = ""
    reads: list[Sentence] = []
    if m.group_live and m.provider in guard_push.CLOUDS:
        applied, cloud_error, reads = _move_group_end(ledger, m, providers, budget, chosen, now)
    elif m.cloud_id and m.provider in guard_push.CLOUDS:
        provider: object = None
        try:
            provider = providers(m.provider)  # type: ignore[arg-type]
            applied = guard.apply(ledger, m, provider, budget, chosen, now)
        except (ProviderError, TemplatedError) as exc:
            cloud_error = exc.message()
            reads.append((MSG_CLOUD_FAILED, {"why": said_of(exc)}))
        if provider is not None:
            try:
                reads += cloud_reads(provider, m)
            except (ProviderError, TemplatedError) as exc:
                reads.append((MSG_CLOUD_UNREAD, {"cloud": provider_title(m.provider),
                                                 "why": said_of(exc)}))
    else:
        reads.append((MSG_CLOUD_SKIPPED, {"state": m.state}))
    row = ledger.get(m.id) or m

    # 3. the agent's rules, when it can be reached; else the next connect writes them
    rules = agent_rules(row, settings, ledger, now)
    cap = rules.budget.cap if rules.budget is not None else None
    agent_action = rules.budget.action if rules.budget is not None else ""
    spent_usd = rules.budget.spent_before if rules.budget is not None else 0.0
    pushed, pid = False, 0
    if row.state != "running":
        agent_says: Sentence = (MSG_AGENT_NOT_RUNNING, {"state": row.state})
    elif not row.public_ip:
        agent_says = (MSG_AGENT_NO_ADDRESS, {})
    else:
        try:
            _pushed_rules, pid = guard_push.push_agent(ledger, row, settings, connect, now)
            pushed = True
            agent_says = (MSG_AGENT_PUSHED, {"action": agent_action, "cap": _usd(cap or 0.0),
                                             "spent": _usd(spent_usd)})
        except (TemplatedError, OSError) as exc:
            # the error as a Said: the window shows it in its own language (issue 31)
            why: str = said_of(exc) if isinstance(exc, TemplatedError) else str(exc)
            agent_says = (MSG_AGENT_LATER, {"why": why})
    if pushed:
        ledger.log(row.id, "budget-agent", f"{cap} USD {agent_action}")

    # what the desktop's crossings now hold the machine to
    config = budgets.BudgetConfig.from_settings(settings)
    desktop = next((s for s in budgets.statuses(
        [spend.history(ledger, row)], [row.id] if row.billing else [], config, now,
        machines={row.id: row}) if s.budget.scope == budgets.SCOPE_MACHINE), None)
    return BudgetChange(row, budget, chosen, previous_budget, previous_action, desktop, pushed,
                        cap, agent_action, agent_says, applied, reads, cloud_error, pid)
