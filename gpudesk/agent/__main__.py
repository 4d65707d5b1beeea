"""Entry point: ``python3 -m gpudesk.agent --dir RUNDIR [--rules rules.json] [--once]``.

Also runs as a bare uploaded folder: ``python3 path/to/agent --dir RUNDIR``.
In RUNDIR it keeps ``metrics.jsonl`` (+ rotated files), ``events.jsonl``,
``actions.log``, ``spend.json`` (the budget's billable seconds), ``agent.pid``,
``agent.code`` (pid and code folder) and ``agent.lock`` (one agent per folder).
``--since SEQ [--follow]`` prints the records after SEQ as JSON lines (what
the desktop runs over SSH to backfill and then stream) instead of sampling;
a follower ends on SIGTERM or when the process that started it is gone.
SIGTERM or SIGINT stops it cleanly, nvidia-smi child included; exit 0 (on a
machine gpudesk launched, its unit starts it again: stop the unit to end it).
``--nvidia-smi`` defaults to ``$GPUDESK_NVIDIA_SMI`` (the unit's agent.env).
Exit 2: invalid rules; 3: another agent holds the folder; 1: no GPU reading
(``--once`` only). Runs whose folder holds a ``store-config.json`` have their
checkpoints, log and outputs uploaded to the user's bucket (``uploader.py``). The run
queue beside the run folders (``<runs>/../queue``, ``queue.py``) is ticked every second.
``upload --run RUNFOLDER`` does that alone for one run; ``fetch-resume --run
RUNFOLDER [-- COMMAND]`` fetches the bucket's latest checkpoint first
(``resume_fetch.py``).
"""

from __future__ import annotations

if __package__ in (None, ""):  # run as a folder or a script, not with -m: become the package
    import importlib
    import os
    import sys

    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
    sys.path.insert(0, os.path.dirname(_here))
    __package__ = os.path.basename(_here)
    importlib.import_module(__package__)

import argparse  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402
from typing import Callable  # noqa: E402
from typing import Dict  # noqa: E402
from typing import List  # noqa: E402
from typing import Optional  # noqa: E402
from typing import Sequence  # noqa: E402
from typing import Tuple  # noqa: E402

from . import AGENT_VERSION  # noqa: E402
from .boot import LOCK_FILE  # noqa: E402,F401 - one lock for the boot and full agent
from .boot import _lock  # noqa: E402,F401 - one lock for the boot and full agent
from .bucket_spend import Finder  # noqa: E402
from .bucket_spend import GroupGuard  # noqa: E402
from .clock import SYSTEM_CLOCK  # noqa: E402
from .clock import Clock  # noqa: E402
from .events import EventLog  # noqa: E402
from .guard import mark_running  # noqa: E402
from .metrics import Follower  # noqa: E402
from .metrics import MetricsWriter  # noqa: E402
from .metrics import read_since  # noqa: E402
from .queue import RunQueue  # noqa: E402
from .queue import busy  # noqa: E402
from .queue import queue_dir_for  # noqa: E402
from .rules import Rules  # noqa: E402
from .rules import RulesError  # noqa: E402
from .rules import load_rules  # noqa: E402
from .runs import ActiveRun  # noqa: E402
from .runs import active_runs  # noqa: E402
from .smi import NO_GPU_SRC  # noqa: E402
from .smi import GpuSample  # noqa: E402
from .smi import NvmlSampler  # noqa: E402
from .smi import ProcSample  # noqa: E402
from .smi import SmiStream  # noqa: E402
from .smi import gpu_count  # noqa: E402
from .smi import load_nvml  # noqa: E402
from .smi import poll_procs  # noqa: E402
from .smi import sample_once  # noqa: E402
from .smi import smi_missing  # noqa: E402
from .spot import SpotWatcher  # noqa: E402
from .spot import make_source  # noqa: E402
from .uploader import Uploads  # noqa: E402

log = logging.getLogger("gpudesk.agent")
PID_FILE = "agent.pid"


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="gpudesk-agent", description=__doc__.split("\n")[0])
    p.add_argument("--dir", required=True, type=Path, help="the agent's folder")
    p.add_argument("--rules", type=Path, help="rules.json written by the app")
    p.add_argument("--once", action="store_true", help="one sample, one check, then exit")
    p.add_argument("--interval-ms", type=int, help="sampling interval (default: rules, 1000)")
    p.add_argument("--runs-dir", type=Path, help="run folders (default: rules, DIR/runs)")
    p.add_argument("--nvidia-smi", default=os.environ.get("GPUDESK_NVIDIA_SMI") or "nvidia-smi",
                   help="the nvidia-smi executable (default: $GPUDESK_NVIDIA_SMI, nvidia-smi)")
    p.add_argument("--sampler", choices=("auto", "nvml", "smi"), default="auto")
    p.add_argument("--since", type=int, help="print records after this seq and exit")
    p.add_argument("--follow", action="store_true", help="with --since: keep printing")
    p.add_argument("--log-level", default="INFO")
    return p.parse_args(argv)


class Agent:
    """Sampler + metrics writer + guard + spot watcher, run from one main loop."""

    def __init__(self, folder: Path, rules: Rules, *, exe: str = "nvidia-smi",
                 sampler: str = "auto", interval_ms: Optional[int] = None,
                 runs_dir: Optional[Path] = None, clock: Clock = SYSTEM_CLOCK,
                 rules_path: Optional[Path] = None) -> None:
        self.folder = Path(folder)
        self.rules = rules
        self.rules_path = rules_path
        self._rules_stamp = self._stamp()
        self.exe = exe
        self.sampler_kind = sampler
        self.interval_ms = interval_ms or rules.interval_ms
        self.runs_dir = Path(runs_dir or rules.runs_dir or self.folder / "runs")
        self.clock = clock
        self.events = EventLog(self.folder, clock)
        self.writer = MetricsWriter(self.folder, max_bytes=rules.metrics_max_bytes,
                                    keep=rules.metrics_keep, clock=clock)
        self.guard = GroupGuard(rules, self.events, runs_dir=self.runs_dir, log_dir=self.folder,
                           clock=clock, runs=runs_or_queue)
        source = make_source(rules.spot, clock)
        self.spot = None if source is None else SpotWatcher(
            source, self.events, runs_dir=self.runs_dir, agent_dir=self.folder, clock=clock)
        self.uploads = Uploads(self.runs_dir, clock)
        self.queue = RunQueue(queue_dir_for(self.runs_dir), lambda: gpu_count(self.exe))
        self.keep_alive = Finder(self.runs_dir, self.events, clock)  # spend.json, group end
        self._procs: List[ProcSample] = []
        self._uuids: Dict[str, int] = {}
        self._lock = threading.Lock()
        self._nvml: Any = None
        self.sampler: Any = None
        self.no_gpu_said = False  # the "no GPU here" record is written once per absence

    def _src(self) -> str:
        return "nvml" if self._nvml is not None else "nvidia-smi"

    def _make_sampler(self) -> Any:
        if self.sampler_kind in ("auto", "nvml"):
            self._nvml = load_nvml()
            if self._nvml is not None:
                return NvmlSampler(self._nvml, self.on_sample, interval_ms=self.interval_ms,
                                   clock=self.clock)
            if self.sampler_kind == "nvml":
                log.warning("pynvml is not usable here; falling back to nvidia-smi")
        return SmiStream(self.on_sample, exe=self.exe, interval_ms=self.interval_ms,
                         expected=gpu_count(self.exe), clock=self.clock)

    def on_sample(self, gpus: List[GpuSample]) -> Dict[str, Any]:
        with self._lock:
            self._uuids = {g.uuid: g.index for g in gpus if g.uuid and g.index is not None}
            procs = list(self._procs)
        rec = self.writer.append(gpus, procs, src=self._src())
        self.guard.observe(gpus)
        return rec

    def poll_procs(self) -> None:
        procs = self.sampler.procs() if self.sampler is not None else poll_procs(self.exe)
        if procs is None:
            return
        with self._lock:
            self._procs = [p if p.gpu_index is not None or p.gpu_uuid not in self._uuids
                           else ProcSample(p.pid, p.gpu_uuid, self._uuids[p.gpu_uuid], p.name,
                                           p.mem_used_mib)
                           for p in procs]

    def once(self) -> Optional[Dict[str, Any]]:
        self._nvml = load_nvml() if self.sampler_kind != "smi" else None
        if self._nvml is not None:
            nv = NvmlSampler(self._nvml, self.on_sample, clock=self.clock)
            gpus: Optional[List[GpuSample]] = nv.sample()
            self.sampler = nv
        else:
            gpus = sample_once(self.exe)
        rec = None
        if gpus is not None:
            with self._lock:
                self._uuids = {g.uuid: g.index for g in gpus if g.uuid and g.index is not None}
            self.poll_procs()
            rec = self.on_sample(gpus)
        self.tick_rules()
        return rec

    def _stamp(self) -> Optional[Tuple[int, int, int]]:
        try:
            st = os.stat(self.rules_path) if self.rules_path is not None else None
        except OSError:
            return None
        return None if st is None else (st.st_mtime_ns, st.st_size, st.st_ino)

    def reload_rules(self) -> bool:
        """Adopt a rewritten rules.json (new price, raised cap); a bad one keeps the old rules.

        The idle count and what already fired carry over; sampling settings and
        the runs folder apply at the next start.
        """
        stamp = self._stamp()
        if stamp is None or stamp == self._rules_stamp:
            return False
        self._rules_stamp = stamp
        try:
            rules = load_rules(self.rules_path)
        except RulesError as exc:
            self.events.record("rules-error", error=str(exc))
            log.error("rules.json changed but is invalid, keeping the previous rules: %s", exc)
            return False
        if rules.spot != self.rules.spot:
            source = make_source(rules.spot, self.clock)
            self.spot = None if source is None else SpotWatcher(
                source, self.events, runs_dir=self.runs_dir, agent_dir=self.folder,
                clock=self.clock)
        self.rules = rules
        self.guard.rules = rules
        self.events.record("rules-reloaded")
        return True

    def say_no_gpu(self) -> Optional[Dict[str, Any]]:
        """With no nvidia-smi (no driver), one record with no GPUs and ``src`` "no-gpu", so
        that a desktop watching says so instead of waiting for samples; once per absence."""
        missing = self._nvml is None and smi_missing(self.exe)
        if not missing:
            self.no_gpu_said = False
            return None
        if self.no_gpu_said:
            return None
        self.no_gpu_said = True
        self.events.record("no-gpu", nvidia_smi=self.exe)
        return self.writer.append([], [], src=NO_GPU_SRC)

    def tick_rules(self) -> None:
        if self.spot is not None:
            self.spot.poll()
        self.guard.tick()

    def run(self, stop: threading.Event) -> None:
        self.sampler = self._make_sampler()
        self.events.record("agent-start", pid=os.getpid(), sampler=self.sampler.kind,
                           version=AGENT_VERSION, interval_ms=self.interval_ms)
        self.sampler.start()
        self.uploads.start(stop)
        next_procs = next_spot = self.clock.monotonic()
        try:
            while not stop.is_set():
                now = self.clock.monotonic()
                if now >= next_procs:
                    next_procs = now + self.rules.procs_every_s
                    _guarded(self.poll_procs)
                    _guarded(self.say_no_gpu)
                if self.spot is not None and now >= next_spot:
                    next_spot = now + self.rules.spot.every_s
                    _guarded(self.spot.poll)
                _guarded(self.reload_rules)
                _guarded(self.queue.tick)
                _guarded(lambda: self.keep_alive.tick(self.guard))
                _guarded(self.guard.tick)
                self.clock.wait(stop, 1.0)
        finally:
            self.sampler.stop()
            self.uploads.join(5.0)
            _guarded(self.keep_alive.close)
            self.writer.close()
            self.events.record("agent-stop", pid=os.getpid(), last_seq=self.writer.seq)


def runs_or_queue(runs_dir: Path) -> List[ActiveRun]:
    """What the idle rule counts as work: the active runs, and the run queue (one more)
    while it holds a queued or running entry. Here, not in the guard: the first-boot
    guard has no queue, and its user data has no byte to spare."""
    found = active_runs(runs_dir)
    folder = queue_dir_for(runs_dir)
    return found + [ActiveRun(folder, 0)] if busy(folder) else found


def _guarded(step: Callable[[], object]) -> None:
    """One step of the loop; a bug in one part must not stop the others (or the guard)."""
    try:
        step()
    except Exception:
        log.exception("agent step %s failed", getattr(step, "__qualname__", step))


def _print_records(recs: List[Dict[str, Any]]) -> None:
    for rec in recs:
        sys.stdout.write(json.dumps(rec, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def follow(folder: Path, since: int, stop: threading.Event, clock: Clock = SYSTEM_CLOCK,
           every_s: float = 0.2) -> None:
    """Print records as they come until told to stop, or until the process that started
    this one (the desktop's SSH wrapper) is gone: nobody reads then."""
    f = Follower(folder, since)
    parent = os.getppid()
    while not stop.is_set() and os.getppid() == parent:
        _print_records(f.poll())
        clock.wait(stop, every_s)


def main(argv: Optional[Sequence[str]] = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words and words[0] == "fetch-data":  # issue 32: the run's dataset first
        from . import data_fetch

        return data_fetch.main(words[1:])
    if words and words[0] in ("upload", "fetch-resume"):
        from . import resume_fetch
        from . import uploader

        return (uploader.main if words[0] == "upload" else resume_fetch.main)(words[1:])
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(message)s")
    folder: Path = args.dir
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        if args.since is not None:
            if args.follow:
                follow(folder, args.since, stop)
            else:
                _print_records(read_since(folder, args.since))
            return 0
    except BrokenPipeError:  # the SSH channel went away
        return 0
    folder.mkdir(parents=True, exist_ok=True)
    try:
        rules = load_rules(args.rules)
    except RulesError as exc:
        EventLog(folder).record("rules-error", error=str(exc))
        log.error("invalid rules: %s", exc)
        return 2
    lock = _lock(folder)
    if lock is None:
        log.error("another agent is running in %s", folder)
        return 3
    with lock:  # held until the agent ends; closing the file releases it
        mark_running(folder, PID_FILE)
        agent = Agent(folder, rules, exe=args.nvidia_smi, sampler=args.sampler,
                      interval_ms=args.interval_ms, runs_dir=args.runs_dir,
                      rules_path=args.rules)
        if args.once:
            rec = agent.once()
            agent.writer.close()
            if rec is None:
                log.error("no GPU reading from %s", args.nvidia_smi)
                return 1
            _print_records([rec])
            return 0
        agent.run(stop)
        return 0


if __name__ == "__main__":
    sys.exit(main())
