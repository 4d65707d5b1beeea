"""Keep every running machine's guard current when a budget, Preferences or a price change.

For each running machine gpudesk launched, two things follow the change:

* the cloud's own guard (EC2 shutdown behaviour, the CVM action timer) through
  ``services.cloud.guard.apply``, written to the ledger before the call;
* the agent's ``rules.json`` over SSH (pinned host key only: a machine whose key
  is not pinned is skipped, never asked about), starting the agent when it is
  not running.

A machine that cannot be reached keeps its previous rules (and its first-boot
guard); the report says which, in words, so the window can show it.
Blocking; the window calls it through ``asyncio.to_thread``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gpudesk.services.cloud import guard
from gpudesk.services.cloud.accounts import ProviderFactory, provider_from_keyring
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Ledger, Machine
from gpudesk.services.remote import agent_deploy
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


def _connect(m: Machine) -> SshConnection:
    from gpudesk.services.remote.targets import open_connection

    return open_connection(m.id, None, HostKeyPolicy.refuse(), attempts=1)


def push_all(ledger: Ledger, settings: Settings, *,
             providers: ProviderFactory = provider_from_keyring,
             connect: Callable[[Machine], SshConnection] = _connect,
             budget_from_settings: bool = False, now: float | None = None) -> PushReport:
    """Push the guard of every running launched machine; ``budget_from_settings``: the
    Preferences budget and action replace each machine's (Preferences changed)."""
    now = time.time() if now is None else now
    report = PushReport()
    for m in ledger.machines(include_ended=False):
        if m.provider not in CLOUDS or m.state != "running" or not m.cloud_id:
            continue
        budget = m.budget
        action = m.on_budget or settings.budget_action
        if budget_from_settings:
            budget = settings.machine_budget_usd or None
            action = settings.budget_action
        if action not in guard.ACTIONS:  # "warn": the desktop alerts, nothing is stopped
            budget, action = None, "stop"
        try:
            provider = providers(m.provider)  # type: ignore[arg-type]
            guard.apply(ledger, m, provider, budget, action, now)
            report.guarded.append(m.id)
        except (ProviderError, TemplatedError) as exc:
            report.failed[m.id] = exc.message()
        row = ledger.get(m.id) or m
        if not row.public_ip:
            continue
        try:
            with connect(row) as conn:
                site = agent_deploy.deploy(
                    conn, agent_rules(row, settings, ledger, now),
                    root=row.remote_root or agent_deploy.DEFAULT_ROOT,
                    python=row.remote_python or agent_deploy.DEFAULT_PYTHON)
            report.pushed.append(m.id)
            report.agent_pids[m.id] = site.pid
        except (TemplatedError, OSError) as exc:
            why = exc.message() if isinstance(exc, TemplatedError) else str(exc)
            report.failed[m.id] = "; ".join(x for x in (report.failed.get(m.id), why) if x)
    return report
