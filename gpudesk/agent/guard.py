"""Idle stop and budget stop, enforced on the machine so a shut laptop cannot burn money.

Idle: every GPU in the latest sample is under ``below_pct`` utilisation AND
no run is active (``runs.active_runs``) — continuously for ``minutes``,
measured on the monotonic clock from the first idle tick. A GPU whose
utilisation is unknown (``null``, e.g. MIG mode) or a sample older than
``stale_s`` counts as busy: the agent never stops a machine on missing data.

Budget: when the spend reaches each threshold (50/80/100 % by default) a
``budget-threshold`` event is recorded once; at the cap the action fires.

Firing: a ``rule-fired`` event is written (fsynced) first, then the action's
command line runs with ``GPUDESK_RULE``/``GPUDESK_ACTION``/``GPUDESK_EVENT`` in
its environment, its output going to ``actions.log``. A rule fires at most
once per boot, even across agent restarts (the events file remembers);
thresholds once per budget.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from .clock import SYSTEM_CLOCK, Clock
from .events import Event, EventLog
from .rules import Rules, boot_id
from .runs import ActiveRun, active_runs
from .smi import GpuSample

log = logging.getLogger("gpudesk.agent")
ACTIONS_LOG = "actions.log"
ACTION_TIMEOUT_S = 120.0


def all_idle(gpus: Sequence[GpuSample], below_pct: float) -> bool:
    """Every GPU known and under the threshold; an empty or unknown reading is not idle."""
    return bool(gpus) and all(g.util is not None and g.util < below_pct for g in gpus)


class Guard:
    """Evaluates the rules at each ``tick()``; ``observe()`` feeds it the latest sample."""

    def __init__(self, rules: Rules, events: EventLog, *, runs_dir: Path, log_dir: Path,
                 clock: Clock = SYSTEM_CLOCK, stale_s: float = 10.0,
                 boot: Optional[str] = None,
                 runs: Callable[[Path], List[ActiveRun]] = active_runs) -> None:
        self.rules = rules
        self.events = events
        self.runs_dir = Path(runs_dir)
        self.log_dir = Path(log_dir)
        self.clock = clock
        self.stale_s = stale_s
        self.boot = boot_id() if boot is None else boot
        self._runs = runs
        self._gpus: List[GpuSample] = []
        self._seen_at: Optional[float] = None
        self.idle_since: Optional[float] = None

    def observe(self, gpus: Sequence[GpuSample]) -> None:
        self._gpus = list(gpus)
        self._seen_at = self.clock.monotonic()

    def idle_now(self) -> bool:
        rule = self.rules.idle
        if rule is None or self._seen_at is None:
            return False
        if self.clock.monotonic() - self._seen_at > self.stale_s:
            return False
        return all_idle(self._gpus, rule.below_pct) and not self._runs(self.runs_dir)

    def tick(self) -> List[Event]:
        """Check both rules now; the events recorded by this check."""
        out: List[Event] = []
        self._check_idle(out)
        self._check_budget(out)
        return out

    def _check_idle(self, out: List[Event]) -> None:
        rule = self.rules.idle
        if rule is None:
            return
        key = f"idle:{rule.id}:{self.boot}"
        if self.events.has(key):
            return
        now = self.clock.monotonic()
        if not self.idle_now():
            self.idle_since = None
            return
        if self.idle_since is None:
            self.idle_since = now
        idle_s = now - self.idle_since
        if idle_s >= rule.minutes * 60.0:
            out += self._fire("idle", key, rule.action, idle_s=round(idle_s, 3),
                              below_pct=rule.below_pct, minutes=rule.minutes)

    def _check_budget(self, out: List[Event]) -> None:
        rule = self.rules.budget
        if rule is None:
            return
        spend = rule.spend(self.clock.time())
        numbers = {"spend": round(spend, 6), "cap": rule.cap, "currency": rule.currency}
        for pct in rule.thresholds:
            key = f"budget-{pct:g}:{rule.id}"
            if spend >= rule.cap * pct / 100.0 and not self.events.has(key):
                out.append(self.events.record("budget-threshold", key=key, pct=pct, **numbers))
        key = f"budget:{rule.id}:{self.boot}"
        if spend >= rule.cap and not self.events.has(key):
            out += self._fire("budget", key, rule.action, **numbers)

    def _fire(self, rule: str, key: str, action: str, **reason: object) -> List[Event]:
        fired = self.events.record("rule-fired", key=key, rule=rule, action=action, **reason)
        argv = self.rules.command(action)
        if not argv:
            return [fired]
        return [fired, self._run(rule, action, argv, fired)]

    def _run(self, rule: str, action: str, argv: Sequence[str], fired: Event) -> Event:
        env = dict(os.environ, GPUDESK_RULE=rule, GPUDESK_ACTION=action,
                   GPUDESK_EVENT=json.dumps(fired, default=str))
        log.warning("%s rule fired: running the %s command", rule, action)
        try:
            with open(self.log_dir / ACTIONS_LOG, "ab") as out:
                done = subprocess.run(list(argv), stdin=subprocess.DEVNULL, stdout=out,
                                      stderr=subprocess.STDOUT, env=env,
                                      timeout=ACTION_TIMEOUT_S, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            return self.events.record("action-failed", rule=rule, action=action,
                                      error=f"{type(exc).__name__}: {exc}")
        return self.events.record("action-run", rule=rule, action=action, rc=done.returncode)
