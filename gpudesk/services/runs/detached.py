"""Detached training runs on a machine: launch under torchrun, follow the log, pull results.

A run lives in a folder on the machine, ``<root>/runs/<run-id>/`` (``root`` is
``~/gpudesk`` unless chosen), created and supervised by the stdlib launcher in
``run_launcher_script.py``: ``pid``, ``log``, ``exit_status``, ``command``,
``run.json`` and ``checkpoints/`` (the ``GPUDESK_RUN_DIR`` that
``gpudesk.training`` writes to). The launcher double-forks and ``setsid``s, so
a run outlives the SSH connection and the app. The project is pushed to
``<root>/projects/<name>-<hash>/`` and ``gpudesk.training`` itself to
``<root>/lib/`` (on ``PYTHONPATH``), so the machine needs only Python and torch.

The desktop keeps a small JSON record per run in ``<data dir>/runs/`` (target,
folders, command), so ``logs`` and ``pull`` need only the run id. Following a
log counts the bytes already shown; after a dropped connection it reconnects
and asks for the log from that offset, so no line is shown twice or skipped.

Multi-node: one torchrun per node with ``--nnodes``/``--node-rank`` and the
rendezvous store on the first node (torchrun's static rendezvous, which keeps
``--node-rank``: global rank 0, and so the checkpoints and the main log, stay
on the first node; c10d's dynamic rendezvous orders nodes by host name and pid
instead). The socket interface towards the first node is set for gloo and
NCCL, and the node list is given to the script as ``GPUDESK_NODES``.

On a machine gpudesk launched, the agent gets the ledger's rules before the run
starts there (:func:`give_rules`), as the window's Watch gives them: a machine
launched and run only from a terminal is guarded like one watched in the window.

Everything blocks (paramiko does); the window calls it with ``asyncio.to_thread``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.resources
import json
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from datetime import UTC
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import BinaryIO

import paramiko

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core import paths
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.core.files import atomic_write_text
from gpudesk.services.core.said import Said
from gpudesk.services.remote import sync as sync_service
from gpudesk.services.remote.ssh import MSG_DROPPED
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.remote.ssh import SshDisconnected
from gpudesk.services.runs import run_downloads
from gpudesk.services.runs.run_downloads import DataFetch
from gpudesk.services.runs.shipped_source import launcher_source
from gpudesk.services.runs.shipped_source import python_c_command
from gpudesk.training.env import AMP_ENV
from gpudesk.training.env import CHECKPOINT_EVERY_ENV
from gpudesk.training.env import OUTPUT_DIR_ENV
from gpudesk.training.env import RUN_DIR_ENV

if TYPE_CHECKING:
    from gpudesk.services.storage.access import StoreAccess

MSG_NO_RUN = QT_TRANSLATE_NOOP(
    "Runs", "No run '{run}' is recorded on this computer (see {folder}).")
MSG_NO_SCRIPT = QT_TRANSLATE_NOOP(
    "Runs", "The script {script} is not in the project folder {project}.")
MSG_REMOTE = QT_TRANSLATE_NOOP(
    "Runs", "The run launcher on {target} failed while {what}: {detail}")
MSG_SYNCED = QT_TRANSLATE_NOOP(
    "Runs", "synced {sent} changed files ({unchanged} unchanged) to {target}")
MSG_STARTED = QT_TRANSLATE_NOOP(
    "Runs", "started run {run} on {target} (pid {pid}; {device})")
MSG_STARTED_NODE = QT_TRANSLATE_NOOP(
    "Runs", "started node {node} of run {run} on {target} (pid {pid}; {device})")
MSG_STORE_ROLE = QT_TRANSLATE_NOOP(
    "Runs", "the agent uploads checkpoints, the log and outputs to {uri} (the machine's role "
    "{role})")
MSG_STORE_STS = QT_TRANSLATE_NOOP(
    "Runs", "the agent uploads checkpoints, the log and outputs to {uri} with short-lived "
    "keys that end at {expires}")
MSG_NO_STORE = QT_TRANSLATE_NOOP(
    "Runs", "run {run} has no bucket: its checkpoints stay on the machine and are copied to "
    "this computer only ({why})")
MSG_RESUME_NO_STORE = QT_TRANSLATE_NOOP(
    "Runs", "run {run} starts again without its bucket {uri} ({why}): its checkpoints stay "
    "on the machine and are copied to this computer only")
MSG_FROM_BUCKET = QT_TRANSLATE_NOOP(
    "Runs", "{target} has no checkpoint of run {run}: the agent fetches the latest one from "
    "{uri} before the script starts")
MSG_CPU = QT_TRANSLATE_NOOP(
    "Runs", "CPU")
MSG_GPUS = QT_TRANSLATE_NOOP(
    "Runs", "{n} GPU(s) per machine")
MSG_LOST = QT_TRANSLATE_NOOP(
    "Runs", "Run {run} on {target} stopped without an exit status: its processes are gone "
    "(the machine restarted, or they were killed). Resume it with gpudesk run --resume {run}.")

DEFAULT_ROOT = "~/gpudesk"
DEFAULT_PYTHON = "python3"
LAUNCHER_FAILED = 2  # exit status of the launcher itself for a bad request
PULL_PATTERNS = ("*", "!pid", "!*.tmp-*")
RECONNECT_LIMIT = 30  # consecutive drops without a byte of progress before giving up
RETRY_S = 0.2
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,80}$")
_LIB_INIT = '"""gpudesk.training, shipped by gpudesk to run on this machine."""\n'


class RunError(TemplatedError):
    translation_context = "Runs"


def device_text(nproc: int) -> Said:
    """What a run trains on, in words: "CPU" (GPUs per machine 0) or "N GPU(s) per machine"."""
    return Said("Runs", MSG_CPU) if nproc <= 0 else Said("Runs", MSG_GPUS, n=nproc)


# --------------------------------------------------------------------------- records

@dataclass
class NodeRun:
    target: str  # what --on / --nodes said: ssh://... or a ledger id
    identity: str | None
    run_dir: str  # absolute, on that machine
    host: str = ""


@dataclass
class RunRecord:
    """What the desktop remembers about one run (no secrets: key *paths* only)."""

    id: str
    project: str  # local folder
    remote_project: str
    script: str
    args: list[str]
    nproc: int
    python: str = DEFAULT_PYTHON
    amp: str | None = None
    checkpoint_every_min: float | None = None
    root: str = DEFAULT_ROOT
    nodes: list[NodeRun] = field(default_factory=list)
    created: float = 0.0
    attempt: int = 1
    master_port: int = 0
    log_offset: int = 0  # where the latest attempt's output starts in the log
    # What gpudesk said while starting it (preflight, sync, start): shown above the log
    # when the run is chosen again (the log on the machine has only the script's output).
    notes: list[Any] = field(default_factory=list)
    # The state last seen (running, finished, failed, stopped, lost, missing, doubtful):
    # the run list shows it without asking every machine.
    last_state: str = ""
    # The bucket the agent uploads this run to (docs/storage.md): "s3://…", "cos://…" or
    # "oss://…" with its region; "" when the run has none (laptop copies only).
    store_uri: str = ""
    store_region: str = ""
    # How the machine reaches it ("role" or "sts"; "" without a store) and the role's name
    # (no secret): a resume on a machine with the same role needs no new keys.
    store_credentials: str = ""
    store_role: str = ""
    # Short-lived keys: when they were issued and end (ISO UTC); the desktop renews them
    # while it follows the run (run_upkeep). ``store_kept``: "<attempt>:<days>" once the
    # folder's lifecycle rule was set after that attempt ended ("" while none is set).
    store_issued: str = ""
    store_expires: str = ""
    store_kept: str = ""
    # The dataset the run reads (issue 32, ``run_data``): "name", "manifest_sha256" (the
    # version it used), "key" (the manifest in the run's bucket), "path" ("": the cache).
    data: dict[str, str] = field(default_factory=dict)
    # Every machine the run used, in order (issue 30): {"target", "host", "attempt",
    # "from" (unix s), "resumed_from_step" (None: started from the beginning), "checkpoint"}.
    hops: list[dict[str, Any]] = field(default_factory=list)

    @property
    def main(self) -> NodeRun:
        return self.nodes[0]

    @property
    def cpu(self) -> bool:
        """A CPU run (GPUs per machine 0): chosen, not a GPU run that found no GPU."""
        return self.nproc <= 0

    def said(self) -> list[str]:
        return [Said.from_json(n) for n in self.notes]

    def keep_notes(self, lines: list[str]) -> None:
        self.notes = list(self.notes) + [
            line.to_json() if isinstance(line, Said) else str(line) for line in lines]

    @staticmethod
    def folder() -> Path:
        return paths.data_dir() / "runs"

    @classmethod
    def path_of(cls, run_id: str) -> Path:
        return cls.folder() / f"{run_id}.json"

    def save(self) -> None:
        atomic_write_text(self.path_of(self.id), json.dumps(asdict(self), indent=1) + "\n")

    @classmethod
    def load(cls, run_id: str) -> RunRecord:
        if not _RUN_ID.match(run_id):
            raise RunError(MSG_NO_RUN, run=run_id[:80], folder=cls.folder())
        try:
            data = json.loads(cls.path_of(run_id).read_text(encoding="utf-8"))
            nodes = [NodeRun(**n) for n in data.pop("nodes")]
            return cls(nodes=nodes, **data)
        except (OSError, ValueError, TypeError, KeyError):
            raise RunError(MSG_NO_RUN, run=run_id, folder=cls.folder()) from None


def new_run_id(project_name: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9]+", "-", project_name).strip("-")[:24] or "run"
    return f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def state_word(status: RunStatus, *, doubtful: bool = False) -> str:
    """One word for a status: running, finished, failed, stopped, lost, missing, doubtful."""
    if status.state != "exited":
        return status.state
    if status.cancelled:
        return "stopped"
    if status.code == 0:
        return "doubtful" if doubtful else "finished"
    return "finished" if status.teardown else "failed"


@dataclass(frozen=True)
class RunStatus:
    state: str  # "running", "exited", "lost", "missing" (no run folder)
    code: int | None = None
    pid: int | None = None
    log_size: int = 0
    cancelled: bool = False  # stopped on request (gpudesk cancel / Stop): not a failure
    seconds: float | None = None  # how long the latest attempt ran (exited runs)
    checkpoints: int | None = None  # in the run folder on the machine; None: not known
    latest_checkpoint: str = ""
    # A non-zero exit after every rank finished (final checkpoint written, said past
    # Session.finish()'s barrier): a rank's teardown aborted. The run finished.
    teardown: bool = False
    # What the agent fetched from the run's bucket (issue 32), noted as downloads
    data_fetches: tuple[DataFetch, ...] = ()

    @property
    def finished(self) -> bool:
        """Exited 0, or non-zero only in teardown after every rank finished."""
        return self.state == "exited" and not self.cancelled and (
            self.code == 0 or self.teardown)

    @property
    def running(self) -> bool:
        return self.state == "running"

    def __str__(self) -> str:
        if self.state == "exited" and self.cancelled:
            return f"cancelled (exit status {self.code})"
        return f"exited({self.code})" if self.state == "exited" else self.state


# --------------------------------------------------------------------------- the launcher

def launcher_command(python: str, *args: str) -> str:
    """``python -c <launcher source> ARGS``, the source compressed into one shell word."""
    return python_c_command(python, launcher_source(), "gpudesk_run_launcher", *args)


def _call(conn: SshConnection, python: str, what: str, *args: str,
          input: bytes | None = None, timeout: float = 120.0) -> str:
    result = conn.exec(launcher_command(python, *args), input=input, timeout=timeout, what=what)
    if not result.ok:
        detail = (result.stderr or result.stdout).decode("utf-8", "replace").strip()[-400:]
        raise RunError(MSG_REMOTE, target=str(conn.target), what=what,
                       detail=detail or f"exit status {result.exit_status}")
    return result.text


def remote_root(conn: SshConnection, python: str, root: str) -> str:
    """``root`` made absolute on the machine (``~`` is the login user's home there)."""
    return _call(conn, python, "finding its folders", "abspath", root).strip()


def free_port(conn: SshConnection, python: str) -> int:
    return int(_call(conn, python, "choosing a rendezvous port", "freeport").strip())


def _note_downloads(run_dir: str, fetches: tuple[DataFetch, ...]) -> None:
    """The run whose folder is ``run_dir`` (named by its id) noted its bucket fetches: each
    kept once as a download, to the node that fetched it; nothing without its record here."""
    if not any(f.bytes > 0 for f in fetches):
        return
    try:
        record = RunRecord.load(run_dir.rstrip("/").rsplit("/", 1)[-1])
    except RunError:
        return
    node = next((n for n in record.nodes if n.run_dir == run_dir), record.main)
    run_downloads.note(record.id, record.data, record.store_region, node.target, fetches)


def status(conn: SshConnection, run_dir: str, python: str = DEFAULT_PYTHON) -> RunStatus:
    """running / exited(code) / lost (pid gone without an exit status) / missing; what
    the run fetched from its bucket is kept as downloads here, where every front end
    reads a run's state (``run_downloads``)."""
    data = json.loads(_call(conn, python, "reading the run status", "status", run_dir))
    fetches = run_downloads.parse(data.get("data_fetches"))
    _note_downloads(run_dir, fetches)  # the month's spend (issue 32)
    seconds = data.get("seconds")
    found = data.get("checkpoints")
    return RunStatus(str(data["state"]), data.get("code"), data.get("pid"),
                     int(data.get("log_size") or 0), bool(data.get("cancelled")),
                     float(seconds) if isinstance(seconds, int | float) else None,
                     int(found) if isinstance(found, int) else None,
                     str(data.get("latest_checkpoint") or ""),
                     bool(data.get("teardown")), fetches)


def stop(conn: SshConnection, run_dir: str, python: str = DEFAULT_PYTHON) -> None:
    """SIGTERM the run (torchrun passes it on to the workers)."""
    _call(conn, python, "stopping the run", "stop", run_dir)


def start(conn: SshConnection, spec: dict[str, Any], python: str) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(_call(conn, python, "starting the run", "start",
                                              input=json.dumps(spec).encode()))
    return answer


# --------------------------------------------------------------------------- what runs

def torchrun_argv(python: str, script: str, args: list[str], *, nproc: int, nnodes: int = 1,
                  node_rank: int = 0, master_addr: str = "", master_port: int = 0) -> list[str]:
    argv = [python, "-m", "torch.distributed.run"]
    nproc = max(1, nproc)  # a CPU run (0) is one process, with the GPUs hidden from it
    if nnodes > 1:
        argv += ["--nnodes", str(nnodes), "--node-rank", str(node_rank),
                 "--master-addr", master_addr, "--master-port", str(master_port)]
    else:
        argv += ["--standalone"]
    return [*argv, "--nproc-per-node", str(nproc), "--tee", "3", script, *args]


def training_env(run_dir: str, lib: str, project: str, *, amp: str | None,
                 checkpoint_every_min: float | None, run_id: str, nodes: list[str],
                 node_rank: int, cpu: bool = False) -> dict[str, str]:
    """What ``gpudesk.training`` reads (``gpudesk/training/env.py``), plus the node list;
    a CPU run sees no GPU (``CUDA_VISIBLE_DEVICES`` empty)."""
    env = {RUN_DIR_ENV: f"{run_dir}/checkpoints", OUTPUT_DIR_ENV: f"{run_dir}/outputs",
           "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": f"{lib}:{project}", "GPUDESK_RUN_ID": run_id,
           "GPUDESK_NODES": ",".join(nodes), "GPUDESK_NODE_RANK": str(node_rank),
           "GPUDESK_NNODES": str(len(nodes))}
    if cpu:
        env["CUDA_VISIBLE_DEVICES"] = ""
    if amp:
        env[AMP_ENV] = amp
    if checkpoint_every_min is not None:
        env[CHECKPOINT_EVERY_ENV] = f"{checkpoint_every_min:g}"
    return env


def project_folder_name(project: Path) -> str:
    resolved = project.resolve()
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", resolved.name).strip("._") or "project"
    digest = hashlib.sha256(str(resolved).encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{stem}-{digest}"


def script_in_project(project: Path, script: str) -> str:
    """The script as a path relative to the project (forward slashes); it must exist there."""
    path = Path(script)
    full = path if path.is_absolute() else project / path
    try:
        rel = full.resolve().relative_to(project.resolve())
    except ValueError:
        rel = None
    if rel is None or not full.is_file():
        raise RunError(MSG_NO_SCRIPT, script=script, project=project)
    return rel.as_posix()


def training_lib_folder() -> Path:
    """A local folder holding ``gpudesk/training`` alone, refreshed only where it changed."""
    stage = paths.cache_dir() / "remote-lib"
    package = stage / "gpudesk" / "training"
    package.mkdir(parents=True, exist_ok=True)
    wanted = {"__init__.py": _LIB_INIT.encode()}
    wanted.update({f"training/{item.name}": item.read_bytes()
                   for item in importlib.resources.files("gpudesk.training").iterdir()
                   if item.name.endswith(".py")})
    for rel, data in wanted.items():
        target = stage / "gpudesk" / rel
        with contextlib.suppress(OSError):
            if target.read_bytes() == data:
                continue
        target.write_bytes(data)
    for old in package.iterdir():
        if old.is_file() and f"training/{old.name}" not in wanted:
            old.unlink()
    return stage


# --------------------------------------------------------------------------- launching

@dataclass
class RunRequest:
    project: Path
    script: str
    args: list[str]
    nproc: int = 1
    amp: str | None = None
    checkpoint_every_min: float | None = None
    python: str = DEFAULT_PYTHON
    root: str = DEFAULT_ROOT
    # Chosen before the launch (``new_run_id``) when the bucket's keys are limited to
    # the run's prefix and so must be made first; "" picks one now.
    run_id: str = ""
    data: dict[str, str] = field(default_factory=dict)  # RunRecord.data (issue 32)


Report = Callable[[str], None]
Folders = list[tuple[Path, str]]  # (local folder, remote folder)
# How a node gets its folders (mirrored, delete=True): one result per folder. The CLI
# pushes in-process; the app passes ``run_control.push_in_child`` (a niced child process).
Pusher = Callable[[SshConnection, NodeRun, Folders], tuple[sync_service.SyncResult, ...]]


def push_here(conn: SshConnection, _node: NodeRun,
              folders: Folders) -> tuple[sync_service.SyncResult, ...]:
    return tuple(sync_service.push(conn, local, remote, delete=True)
                 for local, remote in folders)


def launch(conns: list[SshConnection], targets: list[tuple[str, str | None]],
           request: RunRequest, *, report: Report = lambda _m: None,
           pusher: Pusher = push_here, store: StoreAccess | None = None) -> RunRecord:
    """Sync the project to every node and start the run there; returns the saved record.

    ``conns`` are connected (host keys checked) before anything is copied, so a
    refused machine leaves every node untouched. With ``store`` the first node's
    agent uploads the run to that bucket (``run_store``).
    """
    project = Path(request.project)
    script = script_in_project(project, request.script)
    name = project_folder_name(project)
    run_id = request.run_id or new_run_id(project.resolve().name)
    if not _RUN_ID.match(run_id):
        raise RunError(MSG_NO_RUN, run=run_id[:80], folder=RunRecord.folder())
    roots = [remote_root(conn, request.python, request.root) for conn in conns]
    record = RunRecord(id=run_id, project=str(project.resolve()),
                       remote_project=f"{roots[0]}/projects/{name}", script=script,
                       args=list(request.args), nproc=request.nproc, python=request.python,
                       amp=request.amp, checkpoint_every_min=request.checkpoint_every_min,
                       root=request.root, created=time.time(), data=dict(request.data))
    for i, (conn, root, (ref, identity)) in enumerate(zip(conns, roots, targets, strict=True)):
        node_id = run_id if i == 0 else f"{run_id}-node{i}"
        record.nodes.append(NodeRun(ref, identity, f"{root}/runs/{node_id}",
                                    conn.target.host))
    if len(conns) > 1:
        record.master_port = free_port(conns[0], request.python)
    _sync_and_start(conns, record, report, resume=False, pusher=pusher, store=store)
    return record


def resume(conns: list[SshConnection], record: RunRecord, *, report: Report = lambda _m: None,
           project: Path | None = None, pusher: Pusher = push_here,
           store: StoreAccess | None = None) -> RunRecord:
    """Start a stopped run again in its own folder(s): it carries on from its checkpoints.

    A run with a bucket gets its store config written again (``store``, else the same
    role it had); where the first node's folder holds no checkpoint (a new machine, a
    lost disk) the agent fetches the bucket's latest before the script starts."""
    if project is not None:
        record.project = str(project.resolve())
    record.attempt += 1
    if len(conns) > 1:
        record.master_port = free_port(conns[0], record.python)
    if store is None and record.store_uri:
        from gpudesk.services.runs import run_store

        store = run_store.reuse_access(record.store_uri, record.store_region, record.id,
                                       record.store_role)
    _sync_and_start(conns, record, report, resume=True, pusher=pusher, store=store)
    return record


def _attach_store(conn: SshConnection, record: RunRecord, store: StoreAccess | None,
                  report: Report, *, resume: bool) -> list[str]:
    """Write the first node's store config; returns the words to run the script under
    (the agent's fetch-resume where it must fetch a checkpoint), or [] for none."""
    from gpudesk.services.runs import run_data_public

    public = run_data_public.is_public_data(record.data)  # fetched without the bucket
    if store is None or store.kind == "none":
        if record.data and not public:  # the script would start without its dataset (32)
            from gpudesk.services.runs import run_data

            raise run_data.no_keys(record, store)
        if store is not None and not resume:
            report(Said("Runs", MSG_NO_STORE, run=record.id, why=store.why_none or "-"))
        elif resume and record.store_uri:  # it had a bucket: say that this attempt has not
            why = (store.why_none if store is not None else "") or "-"
            report(Said("Runs", MSG_RESUME_NO_STORE, run=record.id, uri=record.store_uri,
                        why=why))
        if public:  # the agent fetches it from its source before the script starts
            from gpudesk.services.runs import run_data
            from gpudesk.services.runs import run_store

            site = run_store.ensure_agent(conn, record.main.run_dir.rsplit("/runs/", 1)[0],
                                          record.python)
            return run_data.fetch_argv(site, record.main.run_dir, record, report, conn,
                                       record.python)
        return []
    from gpudesk.services.runs import run_store

    if store.run_id and store.run_id != record.id:
        raise ValueError(f"the bucket access is for run {store.run_id}, not {record.id}")
    node = record.main
    root = node.run_dir.rsplit("/runs/", 1)[0]
    had = status(conn, node.run_dir, record.python) if resume else None
    site = run_store.ensure_agent(conn, root, record.python)
    written = run_store.write_config(conn, node.run_dir, record.id, store, python=record.python)
    record.store_uri, record.store_region = str(store.store), store.region
    record.store_credentials, record.store_role = store.kind, store.role
    record.store_issued = record.store_expires = ""
    if written.expires is not None:
        record.store_issued = run_store.expiry_text(datetime.now(UTC))
        record.store_expires = run_store.expiry_text(written.expires)
    if store.kind == "role":
        report(Said("Runs", MSG_STORE_ROLE, uri=written.uri, role=store.role))
    else:
        expires = run_store.expiry_text(written.expires) if written.expires else "?"
        report(Said("Runs", MSG_STORE_STS, uri=written.uri, expires=expires))
    from gpudesk.services.runs import run_data

    data = run_data.fetch_argv(site, node.run_dir, record, report, conn,  # [] without one
                               record.python)
    if had is None or had.checkpoints:
        return data  # its own checkpoints are at least as new as what it uploaded
    report(Said("Runs", MSG_FROM_BUCKET, target=str(conn.target), run=record.id,
                uri=written.uri))
    return data + run_store.fetch_resume_argv(site, node.run_dir, [])


def give_rules(conn: SshConnection, ref: str, root: str, python: str, report: Report) -> None:
    """Before a run starts on a machine gpudesk launched, its agent gets the rules the
    window's Watch gives it (``target_agent.before_run``: the ledger's budget, action and
    role stop, not the first-boot guard's warnings), whichever face started the run; what
    it now enforces is said when that changed. The user's own machines are left alone."""
    from gpudesk.services.remote import target_agent

    said = target_agent.before_run(conn, ref, root=root, python=python)
    if said is not None:
        report(said)


def _sync_and_start(conns: list[SshConnection], record: RunRecord, report: Report, *,
                    resume: bool, pusher: Pusher, store: StoreAccess | None = None) -> None:
    project = Path(record.project)
    script_in_project(project, record.script)
    lib_stage = training_lib_folder()
    started: list[tuple[SshConnection, str]] = []
    hosts = [n.host for n in record.nodes]
    resumed_from = ""  # the checkpoint the first node resumes from (record.hops)
    try:
        for i, (conn, node) in enumerate(zip(conns, record.nodes, strict=True)):
            root = node.run_dir.rsplit("/runs/", 1)[0]
            remote_project = f"{root}/projects/{Path(record.remote_project).name}"
            if i == 0:
                record.remote_project = remote_project
            give_rules(conn, node.target, root, record.python, report)
            pushed = pusher(conn, node, [(project, remote_project),
                                         (lib_stage, f"{root}/lib")])[0]
            report(Said("Runs", MSG_SYNCED, sent=pushed.files_sent,
                        unchanged=pushed.unchanged, target=str(conn.target)))
            argv = torchrun_argv(record.python, record.script, record.args, nproc=record.nproc,
                                 nnodes=len(conns), node_rank=i, master_addr=hosts[0],
                                 master_port=record.master_port)
            if i == 0:  # rank 0 writes the checkpoints: its agent uploads them
                resumed_from = _resume_point(conn, record, store) if resume else ""
                argv = _attach_store(conn, record, store, report, resume=resume) + argv
            env = training_env(node.run_dir, f"{root}/lib", remote_project, amp=record.amp,
                               checkpoint_every_min=record.checkpoint_every_min,
                               run_id=record.id, nodes=hosts, node_rank=i,
                               cpu=record.cpu)
            spec = {"run_dir": node.run_dir, "cwd": remote_project, "argv": argv, "env": env,
                    "resume": resume, "attempt": record.attempt, "run_id": record.id,
                    "master_addr": hosts[0] if len(conns) > 1 else "127.0.0.1",
                    "multi_node": len(conns) > 1}
            answer = start(conn, spec, record.python)
            started.append((conn, node.run_dir))
            if i == 0:
                record.nodes[0].run_dir = str(answer["run_dir"])
                record.log_offset = int(answer.get("log_offset", 0))
            values = {"run": record.id, "target": str(conn.target), "pid": answer["pid"],
                      "device": device_text(record.nproc)}
            report(Said("Runs", MSG_STARTED_NODE, node=i, **values) if len(conns) > 1
                   else Said("Runs", MSG_STARTED, **values))
    except BaseException:
        for conn, run_dir in started:  # the others would wait for the missing node forever
            with contextlib.suppress(Exception):
                stop(conn, run_dir, record.python)
        if record.data.get("uses_token"):  # a Hub token file the agent never read
            from gpudesk.services.runs import run_data_public

            run_data_public.forget_token(conns[0], record.main.run_dir)
        raise
    note_hop(record, resumed_from)
    record.save()


_CKPT_STEP = re.compile(r"ckpt-(\d+)")


def note_hop(record: RunRecord, checkpoint: str) -> None:
    """Add the run's first machine to ``record.hops`` when it is not the last one there
    (a resume on the same machine is the same stint), with the checkpoint it resumed from."""
    node = record.main
    last = record.hops[-1] if record.hops else None
    if last is not None and (last.get("target"), last.get("host")) == (node.target, node.host):
        return
    found = _CKPT_STEP.search(checkpoint)
    record.hops.append({"target": node.target, "host": node.host, "attempt": record.attempt,
                        "from": time.time(),
                        "resumed_from_step": int(found.group(1)) if found else None,
                        "checkpoint": checkpoint})


def _resume_point(conn: SshConnection, record: RunRecord, store: StoreAccess | None) -> str:
    """The checkpoint a resume starts from: the machine's newest, else (a new machine) the
    bucket manifest's latest, which the agent fetches; "" where neither says one."""
    try:
        here = status(conn, record.main.run_dir, record.python).latest_checkpoint
    except Exception:  # noqa: BLE001 - only the story of the run misses the step
        here = ""
    if here or store is None or store.kind == "none":
        return here
    return _bucket_latest(store)


def _bucket_latest(store: StoreAccess) -> str:
    """The manifest's ``latest`` in the run's folder, read with the run's own keys (or the
    account's for a role run); "" on any failure (blocking, one GET)."""
    try:
        from gpudesk.services.cloud.providers.base import Credentials
        from gpudesk.services.storage.clients import account_client
        from gpudesk.services.storage.clients import make_client

        cloud = store.store.cloud
        client = (make_client(cloud, store.region, Credentials(
            cloud, store.sts.key_id, store.sts.secret, store.sts.token), retries=1)  # type: ignore[arg-type]
            if store.sts is not None else account_client(cloud, store.region))
        body = client.get_object(Bucket=store.store.bucket,
                                 Key=store.store.run(store.run_id).manifest)["Body"].read()
        return str(json.loads(body).get("latest") or "")
    except Exception:  # noqa: BLE001 - only the story of the run misses the step
        return ""


# --------------------------------------------------------------------------- following

def follow(conn: SshConnection, run_dir: str, out: BinaryIO, *, python: str = DEFAULT_PYTHON,
           offset: int = 0, until_end: bool = True,
           stop_event: threading.Event | None = None) -> tuple[RunStatus, int]:
    """Copy the log to ``out`` from byte ``offset``; with ``until_end`` keep going until the
    run has ended (reconnecting after drops). Returns the final status and offset."""
    drops = 0
    op = "follow" if until_end else "cat"
    while True:
        if stop_event is not None and stop_event.is_set():
            return status(conn, run_dir, python), offset
        before = offset
        code = -1
        err = b""
        try:
            chan = conn.start(launcher_command(python, op, run_dir, str(offset)),
                              what="following the log")
            try:
                chan.shutdown_write()
                while True:
                    data = chan.recv(1 << 16)
                    if not data:
                        break
                    out.write(data)
                    out.flush()
                    offset += len(data)
                while chan.recv_stderr_ready():
                    err += chan.recv_stderr(1 << 16)
                code = chan.recv_exit_status()
            finally:
                chan.close()
        except (SshDisconnected, OSError, EOFError, paramiko.SSHException):
            code = -1
        if code == 0:
            return status(conn, run_dir, python), offset
        if code not in (-1, 3):  # 3: the remote follower lost its connection
            raise RunError(MSG_REMOTE, target=str(conn.target), what="reading the log",
                           detail=err.decode("utf-8", "replace").strip()[-400:]
                           or f"exit status {code}")
        drops = 0 if offset > before else drops + 1
        if drops > RECONNECT_LIMIT:
            raise SshDisconnected(MSG_DROPPED, target=str(conn.target),
                                  what="following the log")
        threading.Event().wait(RETRY_S * min(drops, 10))  # back off; transport() reconnects


def wait_all(conns: list[SshConnection], record: RunRecord, main: RunStatus,
             stop_event: threading.Event | None = None) -> int:
    """The run's exit status once every node has stopped: the first node's, or else the
    first non-zero one; a node's teardown after every rank finished counts as 0 (its own
    status says so: ``RunStatus.teardown``). A lost node raises."""
    codes: list[int | None] = [0 if main.teardown else main.code]
    for conn, node in zip(conns[1:], record.nodes[1:], strict=True):
        while True:
            now = status(conn, node.run_dir, record.python)
            if not now.running or (stop_event is not None and stop_event.is_set()):
                break
            threading.Event().wait(0.5)  # the other nodes end with the first one
        if now.state != "exited":
            raise RunError(MSG_LOST, run=record.id, target=str(conn.target))
        codes.append(0 if now.teardown else now.code)
    if main.state != "exited":
        raise RunError(MSG_LOST, run=record.id, target=str(conns[0].target))
    return next((c for c in codes if c), 0) or 0


def pull(conn: SshConnection, record: RunRecord, local_dir: Path,
         progress: sync_service.ProgressFn | None = None) -> sync_service.SyncResult:
    """Checkpoints, log, progress and exit status of the run, copied incrementally."""
    result = sync_service.pull(conn, record.main.run_dir, PULL_PATTERNS, Path(local_dir),
                               progress=progress)
    count_egress(record.main.target, result)
    return result


def count_egress(ref: str, result: sync_service.SyncResult) -> None:
    """Bytes a pull brought off a cloud machine go into the ledger: the cloud bills them as
    data transfer out. Own machines (``ssh://`` or added) bill nothing and are skipped."""
    sent = result.stream_bytes or result.bytes_sent
    if sent <= 0 or ref.startswith("ssh://"):
        return
    from gpudesk.services.money.ledger import Ledger

    with Ledger() as ledger:
        machine = ledger.find(ref)
        if machine is not None and machine.provider in ("aws", "tencent", "aliyun"):
            ledger.add_transfer(machine.id, sent)
