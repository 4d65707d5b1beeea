"""Keep every running machine's guard current when a budget, Preferences or a price change.

For each running machine gpudesk launched, two things follow the change:

* the cloud's own guard (EC2 shutdown behaviour, the CVM action timer, the ECS
  release time) through ``services.cloud.guard.apply``, written to the ledger
  before the call;
* the agent's ``rules.json`` over SSH (pinned host key only: a machine whose key
  is not pinned is skipped, never asked about), starting the agent when it is
  not running.

Both follow the machine's own budget (``budgets.machine_budget``: the ledger's,
set at launch or by ``gpudesk budget``); Preferences' machine budget is only the
default for a machine with no budget of its own, so a change in Preferences never
replaces a budget a machine was given.

On a machine gpudesk launched the push also keeps the agent supervised: the deploy
installs (or reinstalls) the machine's one unit (``Restart=always``) where it is missing,
so an upgrade never leaves an agent that nothing restarts. The user's own machines get no
unit from a push. The connection is the one every later connect makes
(``targets.open_connection``): a machine whose launch host key was never replaced gets its
own key then (``host_key_rotation.rotate_if_due``).

A machine that cannot be reached keeps its previous rules (and its first-boot
guard) until its next connect, which writes them from the ledger; the report says
which, in words, so the window can show it.
Blocking; the window calls it through ``asyncio.to_thread``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field

from gpudesk.services.cloud import guard
from gpudesk.services.cloud.accounts import ProviderFactory
from gpudesk.services.cloud.accounts import provider_from_keyring
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.budgets import BudgetConfig
from gpudesk.services.money.budgets import machine_budget
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote import agent_deploy
from gpudesk.services.remote.host_key_rotation import RotationConfig
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.machine_rules import agent_rules
from gpudesk.services.remote.ssh import SshConnection

CLOUDS = ("aws", "tencent", "aliyun")


@dataclass
class PushReport:
    pushed: list[str] = field(default_factory=list)  # ledger ids whose agent has the rules
    guarded: list[str] = field(default_factory=list)  # ledger ids whose cloud guard follows
    failed: dict[str, str] = field(default_factory=dict)  # ledger id → why, in words
    agent_pids: dict[str, int] = field(default_factory=dict)


def _connect(m: Machine, rotation: RotationConfig | None = None) -> SshConnection:
    from gpudesk.services.remote.targets import open_connection

    return open_connection(m.id, None, HostKeyPolicy.refuse(), attempts=1, rotation=rotation)


def supervised(m: Machine) -> bool:
    """Whether a push keeps ``m``'s agent under the unit: every machine gpudesk launched
    (its first boot installed the unit; a push reinstalls one that is missing), never the
    user's own machine."""
    return m.provider in CLOUDS


def cloud_budget(m: Machine, settings: Settings) -> tuple[float | None, str]:
    """(budget in the ledger's currency of ``m``, action) for ``guard.apply``: the
    machine's own budget, else Preferences' default; (None, "stop") when nothing is to be
    stopped (no budget, or a default that only warns)."""
    mb = machine_budget(m, BudgetConfig.from_settings(settings))
    if mb is None or mb.action not in guard.ACTIONS:
        return None, "stop"
    return mb.in_currency(m.currency, settings.cny_per_usd), mb.action


def guard_cloud(ledger: Ledger, m: Machine, settings: Settings, providers: ProviderFactory,
                now: float) -> guard.Guard:
    """Blocking: the cloud's cap of ``m`` from its budget left (ledger written first)."""
    budget, action = cloud_budget(m, settings)
    provider = providers(m.provider)  # type: ignore[arg-type]
    return guard.apply(ledger, m, provider, budget, action, now)


def push_agent(ledger: Ledger, m: Machine, settings: Settings,
               connect: Callable[[Machine], SshConnection], now: float,
               service: agent_deploy.ServiceManager | None = None
               ) -> tuple[agent_deploy.AgentRules, int]:
    """Blocking: write ``m``'s rules (from the ledger) to its agent; (rules, agent pid).

    A launched machine's agent runs under its unit afterwards (:func:`supervised`), reached
    through ``service`` where its first boot recorded none (default ``sudo -n systemctl``).
    """
    rules = agent_rules(m, settings, ledger, now)
    with connect(m) as conn:
        site = agent_deploy.deploy(conn, rules, root=m.remote_root or agent_deploy.DEFAULT_ROOT,
                                   python=m.remote_python or agent_deploy.DEFAULT_PYTHON,
                                   install_unit=supervised(m), service=service)
    if supervised(m) and site.supervisor != "systemd":
        ledger.log(m.id, "agent-unsupervised", site.supervisor_note or "no unit")
    return rules, site.pid


def push_all(ledger: Ledger, settings: Settings, *,
             providers: ProviderFactory = provider_from_keyring,
             connect: Callable[[Machine], SshConnection] | None = None,
             budget_from_settings: bool = False, now: float | None = None,
             service: agent_deploy.ServiceManager | None = None,
             rotation: RotationConfig | None = None) -> PushReport:
    """Push the guard of every running launched machine.

    ``budget_from_settings`` (Preferences changed) is kept for the callers: either way
    each machine follows its own budget, and Preferences' only where it has none.
    ``service`` reaches the machines' service manager where a unit must be installed,
    ``rotation`` says how sshd's host key is replaced at the connect (tests point both
    at their own machine; ``None``: the real ones).
    """
    del budget_from_settings
    connect = connect or functools.partial(_connect, rotation=rotation)
    now = time.time() if now is None else now
    report = PushReport()
    for m in ledger.machines(include_ended=False):
        if m.provider not in CLOUDS or m.state != "running" or not m.cloud_id:
            continue
        try:
            guard_cloud(ledger, m, settings, providers, now)
            report.guarded.append(m.id)
        except (ProviderError, TemplatedError) as exc:
            report.failed[m.id] = exc.message()
        row = ledger.get(m.id) or m
        if not row.public_ip:
            continue
        try:
            _rules, pid = push_agent(ledger, row, settings, connect, now, service)
            report.pushed.append(m.id)
            report.agent_pids[m.id] = pid
        except (TemplatedError, OSError) as exc:
            why = exc.message() if isinstance(exc, TemplatedError) else str(exc)
            report.failed[m.id] = "; ".join(x for x in (report.failed.get(m.id), why) if x)
    return report
