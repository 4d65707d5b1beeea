"""The rules the agent enforces on a machine, from the user's Preferences and the ledger.

Written at every connect, so the agent keeps enforcing them when the laptop is
shut: idle stop (every GPU under the threshold, no run active, for N minutes)
and the per-machine budget (the agent goes on from what the ledger says the
machine has cost so far, at its price per hour). Never stop or terminate
someone's own machine: for "own" machines every action is only a warning. On
Tencent Cloud and Alibaba Cloud a budget or idle "stop" is the desktop's (``budget_action``,
``idle_action``): an OS shutdown there keeps charging.
"""

from __future__ import annotations

import time

from gpudesk.services.cloud import guard, instance_role
from gpudesk.services.core.settings import Settings
from gpudesk.services.money import spend
from gpudesk.services.money.budgets import BudgetConfig, machine_budget
from gpudesk.services.money.ledger import Ledger, Machine
from gpudesk.services.remote.agent_deploy import AgentRules, BudgetStop, IdleStop


def budget_action(provider: str, action: str) -> str:
    """What the agent itself does at the budget on ``provider``.

    On Tencent Cloud and Alibaba Cloud an OS shutdown cannot stop the bill (CVM and ECS
    keep charging a machine shut down from inside) and leaves it stopped, so the desktop's
    stop-charging StopInstances is then refused. With "stop" the agent only records that
    the budget was reached (``warn``): the desktop's stop ends the compute's bill
    (guard.STOP_BY_DESKTOP says so). "terminate" still powers off: the cloud's own timer
    ends those machines whatever the agent does.
    """
    if action == "stop" and provider in guard.STOP_BY_DESKTOP:
        return "warn"
    return action


def idle_action(provider: str, action: str) -> str:
    """What the agent itself does when ``provider``'s machine has been idle.

    The same rule as :func:`budget_action`: on Tencent Cloud and Alibaba Cloud the agent's
    OS shutdown keeps charging (KEEP_CHARGING / KeepCharging) and blocks the desktop's
    stop-charging StopInstances, so an idle "stop" there is a ``warn`` (the desktop's
    stop-charging stop then applies); "terminate" still powers off.
    """
    return budget_action(provider, action)


def agent_rules(machine: Machine | None, settings: Settings, ledger: Ledger | None = None,
                now: float | None = None) -> AgentRules:
    """Rules for ``machine`` (None: a bare ssh:// target, which gets warnings only)."""
    now = time.time() if now is None else now
    cloud = machine is not None and machine.provider in ("aws", "tencent", "aliyun")
    idle = IdleStop(minutes=float(settings.idle_minutes), below_pct=settings.idle_gpu_percent,
                    action=idle_action(machine.provider, settings.idle_action)
                    if cloud and machine is not None else "warn")
    budget = None
    # the machine's own budget (ledger) over the Preferences default: budgets.machine_budget,
    # the same figure the desktop's crossings and the cloud's cap use
    mb = machine_budget(machine, BudgetConfig.from_settings(settings)) \
        if cloud and machine is not None else None
    if machine is not None and mb is not None:
        spent = 0.0
        if ledger is not None:
            spent = spend.to_usd(spend.machine_spend(ledger, machine, now).total,
                                 machine.currency, settings.cny_per_usd)
        # the system disk bills while the machine runs: the agent counts it with the compute
        price = spend.to_usd(machine.price_per_hour, machine.currency, settings.cny_per_usd)
        price += guard.disk_per_hour(machine.provider, machine.region, machine.disk_gb, "USD",
                                     settings.cny_per_usd)
        budget = BudgetStop(cap=mb.usd(settings.cny_per_usd), price_per_hour=price, since=now,
                            spent_before=spent, action=budget_action(machine.provider,
                                                                     mb.action))
    spot = machine.provider if cloud and machine is not None and machine.market == "spot" \
        else "none"
    # with a role, stop/terminate are the cloud's own call made by the agent (issue 21)
    commands = instance_role.rules_commands(machine) if cloud else {}
    return AgentRules(idle=idle, budget=budget, spot_provider=spot, commands=commands)
