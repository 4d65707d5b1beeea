"""What the Run page does, without Qt: start, follow, stop and resume runs, and open tunnels.

Everything here blocks (paramiko does) and is called from worker threads; the
page passes a host-key policy whose question it answers on the GUI thread.
The run itself is ``gpudesk.services.runs.detached``: this module only adds what a
window needs around it — a form checked before anything connects, a log
follower that can be stopped and that reports bytes as they come, and
TensorBoard/Jupyter started on the machine at 127.0.0.1 and reached through
an SSH local forward (nothing but SSH is ever exposed).
"""

from __future__ import annotations

import contextlib
import re
import secrets
import shlex
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import paramiko

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.core.said import Said
from gpudesk.services.core.worker import StoppableWorker
from gpudesk.services.remote import bootstrap
from gpudesk.services.remote import sync_process
from gpudesk.services.remote import targets
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import known_hosts_file
from gpudesk.services.remote.ssh import LocalForward
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.remote.ssh import SshError
from gpudesk.services.remote.ssh import SshTarget
from gpudesk.services.remote.sync import SyncResult
from gpudesk.services.runs import detached as runs
from gpudesk.services.runs import keep_alive_run
from gpudesk.services.runs import machine_access
from gpudesk.services.runs import run_upkeep
from gpudesk.services.runs.detached import NodeRun
from gpudesk.services.runs.detached import RunRecord
from gpudesk.services.runs.detached import RunRequest
from gpudesk.services.runs.detached import RunStatus

MSG_NO_TARGET = QT_TRANSLATE_NOOP(
    "RunControl", "Choose a machine to run on.")
MSG_NO_PROJECT = QT_TRANSLATE_NOOP(
    "RunControl", "The project folder {project} does not exist.")
MSG_NO_SCRIPT = QT_TRANSLATE_NOOP(
    "RunControl", "Name the training script (e.g. train.py).")
MSG_BAD_ARGS = QT_TRANSLATE_NOOP(
    "RunControl", "The arguments cannot be read: {error}.")
MSG_TUNNEL_MISSING = QT_TRANSLATE_NOOP(
    "RunControl", "{service} is not installed for {python} on the machine. Add it to the "
    "project's requirements, or install it there: {python} -m pip install {package}")
MSG_TUNNEL_FAILED = QT_TRANSLATE_NOOP(
    "RunControl", "{service} did not start on the machine within {seconds} s. Its last "
    "output: {detail}")
MSG_NO_TERMINAL_KEY = QT_TRANSLATE_NOOP(
    "RunControl", "This machine's key is kept in the keyring, which ssh in a terminal cannot "
    "read. Give the key to your ssh-agent (gpudesk ssh-config --agent) or choose a key file.")

MSG_TOO_FEW_GPUS = QT_TRANSLATE_NOOP(
    "RunControl", "GPUs per machine is {nproc}, but {target} has {gpus} GPU(s). Lower GPUs per "
    "machine to {gpus}, or choose a machine with more GPUs.")
MSG_NO_GPU_HERE = QT_TRANSLATE_NOOP(
    "RunControl", "{problem} A GPU run cannot start on {target}. Fix the driver there, or "
    "set GPUs per machine to 0 for a CPU run.")
MSG_PREFLIGHT_ERROR = QT_TRANSLATE_NOOP(
    "RunControl", "preflight (error): {message}")
MSG_PREFLIGHT_WARNING = QT_TRANSLATE_NOOP(
    "RunControl", "preflight (warning): {message}")
MSG_PREFLIGHT_CPU = QT_TRANSLATE_NOOP(
    "RunControl", "preflight: a CPU run (GPUs per machine is 0): the GPUs and the NVIDIA "
    "driver of {target} are not used")
MSG_PREFLIGHT_OK = QT_TRANSLATE_NOOP(
    "RunControl", "preflight on {target}: {python} can run the script")
MSG_PREFLIGHT_OK_DISK = QT_TRANSLATE_NOOP(
    "RunControl", "preflight on {target}: {python} can run the script, {free:.0f} GiB free")
MSG_MISSING_REQUIREMENTS = QT_TRANSLATE_NOOP(
    "RunControl", "{python} on {target} lacks what requirements.txt lists: {missing}. Install "
    "them there ({python} -m pip install -r requirements.txt), or make a venv with "
    "`gpudesk bootstrap --on TARGET --project DIR` and set Python to its python.")
MSG_DRIVER_BROKEN = QT_TRANSLATE_NOOP(
    "RunControl", "Exit status 0, but this GPU run started on a machine whose NVIDIA driver "
    "did not work (see the preflight lines above): it may have trained on no GPU.")
MSG_LOW_DISK = QT_TRANSLATE_NOOP(
    "RunControl", "Only {free:.1f} GiB are free on {target} ({folder}): the project, the log "
    "and the checkpoints may not fit. Free some space there or choose a bigger disk.")
MSG_FEW_RANKS = QT_TRANSLATE_NOOP(
    "RunControl", "Exit status 0, but {n} of {total} rank(s) said they found no GPU: \"{line}\". "
    "The script may have done nothing; check that the machine has {total} GPU(s).")
MSG_CPU_WANTS_GPU = QT_TRANSLATE_NOOP(
    "RunControl", "Exit status 0, but this CPU run's script said it found no GPU: \"{line}\". "
    "It may have done nothing: make it fall back to the CPU, or run it on a GPU machine.")
MSG_NO_STEP = QT_TRANSLATE_NOOP(
    "RunControl", "Exit status 0 after only {seconds:.0f} s, and the log shows no training step "
    "(no step, epoch, batch or loss line): the script may have done nothing. Read its log.")

AMP_MODES = ("", "fp16", "bf16", "off")  # "" = whatever the script chooses
BLOCKING_CHECKS = ("python", "torch")  # a run without these dies at its first import
MIN_FREE_GIB = 2.0
EARLY_EXIT_S = 60.0  # a clean exit sooner than this, without a training step, is doubtful
_NO_GPU = re.compile(r"Unable to locate sufficient|CUDA is not available|No CUDA GPUs are "
                     r"available|no CUDA-capable device|Found no NVIDIA driver", re.IGNORECASE)
_RANK_PREFIX = re.compile(r"^\[(?:default|rank)(\d+)\]:")
_TRAINING_STEP = re.compile(r"\b(step|epoch|iter|iteration|batch(es)?|loss)\b", re.IGNORECASE)
TUNNEL_READY_S = 45.0


class RunControlError(TemplatedError):
    translation_context = "RunControl"


# --------------------------------------------------------------------------- the form

@dataclass
class RunForm:
    """What the user filled in; ``check`` turns it into a RunRequest or says what is wrong."""

    target: str
    project: str
    script: str
    args: str = ""
    identity: str = ""
    nproc: int = 1  # 0: a CPU run
    nodes: list[str] = field(default_factory=list)
    amp: str = ""
    checkpoint_every_min: float = 0.0  # 0: the script's own interval
    python: str = runs.DEFAULT_PYTHON
    root: str = runs.DEFAULT_ROOT
    store: str = ""  # this run's bucket URI instead of the machine's ("": the machine's)
    data: str = ""  # a dataset, NAME[:/path] (issue 32, ``run_data``)

    def check(self) -> RunRequest:
        if not self.target.strip():
            raise RunControlError(MSG_NO_TARGET)
        project = Path(self.project).expanduser()
        if not self.project.strip() or not project.is_dir():
            raise RunControlError(MSG_NO_PROJECT, project=self.project or "—")
        if not self.script.strip():
            raise RunControlError(MSG_NO_SCRIPT)
        try:
            args = shlex.split(self.args)
        except ValueError as exc:
            raise RunControlError(MSG_BAD_ARGS, error=str(exc)) from None
        runs.script_in_project(project, self.script.strip())
        return RunRequest(project=project, script=self.script.strip(), args=args,
                          nproc=max(0, self.nproc), amp=self.amp or None,
                          checkpoint_every_min=self.checkpoint_every_min or None,
                          python=self.python or runs.DEFAULT_PYTHON,
                          root=self.root or runs.DEFAULT_ROOT)

    def refs(self) -> list[tuple[str, str | None]]:
        identity = self.identity.strip() or None
        return [(self.target.strip(), identity)] + [
            (n.strip(), identity) for n in self.nodes if n.strip()]


def identity_path(identity: str | None) -> Path | None:
    return Path(identity).expanduser() if identity else None


def connect_all(refs: list[tuple[str, str | None]], policy: HostKeyPolicy
                ) -> list[SshConnection]:
    """Every node connected (host keys checked) before anything is copied anywhere."""
    conns: list[SshConnection] = []
    try:
        for ref, identity in refs:
            conns.append(targets.open_connection(ref, identity_path(identity), policy))
    except BaseException:
        close_all(conns)
        raise
    return conns


def close_all(conns: list[SshConnection]) -> None:
    for conn in conns:
        with contextlib.suppress(Exception):
            conn.close()


@contextlib.contextmanager
def connected(refs: list[tuple[str, str | None]], policy: HostKeyPolicy
              ) -> Iterator[list[SshConnection]]:
    """:func:`connect_all` for the block, every connection closed however it ends."""
    conns = connect_all(refs, policy)
    try:
        yield conns
    finally:
        close_all(conns)


def record_refs(record: RunRecord) -> list[tuple[str, str | None]]:
    return [(n.target, n.identity) for n in record.nodes]


def push_in_child(_conn: SshConnection, node: NodeRun, folders: runs.Folders, *,
                  cancel: threading.Event | None = None) -> tuple[SyncResult, ...]:
    """The app's pusher: the node's folders synced by a niced child process, so the window's
    event loop does not compete with the sync for the GIL (see ``sync_process``)."""
    return sync_process.push_in_child(sync_process.PushJob(
        node.target, node.identity, tuple((str(a), b) for a, b in folders), delete=True),
        cancel=cancel)


def free_gib(conn: SshConnection, root: str) -> float | None:
    """Free space (GiB) on the disk that holds ``root`` (or its nearest existing parent)."""
    folder = (f'"$HOME"/{shlex.quote(root[2:])}' if root.startswith("~/")
              else '"$HOME"' if root == "~" else shlex.quote(root))
    result = conn.exec(f'd={folder}; while [ ! -d "$d" ]; do d=$(dirname "$d"); done; '
                       f'df -Pk "$d" | tail -1', timeout=30, what="reading the free disk space")
    fields = result.text.split()
    if not result.ok or len(fields) < 4 or not fields[3].isdigit():
        return None
    return int(fields[3]) / 1024 ** 2


_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_MISSING_PY = ("import json,sys\nfrom importlib import metadata\nmissing=[]\n"
               "for name in json.load(sys.stdin):\n"
               "    try:\n        metadata.version(name)\n"
               "    except metadata.PackageNotFoundError:\n        missing.append(name)\n"
               "print(json.dumps(missing))\n")


def requirement_names(text: str) -> list[str]:
    """The distribution names in a requirements.txt (options, URLs and -r lines skipped)."""
    names = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-") or "://" in line:
            continue
        found = _REQUIREMENT.match(line)
        if found:
            names.append(found.group(1))
    return names


def missing_requirements(conn: SshConnection, python: str, project: Path) -> list[str]:
    """The project's requirements.txt entries that ``python`` on the machine lacks."""
    try:
        names = requirement_names((project / "requirements.txt").read_text(errors="replace"))
    except OSError:
        return []
    if not names:
        return []
    import json

    result = conn.exec(f"{shlex.quote(python)} -c {shlex.quote(_MISSING_PY)}",
                       input=json.dumps(names).encode(), timeout=60,
                       what="checking the requirements")
    try:
        missing = json.loads(result.text) if result.ok else []
    except ValueError:
        return []
    return [str(m) for m in missing] if isinstance(missing, list) else []


GPU_CHECKS = ("driver", "gpus")  # a GPU run cannot start when one of these is an error


def _finding(check: bootstrap.Check) -> Said:
    message = Said("Bootstrap", check.template, **check.values)
    return Said("RunControl", MSG_PREFLIGHT_ERROR if check.level == "error"
                     else MSG_PREFLIGHT_WARNING, message=message)


def preflight(conn: SshConnection, request: RunRequest, report: runs.Report) -> None:
    """The bootstrap checks before anything is copied. An error refuses the run with the
    fix in words: a missing Python or torch (it would die at its first import) and, for a
    GPU run, no working driver, no GPU or too few GPUs. A CPU run (GPUs per machine 0)
    needs no driver; the GPU findings are left out for it. Warnings (a CUDA toolkit,
    packages requirements.txt lists that the machine lacks, little disk) go into the log."""
    found = bootstrap.check_machine(conn, python=request.python)
    cpu = request.nproc <= 0
    target = str(conn.target)
    for check in found.checks:
        if check.level != "error" or check.name not in BLOCKING_CHECKS:
            continue
        if cpu and check.name == "torch" and check.template != bootstrap.MSG_NO_TORCH:
            continue  # torch cannot use the GPUs: a CPU run does not ask it to
        raise bootstrap.BootstrapError(check.template, **check.values)
    gpus = len(found.facts.gpu_names)
    if not cpu:
        for check in found.checks:
            if check.level == "error" and check.name in GPU_CHECKS:
                # the finding as a Said: the window translates it (issue 31), the CLI's
                # text stays the English sentence
                raise RunControlError(MSG_NO_GPU_HERE, problem=Said(
                    bootstrap.CONTEXT, check.template, **check.values), target=target)
        if gpus < request.nproc:
            raise RunControlError(MSG_TOO_FEW_GPUS, nproc=request.nproc, target=target,
                                  gpus=gpus)
    else:
        report(Said("RunControl", MSG_PREFLIGHT_CPU, target=target))
    for check in found.checks:
        if check.level == "ok" or (cpu and check.name in (*GPU_CHECKS, "torch", "nvcc")):
            continue
        report(_finding(check))
    missing = missing_requirements(conn, found.python, Path(request.project))
    if missing:
        report(Said("RunControl", MSG_PREFLIGHT_WARNING, message=Said(
            "RunControl", MSG_MISSING_REQUIREMENTS, python=found.python, target=target,
            missing=", ".join(missing))))
    free = free_gib(conn, request.root)
    if free is not None and free < MIN_FREE_GIB:
        report(Said("RunControl", MSG_PREFLIGHT_WARNING, message=Said(
            "RunControl", MSG_LOW_DISK, free=free, target=target, folder=request.root)))
    if free is not None:
        report(Said("RunControl", MSG_PREFLIGHT_OK_DISK, target=target,
                         python=found.python, free=free))
    else:
        report(Said("RunControl", MSG_PREFLIGHT_OK, target=target, python=found.python))


class _Keeper:
    """Passes each line on and keeps it, so the record can show them again later."""

    def __init__(self, report: runs.Report) -> None:
        self.report = report
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        self.report(line)

    def keep_in(self, record: RunRecord) -> RunRecord:
        """``record`` with the lines kept among its notes, saved."""
        record.keep_notes(self.lines)
        record.save()
        return record


def start_run(form: RunForm, policy: HostKeyPolicy, report: runs.Report, *,
              pusher: runs.Pusher = runs.push_here, check: bool = True) -> RunRecord:
    """Start the run. On a cloud machine gpudesk launched, its bucket and keys limited to
    the run's folder are made once the preflight passed (``machine_access``): the run id
    is chosen first, since the keys name it."""
    request = form.check()
    kept = _Keeper(report)
    refs = form.refs()
    machine = machine_access.ledger_machine(refs[0][0])
    store_text, region = form.store, ""
    if form.data.strip():  # the dataset's bucket becomes the run's (issue 32)
        from gpudesk.services.runs import run_data

        request.data, store_text, region = run_data.resolve(form.data, form.store,
                                                            machine=machine)
    # a named bucket that is missing, unreachable or refuses the keys: refused before anything
    store_uri, store_region = machine_access.checked_run_store(machine, store_text, region)
    with connected(refs, policy) as conns:
        if check:
            for conn in conns:
                preflight(conn, request, kept)
        store = None
        if store_uri or (machine is not None and machine_access.wants_store(machine)):
            request.run_id = request.run_id or runs.new_run_id(
                Path(request.project).resolve().name)
            store = machine_access.run_access(machine, request.run_id, store_uri, store_region)
        record = runs.launch(conns, refs, request, report=kept, pusher=pusher, store=store)
        if machine is not None and machine.group_live:  # its group resumes it (issue 23)
            from gpudesk.services.runs import keep_alive_run

            keep_alive_run.run_started(record, machine, kept)
    return kept.keep_in(record)


def run_status(record: RunRecord, policy: HostKeyPolicy) -> RunStatus:
    """The first node's status now (running, exited, lost...), with its checkpoints."""
    with connected(record_refs(record)[:1], policy) as conns:
        return runs.status(conns[0], record.main.run_dir, record.python)


@dataclass(frozen=True)
class Doubt:
    """Why an exit status 0 may not be a success: a template (context RunControl) + values."""

    template: str
    values: dict[str, object]

    @property
    def message(self) -> str:
        return self.template.format(**self.values)


def doubtful_success(status: RunStatus, nproc: int, log_text: str,
                     notes: list[str] | None = None) -> Doubt | None:
    """Exit status 0 is not success when a GPU run started on a machine whose driver did
    not work, when ranks said they found no GPU, or when the script ended within its first
    seconds without printing a single training step. A CPU run (nproc 0) uses no GPU."""
    if status.state != "exited" or status.code != 0 or status.cancelled:
        return None
    if nproc > 0 and any(getattr(n, "template", "") == MSG_PREFLIGHT_ERROR
                         and "driver" in str(n) for n in notes or ()):
        return Doubt(MSG_DRIVER_BROKEN, {})
    lines = log_text.splitlines()
    no_gpu = [line for line in lines if _NO_GPU.search(line)
              and not line.startswith("gpudesk:")]
    if no_gpu and nproc <= 0:
        return Doubt(MSG_CPU_WANTS_GPU, {"line": _RANK_PREFIX.sub("", no_gpu[-1]).strip()[:160]})
    if no_gpu:
        ranks = {m.group(1) for line in no_gpu if (m := _RANK_PREFIX.match(line))}
        total = max(1, nproc)
        return Doubt(MSG_FEW_RANKS, {"n": min(max(1, len(ranks)), total), "total": total,
                                     "line": _RANK_PREFIX.sub("", no_gpu[-1]).strip()[:160]})
    if status.seconds is not None and status.seconds < EARLY_EXIT_S:
        own = [line for line in lines if not line.startswith("gpudesk:")]
        if not any(_TRAINING_STEP.search(line) for line in own):
            return Doubt(MSG_NO_STEP, {"seconds": status.seconds})
    return None


def resume_run(record: RunRecord, policy: HostKeyPolicy, report: runs.Report, *,
               pusher: runs.Pusher = runs.push_here) -> RunRecord:
    """Start ``record`` again; a run with a bucket and short-lived keys gets new keys (its
    old ones may have ended), a run whose machine has the bucket's role reuses it."""
    kept = _Keeper(report)
    with connected(record_refs(record), policy) as conns:
        store = (machine_access.access_for_target(record.main.target, record.id,
                                                  uri=record.store_uri, role=record.store_role,
                                                  region=record.store_region)
                 if record.store_uri else None)
        run_upkeep.keep_folder(record, kept)
        record = runs.resume(conns, record, report=kept, pusher=pusher, store=store)
    return kept.keep_in(record)


def stop_run(record: RunRecord, policy: HostKeyPolicy) -> RunStatus:
    """SIGTERM every node (torchrun passes it on), then the first node's status."""
    with connected(record_refs(record), policy) as conns:
        for conn, node in zip(conns, record.nodes, strict=True):
            runs.stop(conn, node.run_dir, record.python)
        return runs.status(conns[0], record.main.run_dir, record.python)


def recorded_runs() -> list[RunRecord]:
    """The runs this computer started, newest first; unreadable records are skipped."""
    found: list[RunRecord] = []
    folder = RunRecord.folder()
    for path in folder.glob("*.json") if folder.is_dir() else []:
        with contextlib.suppress(runs.RunError):
            found.append(RunRecord.load(path.stem))
    return sorted(found, key=lambda r: r.created, reverse=True)


# --------------------------------------------------------------------------- following

class _Sink:
    """The file-like ``runs.follow`` writes to: hands each chunk on as it arrives."""

    def __init__(self, on_data: Callable[[bytes], None]) -> None:
        self._on_data = on_data

    def write(self, data: bytes) -> int:
        self._on_data(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass


@dataclass
class FollowResult:
    status: RunStatus | None
    exit_code: int | None
    offset: int
    error: BaseException | None = None


class LogFollower(StoppableWorker):
    """Follows one run's log on a thread until it ends or ``stop()``; reconnects after drops.

    ``on_data`` and ``on_end`` run on the follower's thread (a window re-emits
    them as queued signals). The connection is the follower's own, so stopping
    it never disturbs a launch or a tunnel.
    """

    def __init__(self, record: RunRecord, policy: HostKeyPolicy, *,
                 on_data: Callable[[bytes], None], on_end: Callable[[FollowResult], None],
                 offset: int = 0,
                 on_status: Callable[[RunStatus], None] | None = None,
                 on_note: Callable[[str], None] | None = None) -> None:
        self.record = record
        self.policy = policy
        self.offset = offset
        self._on_data = on_data
        self._on_end = on_end
        self._on_status = on_status  # the status once connected, before the log (Stop)
        # Lines gpudesk says about the run's bucket (new keys, how long it keeps the folder)
        self._on_note = on_note or (lambda _line: None)
        super().__init__(f"gpudesk-follow-{record.id}")

    def _main(self) -> None:
        result = FollowResult(None, None, self.offset)
        conns: list[SshConnection] = []
        renewer = run_upkeep.KeyRenewer(
            self.record, lambda: connect_all(record_refs(self.record)[:1], self.policy)[0],
            self._note).start() if self.record.store_credentials == "sts" else None
        try:
            conns = connect_all(record_refs(self.record)[:1], self.policy)
            if self._on_status is not None and not self._stop.is_set():
                self._on_status(runs.status(conns[0], self.record.main.run_dir,
                                            self.record.python))
            final, offset = runs.follow(conns[0], self.record.main.run_dir,
                                        _Sink(self._count),  # type: ignore[arg-type]
                                        python=self.record.python,
                                        offset=self.offset, stop_event=self._stop)
            result = FollowResult(final, final.code if final.state == "exited" else None,
                                  offset)
            if renewer is not None:
                renewer.stop()
            if not self._stop.is_set():
                kept = run_upkeep.expire_after_end(self.record, final)
                if kept is not None:
                    self._note(kept)
                keep_alive_run.run_ended(self.record, final, self._note)
        except Exception as exc:  # noqa: BLE001 - reported to the window, never raised there
            result = FollowResult(None, None, self.offset, exc)
        finally:
            if renewer is not None:
                renewer.stop()
            close_all(conns)
        self._on_end(result)

    def _note(self, line: str) -> None:
        if not self._stop.is_set():
            self._on_note(line)

    def _count(self, data: bytes) -> None:
        self.offset += len(data)
        if not self._stop.is_set():
            self._on_data(data)


# --------------------------------------------------------------------------- tunnels

@dataclass(frozen=True)
class TunnelSpec:
    """A web service started on the machine at 127.0.0.1 and reached through SSH.

    ``argv`` may use {python}, {port}, {logdir} (the run folder) and {root}
    (the synced project); ``token`` services get a fresh token through stdin
    (``JUPYTER_TOKEN``), never through argv, and open with it in the URL.
    """

    name: str
    package: str
    argv: tuple[str, ...]
    url_path: str = "/"
    token: bool = False


TENSORBOARD = TunnelSpec("TensorBoard", "tensorboard",
                         ("{python}", "-m", "tensorboard.main", "--logdir", "{logdir}",
                          "--host", "127.0.0.1", "--port", "{port}"))
JUPYTER = TunnelSpec("Jupyter", "jupyterlab",
                     ("{python}", "-m", "jupyterlab", "--no-browser", "--ip", "127.0.0.1",
                      "--port", "{port}", "--ServerApp.root_dir={root}"),
                     url_path="/lab", token=True)


@dataclass
class Tunnel:
    spec: TunnelSpec
    forward: LocalForward
    conn: SshConnection
    remote_port: int
    url: str  # holds the token for token services: open it, never log it
    remote_pid: int = 0  # leads its own session on the machine (setsid)

    def close(self) -> None:
        """Close the forward and end the service gpudesk started for it."""
        self.forward.close()
        if self.remote_pid > 0:
            with contextlib.suppress(Exception):
                self.conn.exec(f"kill -TERM -- -{self.remote_pid} 2>/dev/null || "
                               f"kill -TERM {self.remote_pid}", timeout=10,
                               what=f"stopping {self.spec.name}")
        self.conn.close()


def _remote_ready(conn: SshConnection, port: int) -> bool:
    try:
        chan = conn.open_channel("direct-tcpip", ("127.0.0.1", port), ("127.0.0.1", 0))
    except (OSError, EOFError, paramiko.SSHException, SshError):
        return False
    chan.close()
    return True


def open_tunnel(record: RunRecord, spec: TunnelSpec, policy: HostKeyPolicy, *,
                ready_s: float = TUNNEL_READY_S) -> Tunnel:
    """Start ``spec`` next to the run (detached, bound to 127.0.0.1) and forward a local port."""
    (conn,) = connect_all(record_refs(record)[:1], policy)
    try:
        port = runs.free_port(conn, record.python)
        run_dir = record.main.run_dir
        log = f"{run_dir}/{spec.package}.log"
        argv = [part.format(python=record.python, port=port, logdir=run_dir,
                            root=record.remote_project) for part in spec.argv]
        token = secrets.token_urlsafe(24) if spec.token else ""
        shell = ("read -r JUPYTER_TOKEN; export JUPYTER_TOKEN; " if token else "") + (
            f"(cd {shlex.quote(run_dir)} && exec nohup setsid {shlex.join(argv)}) "
            f"> {shlex.quote(log)} 2>&1 < /dev/null & echo $!")
        started = conn.exec(shell, input=(token + "\n").encode() if token else None, timeout=30,
                            check=True, what=f"starting {spec.name}")
        pid = int(started.text.strip().splitlines()[-1])
        deadline = time.monotonic() + ready_s
        while not _remote_ready(conn, port):
            tail = conn.exec(f"tail -c 600 {shlex.quote(log)} 2>/dev/null", timeout=30,
                             what=f"reading the {spec.name} log").text
            if "No module named" in tail:
                raise RunControlError(MSG_TUNNEL_MISSING, service=spec.name,
                                      python=record.python, package=spec.package)
            if time.monotonic() > deadline:
                raise RunControlError(MSG_TUNNEL_FAILED, service=spec.name,
                                      seconds=int(ready_s), detail=tail.strip()[-300:] or "—")
            threading.Event().wait(0.3)
        forward = conn.forward_local(port)
        url = f"http://127.0.0.1:{forward.local_port}{spec.url_path}"
        if token:
            url += f"?token={token}"
        return Tunnel(spec, forward, conn, port, url, pid)
    except BaseException:
        conn.close()
        raise


# --------------------------------------------------------------------------- a terminal

def terminal_ssh_argv(target: SshTarget) -> list[str]:
    """``ssh`` for a terminal, with the same pinned key gpudesk checks (never a new trust)."""
    if target.pkey is not None and target.key_file is None:
        raise RunControlError(MSG_NO_TERMINAL_KEY)
    argv = ["ssh", "-o", f"UserKnownHostsFile={known_hosts_file()}",
            "-o", "StrictHostKeyChecking=yes", "-o", f"HostKeyAlias={target.known_as}",
            "-p", str(target.port)]
    if target.key_file is not None:
        argv += ["-i", str(target.key_file), "-o", "IdentitiesOnly=yes"]
    return [*argv, f"{target.user}@{target.host}"]
