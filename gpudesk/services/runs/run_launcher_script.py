"""The run launcher that gpudesk ships to a machine (stdlib only, Python 3.7+).

The desktop runs it as ``python3 -c <source> OP ...`` (see ``runs.launcher_command``):

``start``     reads a JSON spec on stdin, creates the run folder, and starts the
              command fully detached (double fork, ``setsid``, no terminal, stdin
              from /dev/null): it survives the SSH connection and the app. It
              prints ``{"pid", "run_dir", "log_offset"}`` once the ``pid`` file exists.
``status``    prints ``{"state": "running"|"exited"|"lost", "code", "pid", "log_size",
              "cancelled", "teardown"}`` (cancelled: ``stop`` asked for the exit;
              teardown: a non-zero exit after every rank finished, see
              ``gpudesk/agent/run_folder.py``).
``follow``    streams the log from a byte offset until the run has ended and the
              log is drained, then exits 0 (a dropped connection simply ends it).
``freeport``  prints a free TCP port (the rendezvous port of a multi-node run).

Sent as one source (``shipped_source.launcher_source``): the ``run_folder`` import lines
below are replaced by ``gpudesk/agent/run_folder.py`` itself, which the agent shares.

Run folder (the agent's contract, ``gpudesk/agent/runs.py``): ``pid`` (this
launcher's supervising process, parent of torchrun), ``log`` (stdout and
stderr of everything), ``exit_status`` (written atomically when the command
ends), ``command``, ``run.json`` (the spec) and ``checkpoints/``
(``GPUDESK_RUN_DIR``).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from gpudesk.agent.run_folder import CHECKPOINTS
from gpudesk.agent.run_folder import EXIT_FILE
from gpudesk.agent.run_folder import LOG_FILE
from gpudesk.agent.run_folder import PID_FILE
from gpudesk.agent.run_folder import finished_before_exit
from gpudesk.agent.run_folder import launcher_alive
from gpudesk.agent.run_folder import log_tail


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:  # noqa: N802 - the name lupdate finds
    """Marks this script's own log lines for Qt's tools (the machine has no Qt)."""
    del context
    return text


# The gpudesk: lines this script writes into the run's log. The log on the machine stays in
# English; the window shows these lines translated (runs.launcher_lines).
SAID_CANNOT_START = QT_TRANSLATE_NOOP(
    "Runs", "could not start {program}: {error}")
SAID_RESUMING = QT_TRANSLATE_NOOP(
    "Runs", "resuming run (attempt {attempt})")
SAID_LINES = (SAID_CANNOT_START, SAID_RESUMING)

FETCH_NOTE = "data-fetch.json"  # agent/data_fetch.py: what was fetched from the bucket
CANCEL_FILE = "cancelled"  # written by ``stop`` before its SIGTERM: the exit was asked for
SPEC_FILE = "run.json"
COMMAND_FILE = "command"
START_TIMEOUT_S = 30.0
POLL_S = 0.2  # how often ``follow`` looks for new log bytes and the end of the run

_ROOT_CAUSE = re.compile(r"Root Cause \(first observed failure\):.*?exitcode\s*:\s*(-?\d+)",
                         re.DOTALL)


def _write_atomic(path: str, text: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read(64).strip()
    except OSError:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def status(run_dir: str) -> dict[str, Any]:
    run_dir = os.path.expanduser(run_dir)
    try:
        log_size = os.path.getsize(os.path.join(run_dir, LOG_FILE))
    except OSError:
        log_size = 0
    out: dict[str, Any] = {"state": "missing", "code": None, "pid": None, "log_size": log_size}
    if not os.path.isdir(run_dir):
        return out
    code = _read_int(os.path.join(run_dir, EXIT_FILE))
    pid = _read_int(os.path.join(run_dir, PID_FILE))
    out["pid"] = pid
    out["cancelled"] = os.path.exists(os.path.join(run_dir, CANCEL_FILE))
    if code is not None:
        out.update(state="exited", code=code)
    elif pid is not None and launcher_alive(pid, run_dir):
        out["state"] = "running"
    else:
        code = _read_int(os.path.join(run_dir, EXIT_FILE))  # it may have just finished
        out.update(state="exited" if code is not None else "lost", code=code)
    with contextlib.suppress(OSError):  # how long the attempt ran: a window warns when short
        if out["state"] == "exited":
            out["seconds"] = (os.path.getmtime(os.path.join(run_dir, EXIT_FILE))
                              - os.path.getmtime(os.path.join(run_dir, PID_FILE)))
    if out["state"] == "exited" and not out["cancelled"]:
        # finished, then a rank's teardown aborted: the run finished (the window folds it)
        out["teardown"] = finished_before_exit(run_dir, out["code"])
    with contextlib.suppress(OSError):  # what Resume would carry on from
        names = sorted(n for n in os.listdir(os.path.join(run_dir, CHECKPOINTS))
                       if n.startswith("ckpt-") and n.endswith(".pt"))
        out["checkpoints"] = len(names)
        out["latest_checkpoint"] = names[-1] if names else ""
    with contextlib.suppress(OSError, ValueError, AttributeError), \
            open(os.path.join(run_dir, FETCH_NOTE), encoding="utf-8") as fh:  # bucket (32)
        out["data_fetches"] = list(json.load(fh).get("fetches") or [])
    return out


def _exit_code(returncode: int, log_path: str) -> int:
    """The worker's own exit status when torchrun reports one (torchrun itself exits 1)."""
    if returncode < 0:
        return 128 - returncode
    if returncode == 0:
        return 0
    tail = log_tail(log_path)
    if tail is None:
        return returncode
    found = _ROOT_CAUSE.findall(tail)
    if found:
        code = int(found[-1])
        return 128 - code if code < 0 else code or returncode
    return returncode


def _route_device(addr: str) -> str | None:
    """The network interface that reaches ``addr`` (for GLOO/NCCL_SOCKET_IFNAME)."""
    try:
        out = subprocess.run(["ip", "-o", "route", "get", addr], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=5, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(rb"\bdev\s+(\S+)", out)
    return m.group(1).decode() if m else None


def _supervise(run_dir: str, spec: dict[str, Any]) -> int:
    """In the detached grandchild: run the command, record its exit status."""
    log_path = os.path.join(run_dir, LOG_FILE)
    env = dict(os.environ)
    for key, value in spec.get("env", {}).items():
        if key == "PYTHONPATH" and env.get(key):
            value = f"{value}:{env[key]}"
        env[str(key)] = str(value)
    addr = spec.get("master_addr")
    if addr:
        dev = _route_device(str(addr))
        if dev:
            env.setdefault("GLOO_SOCKET_IFNAME", dev)
            if spec.get("multi_node"):
                env.setdefault("NCCL_SOCKET_IFNAME", dev)
    log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    child: list[subprocess.Popen[bytes] | None] = [None]

    def forward(signum: int, _frame: Any) -> None:
        proc = child[0]
        if proc is not None and proc.poll() is None:
            proc.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        proc = subprocess.Popen([str(a) for a in spec["argv"]], cwd=os.path.expanduser(
            spec.get("cwd") or run_dir), env=env, stdin=subprocess.DEVNULL, stdout=log_fd,
            stderr=log_fd)
    except OSError as exc:
        said = SAID_CANNOT_START.format(program=spec["argv"][0], error=exc)
        os.write(log_fd, f"gpudesk: {said}\n".encode())
        _write_atomic(os.path.join(run_dir, EXIT_FILE), "127\n")
        return 127
    child[0] = proc
    while True:
        try:
            rc = proc.wait()
            break
        except InterruptedError:  # pragma: no cover - Python retries on its own
            continue
    code = _exit_code(rc, log_path)
    _write_atomic(os.path.join(run_dir, EXIT_FILE), f"{code}\n")
    os.close(log_fd)
    return code


def start(spec: dict[str, Any]) -> dict[str, Any]:
    run_dir = os.path.abspath(os.path.expanduser(spec["run_dir"]))
    resume = bool(spec.get("resume"))
    if os.path.exists(os.path.join(run_dir, PID_FILE)):
        now = status(run_dir)
        if not resume:
            raise SystemExit(f"run folder {run_dir} already exists")
        if now["state"] == "running":
            raise SystemExit(f"the run in {run_dir} is still running (pid {now['pid']})")
    os.makedirs(os.path.join(run_dir, CHECKPOINTS), exist_ok=True)
    for name in (EXIT_FILE, PID_FILE, CANCEL_FILE):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(run_dir, name))
    _write_atomic(os.path.join(run_dir, SPEC_FILE), json.dumps(spec, indent=1) + "\n")
    _write_atomic(os.path.join(run_dir, COMMAND_FILE),
                  " ".join(shlex.quote(str(a)) for a in spec["argv"]) + "\n")
    log_path = os.path.join(run_dir, LOG_FILE)
    with open(log_path, "ab") as fh:
        offset = fh.tell()
        if resume:
            said = SAID_RESUMING.format(attempt=spec.get("attempt", "?"))
            fh.write(f"gpudesk: {said}\n".encode())
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # child: new session, then fork again so no terminal can come back
        try:
            os.setsid()
            if os.fork() != 0:
                os._exit(0)
            os.chdir(run_dir)
            null = os.open(os.devnull, os.O_RDWR)
            log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            os.dup2(null, 0)
            os.dup2(log_fd, 1)
            os.dup2(log_fd, 2)
            os.close(null)
            os.close(log_fd)
            _write_atomic(os.path.join(run_dir, PID_FILE), f"{os.getpid()}\n")
            code = _supervise(run_dir, spec)
        except BaseException:  # noqa: BLE001 - a daemon must never return into the caller
            code = 1
        os._exit(code & 0xFF)
    os.waitpid(pid, 0)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        got = _read_int(os.path.join(run_dir, PID_FILE))
        if got is not None:
            return {"pid": got, "run_dir": run_dir, "log_offset": offset}
        time.sleep(0.01)
    raise SystemExit(f"the launcher did not start within {START_TIMEOUT_S:.0f} seconds")


def follow(run_dir: str, offset: int, until_end: bool = True) -> int:
    run_dir = os.path.expanduser(run_dir)
    out = sys.stdout.buffer
    log_path = os.path.join(run_dir, LOG_FILE)
    if not os.path.isdir(run_dir):
        sys.stderr.write(f"no run folder {run_dir}\n")
        return 2
    with open(log_path, "ab"):
        pass
    parent = os.getppid()
    with open(log_path, "rb") as fh:
        fh.seek(offset)
        ended = False
        while True:
            data = fh.read(1 << 16)
            if data:
                try:
                    out.write(data)
                    out.flush()
                except (BrokenPipeError, OSError):
                    return 3
                continue
            if ended or not until_end:
                return 0
            if status(run_dir)["state"] != "running":
                ended = True  # read once more: the last bytes may have landed meanwhile
                continue
            if os.getppid() != parent:  # the SSH session is gone
                return 3
            time.sleep(POLL_S)


def stop(run_dir: str) -> int:
    """SIGTERM the launcher, which passes it on to torchrun (and torchrun to the workers)."""
    run_dir = os.path.expanduser(run_dir)
    now = status(run_dir)
    if now["state"] == "running":
        _write_atomic(os.path.join(run_dir, CANCEL_FILE), f"{time.time():.3f}\n")
        os.kill(int(now["pid"]), signal.SIGTERM)
    print(json.dumps(now), flush=True)
    return 0


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as fh:
            return int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A free port for torchrun's rendezvous, below the kernel's ephemeral range (as 29500,
    torchrun's own default, is): a port the kernel handed out for bind(0) goes back to
    its pool, and an outgoing connection (or the rendezvous client's own retries, whose
    source port can equal the target port) may take it before torchrun listens."""
    below = range(20000, min(_ephemeral_low(), 32768))
    for port in random.SystemRandom().sample(below, min(64, len(below))):
        with socket.socket() as sock:
            try:
                sock.bind(("", port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:  # a machine with a wide ephemeral range: ask the kernel
        sock.bind(("", 0))
        return int(sock.getsockname()[1])


def main(argv: list[str]) -> int:
    if not argv:
        sys.stderr.write("usage: start|status RUN_DIR|follow RUN_DIR OFFSET|freeport\n")
        return 2
    op = argv[0]
    if op == "start":
        print(json.dumps(start(json.loads(sys.stdin.read()))), flush=True)
        return 0
    if op == "status":
        print(json.dumps(status(argv[1])), flush=True)
        return 0
    if op == "follow":
        return follow(argv[1], int(argv[2]))
    if op == "cat":
        return follow(argv[1], int(argv[2]), until_end=False)
    if op == "abspath":
        print(os.path.abspath(os.path.expanduser(argv[1])), flush=True)
        return 0
    if op == "stop":
        return stop(argv[1])
    if op == "freeport":
        print(free_port(), flush=True)
        return 0
    sys.stderr.write(f"unknown operation {op!r}\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
