"""Idle stop and budget stop, enforced on the machine so a shut laptop cannot burn money.

Idle: every GPU in the latest sample is under ``below_pct`` utilisation AND
no run is active (``runs.active_runs``; the full agent also counts a run queue
holding a queued or running entry, ``queue.py``) — continuously for ``minutes``,
measured on the monotonic clock from the first idle tick. A GPU whose
utilisation is unknown (``null``, e.g. MIG mode) or a sample older than
``stale_s`` counts as busy: the agent never stops a machine on missing data.

Budget: the spend is ``spent_before`` plus the price of the *billable* seconds
since the rules' ``since``, kept in ``spend.json`` (:class:`SpendMeter`): time
counts while the machine is up (the agent runs), is saved atomically at every
tick, and survives a kill, a restart and a reboot; the time a machine spends
stopped is never counted. When the spend reaches each threshold (50/80/100 % by
default) a ``budget-threshold`` event is recorded once; at the cap the action fires.

Firing: a ``rule-fired`` event is written (fsynced) first, then the action's
command line runs with ``GPUDESK_RULE``/``GPUDESK_ACTION``/``GPUDESK_EVENT`` in
its environment, its output going to ``actions.log``; each try is recorded
(``action-run`` with its ``attempt`` and ``rc``, or ``action-failed``). Only a
try that succeeds marks the rule done (the ``action-run`` event carries the
rule's ``key``); a failed one is tried again with backoff (``RETRY_S`` doubling
up to ``RETRY_MAX_S``), also by a restarted agent. A power action (stop,
terminate) that succeeded while the machine stays up for ``GONE_WAIT_S`` did not
take: it runs again (``action-no-effect``). A rule is done at most once per
boot, even across agent restarts (the events file remembers); thresholds once
per budget.

Keep-alive runs: the full agent's ``bucket_spend.GroupGuard`` counts the run's spend over
every machine of its group and, at the cap, ends the group instead of a stop or
terminate (which the group would answer with a new machine). That lives outside this
module on purpose: this one is in the first-boot bundle (12 KB of user data).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from pathlib import Path
from typing import Any
from typing import Callable
from typing import Dict
from typing import List
from typing import Optional
from typing import Sequence

from .clock import SYSTEM_CLOCK
from .clock import Clock

# gpudesk-cloud-stop → cloud_stop.py run by this python (the first-boot bundle carries it)
from .cloud_stop import expand as expand_command
from .events import Event
from .events import EventLog
from .rules import BudgetRule
from .rules import Rules
from .rules import boot_id
from .runs import ActiveRun
from .runs import active_runs
from .smi import GpuSample

log = logging.getLogger("gpudesk.agent")
ACTIONS_LOG = "actions.log"
SPEND_FILE = "spend.json"
ACTION_TIMEOUT_S = 120.0
RETRY_S = 15.0
RETRY_MAX_S = 300.0
GONE_WAIT_S = 300.0
POWER_ACTIONS = ("stop", "terminate")


def all_idle(gpus: Sequence[GpuSample], below_pct: float) -> bool:
    """Every GPU known and under the threshold; an empty or unknown reading is not idle."""
    return bool(gpus) and all(g.util is not None and g.util < below_pct for g in gpus)


UPTIME_FILE = "/proc/uptime"


def since_boot() -> float:
    """Seconds since this boot (``/proc/uptime``); 0 when unknown."""
    try:
        with open(UPTIME_FILE, encoding="ascii") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class SpendMeter:
    """The billable seconds since a budget's anchor, in ``spend.json``.

    The anchor is the rules' ``since`` and ``spent_before``: what the app knew the
    machine had cost at that moment. A new anchor starts from ``now - since`` (the
    app writes it while the machine runs). Then each count adds the time since the
    previous one on the monotonic clock; a restarted agent resumes from the file:
    on the same boot the machine was up all along, so the whole gap counts; on a
    new boot only the time since that boot does (``since_boot``, at most the wall
    time since the file was written): the stopped time between is not billed.
    The price is the rules' (the app writes a new anchor with every new price).
    """

    def __init__(self, folder: Path, clock: Clock, boot: str,
                 since_boot: Callable[[], float] = since_boot) -> None:
        self.path = Path(folder) / SPEND_FILE
        self.clock = clock
        self.boot = boot
        self.since_boot = since_boot
        self._mono: Optional[float] = None  # of this process's last count
        try:
            self.state: Dict[str, Any] = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.state = {}

    def spend(self, rule: BudgetRule) -> float:
        """Count the time since the last count (saved); the spend under ``rule`` now."""
        wall, mono = self.clock.time(), self.clock.monotonic()
        st = self.state
        try:
            if st.get("anchor") != [rule.since, rule.spent_before]:
                raise ValueError("a new anchor")
            if self._mono is not None:
                gap = mono - self._mono
            elif st["boot"] == self.boot:
                gap = mono - float(st["mono"])
            else:
                gap = min(self.since_boot(), wall - float(st["wall"]))
            billable = float(st["billable_s"]) + max(0.0, gap)
        except (AttributeError, KeyError, TypeError, ValueError):
            billable = max(0.0, wall - rule.since)
        self._mono = mono
        self.state = st = {"anchor": [rule.since, rule.spent_before], "billable_s": billable,
                           "boot": self.boot, "mono": mono, "wall": wall}
        try:
            write_atomic(self.path, json.dumps(st))
        except OSError as exc:  # a full disk must not stop the guard: it counts in memory
            log.error("cannot save %s: %s", self.path, exc)
        return rule.spent_before + rule.price_per_hour * billable / 3600.0


class _Try:
    """One rule's action on this boot: tries so far and when to try next (monotonic)."""

    def __init__(self, at: float) -> None:
        self.attempts, self.at, self.done, self.delay = 0, at, False, RETRY_S


class Guard:
    """Evaluates the rules at each ``tick()``; ``observe()`` feeds it the latest sample."""

    def __init__(self, rules: Rules, events: EventLog, *, runs_dir: Path, log_dir: Path,
                 clock: Clock = SYSTEM_CLOCK, stale_s: float = 10.0,
                 boot: Optional[str] = None,
                 runs: Callable[[Path], List[ActiveRun]] = active_runs,
                 since_boot: Callable[[], float] = since_boot) -> None:
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
        self.meter = SpendMeter(self.log_dir, clock, self.boot, since_boot)
        self._tries: Dict[str, _Try] = {}

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
        now = self.clock.monotonic()
        if not self.idle_now():
            self.idle_since = None
            return
        if self.idle_since is None:
            self.idle_since = now
        idle_s = now - self.idle_since
        if idle_s >= rule.minutes * 60.0:
            self._act(out, "idle", f"idle:{rule.id}:{self.boot}", rule.action,
                      idle_s=round(idle_s, 3), below_pct=rule.below_pct, minutes=rule.minutes)

    def _check_budget(self, out: List[Event]) -> None:
        rule = self.rules.budget
        if rule is None:
            return
        spend = self.meter.spend(rule)
        numbers = {"spend": round(spend, 6), "cap": rule.cap, "currency": rule.currency}
        for pct in rule.thresholds:
            key = f"budget-{pct:g}:{rule.id}"
            if spend >= rule.cap * pct / 100.0 and not self.events.has(key):
                out.append(self.events.record("budget-threshold", key=key, pct=pct, **numbers))
        if spend >= rule.cap:
            self._act(out, "budget", f"budget:{rule.id}:{self.boot}", rule.action,
                      billable_s=round(self.meter.state["billable_s"], 3),
                      **numbers)

    def _act(self, out: List[Event], rule: str, key: str, action: str,
             **reason: object) -> None:
        """The rule holds now: fire it, or try its action again when that is due."""
        now = self.clock.monotonic()
        argv = self.rules.command(action)
        power = action in POWER_ACTIONS
        t = self._tries.get(key)
        if t is None:
            t = self._tries[key] = _Try(now)
            if self.events.has(key):  # done earlier on this boot, by another agent run
                t.done, t.at = True, now + GONE_WAIT_S
            else:
                out.append(self.events.record("rule-fired", rule=rule, action=action,
                                              **({} if argv else {"key": key}), **reason))
        if not argv or now < t.at or (t.done and not power):
            return
        if t.done:  # the command succeeded GONE_WAIT_S ago and the machine is still up
            out.append(self.events.record("action-no-effect", rule=rule, action=action,
                                          attempts=t.attempts))
        t.attempts += 1
        ev = self._run(rule, action, argv, key, t.attempts, reason)
        out.append(ev)
        t.done = ev.get("rc") == 0
        t.at = now + (GONE_WAIT_S if t.done else t.delay)
        t.delay = RETRY_S if t.done else min(t.delay * 2, RETRY_MAX_S)

    def _run(self, rule: str, action: str, argv: Sequence[str], key: str, attempt: int,
             reason: Dict[str, object]) -> Event:
        fired = {"t": round(self.clock.time(), 3), "kind": "rule-fired", "rule": rule,
                 "action": action, "attempt": attempt}
        fired.update(reason)
        env = dict(os.environ, GPUDESK_RULE=rule, GPUDESK_ACTION=action,
                   GPUDESK_EVENT=json.dumps(fired, default=str))
        log.warning("%s rule fired: running the %s command (attempt %d)", rule, action,
                    attempt)
        try:
            with open(self.log_dir / ACTIONS_LOG, "ab") as out:
                # gpudesk-cloud-stop: the instance-role enforcer (cloud_stop.py)
                rc = subprocess.run(expand_command(argv), stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, env=env,
                                    timeout=ACTION_TIMEOUT_S, check=False).returncode
        except (OSError, subprocess.SubprocessError) as exc:
            return self.events.record("action-failed", rule=rule, action=action,
                                      attempt=attempt, error=f"{type(exc).__name__}: {exc}")
        # success is the mark: done on this boot, never repeated by a restarted agent
        return self.events.record("action-run", rule=rule, action=action, rc=rc,
                                  attempt=attempt, **({"key": key} if rc == 0 else {}))


CODE_FILE = "agent.code"


def mark_running(folder: Path, pid_file: str = "agent.pid") -> None:
    """``agent.pid`` (this pid) and ``agent.code`` (this pid and the real folder of the code
    it runs: the deploy step tells from it whether the agent under the unit was upgraded)."""
    pid = os.getpid()
    (Path(folder) / pid_file).write_text(f"{pid}\n", encoding="ascii")
    code = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    write_atomic(Path(folder) / CODE_FILE, json.dumps({"pid": pid, "code": code}))
