"""Spot recovery: keep a copy of a run's checkpoints off the machine, and resume elsewhere.

A spot machine can vanish with two minutes' notice; the checkpoints in its run
folder vanish with it. So, while a run is going, ``CheckpointMirror`` pulls
its ``checkpoints/`` into ``<data dir>/runs/<run-id>/`` on the desktop every
``interval_s`` (incrementally: only new files travel; half-written ``*.tmp-*``
files are skipped). When the machine is gone, ``recover`` starts the run
again on another machine: the project is synced, the mirrored checkpoints are
pushed into the new run folder, and ``gpudesk.training`` resumes from the
newest one — so the work lost is at most one checkpoint interval (plus the
mirror's interval when the notice came too late for a final copy).

A run with a bucket (``RunRecord.store_uri``) resumes from the bucket instead, on
any machine and with no laptop copy at all: the new machine gets the run's store
config (a ``StoreAccess`` given, the same role the run had, or new short-lived keys
limited to the run's folder when the new machine is one gpudesk launched) and its agent
fetches
the manifest's latest complete checkpoint before the script starts
(``run_store``). Without a way into the bucket it falls back to the laptop copy.

``relaunch_like`` asks the cloud for a machine like the lost one through the
Launcher (so intent is in the ledger before the call): the same zone first,
then any zone of the region, held to what is left of the lost machine's budget
(same action), so the replacement's agent, cloud timer and the desktop's cap count
from the spend so far. Multi-node runs are
recovered on their first node only when they ran on one; a lost node of a
multi-node run is reported, not replaced.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.core.said import Said
from gpudesk.services.core.settings import load_settings
from gpudesk.services.core.worker import StoppableWorker
from gpudesk.services.money import spend
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote import sync as sync_service
from gpudesk.services.remote import targets
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.runs import detached as runs
from gpudesk.services.runs import run_store
from gpudesk.services.runs import run_upkeep
from gpudesk.services.runs.detached import NodeRun
from gpudesk.services.runs.detached import RunRecord

if TYPE_CHECKING:
    from gpudesk.services.cloud.launcher import Launcher
    from gpudesk.services.storage.access import StoreAccess

MSG_MULTI_NODE = QT_TRANSLATE_NOOP(
    "SpotRecovery", "Run {run} ran on {n} machines; gpudesk recovers single-machine runs. "
    "Start it again with gpudesk run --resume {run} once every machine is back.")
MSG_NOT_CLOUD = QT_TRANSLATE_NOOP(
    "SpotRecovery", "The machine {machine} is not a cloud machine gpudesk launched, so "
    "gpudesk cannot launch another like it. Choose a machine to resume on.")

MSG_BUDGET_SPENT = QT_TRANSLATE_NOOP(
    "SpotRecovery", "The machine {machine} has spent {spent} USD of its {budget} USD budget, "
    "so gpudesk does not launch another like it: a replacement is held to what is left of "
    "the budget. Raise the budget (gpudesk budget) to go on.")

# The gpudesk: lines of a recovery in the run's log (Said: translated where shown).
MSG_LAUNCHING = QT_TRANSLATE_NOOP(
    "SpotRecovery", "launching a machine like {machine}")
MSG_COPIED = QT_TRANSLATE_NOOP(
    "SpotRecovery", "copied {n} checkpoint files to {target}; the run resumes from {checkpoint}")
MSG_NO_BUCKET_ACCESS = QT_TRANSLATE_NOOP(
    "SpotRecovery", "run {run} has a bucket ({uri}), but {target} was given no way into it; "
    "it resumes from the copies on this computer")
MSG_NO_CHECKPOINT = QT_TRANSLATE_NOOP(
    "SpotRecovery", "no checkpoint of run {run} was copied off the lost machine; it starts "
    "again from the beginning")

CHECKPOINT_PATTERNS = ("checkpoints/", "!*.tmp-*")
MIRROR_EVERY_S = 30.0
# Copies kept here per run (issue 12): the newest N checkpoints within a size cap. Every
# copy off a cloud machine is billed as data out, and a laptop disk is not a bucket.
KEEP_CHECKPOINTS = 2
CAP_BYTES = 20 * (1 << 30)
_STEP = re.compile(r"^ckpt-(\d+)\.(pt|json)$")
Report = Callable[[str], None]


class RecoveryError(TemplatedError):
    translation_context = "SpotRecovery"


def mirror_dir(record: RunRecord) -> Path:
    """Where the desktop keeps its copy of the run's checkpoints."""
    return RunRecord.folder() / record.id


@dataclass(frozen=True)
class MirrorPlan:
    """What one copy does: the checkpoints kept here after it, the files it moves."""

    keep: tuple[str, ...] = ()  # ckpt-<step>.pt names kept here, oldest first
    copy: tuple[str, ...] = ()  # paths under the run folder to copy now
    bytes: int = 0  # what this copy moves off the machine
    over_cap: tuple[str, ...] = ()  # left on the machine only: they do not fit the cap


def _local_sizes(record: RunRecord) -> dict[str, int]:
    folder = mirror_dir(record) / "checkpoints"
    if not folder.is_dir():
        return {}
    return {p.name: p.stat().st_size for p in folder.iterdir()
            if p.is_file() and _STEP.match(p.name)}


def plan_mirror(conn: SshConnection, record: RunRecord, *, keep: int = KEEP_CHECKPOINTS,
                cap_bytes: int = CAP_BYTES) -> MirrorPlan:
    """The newest ``keep`` checkpoints (with their .json) that fit in ``cap_bytes`` here."""
    run_dir, local = record.main.run_dir, mirror_dir(record)
    dry = sync_service.pull(conn, run_dir, CHECKPOINT_PATTERNS, local, dry_run=True)
    here = _local_sizes(record)
    new = {rel.split("/", 1)[1] for rel in dry.sent if rel.startswith("checkpoints/")}
    steps = sorted({n for n in set(here) | new if n.endswith(".pt") and _STEP.match(n)},
                   key=lambda n: int(_STEP.match(n).group(1)))  # type: ignore[union-attr]
    kept: list[str] = []
    copy: list[str] = []
    total = moved = 0
    over: list[str] = []
    for name in reversed(steps[-max(1, keep):]):  # newest first
        files = [name, name[:-3] + ".json"]
        needs = {f: sync_service.pull(conn, run_dir, [f"/checkpoints/{f}"], local,
                                      dry_run=True).bytes_sent for f in files if f in new}
        size = sum(needs.values()) + sum(here.get(f, 0) for f in files if f not in needs)
        if over or total + size > cap_bytes:
            over.append(name)  # and every older one: never keep an older over a newer
            continue
        total += size
        kept.insert(0, name)
        copy += [f"checkpoints/{f}" for f in needs]
        moved += sum(needs.values())
    return MirrorPlan(tuple(kept), tuple(sorted(copy)), moved, tuple(over))


def mirror_once(conn: SshConnection, record: RunRecord, *, keep: int = KEEP_CHECKPOINTS,
                cap_bytes: int = CAP_BYTES, plan: MirrorPlan | None = None
                ) -> sync_service.SyncResult:
    """Copy the newest ``keep`` checkpoints here (within ``cap_bytes``), drop older copies."""
    plan = plan if plan is not None else plan_mirror(conn, record, keep=keep,
                                                      cap_bytes=cap_bytes)
    patterns = [*CHECKPOINT_PATTERNS, "!checkpoints/ckpt-*"] + [f"/{p}" for p in plan.copy]
    result = sync_service.pull(conn, record.main.run_dir, patterns, mirror_dir(record))
    runs.count_egress(record.main.target, result)
    keep_steps = {n[:-3] for n in plan.keep}
    for name in _local_sizes(record):
        if name.rsplit(".", 1)[0] not in keep_steps:
            with contextlib.suppress(OSError):
                (mirror_dir(record) / "checkpoints" / name).unlink()
    return result


def data_out_cost(record: RunRecord, nbytes: int) -> tuple[float | None, str]:
    """What copying ``nbytes`` off the run's machine costs as data out (None: not known,
    "" currency: the user's own machine, free)."""
    if record.main.target.startswith("ssh://"):
        return 0.0, ""
    with Ledger() as ledger:
        machine = ledger.find(record.main.target)
    if machine is None or machine.provider == "own":
        return 0.0, ""
    rates = spend.DEFAULT_RATES.get(machine.provider)
    if rates is None or not rates.known:
        return None, machine.currency
    return nbytes / spend.GIB * rates.transfer_per_gb, rates.currency


def mirrored_checkpoints(record: RunRecord) -> list[Path]:
    folder = mirror_dir(record) / "checkpoints"
    return sorted(p for p in folder.glob("ckpt-*.pt") if p.is_file()) if folder.is_dir() else []


@dataclass
class MirrorState:
    pulls: int = 0
    files: int = 0  # checkpoint files copied so far
    last_error: str = ""
    ended: bool = False
    # told before the first copy (and kept current): what a copy moves and costs
    next_bytes: int = 0
    cost: float | None = 0.0  # data out of the next copy; None: the price is not known
    currency: str = ""  # "": the user's own machine (free)
    kept: tuple[str, ...] = ()
    over_cap: tuple[str, ...] = ()


class CheckpointMirror(StoppableWorker):
    """Copies checkpoints off the machine every ``interval_s`` until the run ends or ``stop()``.

    One connection of its own, reconnecting as SshConnection does; an error is
    recorded in ``state`` and tried again next round (the machine may be busy,
    or already gone — the copy made so far is what recovery uses).
    """

    def __init__(self, record: RunRecord, policy: HostKeyPolicy, *,
                 interval_s: float = MIRROR_EVERY_S,
                 on_pull: Callable[[MirrorState], None] = lambda _s: None,
                 keep: int = KEEP_CHECKPOINTS, cap_bytes: int = CAP_BYTES) -> None:
        self.record = record
        self.keep = keep
        self.cap_bytes = cap_bytes
        self.policy = policy
        self.interval_s = interval_s
        self.state = MirrorState()
        self._on_pull = on_pull
        super().__init__(f"gpudesk-mirror-{record.id}")

    def _main(self) -> None:
        node = self.record.main
        conn: SshConnection | None = None
        try:
            while not self._stop.is_set():
                try:
                    if conn is None:
                        conn = targets.open_connection(
                            node.target, Path(node.identity) if node.identity else None,
                            self.policy)
                    now = runs.status(conn, node.run_dir, self.record.python)
                    plan = plan_mirror(conn, self.record, keep=self.keep,
                                       cap_bytes=self.cap_bytes)
                    cost, currency = data_out_cost(self.record, plan.bytes)
                    self.state = replace(self.state, next_bytes=plan.bytes, cost=cost,
                                         currency=currency, kept=plan.keep,
                                         over_cap=plan.over_cap)
                    if self.state.pulls == 0:
                        self._on_pull(self.state)  # the cost is shown before the first copy
                    result = mirror_once(conn, self.record, plan=plan)
                    self.state = replace(self.state, pulls=self.state.pulls + 1,
                                         files=self.state.files + result.files_sent,
                                         last_error="", ended=not now.running)
                except Exception as exc:  # noqa: BLE001 - kept for the window; retried
                    text = exc.message() if isinstance(exc, TemplatedError) else str(exc)
                    self.state = replace(self.state, last_error=text or type(exc).__name__)
                self._on_pull(self.state)
                if self.state.ended:
                    return
                self._stop.wait(self.interval_s)
        finally:
            if conn is not None:
                conn.close()


def recover(record: RunRecord, ref: str, identity: str | None, policy: HostKeyPolicy, *,
            report: Report = lambda _m: None, pusher: runs.Pusher = runs.push_here,
            store: StoreAccess | None = None, root: str | None = None) -> RunRecord:
    """Resume ``record`` on the machine ``ref`` (in gpudesk's folder ``root`` there, by
    default the run's): from its bucket when it has one and the machine can reach it
    (``store``, or the run's role), else from the checkpoints mirrored on the desktop."""
    if len(record.nodes) > 1:
        raise RecoveryError(MSG_MULTI_NODE, run=record.id, n=len(record.nodes))
    if root:
        record.root = root
    if store is None and record.store_uri:
        store = run_store.reuse_access(record.store_uri, record.store_region, record.id,
                                       record.store_role)
    if store is None and record.store_uri:  # short-lived keys: new ones for the new machine
        from gpudesk.services.runs import machine_access

        store = machine_access.access_for_target(ref, record.id, uri=record.store_uri,
                                                 region=record.store_region)
    usable = store if store is not None and store.kind != "none" else None
    run_upkeep.keep_folder(record, report)
    conn = targets.open_connection(ref, Path(identity) if identity else None, policy)
    try:
        root = runs.remote_root(conn, record.python, record.root)
        run_dir = f"{root}/runs/{record.id}"
        if record.store_uri and usable is not None:
            record.nodes = [NodeRun(ref, identity, run_dir, conn.target.host)]
            return runs.resume([conn], record, report=report, pusher=pusher, store=usable)
        if record.store_uri:
            report(Said("SpotRecovery", MSG_NO_BUCKET_ACCESS, run=record.id,
                             uri=record.store_uri, target=str(conn.target)))
        saved = mirrored_checkpoints(record)
        if saved:
            pushed = sync_service.push(conn, mirror_dir(record) / "checkpoints",
                                       f"{run_dir}/checkpoints")
            report(Said("SpotRecovery", MSG_COPIED, n=pushed.files_sent,
                             target=str(conn.target), checkpoint=saved[-1].name))
        else:
            report(Said("SpotRecovery", MSG_NO_CHECKPOINT, run=record.id))
        record.nodes = [NodeRun(ref, identity, run_dir, conn.target.host)]
        return runs.resume([conn], record, report=report, pusher=pusher)
    finally:
        conn.close()


async def relaunch_like(launcher: Launcher, machine_id: str,
                        on_progress: Callable[[object], None] = lambda _p: None, *,
                        allow_from: str = "") -> str:
    """Launch a machine like ledger row ``machine_id``: its zone, then any zone of its
    region. Returns the new ledger id. ``allow_from`` empty: SSH is opened to this
    computer's public address, detected as for any launch."""
    from gpudesk.services.cloud.launcher import LaunchPlan
    from gpudesk.services.cloud.providers.base import ProviderError

    old = launcher.ledger.get(machine_id)
    if old is None or old.provider not in ("aws", "tencent", "aliyun"):
        raise RecoveryError(MSG_NOT_CLOUD, machine=machine_id)
    rate = load_settings().cny_per_usd
    budget, spent = budget_left(launcher.ledger, old, rate)
    base = LaunchPlan(provider=old.provider, instance_type=old.instance_type,  # type: ignore[arg-type]
                      region=old.region, zone=old.zone, market=old.market,  # type: ignore[arg-type]
                      max_price=old.max_price, gpu=old.gpu, gpus=old.gpus,
                      price_per_hour=old.price_per_hour, ssh_user=old.ssh_user or "ubuntu",
                      disk_gb=int(old.disk_gb or 100), allow_from=allow_from,
                      budget=budget, on_budget=old.on_budget or "stop", cny_per_usd=rate)
    plans = [base] + ([replace(base, zone="")] if old.zone else [])
    last: ProviderError | None = None
    for plan in plans:
        try:
            result = await launcher.launch(plan, on_progress)
            if budget is not None:
                launcher.ledger.log(result.machine.id, "replaces",
                                    f"{old.id}: {spent:.4f} USD spent there, budget left "
                                    f"{budget:.4f} USD ({plan.on_budget})")
            return result.machine.id
        except ProviderError as exc:
            if not exc.failover:
                raise
            last = exc
    assert last is not None
    raise last


def budget_left(ledger: Ledger, old: Machine, cny_per_usd: float
                ) -> tuple[float | None, float]:
    """(the budget a replacement of ``old`` gets, what ``old`` and the machines it replaced
    have spent), in USD like every machine gpudesk launches. A replacement is held to what
    is left of the lost machine's own budget, not to a fresh one: a chain of replacements
    never spends past the budget the user set. None: ``old`` had no budget of its own.
    Raises ``RecoveryError`` when nothing is left."""
    if old.budget is None or old.budget <= 0:
        return None, 0.0
    now = time.time()
    spent = spend.to_usd(spend.machine_spend(ledger, old, now).total, old.currency or "USD",
                         cny_per_usd)
    budget = spend.to_usd(old.budget, old.currency or "USD", cny_per_usd)
    left = round(budget - spent, 6)
    if left <= 0:
        raise RecoveryError(MSG_BUDGET_SPENT, machine=old.id, budget=f"{budget:.2f}",
                            spent=f"{spent:.2f}")
    return left, spent


def unattended_policy(fingerprint: str = "") -> HostKeyPolicy:
    """For a machine gpudesk itself just launched to replace a lost one.

    With the host key gpudesk generated for it (``fingerprint``, pinned before the
    launch and installed by its first-boot user data) only that key is accepted: no
    trust on first use. Without one (a launcher with no first-boot hook) the key is
    pinned on first use: nobody is at the desktop, the address is fresh and ours,
    and a key that changes later is still refused.
    """
    return HostKeyPolicy.expect(fingerprint) if fingerprint else HostKeyPolicy.accept_new()


def replacement_policy(ledger_id: str) -> HostKeyPolicy:
    """:func:`unattended_policy` for the ledger row of the replacement machine."""
    with Ledger() as ledger:
        row = ledger.get(ledger_id)
    return unattended_policy(row.host_key_fingerprint if row is not None else "")


def stop_quietly(mirror: CheckpointMirror | None) -> None:
    if mirror is not None:
        with contextlib.suppress(Exception):
            mirror.stop()
