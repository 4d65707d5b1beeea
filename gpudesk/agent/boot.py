"""The first-boot guard: rules.json's budget and idle rules from the machine's first second.

Cloud user data installs this (with ``rules``, ``guard``, ``events``, ``clock``
and ``runs``) as the code of the machine's one systemd unit
(``agent_deploy.unit_template``: ``Restart=always``), which starts it on every
boot and again whenever it ends, so a machine nobody ever watched still stops
itself at its budget. It holds the same ``agent.lock`` as the full agent and
keeps the same ``spend.json``: when the desktop deploys the full agent (Watch),
the deploy points the unit at the new code and restarts the unit, and the full
agent goes on from the same spend. Exit 3: another agent holds the folder.

``python3 path/to/boot --dir DATA --rules rules.json [--nvidia-smi EXE] [--every S]``.
The action commands are the rules' (default: power off; EC2's shutdown behaviour
or the cloud's timer decide what that costs).
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import shutil
import signal
import sys
import threading
from pathlib import Path
from typing import Any
from typing import List
from typing import Optional
from typing import Sequence
from typing import Tuple

from .clock import SYSTEM_CLOCK
from .clock import Clock
from .events import EventLog
from .guard import Guard
from .guard import mark_running
from .rules import Rules
from .rules import RulesError
from .rules import load_rules
from .smi import GpuSample
from .smi import sample_once

log = logging.getLogger("gpudesk.agent.boot")
LOCK_FILE = "agent.lock"
PID_FILE = "agent.pid"
EXIT_OTHER_AGENT = 3


def _lock(folder: Path) -> Any:
    import fcntl

    f = open(folder / LOCK_FILE, "a+")  # noqa: SIM115 - held until exit
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        f.close()
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return None
        raise
    return f


def _stamp(path: Path) -> Optional[Tuple[int, int, int]]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class BootGuard:
    """Samples GPU utilisation now and then and ticks the guard; re-reads changed rules."""

    def __init__(self, folder: Path, rules_path: Path, *, exe: str = "nvidia-smi",
                 every_s: float = 5.0, clock: Clock = SYSTEM_CLOCK) -> None:
        self.folder = folder
        self.rules_path = rules_path
        self.exe = exe
        self.every_s = every_s
        self.clock = clock
        self.rules: Rules = load_rules(rules_path)
        self.stamp = _stamp(rules_path)
        self.events = EventLog(folder, clock)
        runs = self.rules.runs_dir or folder / "runs"
        self.guard = Guard(self.rules, self.events, runs_dir=runs, log_dir=folder, clock=clock,
                           stale_s=max(10.0, every_s * 3))

    def reload(self) -> None:
        stamp = _stamp(self.rules_path)
        if stamp is None or stamp == self.stamp:
            return
        self.stamp = stamp
        try:
            self.rules = load_rules(self.rules_path)
        except RulesError as exc:
            self.events.record("rules-error", error=str(exc))
            return
        self.guard.rules = self.rules
        self.events.record("rules-reloaded")

    def sample(self) -> Optional[List[GpuSample]]:
        if shutil.which(self.exe) is None and not os.path.isfile(self.exe):
            return None  # no GPU tools (yet): idle never fires on missing data
        return sample_once(self.exe)

    def step(self) -> None:
        self.reload()
        gpus = self.sample()
        if gpus is not None:
            self.guard.observe(gpus)
        self.guard.tick()

    def run(self, stop: threading.Event) -> None:
        self.events.record("boot-guard-start", pid=os.getpid())
        while not stop.is_set():
            try:
                self.step()
            except Exception:  # noqa: BLE001 - the guard must outlive a bad step
                log.exception("boot guard step failed")
            self.clock.wait(stop, self.every_s)


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="gpudesk-boot-guard")
    p.add_argument("--dir", required=True, type=Path)
    p.add_argument("--rules", required=True, type=Path)
    p.add_argument("--nvidia-smi", default=os.environ.get("GPUDESK_NVIDIA_SMI") or "nvidia-smi")
    p.add_argument("--every", type=float, default=5.0)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(message)s")
    folder: Path = args.dir
    folder.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    lock = _lock(folder)
    if lock is None:
        return EXIT_OTHER_AGENT  # the full agent runs and enforces the same rules
    with lock:  # held until the guard ends; closing the file releases it
        try:
            guard = BootGuard(folder, args.rules, exe=args.nvidia_smi, every_s=args.every)
        except RulesError as exc:
            EventLog(folder).record("rules-error", error=str(exc))
            return 2
        mark_running(folder, PID_FILE)
        guard.run(stop)
        return 0


if __name__ == "__main__":
    sys.exit(main())
