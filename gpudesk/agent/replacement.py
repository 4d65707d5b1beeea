"""A keep-alive group's new machine resumes the run from the bucket alone, at first boot.

The cloud starts a machine of the run's group (a spot reclaim took the last one;
or it is the group's first); its user data (``first_boot``'s keep-alive step)
fetched this agent from the bucket, installed it as the machine's guard, and
runs ``python3 -m gpudesk.agent.replacement --root ROOT``. No desktop is asked
for anything. It reads ``<root>/agent/keep-alive.json`` (the user data's: cloud,
region, bucket, the run's folder ``prefix``, the machine's ``role``) and then,
through the role's credentials from the metadata service:

1. reads ``run.json`` (the desktop wrote it at launch, ``services/runs/run_package``)
   and ``state.json`` (the uploader writes it when the run ends): a run that
   succeeded, failed or was cancelled is not started again;
2. downloads ``code/project.tar.gz``, checks its SHA-256 against run.json (a
   different one is refused, said in ``<root>/agent/data/agent.log``), and unpacks it
   to ``<root>/projects/<project>/``; ``gpudesk.training`` goes to ``<root>/lib/``;
3. writes the run's ``store-config.json`` in ``<root>/runs/<run-id>/`` (the layout
   a desktop launch makes), so the agent's uploader takes the run on, and fetches
   the latest complete checkpoint (``resume_fetch``) and the run's dataset, when
   run.json names one (``data_fetch``, ``GPUDESK_DATA_DIR``);
4. starts the run through the same launcher (``run_launcher_script.py`` from the
   bundle) with ``GPUDESK_RESUME_FROM`` set, and records this machine in
   ``machines/<cloud id>.json`` (``from``, ``why``, ``resumed_from_step``): what
   the run's story and spend read.

A failure to reach the bucket is tried again a few times (a fresh machine's role
credentials can take a moment), then said in the log; nothing is started half.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import Callable
from typing import Dict
from typing import List
from typing import Mapping
from typing import Optional
from typing import Sequence

from .cloud_stop import CloudStopError
from .cloud_stop import Metadata
from .events import EventLog
from .file_parts import sha256_file
from .i18n_marks import QT_TRANSLATE_NOOP
from .resume_fetch import RESUME_ENV
from .resume_fetch import fetch_latest
from .run_folder import pid_alive
from .runs import read_pid
from .store import Store
from .store import StoreConfig
from .store import StoreError
from .uploader import CONFIG_FILE
from .uploader import END_FILE
from .uploader import FINAL_STATES
from .uploader import _step
from .uploader import _write_json

log = logging.getLogger("gpudesk.agent.replacement")


SAID_STARTED = QT_TRANSLATE_NOOP(
    "Agent", "run {run} started on {machine} from the bucket (no checkpoint yet)")
SAID_RESUMED = QT_TRANSLATE_NOOP(
    "Agent", "run {run} resumed on {machine} from step {step} ({checkpoint})")
SAID_FINISHED = QT_TRANSLATE_NOOP(
    "Agent", "run {run} already {state} (exit status {code}): not started again")
SAID_RUNNING = QT_TRANSLATE_NOOP(
    "Agent", "run {run} is already running on this machine (pid {pid}): not started twice")
SAID_BAD_CODE = QT_TRANSLATE_NOOP(
    "Agent", "the code of run {run} ({key}) has SHA-256 {got} but run.json says {want}: "
    "refused, the run was not started")
SAID_FAILED = QT_TRANSLATE_NOOP(
    "Agent", "could not resume run {run} on this machine: {error}")
SAID_LINES = (SAID_STARTED, SAID_RESUMED, SAID_FINISHED, SAID_RUNNING, SAID_BAD_CODE,
              SAID_FAILED)

KEEP_ALIVE_FILE = "keep-alive.json"  # <root>/agent/, written by the first-boot script
LOG_FILE = "agent.log"  # <root>/agent/data/
RUN_JSON = "run.json"
MACHINES = "machines/"
TRIES = 5  # bucket or metadata failures: tried again after 2, 4, 8, 16 s
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,120}$")
_OVERRIDES = ("endpoint", "proxy", "addressing", "metadata")  # services/runs/run_store's


class ReplacementError(Exception):
    """Refused for good (a bad run.json, no keep-alive file): not tried again."""


class CodeRefused(ReplacementError):
    """The code archive is not the one run.json names; the message is the log line."""


@dataclass(frozen=True)
class Outcome:
    state: str  # "started", "resumed", "finished", "running", "refused"
    run: str = ""
    step: Optional[int] = None
    pid: Optional[int] = None
    line: str = ""


# --------------------------------------------------------------------------- what runs

def torchrun_argv(python: str, script: str, args: Sequence[str], nproc: int) -> List[str]:
    """One node's torchrun command, as ``services.runs.detached.torchrun_argv`` makes it
    (a test holds the two equal)."""
    return [python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
            str(max(1, nproc)), "--tee", "3", script, *args]


def training_env(run_dir: str, lib: str, project: str, *, amp: Optional[str],
                 checkpoint_every_min: Optional[float], run_id: str, host: str,
                 cpu: bool) -> Dict[str, str]:
    """What ``gpudesk.training`` reads, as ``services.runs.detached.training_env`` makes it
    for a single node."""
    env = {"GPUDESK_RUN_DIR": f"{run_dir}/checkpoints",
           "GPUDESK_OUTPUT_DIR": f"{run_dir}/outputs", "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": f"{lib}:{project}", "GPUDESK_RUN_ID": run_id,
           "GPUDESK_NODES": host, "GPUDESK_NODE_RANK": "0", "GPUDESK_NNODES": "1"}
    if cpu:
        env["CUDA_VISIBLE_DEVICES"] = ""
    if amp:
        env["GPUDESK_AMP"] = amp
    if checkpoint_every_min is not None:
        env["GPUDESK_CHECKPOINT_EVERY_MIN"] = f"{checkpoint_every_min:g}"
    return env


# --------------------------------------------------------------------------- the bucket

def store_config(keep_alive: Mapping[str, Any],
                 environ: Mapping[str, str]) -> Dict[str, Any]:
    """The run's store config: the user data's bucket and role, plus the
    ``GPUDESK_STORE_<FIELD>_<CLOUD>`` overrides (tests: moto and the metadata stand-in)."""
    cloud = str(keep_alive.get("cloud") or "")
    data: Dict[str, Any] = {k: keep_alive[k] for k in ("cloud", "region", "bucket", "prefix",
                                                       "role", "endpoint", "sign_region")
                            if keep_alive.get(k)}
    for field in _OVERRIDES:
        value = environ.get(f"GPUDESK_STORE_{field.upper()}_{cloud.upper()}", "").strip()
        if value:
            data[field] = value
    return data


def _json(store: Store, key: str) -> Optional[Dict[str, Any]]:
    raw = store.get_bytes(key)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        raise ReplacementError(f"{store.config.uri}{key} is not JSON") from None
    if not isinstance(data, dict):
        raise ReplacementError(f"{key} is not a JSON object")
    return data


def _unpack(archive: Path, dest: Path) -> None:
    """The project's files into ``dest`` (replaced whole): regular files and folders only,
    every name inside it."""
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    with tarfile.open(archive, "r:gz") as tar:
        members = tar.getmembers()
        for m in members:
            parts = m.name.split("/")
            if m.name.startswith("/") or ".." in parts or not (m.isfile() or m.isdir()):
                raise ReplacementError(f"the code archive holds an odd entry: {m.name!r}")
        try:
            tar.extractall(tmp, members, filter="data")
        except TypeError:  # Python before 3.12 (the entries were checked above)
            tar.extractall(tmp, members)
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)


def _install_lib(root: Path) -> Path:
    """``gpudesk.training`` from this bundle to ``<root>/lib`` (a launch puts it there)."""
    here = Path(__file__).resolve().parent.parent  # the bundle's gpudesk/
    lib = root / "lib"
    (lib / "gpudesk").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(here / "__init__.py", lib / "gpudesk" / "__init__.py")
    shutil.copytree(here / "training", lib / "gpudesk" / "training", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    return lib


def launcher_path() -> Path:
    """``run_launcher_script.py``, packed beside ``gpudesk/`` in the agent bundle."""
    return Path(__file__).resolve().parent.parent.parent / "run_launcher_script.py"


def _cloud_id(cloud: str, metadata: str) -> str:
    try:
        return Metadata(cloud, metadata).get("instance-id")
    except CloudStopError as exc:
        log.warning("no instance id from the metadata service (%s); using the host name", exc)
        return os.uname().nodename


# --------------------------------------------------------------------------- resuming

def resume(root: Path, *, environ: Mapping[str, str] = os.environ,
           now: Callable[[], float] = time.time, store: Optional[Store] = None,
           cloud_id: str = "") -> Outcome:
    """Start (or resume) the group's run on this machine; see the module's docstring.
    Raises StoreError/CloudStopError (worth another try) or ReplacementError (not)."""
    began = now()
    try:
        keep_alive = json.loads((root / "agent" / KEEP_ALIVE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReplacementError(f"no readable {KEEP_ALIVE_FILE} in {root / 'agent'} "
                               f"({type(exc).__name__})") from None
    config_data = store_config(keep_alive, environ)
    config = StoreConfig.from_dict(config_data)
    store = store or Store(config)
    prefix = config.prefix
    run = _json(store, prefix + RUN_JSON)
    if run is None:
        raise ReplacementError(f"{config.uri}{RUN_JSON} is missing")
    run_id = str(run.get("run") or "")
    project = str(run.get("project") or "")
    script = str(run.get("script") or "")
    code = run.get("code") if isinstance(run.get("code"), dict) else {}
    if not (_SAFE_NAME.match(run_id) and _SAFE_NAME.match(project) and script
            and isinstance(code, dict) and code.get("key") and code.get("sha256")):
        raise ReplacementError(f"{config.uri}{RUN_JSON} lacks run, project, script or code")
    if not prefix.endswith(f"runs/{run_id}/") or not str(code["key"]).startswith(prefix):
        raise ReplacementError(f"{RUN_JSON} names another run's folder than {config.uri}")
    machine = cloud_id or _cloud_id(config.cloud, config.metadata)

    ended = _json(store, prefix + END_FILE) or {}
    if ended.get("state") in FINAL_STATES:
        line = SAID_FINISHED.format(run=run_id, state=ended["state"], code=ended.get("code"))
        _record(root, store, prefix, machine, run_id, began, why="replaced", step=None,
                checkpoint=None, extra={"run_state": ended["state"]})
        return Outcome("finished", run_id, line=line)

    run_dir = root / "runs" / run_id
    pid = read_pid(run_dir / "pid")
    if pid is not None and pid_alive(pid) and not (run_dir / "exit_status").exists():
        return Outcome("running", run_id, pid=pid,
                       line=SAID_RUNNING.format(run=run_id, pid=pid))

    # the code, checked before anything is written for the run
    projects = root / "projects"
    projects.mkdir(parents=True, exist_ok=True)
    key, want = str(code["key"]), str(code["sha256"]).lower()
    with tempfile.TemporaryDirectory(dir=projects, prefix=".code-") as tmp:
        archive = store.get_file(key, Path(tmp) / "project.tar.gz")
        got = sha256_file(archive)
        if got != want:
            raise CodeRefused(SAID_BAD_CODE.format(run=run_id, key=key, got=got,
                                                        want=want))
        _unpack(archive, projects / project)
    lib = _install_lib(root)

    # the run folder: the uploader's config first (fetch_latest reads it too)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "checkpoints").mkdir(exist_ok=True)
    settings: Dict[str, Any] = {**config_data, "run_id": run_id,
                                "keep": int(run.get("keep") or 3)}
    every = environ.get("GPUDESK_STORE_EVERY_S", "").strip()
    if every:
        settings["interval_s"] = settings["log_every_s"] = float(every)
    _write_json(run_dir / CONFIG_FILE, settings)
    fetched = fetch_latest(run_dir, store)
    step = _step(fetched.name) if fetched is not None else None

    machines = [o for o in store.list(prefix + MACHINES) if o.key.endswith(".json")
                and not o.key.endswith(f"/{machine}.json")]
    why = "replaced" if machines or fetched is not None else "started"
    attempt = len(machines) + 1 if why == "started" else max(2, len(machines) + 1)
    python = str(run.get("python") or "python3")
    nproc = int(run.get("nproc") or 0)
    every_min = run.get("checkpoint_every")
    env = training_env(str(run_dir), str(lib), str(projects / project),
                       amp=run.get("amp") or None,
                       checkpoint_every_min=float(every_min) if every_min is not None else None,
                       run_id=run_id, host="127.0.0.1", cpu=nproc <= 0)
    if fetched is not None:
        env[RESUME_ENV] = str(fetched.resolve())
    data = run.get("data")
    if isinstance(data, dict) and data.get("key") and data.get("manifest_sha256"):
        # the run's dataset, from the bucket, before the script starts (issue 32)
        from .data_fetch import CACHE
        from .data_fetch import DATA_ENV
        from .data_fetch import fetch as fetch_data
        from .data_fetch import link
        from .data_fetch import note_fetch

        folder, count, size = fetch_data(store, str(data["key"]),
                                         str(data["manifest_sha256"]), root / CACHE)
        note_fetch(run_dir, str(data.get("name") or data["key"]),
                   str(data["manifest_sha256"]), size, count)
        env[DATA_ENV] = str(link(folder, Path(str(data["path"]))) if data.get("path")
                            else folder)
    elif isinstance(data, dict) and data.get("kind") in ("url", "bucket", "hf"):
        # a public source: fetched here without a token (the laptop that holds one is shut)
        from . import public_data
        from .data_fetch import CACHE
        from .data_fetch import DATA_ENV
        from .data_fetch import link

        try:
            found = public_data.listing(str(data["kind"]), str(data["source_url"]),
                                        prefix=str(data.get("prefix") or ""),
                                        repo=str(data.get("repo") or ""),
                                        revision=str(data.get("revision") or ""))
            if public_data.version(found) != data.get("manifest_sha256"):
                raise public_data.SourceError(f"{data['source_url']} changed since the run "
                                              "started; it was not fetched")
            folder = public_data.fetch(found, root / CACHE)[0]
        except public_data.SourceError as exc:  # the script would start without its data
            raise ReplacementError(f"the dataset could not be fetched: {exc}") from None
        env[DATA_ENV] = str(link(folder, Path(str(data["path"]))) if data.get("path")
                            else folder)
    args = [str(a) for a in run.get("args") or []]
    spec = {"run_dir": str(run_dir), "cwd": str(projects / project),
            "argv": torchrun_argv(python, script, args, nproc), "env": env,
            "resume": True, "attempt": attempt, "run_id": run_id,
            "master_addr": "127.0.0.1", "multi_node": False}
    done = subprocess.run([sys.executable, "-I", "-S", str(launcher_path()), "start"],
                          input=json.dumps(spec).encode(), capture_output=True, timeout=120,
                          check=False)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).decode("utf-8", "replace").strip()[-400:]
        raise ReplacementError(f"the run launcher failed: {detail or done.returncode}")
    answer = json.loads(done.stdout)
    _record(root, store, prefix, machine, run_id, began, why=why, step=step,
            checkpoint=fetched.name if fetched is not None else None,
            extra={"attempt": attempt, "pid": answer.get("pid"),
                   # the run goes on from here: with ``from``, the restart and checkpoint
                   # fetch a reclaim cost (issue 33's measured restart time)
                   "resumed_at": round(now(), 3)})
    if fetched is None:
        return Outcome("started", run_id, None, answer.get("pid"),
                       SAID_STARTED.format(run=run_id, machine=machine))
    return Outcome("resumed", run_id, step, answer.get("pid"),
                   SAID_RESUMED.format(run=run_id, machine=machine, step=step,
                                       checkpoint=fetched.name))


def _record(root: Path, store: Store, prefix: str, machine: str, run_id: str, began: float,
            *, why: str, step: Optional[int], checkpoint: Optional[str],
            extra: Dict[str, Any]) -> None:
    """This machine in the run's story: ``machines/<cloud id>.json`` in the bucket (the
    spend keeper reads ``resumed_from_step`` from it) and an event on the machine."""
    entry = {"run": run_id, "cloud_id": machine, "from": round(began, 3), "why": why,
             "resumed_from_step": step, "checkpoint": checkpoint, **extra}
    store.put_bytes(f"{prefix}{MACHINES}{machine}.json",
                    json.dumps(entry, indent=1, sort_keys=True).encode("utf-8"))
    kind = "run-resumed" if step is not None else (
        "run-started" if why in ("started", "replaced") and "run_state" not in extra
        else "run-not-restarted")
    EventLog(root / "agent" / "data").record(kind, run=run_id, cloud_id=machine, step=step)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Exit 0: started, resumed, or nothing to do (finished, already running); 1: refused
    or the bucket stayed out of reach (said in the log)."""
    p = argparse.ArgumentParser(prog="python3 -m gpudesk.agent.replacement")
    p.add_argument("--root", type=Path, required=True, help="the run root (<home>/gpudesk)")
    p.add_argument("--tries", type=int, default=TRIES)
    args = p.parse_args(argv)
    logging.basicConfig(level="INFO", stream=sys.stderr,
                        format="%(asctime)s replacement: %(message)s")
    try:  # the run's name for the log: its folder in the bucket, runs/<run-id>/
        prefix = json.loads((args.root / "agent" / KEEP_ALIVE_FILE).read_text())["prefix"]
        run = str(prefix).rstrip("/").rsplit("/", 1)[-1]
    except (OSError, ValueError, KeyError, TypeError):
        run = "?"
    for attempt in range(1, max(1, args.tries) + 1):
        try:
            outcome = resume(args.root.resolve())
        except ReplacementError as exc:  # the event first: the log line ends the story
            _event(args.root, "run-refused", error=str(exc))
            log.error("%s", exc if isinstance(exc, CodeRefused)
                      else SAID_FAILED.format(run=run, error=exc))
            return 1
        except (StoreError, CloudStopError, OSError) as exc:
            if attempt >= args.tries:
                _event(args.root, "run-refused", error=str(exc))
                log.error("%s", SAID_FAILED.format(run=run, error=exc))
                return 1
            log.warning("the bucket is out of reach (%s); trying again", exc)
            time.sleep(2.0 ** attempt)
            continue
        log.info("%s", outcome.line)
        return 0
    return 1


def _event(root: Path, kind: str, **fields: Any) -> None:
    with contextlib.suppress(OSError):
        EventLog(root / "agent" / "data").record(kind, **fields)


if __name__ == "__main__":
    sys.exit(main())
