"""A keep-alive run's spend over every machine of its group, kept in the run's bucket.

The cloud replaces a reclaimed machine with a fresh one that knows nothing of what the
run already cost, so the spend lives beside the run's data: ``runs/<id>/spend.json``::

    {"run": ID, "currency": "USD", "total": 12.5,
     "machines": [{"cloud_id": "i-..", "from": unix_s, "to": unix_s | null,
                   "why": "started|reclaimed|replaced|ended|budget|lost",
                   "seconds": billable_s, "price_per_hour": p, "spent": 1.25,
                   "resumed_from_step": int | null}],
     "updated": unix_s}

Each machine's agent keeps only its own entry (keyed by ``cloud_id``): read, change its
entry, write back; conditional on the ETag it read (``If-Match``, or ``If-None-Match: *``
for the first write) where the store honours that, else last writer wins, which still
changes only this entry (another machine's update lost that way comes back with its
next write, a minute later). Written every minute, at a spot notice, at the budget and
when the run ends. ``total`` is the sum of every entry's ``spent``; the currency and the
price per hour are the run's budget in ``runs/<id>/run.json`` (the desktop's).

The guard of a keep-alive machine counts the run's total, not its own spend:
budget left = budget − spent by the other machines − this machine's own spend
(:meth:`BucketSpend.spend`), and at the budget it ends the group (``group_end``) instead
of stopping itself, which the group would only undo (:class:`KeepAlive`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import Callable
from typing import Dict
from typing import List
from typing import Optional
from typing import Sequence
from typing import Set
from typing import Tuple

from .clock import SYSTEM_CLOCK
from .clock import Clock
from .cloud_stop import CloudStopError
from .cloud_stop import Metadata
from .events import Event
from .events import EventLog
from .group_end import GroupEnder
from .group_end import GroupRef
from .guard import POWER_ACTIONS
from .guard import Guard
from .run_folder import PID_FILE
from .run_folder import pid_alive
from .runs import read_pid
from .spot import SPOT_NOTICE_FILE
from .store import Store
from .store import StoreError
from .uploader import CONFIG_FILE
from .uploader import EXIT_FILE
from .uploader import STATE_FILE
from .uploader import _mtime
from .uploader import _read_json
from .uploader import load_config

log = logging.getLogger("gpudesk.agent")

RUN_FILE = "run.json"
SPEND_FILE = "spend.json"
WRITE_EVERY_S = 60.0
TIMEOUT_S = 10.0  # the guard waits on these calls: a slow bucket must not hold it long
CONFLICT_TRIES = 5
END_GRACE_S = 60.0  # the run's process gone this long, no notice: it ended for good
UPLOAD_WAIT_S = 1800.0  # at the end, wait this long at most for the last uploads
WHYS = ("started", "reclaimed", "replaced", "ended", "budget", "lost")
FINAL = ("reclaimed", "ended", "budget")  # never turned back into "started"
DISCOVER_EVERY_S = 60.0


def _num(value: Any, default: float = 0.0) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return default


@dataclass(frozen=True)
class RunBudget:
    """run.json's ``budget`` (written by the desktop, ``services/runs/run_package``)."""

    amount: float
    currency: str  # USD | CNY
    price_per_hour: float

    def to_dict(self) -> Dict[str, Any]:
        return {"amount": self.amount, "currency": self.currency,
                "price_per_hour": self.price_per_hour}


@dataclass(frozen=True)
class RunSpec:
    """What this module needs of the bucket's ``run.json``."""

    run: str
    budget: Optional[RunBudget]
    group: Optional[GroupRef]

    @classmethod
    def from_dict(cls, data: Any) -> RunSpec:
        if not isinstance(data, dict):
            raise ValueError("run.json is not a JSON object")
        budget = None
        b = data.get("budget")
        if isinstance(b, dict):
            amount, price = _num(b.get("amount"), -1.0), _num(b.get("price_per_hour"), -1.0)
            if amount < 0 or price < 0:
                raise ValueError("run.json's budget needs a number amount and price_per_hour")
            budget = RunBudget(amount, str(b.get("currency") or "USD"), price)
        return cls(str(data.get("run") or ""), budget, GroupRef.from_dict(data.get("group")))


def read_run(store: Store, prefix: str) -> Optional[RunSpec]:
    """The run's ``run.json`` from the bucket; None when there is none (yet)."""
    raw = store.get_bytes(prefix + RUN_FILE)
    if raw is None:
        return None
    try:
        return RunSpec.from_dict(json.loads(raw))
    except ValueError as exc:
        raise StoreError(f"{prefix}{RUN_FILE} cannot be used: {exc}") from None




class BucketSpend:
    """This machine's entry in ``spend.json`` and the run's total over every machine."""

    def __init__(self, store: Store, prefix: str, run_id: str, cloud_id: str,
                 budget: RunBudget, *, clock: Clock = SYSTEM_CLOCK,
                 resumed_from_step: Optional[int] = None,
                 every_s: float = WRITE_EVERY_S) -> None:
        self.store, self.key, self.run_id = store, prefix + SPEND_FILE, run_id
        self.cloud_id, self.budget, self.clock = cloud_id, budget, clock
        self.every_s = every_s
        self.resumed_from_step = resumed_from_step
        self.others = 0.0  # spent by every other machine of the run, as last read
        self.seconds = 0.0  # this machine's billable seconds
        self.started_at = clock.time()
        self.why: str = "started"
        self.to: Optional[float] = None
        self.conditional = True  # until the store shows it ignores If-Match
        self.synced_at: Optional[float] = None  # monotonic time of the last good write
        self.tried_at: Optional[float] = None
        self.error = ""

    @property
    def own(self) -> float:
        return round(self.seconds * self.budget.price_per_hour / 3600.0, 6)

    def total(self) -> float:
        return round(self.others + self.own, 6)

    def spend(self, billable_s: float) -> float:
        """The guard's count: this machine's billable seconds in; the run's total out.
        Written to the bucket when a minute has passed since the last try."""
        self.seconds = max(self.seconds, float(billable_s))
        now = self.clock.monotonic()
        if self.tried_at is None or now - self.tried_at >= self.every_s:
            self.sync()
        return self.total()

    def mark(self, why: str, *, to: Optional[float] = None) -> bool:
        """This machine's entry ends (``why``): written now."""
        if why not in WHYS:
            raise ValueError(f"why must be one of {', '.join(WHYS)}")
        self.why, self.to = why, self.clock.time() if to is None else to
        return self.sync()

    # -------------------------------------------------------------- the object

    def _read(self) -> Tuple[Dict[str, Any], str]:
        try:
            resp = self.store.request("GET", self.key)
        except StoreError as exc:
            if exc.status == 404:
                return {}, ""
            raise
        try:
            data = json.loads(resp.body)
        except ValueError:
            data = {}  # a torn or foreign file: rewritten with what this machine knows
        return (data if isinstance(data, dict) else {}), resp.headers.get("etag", "")

    def _merge(self, data: Dict[str, Any]) -> Dict[str, Any]:
        machines: List[Dict[str, Any]] = [m for m in data.get("machines") or []
                                          if isinstance(m, dict)]
        mine = next((m for m in machines if m.get("cloud_id") == self.cloud_id), None)
        others = [m for m in machines if m is not mine]
        if mine is not None:  # this agent restarted: go on from what the bucket holds
            self.seconds = max(self.seconds, _num(mine.get("seconds")))
            self.started_at = min(self.started_at, _num(mine.get("from")) or self.started_at)
            if mine.get("why") in FINAL and self.why == "started":
                self.why, self.to = str(mine["why"]), mine.get("to")
            if self.resumed_from_step is None and isinstance(mine.get("resumed_from_step"),
                                                             int):
                self.resumed_from_step = int(mine["resumed_from_step"])
        self.others = round(sum(_num(m.get("spent")) for m in others), 6)
        entry = {"cloud_id": self.cloud_id, "from": round(self.started_at, 3),
                 "to": None if self.to is None else round(float(self.to), 3),
                 "why": self.why, "seconds": round(self.seconds, 3),
                 "price_per_hour": self.budget.price_per_hour, "spent": self.own,
                 "resumed_from_step": self.resumed_from_step}
        machines = others + [entry]
        machines.sort(key=lambda m: _num(m.get("from")))
        return {"run": self.run_id or data.get("run") or "", "currency": self.budget.currency,
                "total": round(sum(_num(m.get("spent")) for m in machines), 6),
                "machines": machines, "updated": round(self.clock.time(), 3)}

    def sync(self) -> bool:
        """Read, change this machine's entry, write; True when the bucket has it. A failure
        is kept in ``error`` (the guard goes on with the total it last read)."""
        self.tried_at = self.clock.monotonic()
        try:
            for _ in range(CONFLICT_TRIES):
                data, etag = self._read()
                body = json.dumps(self._merge(data), indent=1).encode()
                if self._write(body, etag):
                    self.synced_at, self.error = self.clock.monotonic(), ""
                    return True
            raise StoreError(f"{self.key} kept changing under this machine's writes")
        except StoreError as exc:
            if str(exc) != self.error:
                log.warning("spend in the bucket: %s", exc)
            self.error = str(exc)
            return False

    def _write(self, body: bytes, etag: str) -> bool:
        """False when another machine wrote in between (read again)."""
        headers = {"content-type": "application/json",
                   "content-md5": base64.b64encode(hashlib.md5(body).digest()).decode()}
        if self.conditional:
            headers.update({"if-match": etag} if etag else {"if-none-match": "*"})
        try:
            self.store.request("PUT", self.key, body=body, headers=headers)
            return True
        except StoreError as exc:
            if exc.status in (409, 412):  # PreconditionFailed / ConditionalRequestConflict
                return False
            if self.conditional and exc.status in (400, 501) and exc.code in (
                    "NotImplemented", "InvalidArgument", "InvalidRequest"):
                self.conditional = False  # this store has no conditional writes
                return self._write(body, etag)
            raise


class GroupGuard(Guard):
    """The full agent's guard: a plain :class:`~.guard.Guard` until a keep-alive run
    attaches (:meth:`KeepAlive.attach`); then at the budget a stop or terminate ends the
    run's group instead (``end_group``: True once the cloud shows it at 0 or gone), tried
    and retried like any action. Not in ``guard.py``: the first-boot bundle is 12 KB."""

    end_group: Optional[Callable[[], bool]] = None

    def _run(self, rule: str, action: str, argv: Sequence[str], key: str, attempt: int,
             reason: Dict[str, object]) -> Event:
        if self.end_group is None or action not in POWER_ACTIONS:
            return super()._run(rule, action, argv, key, attempt, reason)
        log.warning("%s rule fired: ending the run's group instead of %s (attempt %d)",
                    rule, action, attempt)
        rc = 0 if self.end_group() else 1  # its words are in the events (group_end.py)
        return self.events.record("action-run", rule=rule, action=action, rc=rc,
                                  attempt=attempt, group=True, **({"key": key} if rc == 0
                                                                   else {}))


class PooledMeter:
    """The guard's meter on a keep-alive machine: this machine's billable seconds (the
    guard's own ``SpendMeter``) in, the run's total over every machine out."""

    def __init__(self, meter: Any, pool: BucketSpend) -> None:
        self.meter, self.pool = meter, pool

    @property
    def state(self) -> Dict[str, Any]:
        state: Dict[str, Any] = self.meter.state
        return state

    def spend(self, rule: Any) -> float:
        self.meter.spend(rule)
        return self.pool.spend(float(self.meter.state["billable_s"]))


# ------------------------------------------------------------------ on the machine

class KeepAlive:
    """A keep-alive run on this machine: its spend in the bucket, its group's end.

    :meth:`attach` hands the guard the run's total and, for the budget, the group's end.
    :meth:`tick` (the agent's loop) writes ``reclaimed`` at a spot notice, and once the
    run ended for good (its process gone ``END_GRACE_S`` with no spot notice, its last
    uploads done or ``UPLOAD_WAIT_S`` passed) writes ``ended`` and ends the group.
    """

    def __init__(self, folder: Path, spec: RunSpec, spend: BucketSpend, ender: GroupEnder,
                 events: EventLog, clock: Clock = SYSTEM_CLOCK) -> None:
        self.folder, self.spec, self.spend, self.ender = Path(folder), spec, spend, ender
        self.events, self.clock = events, clock
        self.gone_since: Optional[float] = None
        self.marked: Set[str] = set()
        self.guard: Optional[GroupGuard] = None

    @classmethod
    def for_run(cls, folder: Path, events: EventLog, clock: Clock = SYSTEM_CLOCK,
                store: Optional[Store] = None) -> Optional[KeepAlive]:
        """The run in ``folder`` (its ``store-config.json``) when ``run.json`` in the
        bucket names a group and a budget; None otherwise. Raises StoreError (try later)."""
        config, settings = load_config(folder)
        extra = _read_json(folder / CONFIG_FILE)
        store = store or Store(config, now=clock.time, timeout=TIMEOUT_S)
        spec = read_run(store, config.prefix)  # the desktop writes it before the launch
        if spec is None or spec.group is None or spec.budget is None:
            return None
        metadata = str(extra.get("metadata") or "")
        try:
            cloud_id = str(extra.get("cloud_id") or "") or Metadata(
                config.cloud, metadata, TIMEOUT_S).instance_id()
        except CloudStopError as exc:
            raise StoreError(f"this machine's id: {exc}") from None
        step = extra.get("resumed_from_step")
        spend = BucketSpend(store, config.prefix, spec.run or settings.run_id, cloud_id,
                            spec.budget, clock=clock,
                            resumed_from_step=step if isinstance(step, int) else None)
        ender = GroupEnder(spec.group, config.role, events, clock=clock, metadata=metadata,
                           endpoint=str(extra.get("group_endpoint") or ""))
        return cls(folder, spec, spend, ender, events, clock)

    def attach(self, guard: GroupGuard) -> None:
        """The guard counts the run's total and ends the group at the budget."""
        self.guard = guard
        if not isinstance(guard.meter, PooledMeter):
            # duck-typed as the guard uses its meter: spend(rule) and state
            guard.meter = PooledMeter(guard.meter, self.spend)  # type: ignore[assignment]
        guard.end_group = self.end_at_budget

    def end_at_budget(self) -> bool:
        if "budget" not in self.marked:
            self.marked.add("budget")
            self.spend.mark("budget")
        return self.ender.attempt("budget")

    def ended_for_good(self) -> bool:
        """The run's process is gone for a while with no spot notice (a reclaim kills it
        too: then the next machine goes on), and its last uploads are done."""
        if (self.folder / SPOT_NOTICE_FILE).exists():
            self.gone_since = None
            return False
        pid = read_pid(self.folder / PID_FILE)
        exited = (self.folder / EXIT_FILE).exists() and (pid is None or not pid_alive(pid))
        if not exited:
            self.gone_since = None
            return False
        now = self.clock.monotonic()
        if self.gone_since is None:
            self.gone_since = now
        waited = now - self.gone_since
        if waited < END_GRACE_S:
            return False
        uploaded = bool(_read_json(self.folder / STATE_FILE).get("finished"))
        return uploaded or waited >= END_GRACE_S + UPLOAD_WAIT_S

    def tick(self) -> None:
        if "reclaimed" not in self.marked and (self.folder / SPOT_NOTICE_FILE).exists():
            self.marked.add("reclaimed")
            self.spend.mark("reclaimed")
        if not self.ender.why and self.ended_for_good():
            if "ended" not in self.marked:
                self.marked.add("ended")
                self.spend.mark("ended")
            self.ender.arm("ended")
        self.ender.tick()
        if self.guard is None or self.guard.rules.budget is None:
            # no budget rule drives the count: the time since this machine's entry began
            self.spend.spend(self.clock.time() - self.spend.started_at)

    def close(self) -> None:
        """The agent stops (a reboot, a reclaim's shutdown): the last count goes up."""
        self.spend.sync()


class Finder:
    """Looks for a keep-alive run in the runs folder until it finds one (each minute)."""

    def __init__(self, runs_dir: Path, events: EventLog, clock: Clock = SYSTEM_CLOCK) -> None:
        self.runs_dir, self.events, self.clock = Path(runs_dir), events, clock
        self.checked: Dict[Path, Optional[float]] = {}  # folder → its store config's mtime
        self.next_at: Optional[float] = None
        self.found: Optional[KeepAlive] = None

    def poll(self, guard: GroupGuard) -> Optional[KeepAlive]:
        if self.found is not None:
            return self.found
        now = self.clock.monotonic()
        if self.next_at is not None and now < self.next_at:
            return None
        self.next_at = now + DISCOVER_EVERY_S
        for config in sorted(self.runs_dir.glob(f"*/{CONFIG_FILE}")):
            folder = config.parent
            stamp = _mtime(config)
            if folder in self.checked and self.checked[folder] == stamp:
                continue
            try:
                found = KeepAlive.for_run(folder, self.events, self.clock)
            except StoreError as exc:
                log.warning("keep-alive run %s: %s", folder.name, exc)
                continue
            self.checked[folder] = stamp
            if found is not None:
                found.attach(guard)
                found.spend.sync()  # the other machines' spend, before the guard's next tick
                self.events.record("keep-alive", run=found.spend.run_id,
                                   cloud_id=found.spend.cloud_id, group_id=(
                                       found.spec.group.group_id if found.spec.group else ""),
                                   others=found.spend.others)
                self.found = found
                return found
        return None

    def tick(self, guard: GroupGuard) -> None:
        """The agent loop's step: look for the run (each minute), then keep it."""
        found = self.poll(guard)
        if found is not None:
            found.tick()

    def close(self) -> None:
        if self.found is not None:
            self.found.close()
