"""A stand-in for systemd: a ``systemctl`` that the machine's scripts call, and a small
supervisor process per unit that does what the unit file says.

Run as ``python service_manager_standin.py --state DIR --unit-dir DIR VERB [ARGS]``
(``StandinSystemd.install`` writes a ``systemctl`` wrapper that does this). Verbs:
``daemon-reload``, ``enable [--now] UNIT``, ``disable UNIT``, ``start``/``restart``/
``stop``/``status``/``is-active UNIT``, and ``boot`` (start every enabled unit, as
systemd does at boot). Every call is logged, one line each, to ``DIR/systemctl.log``.

The supervisor reads the unit's ``ExecStart``, ``Restart`` (``always``, ``on-failure``,
``no``), ``RestartSec`` and ``EnvironmentFile`` (``-`` prefix: optional) each time it
starts the service; it writes the running pid to ``DIR/<unit>.main`` and one JSON line
per start and per exit to ``DIR/<unit>.events``. SIGHUP asks it to restart the service
(what ``restart`` sends), SIGTERM to stop it and exit. ``User=``, ``OOMScoreAdjust=`` and
the start limit are not modelled (tests run as one user; this supervisor never gives up).
It runs on the machine the tests SSH into, which is this machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
WAIT_S = 30.0


def parse_unit(text: str) -> dict[str, str]:
    """``Key=Value`` lines of a unit file (last one wins; sections are not kept apart)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")) and "=" in line:
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True


def _read_int(path: Path) -> int:
    try:
        return int(path.read_text().strip() or 0)
    except (OSError, ValueError):
        return 0


def _until(cond: Callable[[], Any], seconds: float = WAIT_S) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = cond()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.02)


# --------------------------------------------------------------------------- the supervisor

class Supervisor:
    def __init__(self, state: Path, unit_dir: Path, unit: str) -> None:
        self.state, self.unit_dir, self.unit = state, unit_dir, unit
        self.wake = threading.Event()
        self.stopping = False
        self.restarting = False

    def _event(self, **fields: Any) -> None:
        fields["t"] = time.time()
        with open(self.state / f"{self.unit}.events", "a") as f:
            f.write(json.dumps(fields) + "\n")

    def _env(self, conf: dict[str, str]) -> dict[str, str]:
        env = dict(os.environ)
        spec = conf.get("EnvironmentFile", "")
        if spec:
            path = spec[1:] if spec.startswith("-") else spec
            try:
                lines = Path(path).read_text().splitlines()
            except OSError:
                if not spec.startswith("-"):
                    raise
                lines = []
            for line in lines:
                if "=" in line and not line.lstrip().startswith("#"):
                    key, value = line.split("=", 1)
                    env[key.strip()] = value.strip()
        return env

    def on_signal(self, signum: int, frame: Any) -> None:
        if signum == signal.SIGHUP:
            self.restarting = True
        else:
            self.stopping = True
        self.wake.set()

    def run(self) -> int:
        signal.signal(signal.SIGHUP, self.on_signal)
        signal.signal(signal.SIGTERM, self.on_signal)
        (self.state / f"{self.unit}.supervisor").write_text(str(os.getpid()))
        while not self.stopping:
            conf = parse_unit((self.unit_dir / self.unit).read_text())
            with open(self.state / f"{self.unit}.log", "ab") as log:
                child = subprocess.Popen(shlex.split(conf["ExecStart"]), env=self._env(conf),
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         cwd="/")
            (self.state / f"{self.unit}.main").write_text(str(child.pid))
            self._event(event="start", pid=child.pid)
            self.restarting = False
            while child.poll() is None and not (self.stopping or self.restarting):
                self.wake.wait(0.05)
                self.wake.clear()
            asked = self.stopping or self.restarting
            if child.poll() is None:
                child.terminate()
                try:
                    child.wait(timeout=90)  # systemd's TimeoutStopSec
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
            rc = child.returncode
            self._event(event="exit", pid=child.pid, rc=rc, asked=asked)
            (self.state / f"{self.unit}.main").write_text("0")
            if self.stopping:
                break
            if self.restarting:
                continue
            restart = conf.get("Restart", "no")
            if restart == "always" or (restart == "on-failure" and rc != 0):
                self.wake.wait(float(conf.get("RestartSec", "0.1")))
                self.wake.clear()
                continue
            break
        (self.state / f"{self.unit}.supervisor").write_text("0")
        return 0


# --------------------------------------------------------------------------- systemctl

def _supervisor_pid(state: Path, unit: str) -> int:
    pid = _read_int(state / f"{unit}.supervisor")
    return pid if pid and _alive(pid) else 0


def _starts(state: Path, unit: str) -> int:
    try:
        lines = (state / f"{unit}.events").read_text().splitlines()
    except OSError:
        return 0
    return sum(1 for line in lines if json.loads(line)["event"] == "start")


def _start(state: Path, unit_dir: Path, unit: str) -> int:
    if _supervisor_pid(state, unit):
        return 0
    before = _starts(state, unit)
    subprocess.Popen([sys.executable, str(HERE), "--state", str(state), "--unit-dir",
                      str(unit_dir), "supervise", unit], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True, close_fds=True)
    return 0 if _until(lambda: _starts(state, unit) > before) else 1


def systemctl(state: Path, unit_dir: Path, argv: list[str]) -> int:
    state.mkdir(parents=True, exist_ok=True)
    with open(state / "systemctl.log", "a") as log:
        log.write(" ".join(argv) + "\n")
    verb, args = argv[0], argv[1:]
    enabled = state / "enabled"
    if verb == "daemon-reload":
        return 0
    if verb == "enable":
        now = "--now" in args
        units = [a for a in args if not a.startswith("-")]
        for unit in units:
            if not (unit_dir / unit).is_file():
                print(f"Unit file {unit} does not exist.", file=sys.stderr)
                return 1
            with open(enabled, "a") as f:
                f.write(unit + "\n")
        return max([_start(state, unit_dir, u) for u in units] if now else [0])
    if verb == "disable":
        names = set(enabled.read_text().split()) if enabled.exists() else set()
        enabled.write_text("".join(f"{n}\n" for n in sorted(names - set(args))))
        return 0
    if verb == "boot":
        names = set(enabled.read_text().split()) if enabled.exists() else set()
        return max([_start(state, unit_dir, u) for u in sorted(names)] or [0])
    (unit,) = args
    if verb == "start":
        return _start(state, unit_dir, unit)
    if verb == "restart":
        pid = _supervisor_pid(state, unit)
        if not pid:
            return _start(state, unit_dir, unit)
        before = _starts(state, unit)
        os.kill(pid, signal.SIGHUP)
        return 0 if _until(lambda: _starts(state, unit) > before) else 1
    if verb == "stop":
        pid = _supervisor_pid(state, unit)
        if pid:
            os.kill(pid, signal.SIGTERM)
            _until(lambda: not _alive(pid))
        return 0
    if verb in ("status", "is-active"):
        main = _read_int(state / f"{unit}.main")
        active = bool(_supervisor_pid(state, unit) and main and _alive(main))
        print(f"{unit}: {'active' if active else 'inactive'} (main pid {main})")
        return 0 if active else 3
    print(f"stand-in systemctl: unknown verb {verb}", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--state", type=Path, required=True)
    p.add_argument("--unit-dir", type=Path, required=True)
    p.add_argument("words", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    if a.words[:1] == ["supervise"]:
        return Supervisor(a.state, a.unit_dir, a.words[1]).run()
    return systemctl(a.state, a.unit_dir, a.words)


# --------------------------------------------------------------------------- for tests

@dataclass
class StandinSystemd:
    """The stand-in's folders, its ``systemctl`` wrapper and what tests ask of it."""

    state: Path
    unit_dir: Path
    systemctl: Path

    @classmethod
    def install(cls, folder: Path) -> StandinSystemd:
        state, unit_dir, bin_dir = folder / "state", folder / "units", folder / "bin"
        for d in (state, unit_dir, bin_dir):
            d.mkdir(parents=True, exist_ok=True)
        exe = bin_dir / "systemctl"
        exe.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(HERE))}'
                       f' --state {shlex.quote(str(state))} --unit-dir '
                       f'{shlex.quote(str(unit_dir))} "$@"\n')
        exe.chmod(0o755)
        return cls(state, unit_dir, exe)

    def calls(self) -> list[str]:
        try:
            return (self.state / "systemctl.log").read_text().splitlines()
        except OSError:
            return []

    def main_pid(self, unit: str) -> int:
        pid = _read_int(self.state / f"{unit}.main")
        return pid if pid and _alive(pid) else 0

    def supervisor_pid(self, unit: str) -> int:
        return _supervisor_pid(self.state, unit)

    def events(self, unit: str) -> list[dict[str, Any]]:
        try:
            text = (self.state / f"{unit}.events").read_text()
        except OSError:
            return []
        return [json.loads(line) for line in text.splitlines(keepends=True)
                if line.endswith("\n")]

    def ctl(self, *argv: str) -> int:
        """``systemctl ARGV`` as the machine's scripts run it (a process of its own)."""
        return subprocess.run([str(self.systemctl), *argv], stdin=subprocess.DEVNULL,
                              timeout=2 * WAIT_S, check=False).returncode

    def power_loss(self, unit: str) -> list[int]:
        """SIGKILL the supervisor and the service at once, as a power cut or a reboot does;
        the pids killed."""
        pids = [p for p in (self.supervisor_pid(unit), self.main_pid(unit)) if p]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _until(lambda: not any(_alive(p) for p in pids))
        return pids

    def shutdown(self, unit: str) -> None:
        """Stop the unit (cleanup); SIGKILL whatever is left."""
        self.ctl("stop", unit)
        self.power_loss(unit)


if __name__ == "__main__":
    sys.exit(main())
