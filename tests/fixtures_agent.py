"""Fixtures for the on-machine agent: the stand-in nvidia-smi on PATH, a simulated clock,
a local metadata server (AWS IMDSv2 + Tencent), and live "training runs" to find and signal.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gpudesk.agent.clock import SimClock

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
FAKE_SMI = TESTS / "fake_nvidia_smi.py"
WAIT_S = 30.0


def wait_for(cond: Callable[[], Any], timeout: float = WAIT_S, what: str = "condition") -> Any:
    """Poll ``cond`` until it is truthy; fail (never hang) after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def install_fake_smi(bin_dir: Path, python: str = sys.executable) -> Path:
    """Write an ``nvidia-smi`` into ``bin_dir`` that execs the stand-in (same pid)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    exe = bin_dir / "nvidia-smi"
    exe.write_text(f'#!/bin/sh\nexec "{python}" "{FAKE_SMI}" "$@"\n', encoding="utf-8")
    exe.chmod(0o755)
    return exe


@dataclass
class FakeSmi:
    bin_dir: Path
    exe: Path
    log: Path
    monkeypatch: pytest.MonkeyPatch

    def scenario(self, name: str) -> None:
        self.monkeypatch.setenv("FAKE_SMI_SCENARIO", name)

    def invocations(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]

    def loop_pids(self) -> list[int]:
        """Pids of the long-lived ``-lms`` processes that were started."""
        return [e["pid"] for e in self.invocations()
                if e["event"] == "start" and "-lms" in e["argv"]]

    def count(self, flag_prefix: str) -> int:
        return sum(1 for e in self.invocations() if e["event"] == "start"
                   and any(a.startswith(flag_prefix) for a in e["argv"]))


@pytest.fixture
def fake_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSmi:
    bin_dir = tmp_path / "bin"
    exe = install_fake_smi(bin_dir)
    log = tmp_path / "fake-smi.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_SMI_LOG", str(log))
    monkeypatch.setenv("FAKE_SMI_SCENARIO", "a100")
    monkeypatch.delenv("FAKE_SMI_EXIT_AFTER", raising=False)
    return FakeSmi(bin_dir, exe, log, monkeypatch)


@pytest.fixture
def sim_clock() -> SimClock:
    return SimClock(start=1_700_000_000.0)


def pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


# --- the metadata services -------------------------------------------------------------

@dataclass
class MetadataState:
    aws_action: dict[str, str] | None = None
    tencent_time: str | None = None
    tokens: list[str] = field(default_factory=list)
    revoked: set[str] = field(default_factory=set)
    requests: list[tuple[str, str]] = field(default_factory=list)
    ttl_headers: list[str] = field(default_factory=list)


class MetadataServer:
    """127.0.0.1 HTTP server speaking IMDSv2 (token + spot/instance-action) and Tencent's
    spot/termination-time, with the notices switched on by the test."""

    def __init__(self) -> None:
        self.state = MetadataState()
        state = self.state

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: str = "", ctype: str = "text/plain") -> None:
                data = body.encode()
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_PUT(self) -> None:  # noqa: N802
                state.requests.append(("PUT", self.path))
                ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")
                if self.path != "/latest/api/token" or not ttl or not ttl.isdigit():
                    self._send(400)
                    return
                state.ttl_headers.append(ttl)
                token = f"token-{len(state.tokens) + 1}"
                state.tokens.append(token)
                self._send(200, token)

            def do_GET(self) -> None:  # noqa: N802
                state.requests.append(("GET", self.path))
                if self.path == "/latest/meta-data/spot/instance-action":
                    token = self.headers.get("X-aws-ec2-metadata-token", "")
                    if token not in state.tokens or token in state.revoked:
                        self._send(401)
                    elif state.aws_action is None:
                        self._send(404, "Not Found")
                    else:
                        self._send(200, json.dumps(state.aws_action), "application/json")
                elif self.path == "/latest/meta-data/spot/termination-time":
                    if state.tencent_time is None:
                        self._send(404, "Not Found")
                    else:
                        self._send(200, state.tencent_time)
                else:
                    self._send(404)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        port = self.httpd.server_address[1]
        return f"http://127.0.0.1:{port}"

    def count(self, method: str, path: str) -> int:
        return sum(1 for r in self.state.requests if r == (method, path))


@pytest.fixture
def metadata_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[MetadataServer]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    server = MetadataServer()
    server.thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


# --- training runs that the agent must find and signal -----------------------------------

WORKER = textwrap.dedent(
    """
    import os, signal, sys, time
    out = sys.argv[1]
    def on_usr1(signum, frame):
        open(os.path.join(out, f"usr1-{os.getpid()}"), "w").close()
    signal.signal(signal.SIGUSR1, on_usr1)
    open(os.path.join(out, f"ready-{os.getpid()}"), "w").close()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not os.path.exists(os.path.join(out, "stop")):
        time.sleep(0.05)
    """
)

# Like torchrun: no SIGUSR1 handler of its own (SIGUSR1 would kill it), one worker child.
LAUNCHER = textwrap.dedent(
    """
    import subprocess, sys
    worker = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]])
    sys.exit(worker.wait())
    """
)


@dataclass
class LiveRun:
    folder: Path
    launcher: subprocess.Popen[bytes]
    out: Path

    def worker_pid(self) -> int:
        ready = wait_for(lambda: sorted(self.out.glob("ready-*")), what="worker ready")
        return int(ready[0].name.split("-", 1)[1])

    def usr1_pids(self) -> list[int]:
        return sorted(int(p.name.split("-", 1)[1]) for p in self.out.glob("usr1-*"))


@pytest.fixture
def start_run(tmp_path: Path) -> Iterator[Callable[..., LiveRun]]:
    """``start_run(runs_dir, name, run_dir_env=None)``: a launcher + worker with a pid file."""
    started: list[LiveRun] = []

    def start(runs_dir: Path, name: str, run_dir_env: Path | None = None) -> LiveRun:
        folder = runs_dir / name
        out = tmp_path / f"out-{name}"
        folder.mkdir(parents=True)
        out.mkdir()
        env = dict(os.environ)
        if run_dir_env is not None:
            env["GPUDESK_RUN_DIR"] = str(run_dir_env)
        proc = subprocess.Popen([sys.executable, "-c", LAUNCHER, WORKER, str(out)], env=env)
        (folder / "pid").write_text(f"{proc.pid}\n")
        run = LiveRun(folder, proc, out)
        started.append(run)
        run.worker_pid()
        return run

    yield start
    for run in started:
        (run.out / "stop").touch()
        try:
            run.launcher.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            run.launcher.kill()
            run.launcher.wait()


def stop_run(run: LiveRun) -> None:
    (run.out / "stop").touch()
    run.launcher.wait(timeout=WAIT_S)


def terminate(proc: subprocess.Popen[Any], timeout: float = WAIT_S) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=timeout)
