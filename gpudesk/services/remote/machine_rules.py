"""The rules the agent enforces on a machine, from the user's Preferences and the ledger.

Written at every connect, so the agent keeps enforcing them when the laptop is
shut: idle stop (every GPU under the threshold, no run active, for N minutes)
and the per-machine budget (the agent goes on from what the ledger says the
machine has cost so far, at its price per hour). Never stop or terminate
someone's own machine: for "own" machines every action is only a warning. On
Tencent Cloud and Alibaba Cloud a budget or idle "stop" is the desktop's (``budget_action``,
``idle_action``): an OS shutdown there keeps charging. With the machine's role (issue 21)
it is the agent's again: its stop is the cloud's stop-charging StopInstances, not a shutdown.

:func:`target_rules` is the one answer to "which rules does the agent on this TARGET get
at a connect", for the window's Watch and the CLI's ``watch`` and ``run`` alike, so a
machine watched only from a terminal carries the same rules.json as one watched from
the window.
"""

from __future__ import annotations

import time

from gpudesk.services.cloud import guard
from gpudesk.services.cloud import instance_role
from gpudesk.services.core.settings import Settings
from gpudesk.services.money import spend
from gpudesk.services.money.budgets import BudgetConfig
from gpudesk.services.money.budgets import machine_budget
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote.agent_deploy import AgentRules
from gpudesk.services.remote.agent_deploy import BudgetStop
from gpudesk.services.remote.agent_deploy import IdleStop

CLOUDS = ("aws", "tencent", "aliyun")


def budget_action(provider: str, action: str, role: bool = False) -> str:
    """What the agent itself does at the budget on ``provider``.

    On Tencent Cloud and Alibaba Cloud an OS shutdown cannot stop the bill (CVM and ECS
    keep charging a machine shut down from inside) and leaves it stopped, so the desktop's
    stop-charging StopInstances is then refused. Without a ``role`` the agent only records
    that the budget was reached (``warn``): the desktop's stop ends the compute's bill
    (guard.STOP_BY_DESKTOP says so). With the machine's role the agent's "stop" is the
    role's command (``AgentRules.commands``: the cloud's StopInstances in stop-charging
    mode, tried again when refused and never an OS power-off there), so it stays "stop".
    "terminate" still powers off: the cloud's own timer ends those machines whatever the
    agent does.
    """
    if action == "stop" and provider in guard.STOP_BY_DESKTOP and not role:
        return "warn"
    return action


def idle_action(provider: str, action: str, role: bool = False) -> str:
    """What the agent itself does when ``provider``'s machine has been idle.

    The same rule as :func:`budget_action`: on Tencent Cloud and Alibaba Cloud the agent's
    OS shutdown keeps charging (KEEP_CHARGING / KeepCharging) and blocks the desktop's
    stop-charging StopInstances, so an idle "stop" there is a ``warn`` unless the machine's
    ``role`` makes it the cloud's stop-charging stop; "terminate" still powers off.
    """
    return budget_action(provider, action, role)


def role_stops(commands: dict[str, tuple[str, ...]]) -> bool:
    """Whether the rules' ``stop`` is the role's call to the cloud (instance_role's
    command), not an OS power-off: only then may a Tencent/Alibaba "stop" reach the agent."""
    return bool(commands.get("stop")) and commands["stop"][0] == instance_role.AGENT_COMMAND \
        and "--or-poweroff" not in commands["stop"]


def agent_rules(machine: Machine | None, settings: Settings, ledger: Ledger | None = None,
                now: float | None = None) -> AgentRules:
    """Rules for ``machine`` (None: a bare ssh:// target, which gets warnings only)."""
    now = time.time() if now is None else now
    cloud = machine is not None and machine.provider in CLOUDS
    # with a role, stop/terminate are the cloud's own call made by the agent (issue 21)
    commands = instance_role.rules_commands(machine) if cloud else {}
    role = role_stops(commands)
    idle = IdleStop(minutes=float(settings.idle_minutes), below_pct=settings.idle_gpu_percent,
                    action=idle_action(machine.provider, settings.idle_action, role)
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
                                                                     mb.action, role))
    spot = machine.provider if cloud and machine is not None and machine.market == "spot" \
        else "none"
    return AgentRules(idle=idle, budget=budget, spot_provider=spot, commands=commands)


def target_machine(ledger: Ledger | None, ref: str) -> Machine | None:
    """The ledger's machine a TARGET names (ledger id, cloud id or name, as the CLI and the
    window's machine box take them, or an ``ssh://`` address that is a launched machine's
    now); None for an address or a name it lacks. An address must find its machine: rules
    pushed to it as a stranger's would take a launched machine's guard away."""
    if ledger is None or not ref:
        return None
    if not ref.startswith("ssh://"):
        return ledger.find(ref)
    from urllib.parse import urlsplit

    try:
        url = urlsplit(ref)
        host, port = url.hostname or "", url.port or 22
    except ValueError:
        return None
    found = [m for m in ledger.machines(include_ended=False)
             if m.provider in CLOUDS and m.public_ip == host and (m.ssh_port or 22) == port]
    return found[0] if len(found) == 1 else None


def target_rules(ledger: Ledger | None, ref: str, settings: Settings,
                 now: float | None = None) -> tuple[Machine | None, AgentRules]:
    """(the machine, the rules its agent gets) for a connect to ``ref``.

    A machine gpudesk launched gets its real guard from the ledger (budget, action and the
    role's cloud stop: :func:`agent_rules`); the user's own machine and a bare ``ssh://``
    address get warnings only. ``settings`` are the user's Preferences as the window holds
    them (``load_settings`` in a terminal)."""
    machine = target_machine(ledger, ref)
    return machine, agent_rules(machine, settings, ledger, now)


def launched(machine: Machine | None) -> bool:
    """Whether ``machine`` is one gpudesk launched on a cloud (its agent enforces a guard),
    not the user's own machine or an address."""
    return machine is not None and machine.provider in CLOUDS
