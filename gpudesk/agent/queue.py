"""A queue of runs on this machine, kept by the agent (stdlib only).

The queue is a folder beside the run folders, ``<root>/queue/`` (the agent's
``runs_dir``'s parent): ``entries/<run-id>.json`` holds one run each, ``lock``
serialises every change, ``launcher.py`` is the run launcher the desktop ships
(``services/runs/run_launcher_script.py``, the one ``detached.launch`` runs over
SSH) and ``agent.json`` is the agent's heartbeat (pid, time, GPU count), from
which the desktop tells whether an agent keeps the queue at all.

An entry: ``{"run", "seq", "state", "gpus", "spec", "devices", "queued_at",
"started_at", "ended_at", "exit_code", "pid", "reason", "cancel"}``; ``spec`` is
what the launcher's ``start`` reads (``run_dir``, ``argv``, ``env``, ``cwd``...),
so a queued run gets its own run folder, log and ``exit_status`` like any other.
States: queued, running, succeeded, failed, cancelled.

Rules, and why:

* First in, first out, strictly: the oldest queued entry starts first, and a later
  entry never overtakes one that waits for GPUs (no backfill). Backfill would let a
  stream of small runs starve a big one forever, and the order a user queued is the
  order they expect; the cost is GPUs left free while the head waits.
* GPUs: the machine's count is ``nvidia-smi -L`` (``smi.gpu_count``). A GPU is free
  when no running queued entry holds it; a started entry takes the lowest free
  indices and its run sees them alone (``CUDA_VISIBLE_DEVICES``: two 4-GPU runs on
  8 GPUs get ``0,1,2,3`` and ``4,5,6,7``). A run started outside the queue
  (``gpudesk run``, the window's Run) that still runs here makes the whole queue wait,
  CPU runs too: which GPUs and how much memory it uses is not known, and a queued run
  is promised to wait for what runs before it. An entry asking for more GPUs than the
  machine has fails at once (it would block the queue forever); with no GPU reading the
  head waits.
* Every change happens under ``flock(lock)`` and every file is written whole
  (temporary file, fsync, rename): the desktop adding an entry while the agent
  ticks never loses one, and a crash leaves the old or the new file, never half.
* State is on disk, so the queue outlives the desktop, the agent and a reboot. A
  running entry is followed by its run folder: an ``exit_status`` ends it
  (0 succeeded; a cancel asked for it: cancelled; else failed). One whose pid is
  gone without an exit status (the machine rebooted, the processes were killed)
  becomes *failed* with the reason "lost", and is not started again by itself: a
  run that brought the machine down would do it again, and a rerun from step 0
  would overwrite its folder. ``gpudesk run --resume RUN`` carries it on from its
  checkpoints.
* Cancel: a queued entry is marked cancelled; a running one is stopped as
  ``detached.stop`` stops a run (the ``cancelled`` marker, then SIGTERM to the
  launcher, which passes it on to torchrun) and becomes cancelled when it ends.

The desktop runs this file as ``python3 -c <source> add|list|cancel ROOT ...``
over SSH, its ``run_folder`` imports (shared with the launcher) replaced by that file's
source (``services/runs/shipped_source.py``); the agent imports it and calls
:meth:`RunQueue.tick` from its loop.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from typing import Callable
from typing import Dict
from typing import Iterator
from typing import List
from typing import Optional
from typing import Set

from .run_folder import finished_before_exit
from .run_folder import launcher_alive
from .run_folder import pid_alive

QUEUE_DIR = "queue"
ENTRIES = "entries"
LOCK_FILE = "lock"
LAUNCHER = "launcher.py"
AGENT_FILE = "agent.json"
STATES = ("queued", "running", "succeeded", "failed", "cancelled")
OPEN_STATES = ("queued", "running")
HEARTBEAT_S = 5.0  # how often the agent says it is there
AGENT_FRESH_S = 60.0  # a heartbeat older than this: no agent keeps the queue
GPU_RETRY_S = 30.0  # with no GPU reading, ask nvidia-smi again after this
START_TIMEOUT_S = 60.0
REASON_LOST = ("lost: its processes are gone without an exit status (the machine restarted "
               "or they were killed); resume it with gpudesk run --resume {run}")
REASON_TOO_BIG = "asks for {gpus} GPU(s); this machine has {have}"
REASON_NO_LAUNCHER = "no run launcher in the queue folder"
# The agent's unit lowers its own OOM score (OOMScoreAdjust): a run it starts must not inherit
# that, or the kernel would kill the guard before a run that eats the memory. Raising the
# score back to 0 needs no privilege.
UNDO_OOM_ADJ = ("/bin/sh", "-c", 'echo 0 >/proc/self/oom_score_adj 2>/dev/null; exec "$@"', "sh")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,80}$")


def queue_dir_for(runs_dir: Path) -> Path:
    """The queue beside the run folders: ``<root>/runs`` -> ``<root>/queue``."""
    return Path(runs_dir).parent / QUEUE_DIR


def _write_atomic(path: Path, text: str, sync: bool = True) -> None:
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        if sync:
            os.fsync(f.fileno())
    os.replace(tmp, path)


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """The queue's one lock, held for a whole read-change-write."""
    Path(folder, ENTRIES).mkdir(parents=True, exist_ok=True)
    with open(Path(folder) / LOCK_FILE, "a+b") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def load_entries(folder: Path) -> List[Dict[str, Any]]:
    """Every readable entry, oldest first (an unreadable file is skipped, not fatal)."""
    out = []
    try:
        names = os.listdir(Path(folder) / ENTRIES)
    except OSError:
        return []
    for name in names:
        if not name.endswith(".json"):
            continue
        try:
            data = json.loads((Path(folder) / ENTRIES / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("state") in STATES:
            out.append(data)
    return sorted(out, key=lambda e: (int(e.get("seq") or 0), str(e.get("run"))))


def save_entry(folder: Path, entry: Dict[str, Any]) -> None:
    _write_atomic(Path(folder) / ENTRIES / f"{entry['run']}.json",
                  json.dumps(entry, indent=1) + "\n")


def busy(folder: Path) -> bool:
    """A queued or running entry: the idle rule must not stop the machine."""
    return any(e.get("state") in OPEN_STATES for e in load_entries(folder))


def install_launcher(folder: Path, source: str) -> None:
    """The run launcher the agent starts queued runs with (rewritten only when changed)."""
    path = Path(folder) / LAUNCHER
    with contextlib.suppress(OSError):
        if path.read_text(encoding="utf-8") == source:
            return
    Path(folder).mkdir(parents=True, exist_ok=True)
    _write_atomic(path, source)


def add_entry(folder: Path, run: str, gpus: int, spec: Dict[str, Any],
              now: Optional[float] = None) -> Dict[str, Any]:
    """Queue one run (last in line); a run id already queued here is refused."""
    if not _RUN_ID.match(run):
        raise ValueError(f"bad run id {run!r}")
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
        raise ValueError(f"gpus must be a whole number >= 0, got {gpus!r}")
    argv = spec.get("argv")
    if not isinstance(argv, list) or not argv or not isinstance(spec.get("run_dir"), str):
        raise ValueError("the spec needs argv and run_dir")
    with locked(folder):
        entries = load_entries(folder)
        if any(e.get("run") == run for e in entries):
            raise ValueError(f"run {run} is already in the queue")
        entry = {"run": run, "seq": max([int(e.get("seq") or 0) for e in entries] + [0]) + 1,
                 "state": "queued", "gpus": gpus, "spec": spec, "devices": None,
                 "queued_at": round(time.time() if now is None else now, 3),
                 "started_at": None, "ended_at": None, "exit_code": None, "pid": None,
                 "reason": "", "cancel": False}
        save_entry(folder, entry)
    return entry


# --------------------------------------------------------------------------- run folders

def _read_int(path: Path) -> Optional[int]:
    try:
        return int(path.read_text(encoding="utf-8", errors="replace")[:64].strip())
    except (OSError, ValueError):
        return None


def outside_runs(runs_dir: Path, queued: Set[str]) -> List[str]:
    """The runs started outside the queue whose launcher still runs (no exit status)."""
    alive = []
    for pid_file in sorted(Path(runs_dir).glob("*/pid")):
        run_dir = pid_file.parent
        if run_dir.name in queued or (run_dir / "exit_status").exists():
            continue
        pid = _read_int(pid_file)
        if pid and launcher_alive(pid, str(run_dir)):
            alive.append(run_dir.name)
    return alive


def _follow(entry: Dict[str, Any], now: float) -> bool:
    """Bring a running entry up to date with its run folder; True when it changed."""
    run_dir = Path(os.path.expanduser(entry["spec"]["run_dir"]))
    code = _read_int(run_dir / "exit_status")
    if code is None:
        pid = entry.get("pid") or _read_int(run_dir / "pid")
        if pid and launcher_alive(int(pid), str(run_dir)):
            return False
        code = _read_int(run_dir / "exit_status")  # it may have ended just now
    if code is None:
        entry.update(state="failed", ended_at=round(now, 3),
                     reason=REASON_LOST.format(run=entry["run"]))
        return True
    try:
        ended = os.path.getmtime(run_dir / "exit_status")
    except OSError:
        ended = now
    cancelled = bool(entry.get("cancel")) or (run_dir / "cancelled").exists()
    finished = code == 0 or finished_before_exit(run_dir, code)
    entry.update(state="cancelled" if cancelled else "succeeded" if finished else "failed",
                 exit_code=code, ended_at=round(ended, 3))
    return True


def _stop(entry: Dict[str, Any]) -> None:
    """As the launcher's ``stop``: the marker first, then SIGTERM to the launcher."""
    run_dir = Path(os.path.expanduser(entry["spec"]["run_dir"]))
    pid = entry.get("pid") or _read_int(run_dir / "pid")
    if pid and launcher_alive(int(pid), str(run_dir)):
        with contextlib.suppress(OSError):
            _write_atomic(run_dir / "cancelled", f"{time.time():.3f}\n")
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGTERM)


def reconcile(folder: Path, now: Optional[float] = None) -> List[Dict[str, Any]]:
    """Under the lock: every running entry followed to its end; the entries, oldest first."""
    now = time.time() if now is None else now
    entries = load_entries(folder)
    for entry in entries:
        if entry["state"] == "running" and _follow(entry, now):
            save_entry(folder, entry)
    return entries


def cancel(folder: Path, which: str, now: Optional[float] = None) -> List[Dict[str, Any]]:
    """Cancel one run (its id) or every open one ("all"); the entries changed."""
    now = time.time() if now is None else now
    changed = []
    with locked(folder):
        for entry in reconcile(folder, now):
            if which not in ("all", entry["run"]) or entry["state"] not in OPEN_STATES:
                continue
            if entry["state"] == "queued":
                entry.update(state="cancelled", ended_at=round(now, 3))
            else:
                entry["cancel"] = True
                _stop(entry)
            save_entry(folder, entry)
            changed.append(entry)
    return changed


def listing(folder: Path, now: Optional[float] = None) -> Dict[str, Any]:
    """What the desktop shows: the entries (brought up to date), the GPU count and
    whether an agent keeps the queue (its heartbeat is fresh and its pid alive)."""
    now = time.time() if now is None else now
    with locked(folder):
        entries = reconcile(folder, now)
    try:
        beat = json.loads((Path(folder) / AGENT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        beat = {}
    pid = beat.get("pid") if isinstance(beat, dict) else None
    at = beat.get("at") if isinstance(beat, dict) else None
    age = now - float(at) if isinstance(at, (int, float)) else None
    running = bool(isinstance(pid, int) and pid > 0 and age is not None and age < AGENT_FRESH_S
                   and pid_alive(pid))
    gpus = beat.get("gpus") if isinstance(beat, dict) else None
    return {"gpus": gpus if isinstance(gpus, int) else None, "agent_running": running,
            "agent_seen_s": None if age is None else round(age, 1),
            "entries": [{k: v for k, v in e.items() if k != "spec"} for e in entries]}




# --------------------------------------------------------------------------- the agent's part

class RunQueue:
    """What the agent does with the queue at each tick: follow the running, start the next."""

    def __init__(self, folder: Path, gpus: Callable[[], Optional[int]], *,
                 python: str = sys.executable, now: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.folder = Path(folder)
        self._gpus = gpus
        self.python = python
        self.now = now
        self.monotonic = monotonic
        self.count: Optional[int] = None
        self._asked_at: Optional[float] = None
        self._beat_at: Optional[float] = None

    def gpu_count(self) -> Optional[int]:
        """The machine's GPUs (asked once; again every GPU_RETRY_S while unknown)."""
        mono = self.monotonic()
        if self.count is None and (self._asked_at is None
                                   or mono - self._asked_at >= GPU_RETRY_S):
            self._asked_at = mono
            self.count = self._gpus()
        return self.count

    def heartbeat(self, force: bool = False) -> None:
        mono = self.monotonic()
        if not force and self._beat_at is not None and mono - self._beat_at < HEARTBEAT_S:
            return
        self._beat_at = mono
        self.folder.mkdir(parents=True, exist_ok=True)
        _write_atomic(self.folder / AGENT_FILE, json.dumps(
            {"pid": os.getpid(), "at": round(self.now(), 3), "gpus": self.gpu_count()}),
            sync=False)

    def tick(self) -> List[Dict[str, Any]]:
        """Follow the running entries, start what fits in order; the entries changed."""
        if not (self.folder / ENTRIES).is_dir():
            self.heartbeat()
            return []
        changed = []
        with locked(self.folder):
            now = self.now()
            entries = load_entries(self.folder)
            for entry in entries:
                if entry["state"] == "running" and _follow(entry, now):
                    save_entry(self.folder, entry)
                    changed.append(entry)
            waiting = [e for e in entries if e["state"] == "queued"]
            if waiting:
                changed += self._start_in_order(entries, waiting)
        self.heartbeat(force=bool(changed))
        return changed

    def _start_in_order(self, entries: List[Dict[str, Any]],
                        waiting: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        if outside_runs(self.folder.parent / "runs", {str(e["run"]) for e in entries}):
            return []  # a run started directly still trains here: the queue waits for it
        count = self.gpu_count() if any(int(e["gpus"]) > 0 for e in waiting) else self.count
        held = {int(d) for e in entries if e["state"] == "running" for d in e.get("devices") or []}
        free = [i for i in range(count or 0) if i not in held]
        started = []
        for entry in waiting:
            want = int(entry["gpus"])
            if want > 0 and count is not None and want > count:
                entry.update(state="failed", ended_at=round(self.now(), 3),
                             reason=REASON_TOO_BIG.format(gpus=want, have=count))
                save_entry(self.folder, entry)
                started.append(entry)
                continue
            if want > 0 and (count is None or len(free) < want):
                break  # strict FIFO: nothing behind the head starts before it
            devices, free = free[:want], free[want:]
            self._start(entry, devices)
            save_entry(self.folder, entry)
            started.append(entry)
        return started

    def _start(self, entry: Dict[str, Any], devices: List[int]) -> None:
        now = round(self.now(), 3)
        launcher = self.folder / LAUNCHER
        if not launcher.is_file():
            entry.update(state="failed", ended_at=now, reason=REASON_NO_LAUNCHER)
            return
        spec = dict(entry["spec"])
        env = dict(spec.get("env") or {})
        if int(entry["gpus"]) > 0:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(d) for d in devices)
        spec["env"] = env
        argv = [*UNDO_OOM_ADJ, self.python, "-I", "-S", str(launcher), "start"]
        detail = ""
        answer: Any = None
        try:
            proc = subprocess.run(argv, input=json.dumps(spec).encode(), capture_output=True,
                                  timeout=START_TIMEOUT_S, check=False)
            if proc.returncode == 0:
                answer = json.loads(proc.stdout.decode("utf-8", "replace"))
            else:
                detail = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip()[-400:] \
                    or f"exit status {proc.returncode}"
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            detail = f"{type(exc).__name__}: {exc}"
        if not isinstance(answer, dict):
            entry.update(state="failed", ended_at=now,
                         reason=f"did not start: {detail or 'no answer from the launcher'}")
            return
        entry.update(state="running", started_at=now, devices=devices if entry["gpus"] else None,
                     pid=int(answer.get("pid") or 0) or None)


# --------------------------------------------------------------------------- over SSH

def main(argv: List[str]) -> int:
    """``add ROOT`` (JSON on stdin: run, gpus, spec, launcher), ``list ROOT``, ``cancel ROOT
    RUN|all``; each prints JSON. ROOT is gpudesk's folder on the machine."""
    if len(argv) < 2 or argv[0] not in ("add", "list", "cancel"):
        sys.stderr.write("usage: add ROOT | list ROOT | cancel ROOT RUN|all\n")
        return 2
    folder = Path(os.path.expanduser(argv[1])).absolute() / QUEUE_DIR
    try:
        if argv[0] == "add":
            data = json.loads(sys.stdin.read())
            spec = dict(data["spec"])
            env = dict(spec.get("env") or {})
            # the agent's service has a bare PATH: the run gets this login's, as over SSH
            env.setdefault("PATH", os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"))
            spec["env"] = env
            if data.get("launcher"):
                install_launcher(folder, str(data["launcher"]))
            out: Any = add_entry(folder, str(data["run"]), int(data["gpus"]), spec)
        elif argv[0] == "list":
            out = listing(folder)
        else:
            if len(argv) < 3:
                sys.stderr.write("cancel needs RUN or all\n")
                return 2
            out = cancel(folder, argv[2])
    except (ValueError, KeyError, TypeError) as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
