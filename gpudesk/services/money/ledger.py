"""The instance ledger: every machine gpudesk asked for, in SQLite, written before and after.

Money is data. A launch writes an *intent* row (with its client token) before
the cloud call and the result after it, each in its own committed transaction
with ``synchronous=FULL``, so a crash at any point leaves either a row the
reconciler can match to a tagged cloud instance, or an intent it can close.

One connection guarded by a lock: services call the ledger from worker
threads (``asyncio.to_thread``) and the GUI thread alike.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from dataclasses import fields
from dataclasses import replace
from pathlib import Path
from typing import Any

from gpudesk.services.core import paths
from gpudesk.services.core.machine_states import STATE_RUNNING
from gpudesk.services.core.machine_states import STATE_TERMINATED
from gpudesk.services.core.machine_states import billing_label
from gpudesk.services.core.machine_states import bills_compute
from gpudesk.services.core.machine_states import is_billing
from gpudesk.services.money.billing import rule_for

SCHEMA_VERSION = 1

# Ledger-only states (besides the provider states in providers.base).
STATE_INTENT = "intent"  # written before the cloud call; no answer recorded yet
STATE_FAILED = "failed"  # the provider refused or nothing was created: never billed
STATE_GONE = "gone"  # the provider no longer knows it (terminated outside gpudesk)
STATE_READY = "ready"  # the user's own machine: reachable over SSH, never billed
ENDED_STATES = frozenset({STATE_TERMINATED, STATE_FAILED, STATE_GONE})

# An intent older than this with no tagged instance found is closed as failed.
INTENT_GRACE_S = 600.0



@dataclass(frozen=True)
class Machine:
    """One ledger row."""

    id: str
    provider: str
    region: str = ""
    zone: str = ""
    instance_type: str = ""
    gpu: str = ""
    gpus: int = 0
    market: str = "on-demand"
    max_price: float | None = None
    price_per_hour: float = 0.0  # in `currency`
    currency: str = "USD"
    client_token: str = ""
    cloud_id: str = ""
    state: str = STATE_INTENT
    public_ip: str = ""
    ssh_user: str = ""
    ssh_port: int = 22
    key_name: str = ""
    security_group: str = ""
    name: str = ""
    origin: str = "launched"  # "launched", "adopted" (found by reconcile) or "added" (own)
    created_at: float = 0.0
    launched_at: float | None = None
    running_since: float | None = None  # start of the current billed interval
    billed_seconds: float = 0.0  # closed billed intervals
    ended_at: float | None = None
    updated_at: float = 0.0
    error: str = ""
    disk_gb: float = 0.0  # the root volume's size, for storage cost; 0 = unknown
    # The machine profile (own and launched machines alike): how Run, Watch and a terminal
    # reach it. A key *path* only (never a key); "" = the keyring key or the ssh-agent.
    key_file: str = ""
    remote_python: str = ""  # the python (or venv python) runs use there; "" = python3
    remote_root: str = ""  # the folder gpudesk keeps projects and runs in; "" = ~/gpudesk
    # The machine's guard (services.cloud.guard): its budget in `currency` and the action
    # at it, who enforces it (comma-separated: agent, shutdown-behavior, cloud-timer,
    # instance-role) and when the cloud itself ends the machine (unix s; None: no timer).
    budget: float | None = None
    on_budget: str = ""
    enforced_by: str = ""
    cloud_timer_at: float | None = None
    host_key_fingerprint: str = ""  # SHA256:… of the host key pinned before the first login
    # The cloud's word on what the machine bills while stopped (CloudInstance.stopped_mode:
    # CVM StopChargingMode, ECS StoppedMode; "" for EC2, whose stop bills the disk only).
    # A stopped machine whose word does not say "stop charging" bills at its full price.
    stopped_mode: str = ""
    # Where runs on this machine keep their data (issue 22): "" or "auto" = the account's
    # gpudesk bucket in the machine's region, "none" = no bucket (laptop copies only), or
    # a store URI (s3://, cos://, oss:// bucket and prefix) given at launch. An own machine
    # has a store only as a URI (issue 30), whose bucket's region is ``store_region``.
    store: str = ""
    store_region: str = ""
    # A spot run that keeps one machine alive (issue 23): the cloud's own group (ASG name,
    # Tencent AutoScalingGroupId, ESS ScalingGroupId) that replaces a reclaimed machine; the
    # row's cloud_id is its current member. "" for a machine on its own.
    group_id: str = ""
    group_state: str = ""  # "live" while the cloud keeps the group, "ended" once deleted

    @property
    def group_live(self) -> bool:
        """A keep-alive group that may still start machines (whatever its member's state)."""
        return bool(self.group_id) and self.group_state != "ended"

    @property
    def billing(self) -> bool:
        """Could this machine be costing money now (as far as the ledger knows)? A stopped
        machine its cloud still charges for (KEEP_CHARGING, KeepCharging) is."""
        if self.provider == "own":
            return False
        return (is_billing(self.provider, self.state, self.stopped_mode)
                or (self.state == STATE_INTENT and not self.ended_at))

    @property
    def compute_billing(self) -> bool:
        """Is the machine's compute price counting now (running, or stopped but charged)?"""
        return bills_compute(self.provider, self.state, self.stopped_mode)

    @property
    def billing_label(self) -> str:
        """``stopped (still billing)`` for a stopped machine charged as if running, else
        the state: what a face shows where it counts machines by state."""
        return billing_label(self.provider, self.state, self.stopped_mode)

    @property
    def ended(self) -> bool:
        return self.state in ENDED_STATES

    def uptime_s(self, now: float | None = None) -> float:
        if self.running_since is None:
            return 0.0
        return max(0.0, (now if now is not None else time.time()) - self.running_since)

    def billed_s(self, now: float | None = None) -> float:
        current = self.uptime_s(now)
        if self.running_since is not None:
            current = max(current, rule_for(self.provider).min_s)
        return self.billed_seconds + current

    # No ``spend`` here on purpose: a machine's spend is ``spend.machine_spend`` (billed
    # intervals × the price in force, plus disk and data out), the one figure everywhere.


@dataclass(frozen=True)
class Account:
    provider: str
    key_id_masked: str
    account: str = ""
    principal: str = ""
    can_launch: bool = False
    verified_at: float | None = None
    added_at: float = 0.0
    launch_checked: bool = True  # False: the dry run could not say (can_launch is then False)


@dataclass(frozen=True)
class BilledInterval:
    """One stretch in state running, as the ledger saw it (``end`` None: still running)."""

    start: float
    end: float | None


@dataclass(frozen=True)
class PriceChange:
    """From ``since`` on, the machine's price per hour was ``price`` (spot moves)."""

    since: float
    price: float


@dataclass(frozen=True)
class Transfer:
    """Bytes that left the machine for the internet (what clouds bill as transfer out)."""

    at: float
    bytes_out: int


@dataclass(frozen=True)
class Event:
    ledger_id: str
    at: float
    step: str
    detail: str


_COLUMNS = [f.name for f in fields(Machine)]
_SQL_TYPES = {"int": "INTEGER", "float": "REAL", "float | None": "REAL", "str": "TEXT"}


def _column_sql() -> str:
    parts = []
    for f in fields(Machine):
        kind = _SQL_TYPES.get(str(f.type), "TEXT")
        parts.append(f"{f.name} {kind}" + (" PRIMARY KEY" if f.name == "id" else ""))
    return ", ".join(parts)


def new_ledger_id() -> str:
    """Short, unique, safe in tags, names and client tokens: ``m-`` + 10 hex digits."""
    import secrets  # hmac and hashlib with it: not needed to read the ledger at start

    return "m-" + secrets.token_hex(5)


def ledger_file() -> Path:
    return paths.data_dir() / "gpudesk.sqlite3"


class _Shared:
    """One SQLite connection per database file per process, counted by its users.

    SQLite's own locks are POSIX advisory locks, and on POSIX closing *any* descriptor
    of a file drops *every* lock the process holds on it (SQLite's "How To Corrupt An
    SQLite Database File", 2.2). So nothing here opens the database file outside SQLite,
    and the window's long-lived ledger, a short ``with Ledger()`` beside it and worker
    threads share one connection (and one lock): another gpudesk process (the sync
    child, the CLI) then always sees this one as a user of the WAL and never deletes it
    under a live connection. Keyed by pid too, so a forked child opens its own.
    """

    _open: dict[tuple[int, str], _Shared] = {}
    _registry_lock = threading.Lock()

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.lock = threading.RLock()
        self.users = 0

    @classmethod
    def acquire(cls, path: Path) -> _Shared:
        key = (os.getpid(), _key(path))
        with cls._registry_lock:
            shared = cls._open.get(key)
            if shared is None:
                shared = cls._open[key] = _Shared(_connect_private(path))
            shared.users += 1
            return shared

    @classmethod
    def release(cls, path: Path, shared: _Shared) -> None:
        key = (os.getpid(), _key(path))
        with cls._registry_lock:
            shared.users -= 1
            if shared.users > 0:
                return
            if cls._open.get(key) is shared:
                del cls._open[key]
        with shared.lock:
            shared.db.close()


def _key(path: Path) -> str:
    return str(path) if str(path) == ":memory:" else str(path.resolve())


def _connect_private(path: Path) -> sqlite3.Connection:
    """Open (SQLite creating it if needed) and make the file 0600 by its *path*: what
    you rent, where and for how much is nobody else's business. The -wal and -shm
    files SQLite makes later copy the database file's mode. No descriptor of the file
    is ever opened here (see :class:`_Shared`)."""
    memory = str(path) == ":memory:"
    if not memory:
        path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=10.0)
    if not memory and os.name == "posix" and os.stat(path).st_mode & 0o077:
        os.chmod(path, 0o600)  # new (still empty), or from an older, wider version
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    return db


class Ledger:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else ledger_file()
        self._shared: _Shared | None = _Shared.acquire(self.path)
        self._db = self._shared.db
        self._lock = self._shared.lock
        self._migrate()

    def close(self) -> None:
        """Let go of the process's shared connection (closed with its last user);
        closing twice is harmless."""
        shared, self._shared = self._shared, None
        if shared is not None:
            _Shared.release(self.path, shared)

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _migrate(self) -> None:
        with self._tx() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            db.execute(f"CREATE TABLE IF NOT EXISTS machines ({_column_sql()})")
            db.execute("CREATE TABLE IF NOT EXISTS events (ledger_id TEXT, at REAL, step TEXT,"
                       " detail TEXT)")
            db.execute("CREATE TABLE IF NOT EXISTS accounts (provider TEXT PRIMARY KEY,"
                       " key_id_masked TEXT, account TEXT, principal TEXT, can_launch INTEGER,"
                       " verified_at REAL, added_at REAL)")
            # Spend history (see services.spend): each running stretch, each price in force,
            # each transfer out. Rows from before these tables existed have none.
            db.execute("CREATE TABLE IF NOT EXISTS intervals (ledger_id TEXT, start REAL,"
                       " end_at REAL)")
            db.execute("CREATE TABLE IF NOT EXISTS prices (ledger_id TEXT, since REAL,"
                       " price REAL)")
            db.execute("CREATE TABLE IF NOT EXISTS transfers (ledger_id TEXT, at REAL,"
                       " bytes_out INTEGER)")
            # Columns added by later versions of Machine appear here without a migration step.
            have = {r[1] for r in db.execute("PRAGMA table_info(machines)")}
            for f in fields(Machine):
                if f.name not in have:
                    db.execute(f"ALTER TABLE machines ADD COLUMN {f.name} "
                               f"{_SQL_TYPES.get(str(f.type), 'TEXT')}")
            if version < SCHEMA_VERSION:
                db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    # ------------------------------------------------------------------ machines

    def _row(self, row: sqlite3.Row) -> Machine:
        data = {k: row[k] for k in row.keys() if k in _COLUMNS}  # noqa: SIM118 - Row iterates values
        for f in fields(Machine):
            if data.get(f.name) is None and f.name in data and "None" not in str(f.type):
                data[f.name] = f.default
        return Machine(**data)

    def add(self, machine: Machine, step: str = "intent", detail: str = "") -> Machine:
        now = time.time()
        machine = replace(machine, created_at=machine.created_at or now, updated_at=now)
        values = [getattr(machine, c) for c in _COLUMNS]
        with self._tx() as db:
            db.execute(f"INSERT INTO machines ({', '.join(_COLUMNS)}) VALUES "
                       f"({', '.join('?' * len(_COLUMNS))})", values)
            db.execute("INSERT INTO events VALUES (?, ?, ?, ?)", (machine.id, now, step, detail))
            if machine.running_since is not None:
                db.execute("INSERT INTO intervals VALUES (?, ?, NULL)",
                           (machine.id, machine.running_since))
            if machine.price_per_hour:
                db.execute("INSERT INTO prices VALUES (?, ?, ?)",
                           (machine.id, machine.created_at, machine.price_per_hour))
        return machine

    def update(self, ledger_id: str, *, step: str = "", detail: str = "",
               changed_at: float | None = None, **changes: Any) -> Machine:
        """Change columns of one row (and log an event) in one transaction.

        ``changed_at``: when the cloud says a state change happened (EC2's
        StateTransitionReason): billing intervals open and close then, not when
        gpudesk noticed (never later than now, never before the open interval).
        """
        unknown = set(changes) - set(_COLUMNS)
        if unknown:
            raise KeyError(f"unknown ledger columns: {sorted(unknown)}")
        now = time.time()
        with self._tx() as db:
            current = self._get(db, ledger_id)
            if current is None:
                raise KeyError(ledger_id)
            moment = now if changed_at is None else min(changed_at, now)
            if current.running_since is not None:
                moment = max(moment, current.running_since)
            new_state = changes.get("state", current.state)
            changes.update(_billing_changes(current, new_state, moment, changes))
            changes["updated_at"] = now
            sets = ", ".join(f"{k} = ?" for k in changes)
            db.execute(f"UPDATE machines SET {sets} WHERE id = ?", [*changes.values(), ledger_id])
            _record_history(db, current, changes, moment)
            if step:
                db.execute("INSERT INTO events VALUES (?, ?, ?, ?)",
                           (ledger_id, now, step, detail))
            updated = self._get(db, ledger_id)
        assert updated is not None
        return updated

    def log(self, ledger_id: str, step: str, detail: str = "") -> None:
        with self._tx() as db:
            db.execute("INSERT INTO events VALUES (?, ?, ?, ?)",
                       (ledger_id, time.time(), step, detail))

    def _get(self, db: sqlite3.Connection, ledger_id: str) -> Machine | None:
        row = db.execute("SELECT * FROM machines WHERE id = ?", (ledger_id,)).fetchone()
        return self._row(row) if row else None

    def get(self, ledger_id: str) -> Machine | None:
        with self._lock:
            return self._get(self._db, ledger_id)

    def find(self, ref: str) -> Machine | None:
        """A machine by ledger id, cloud id or name (what a user types on the CLI)."""
        with self._lock:
            row = self._db.execute(
                "SELECT * FROM machines WHERE id = ? OR cloud_id = ? OR (name = ? AND name != '')"
                " ORDER BY created_at DESC", (ref, ref, ref)).fetchone()
        return self._row(row) if row else None

    def by_cloud_id(self, provider: str, cloud_id: str) -> Machine | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM machines WHERE provider = ? AND cloud_id = ?",
                                   (provider, cloud_id)).fetchone()
        return self._row(row) if row else None

    def machines(self, *, include_ended: bool = True) -> list[Machine]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM machines ORDER BY created_at").fetchall()
        out = [self._row(r) for r in rows]
        return out if include_ended else [m for m in out if not m.ended]

    def events(self, ledger_id: str) -> list[Event]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM events WHERE ledger_id = ? ORDER BY rowid",
                                    (ledger_id,)).fetchall()
        return [Event(r["ledger_id"], r["at"], r["step"], r["detail"]) for r in rows]

    def intervals(self, ledger_id: str) -> list[BilledInterval]:
        """The machine's running stretches, oldest first (raw: no billing minimum applied)."""
        with self._lock:
            rows = self._db.execute("SELECT start, end_at FROM intervals WHERE ledger_id = ?"
                                    " ORDER BY start, rowid", (ledger_id,)).fetchall()
        return [BilledInterval(r[0], r[1]) for r in rows]

    def prices(self, ledger_id: str) -> list[PriceChange]:
        with self._lock:
            rows = self._db.execute("SELECT since, price FROM prices WHERE ledger_id = ?"
                                    " ORDER BY since, rowid", (ledger_id,)).fetchall()
        return [PriceChange(r[0], r[1]) for r in rows]

    def record_price(self, ledger_id: str, price: float, since: float | None = None) -> None:
        """A price in force from ``since`` (e.g. a spot price history point from the cloud).

        The row's ``price_per_hour`` follows when this is the newest point.
        """
        at = time.time() if since is None else since
        with self._tx() as db:
            newest = db.execute("SELECT MAX(since) FROM prices WHERE ledger_id = ?",
                                (ledger_id,)).fetchone()[0]
            db.execute("INSERT INTO prices VALUES (?, ?, ?)", (ledger_id, at, price))
            if newest is None or at >= newest:
                db.execute("UPDATE machines SET price_per_hour = ? WHERE id = ?",
                           (price, ledger_id))

    def transfers(self, ledger_id: str) -> list[Transfer]:
        with self._lock:
            rows = self._db.execute("SELECT at, bytes_out FROM transfers WHERE ledger_id = ?"
                                    " ORDER BY at, rowid", (ledger_id,)).fetchall()
        return [Transfer(r[0], r[1]) for r in rows]

    def add_transfer(self, ledger_id: str, bytes_out: int, at: float | None = None) -> None:
        """Count bytes sent from the machine to here (pulls, log streams): billed egress."""
        with self._tx() as db:
            db.execute("INSERT INTO transfers VALUES (?, ?, ?)",
                       (ledger_id, time.time() if at is None else at, int(bytes_out)))

    def remove(self, ledger_id: str) -> None:
        """Forget a row; only for machines that cannot bill (own machines, ended ones)."""
        machine = self.get(ledger_id)
        if machine is not None and machine.billing:
            raise ValueError("refusing to forget a machine that may still be billing")
        with self._tx() as db:
            db.execute("DELETE FROM machines WHERE id = ?", (ledger_id,))
            db.execute("INSERT INTO events VALUES (?, ?, ?, ?)",
                       (ledger_id, time.time(), "removed", ""))

    # ------------------------------------------------------------------ accounts

    def save_account(self, account: Account) -> None:
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO accounts VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (account.provider, account.key_id_masked, account.account,
                        account.principal,
                        int(account.can_launch) if account.launch_checked else -1,
                        account.verified_at, account.added_at or time.time()))

    def accounts(self) -> list[Account]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM accounts ORDER BY provider").fetchall()
        return [Account(r["provider"], r["key_id_masked"], r["account"] or "",
                        r["principal"] or "", r["can_launch"] == 1, r["verified_at"],
                        r["added_at"] or 0.0, r["can_launch"] != -1) for r in rows]

    def account(self, provider: str) -> Account | None:
        return next((a for a in self.accounts() if a.provider == provider), None)

    def delete_account(self, provider: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM accounts WHERE provider = ?", (provider,))


def _record_history(db: sqlite3.Connection, current: Machine, changes: dict[str, Any],
                    now: float) -> None:
    """Keep the intervals and prices tables in step with one row update."""
    if "running_since" in changes and changes["running_since"] != current.running_since:
        db.execute("UPDATE intervals SET end_at = ? WHERE ledger_id = ? AND end_at IS NULL",
                   (now, current.id))
        if changes["running_since"] is not None:
            db.execute("INSERT INTO intervals VALUES (?, ?, NULL)",
                       (current.id, changes["running_since"]))
    price = changes.get("price_per_hour")
    if price is not None and price != current.price_per_hour:
        db.execute("INSERT INTO prices VALUES (?, ?, ?)", (current.id, now, price))


def _billing_changes(current: Machine, new_state: str, now: float,
                     changes: dict[str, Any]) -> dict[str, Any]:
    """Open a billed interval when the compute starts billing, close it when it stops.

    Clouds bill from "running" (not "pending") until the machine stops, and a stopped
    machine its cloud keeps charging (``stopped_mode`` KEEP_CHARGING / KeepCharging /
    NOT_APPLICABLE) on: its interval stays open at the compute price.
    """
    out: dict[str, Any] = {}
    word = changes.get("stopped_mode", current.stopped_mode)
    bills = bills_compute(current.provider, new_state, word)
    if bills and current.running_since is None and "running_since" not in changes:
        out["running_since"] = now
        if (new_state == STATE_RUNNING and current.launched_at is None
                and "launched_at" not in changes):
            out["launched_at"] = now
    elif not bills and current.running_since is not None and "running_since" not in changes:
        out["billed_seconds"] = current.billed_s(now)
        out["running_since"] = None
    if new_state in ENDED_STATES and current.ended_at is None and "ended_at" not in changes:
        out["ended_at"] = now
    return out
