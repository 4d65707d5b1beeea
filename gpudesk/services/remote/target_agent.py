"""The agent at a connect: ``gpudesk watch``, and every run's start (``gpudesk run``,
``--resume``, ``--queue``, ``recover``, and the window's Run page through the same services).

A machine gpudesk launched boots with its first-boot guard and the rules the launch knew
(the role named at creation, its stop); later changes (a new budget, a role bound after the
launch, Preferences' idle rule) reach it with the full agent and the ledger's rules. The
window's Watch writes those rules at every connect; the
CLI's ``watch`` writes the very same ones (:func:`machine_rules.target_rules`), and a run
gives them to a launched machine before it starts (:func:`before_run`), so a machine
launched, run and watched only from a terminal ends up guarded as one watched from the
window.

When what the agent enforces changed (the budget, its action, the idle rule, the role's
command; not the spend counters rewritten at every connect), :attr:`TargetAgent.said`
says what it enforces now, in the guard's own sentences, as one line.

Blocking (paramiko).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud import guard
from gpudesk.services.cloud import instance_role
from gpudesk.services.cloud.catalog import provider_title
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.core.said import Said
from gpudesk.services.core.settings import Settings
from gpudesk.services.core.settings import load_settings
from gpudesk.services.money.budgets import BudgetConfig
from gpudesk.services.money.budgets import machine_budget
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote import agent_deploy
from gpudesk.services.remote.machine_budget import MSG_AGENT_LATER
from gpudesk.services.remote.machine_budget import MSG_AGENT_PUSHED
from gpudesk.services.remote.machine_rules import launched
from gpudesk.services.remote.machine_rules import target_rules
from gpudesk.services.remote.ssh import SshConnection

# rules.json fields rewritten at every connect (the spend so far, from when): not a change
# of what the agent enforces
_COUNTERS = ("since", "spent_before")
# two of the guard's sentences on one line (Chinese puts no space between them)
MSG_TWO = QT_TRANSLATE_NOOP("Guard", "{first} {second}")


@dataclass(frozen=True)
class TargetAgent:
    """The agent on one target after :func:`deploy`."""

    site: agent_deploy.AgentSite
    machine: Machine | None  # None: an ssh:// address
    rules: agent_deploy.AgentRules
    changed: bool  # it enforces something else than before this connect
    said: list[Said] = field(default_factory=list)  # what it enforces now, when changed

    def line(self) -> Said | None:
        """:attr:`said` as one line (None when there is nothing to say)."""
        return one_line(self.said)


def one_line(said: list[Said]) -> Said | None:
    """Sentences as one line that the window still translates sentence by sentence."""
    if not said:
        return None
    line = said[0]
    for more in said[1:]:
        line = Said(guard.CONTEXT, MSG_TWO, first=line, second=more)
    return line


def enforced(data: Mapping[str, Any] | None) -> dict[str, Any]:
    """What rules.json ``data`` makes the agent do, without its counters."""
    data = data or {}
    budget = data.get("budget")
    spot = data.get("spot")
    return {"idle": data.get("idle") or None,
            "budget": {k: v for k, v in budget.items() if k not in _COUNTERS}
            if isinstance(budget, dict) else None,
            "commands": data.get("commands") or {},
            "spot": spot.get("provider", "none") if isinstance(spot, dict) else "none"}


def words(machine: Machine | None, rules: agent_deploy.AgentRules,
          settings: Settings) -> list[Said]:
    """What the agent of a launched ``machine`` enforces with ``rules``, in the guard's
    sentences; [] for the user's own machine or an address (the agent only warns there)."""
    if machine is None or not launched(machine):
        return []
    b = rules.budget
    if b is None:
        return [Said(guard.CONTEXT, guard.MSG_NONE)]
    out = [Said(guard.CONTEXT, MSG_AGENT_PUSHED, action=b.action, cap=f"{b.cap:.2f}",
                spent=f"{b.spent_before:.2f}")]
    command = rules.commands.get(b.action, ())
    if command and command[0] == instance_role.AGENT_COMMAND:
        out.append(Said(guard.CONTEXT, instance_role.MSG_ROLE, budget=f"{b.cap:.2f} USD",
                        cloud=provider_title(machine.provider), action=b.action))
    elif b.action == "warn" and machine.provider in guard.STOP_BY_DESKTOP:
        mb = machine_budget(machine, BudgetConfig.from_settings(settings))
        if mb is not None and mb.action == "stop":  # no role: the desktop's stop alone
            out.append(Said(guard.CONTEXT, guard.MSG_DESKTOP_ONLY))
    return out


def deploy(conn: SshConnection, ref: str, *, root: str, python: str,
           nvidia_smi: str | None = None, settings: Settings | None = None,
           now: float | None = None) -> TargetAgent:
    """Put the agent on ``conn`` (the machine ``ref`` names) with the rules the window gives
    it, and make sure it runs; ``settings`` default to the user's Preferences as saved."""
    settings = load_settings() if settings is None else settings
    with Ledger() as ledger:  # closed before the machine is reached
        machine, rules = target_rules(ledger, ref, settings, now)
    return _deploy(conn, machine, rules, settings, root=root, python=python,
                   nvidia_smi=nvidia_smi)


def before_run(conn: SshConnection, ref: str, *, root: str, python: str,
               settings: Settings | None = None) -> Said | None:
    """Give the agent of a machine gpudesk launched its rules before a run starts there;
    the user's own machine and an address are left as they are (a run starts no agent
    there). Never stops the run: where the agent cannot be set up now, the words say that
    the next connect brings the rules. Returns the line to say, or None (nothing to say)."""
    settings = load_settings() if settings is None else settings
    with Ledger() as ledger:
        machine, rules = target_rules(ledger, ref, settings)
    if not launched(machine):
        return None
    try:
        agent = _deploy(conn, machine, rules, settings, root=root, python=python)
    except (TemplatedError, OSError) as exc:
        why = exc.message() if isinstance(exc, TemplatedError) else str(exc)
        return Said(guard.CONTEXT, MSG_AGENT_LATER, why=why)
    return agent.line()


def _deploy(conn: SshConnection, machine: Machine | None,
            rules: agent_deploy.AgentRules, settings: Settings, *, root: str, python: str,
            nvidia_smi: str | None = None) -> TargetAgent:
    site = agent_deploy.deploy(conn, rules, root=root, python=python, nvidia_smi=nvidia_smi)
    changed = site.rules_before is None or enforced(site.rules_before) != enforced(
        rules.to_json())
    return TargetAgent(site, machine, rules, changed,
                       words(machine, rules, settings) if changed else [])
