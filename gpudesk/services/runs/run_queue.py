"""The desktop's side of a machine's run queue: add a run, read the queue, cancel.

The queue itself lives on the machine and is kept by its agent
(``gpudesk/agent/queue.py``, which documents the rules: strict first in, first
out; GPUs given out by ``CUDA_VISIBLE_DEVICES``; what a reboot does). Here the
desktop does what ``detached.launch`` does up to the start: the project and
``gpudesk.training`` are pushed to the machine the same way (``<root>/projects``,
``<root>/lib``) and the same launcher spec is built (torchrun, the training
environment, ``<root>/runs/<run-id>``); then, instead of starting it, the spec is
added to the queue with the run launcher beside it, and a run record is saved
here so that ``logs``, ``pull``, ``show`` and ``--resume`` know the run once the
agent has started it.

Every operation runs ``agent/queue.py`` itself over SSH (``python3 -c``): the same
code, lock and files as the agent. Whether an agent keeps the queue is read from its
heartbeat (``queue/agent.json``: a live pid, written in the last minute); without
one the queue is shown as it is and said to wait, never pretended to run.

A queued run has no bucket: short-lived bucket keys could end before it starts.
Blocking (paramiko); the window calls it from a worker thread.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.core.said import Said
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.runs import detached as runs
from gpudesk.services.runs import run_control
from gpudesk.services.runs.detached import NodeRun
from gpudesk.services.runs.detached import RunRecord
from gpudesk.services.runs.detached import RunRequest
from gpudesk.services.runs.shipped_source import launcher_source
from gpudesk.services.runs.shipped_source import python_c_command
from gpudesk.services.runs.shipped_source import queue_source

MSG_QUEUED = QT_TRANSLATE_NOOP(
    "RunQueue", "queued run {run} on {target} ({device}); it starts when the GPUs it asks "
    "for are free and the runs before it have started")
MSG_NO_AGENT = QT_TRANSLATE_NOOP(
    "RunQueue", "No gpudesk agent keeps the queue on {target}: queued runs wait until one "
    "runs there. Watching the machine starts one (the Watch page, or gpudesk watch --on "
    "{target}).")
MSG_AGENT_STARTED = QT_TRANSLATE_NOOP(
    "RunQueue", "started the gpudesk agent on {target}: it keeps the queue and starts each "
    "run when its turn comes, with gpudesk closed too")
MSG_AGENT_NOT_STARTED = QT_TRANSLATE_NOOP(
    "RunQueue", "No gpudesk agent keeps the queue on {target}, and none could be started "
    "there: {why}. Queued runs wait until one runs there.")
MSG_FAILED = QT_TRANSLATE_NOOP(
    "RunQueue", "The run queue on {target} failed while {what}: {detail}")
MSG_NO_MULTI_NODE = QT_TRANSLATE_NOOP(
    "RunQueue", "A queue belongs to one machine: a multi-node run cannot be queued.")
MSG_NOTHING_TO_CANCEL = QT_TRANSLATE_NOOP(
    "RunQueue", "No queued or running run '{run}' in the queue on {target}.")

QUEUED_STATE = "queued"  # the run record's last_state until the agent starts it
# a queue entry's state as the run list's word (the run record's ``last_state``)
RECORD_STATES = {"queued": QUEUED_STATE, "running": "running", "succeeded": "finished",
                 "failed": "failed", "cancelled": "cancelled"}


class QueueError(TemplatedError):
    translation_context = "RunQueue"


@dataclass(frozen=True)
class QueueEntry:
    run: str
    state: str  # queued, running, succeeded, failed, cancelled
    gpus: int
    devices: str | None  # "0,1,2,3" while it holds GPUs (CUDA_VISIBLE_DEVICES), else None
    queued_at: float | None
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    reason: str = ""  # why it failed, in the machine's words (English)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> QueueEntry:
        devices = data.get("devices")
        return cls(run=str(data["run"]), state=str(data["state"]), gpus=int(data["gpus"]),
                   devices=",".join(str(d) for d in devices) if devices else None,
                   queued_at=_num(data.get("queued_at")),
                   started_at=_num(data.get("started_at")),
                   ended_at=_num(data.get("ended_at")),
                   exit_code=data["exit_code"] if isinstance(data.get("exit_code"), int) else None,
                   reason=str(data.get("reason") or ""))

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run, "state": self.state, "gpus": self.gpus, "devices": self.devices,
                "queued_at": self.queued_at, "started_at": self.started_at,
                "ended_at": self.ended_at, "exit_code": self.exit_code, "reason": self.reason}


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


@dataclass(frozen=True)
class QueueView:
    """A machine's queue as read now."""

    machine: str
    gpus: int | None  # what the agent counted; None without an agent
    agent_running: bool
    entries: list[QueueEntry] = field(default_factory=list)
    name: str = ""  # what the user calls the machine (its ledger name); "" for ``machine``

    def to_json(self) -> dict[str, Any]:
        return {"machine": self.machine, "gpus": self.gpus, "agent_running": self.agent_running,
                "entries": [e.to_json() for e in self.entries]}

    def note(self) -> Said | None:
        """What to say about the queue as a whole: no agent keeps it."""
        return None if self.agent_running else Said("RunQueue", MSG_NO_AGENT,
                                                     target=self.name or self.machine)

    @property
    def open(self) -> list[QueueEntry]:
        return [e for e in self.entries if e.state in ("queued", "running")]


# --------------------------------------------------------------------------- the helper

def helper_command(python: str, *args: str) -> str:
    """``python -c <agent/queue.py> ARGS``, the source compressed into one shell word."""
    return python_c_command(python, queue_source(), "gpudesk_run_queue", *args)


def _call(conn: SshConnection, python: str, what: str, *args: str,
          input: bytes | None = None) -> Any:
    result = conn.exec(helper_command(python, *args), input=input, timeout=120.0, what=what)
    if not result.ok:
        detail = (result.stderr or result.stdout).decode("utf-8", "replace").strip()[-400:]
        raise QueueError(MSG_FAILED, target=str(conn.target), what=what,
                         detail=detail or f"exit status {result.exit_status}")
    return json.loads(result.text)


def machine_name(ref: str) -> str:
    """What the user calls the machine ``ref`` names: its ledger name, never the internal
    id (an ``ssh://`` address, or a machine the ledger does not know, stays as given)."""
    if not ref or ref.startswith("ssh://"):
        return ref
    with Ledger() as ledger:
        machine = ledger.find(ref)
    return (machine.name or ref) if machine is not None else ref


def keep_states(view: QueueView) -> list[str]:
    """Bring this computer's run records up to what the queue says of them (a queued run
    that started, succeeded, failed or was cancelled); returns the runs whose state changed,
    so that the run list and ``gpudesk show`` never keep saying "queued"."""
    changed = []
    for e in view.entries:
        word = RECORD_STATES.get(e.state)
        try:
            record = RunRecord.load(e.run)
        except runs.RunError:
            continue  # queued from another computer: nothing recorded here
        if word is None or record.last_state == word:
            continue
        if e.state == "running" and record.last_state not in ("", QUEUED_STATE):
            continue  # a following window already knows better than "running"
        record.last_state = word
        record.save()
        changed.append(e.run)
    return changed


def read(conn: SshConnection, machine: str, *, root: str = runs.DEFAULT_ROOT,
         python: str = runs.DEFAULT_PYTHON) -> QueueView:
    """The queue on the machine now (its running entries brought up to date first)."""
    data = _call(conn, python, "reading the queue", "list", root)
    gpus = data.get("gpus")
    view = QueueView(machine=machine, gpus=gpus if isinstance(gpus, int) else None,
                     agent_running=bool(data.get("agent_running")),
                     entries=[QueueEntry.from_json(e) for e in data.get("entries") or []],
                     name=machine_name(machine))
    keep_states(view)
    return view


def cancel(conn: SshConnection, machine: str, which: str, *, root: str = runs.DEFAULT_ROOT,
           python: str = runs.DEFAULT_PYTHON) -> list[QueueEntry]:
    """Cancel run ``which`` or "all" open runs; the entries changed (none: an error for one
    run, as the user named something that is not waiting or running)."""
    data = _call(conn, python, "cancelling", "cancel", root, which)
    changed = [QueueEntry.from_json(e) for e in data]
    if not changed and which != "all":
        raise QueueError(MSG_NOTHING_TO_CANCEL, run=which, target=machine)
    return changed


# --------------------------------------------------------------------------- adding

def add(conn: SshConnection, target: tuple[str, str | None], request: RunRequest, *,
        report: runs.Report = lambda _m: None,
        pusher: runs.Pusher = runs.push_here) -> RunRecord:
    """Push the project and library as ``detached.launch`` does, then queue the run's
    launcher spec on the machine (one entry asking for ``request.nproc`` GPUs; 0: a CPU
    run). The run record is saved with the state "queued"; returns it."""
    project = Path(request.project)
    script = runs.script_in_project(project, request.script)
    run_id = request.run_id or runs.new_run_id(project.resolve().name)
    root = runs.remote_root(conn, request.python, request.root)
    remote_project = f"{root}/projects/{runs.project_folder_name(project)}"
    ref, identity = target
    record = RunRecord(id=run_id, project=str(project.resolve()), remote_project=remote_project,
                       script=script, args=list(request.args), nproc=request.nproc,
                       python=request.python, amp=request.amp,
                       checkpoint_every_min=request.checkpoint_every_min, root=request.root,
                       created=time.time(), last_state=QUEUED_STATE)
    node = NodeRun(ref, identity, f"{root}/runs/{run_id}", conn.target.host)
    record.nodes.append(node)
    runs.give_rules(conn, ref, root, request.python, report)  # the agent keeps the queue
    pushed = pusher(conn, node, [(project, remote_project),
                                 (runs.training_lib_folder(), f"{root}/lib")])[0]
    report(Said("Runs", runs.MSG_SYNCED, sent=pushed.files_sent, unchanged=pushed.unchanged,
                target=str(conn.target)))
    argv = runs.torchrun_argv(record.python, script, record.args, nproc=record.nproc)
    env = runs.training_env(node.run_dir, f"{root}/lib", remote_project, amp=record.amp,
                            checkpoint_every_min=record.checkpoint_every_min, run_id=run_id,
                            nodes=[node.host], node_rank=0, cpu=record.cpu)
    spec = {"run_dir": node.run_dir, "cwd": remote_project, "argv": argv, "env": env,
            "resume": False, "attempt": 1, "run_id": run_id, "master_addr": "127.0.0.1",
            "multi_node": False}
    payload = {"run": run_id, "gpus": max(0, record.nproc), "spec": spec,
               "launcher": launcher_source()}
    _call(conn, request.python, "adding the run", "add", request.root,
          input=json.dumps(payload).encode())
    report(Said("RunQueue", MSG_QUEUED, run=run_id, target=machine_name(ref),
                device=runs.device_text(record.nproc)))
    record.save()
    view = read(conn, ref, root=request.root, python=request.python)
    if not view.agent_running:  # nothing would ever start it: the queue starts its keeper
        said = start_agent(conn, ref, root=request.root, python=request.python)
        if said is not None:
            report(said)
            view = read(conn, ref, root=request.root, python=request.python)
    note = view.note()
    if note is not None:
        report(note)
    return record


def start_agent(conn: SshConnection, ref: str, *, root: str, python: str) -> Said | None:
    """Start the machine's agent (with the rules Watch would give it) so that it keeps the
    queue; what happened, in words. None where nothing was tried."""
    from gpudesk.services.remote import target_agent

    name = machine_name(ref)
    try:
        target_agent.deploy(conn, ref, root=root, python=python)
    except (TemplatedError, OSError) as exc:
        why = exc.message() if isinstance(exc, TemplatedError) else str(exc)
        return Said("RunQueue", MSG_AGENT_NOT_STARTED, target=name, why=why)
    return Said("RunQueue", MSG_AGENT_STARTED, target=name)


# --------------------------------------------------------------------------- for the window

def queue_run(form: run_control.RunForm, policy: HostKeyPolicy, report: runs.Report, *,
              pusher: runs.Pusher = runs.push_here, check: bool = True) -> RunRecord:
    """What "Add to queue" does: the form checked, the machine's preflight as for a start
    (``run_control.preflight``), then :func:`add`."""
    request = form.check()
    refs = form.refs()
    if len(refs) > 1:
        raise QueueError(MSG_NO_MULTI_NODE)
    if form.data.strip():  # issue 32: a dataset is fetched by a run started now only
        from gpudesk.services.runs.run_data import MSG_NO_QUEUE
        from gpudesk.services.storage.errors import StorageError

        raise StorageError(MSG_NO_QUEUE)
    kept = run_control._Keeper(report)  # noqa: SLF001 - the same notes as a start keeps
    with run_control.connected(refs, policy) as conns:
        if check:
            run_control.preflight(conns[0], request, kept)
        record = add(conns[0], refs[0], request, report=kept, pusher=pusher)
    return kept.keep_in(record)


def read_queue(ref: str, identity: str | None, policy: HostKeyPolicy, *,
               root: str = runs.DEFAULT_ROOT, python: str = runs.DEFAULT_PYTHON) -> QueueView:
    with run_control.connected([(ref, identity)], policy) as conns:
        return read(conns[0], ref, root=root, python=python)


def cancel_queued(ref: str, identity: str | None, policy: HostKeyPolicy, which: str, *,
                  root: str = runs.DEFAULT_ROOT, python: str = runs.DEFAULT_PYTHON
                  ) -> QueueView:
    """Cancel ``which`` (a run id or "all"), then the queue as it is after."""
    with run_control.connected([(ref, identity)], policy) as conns:
        cancel(conns[0], ref, which, root=root, python=python)
        return read(conns[0], ref, root=root, python=python)
