"""Put the stdlib agent on a machine, give it its rules, and keep it running there.

Layout on the machine (``root`` is ``~/gpudesk`` unless chosen)::

    <root>/agent/v<AGENT_VERSION>-<hash>/agent/   the uploaded package (one per content hash)
    <root>/agent/data/                            its folder: metrics.jsonl, agent.pid, ...
    <root>/agent/rules.json                       what the app told it to enforce
    <root>/runs/                                  run folders (the idle rule looks there)

The code folder is named by a hash of the agent's sources, so an unchanged
agent is never uploaded twice and a changed one never mixes with the old one.
Everything happens in one small stdlib helper run with ``python3 -c`` (one
round trip when nothing needs uploading, two when it does): it writes
rules.json atomically (the agent re-reads it when it changes), and when no
agent holds ``agent.lock`` it starts one in its own session with stdio on
files, so it outlives the SSH connection and the app. An agent still running
older code is stopped and replaced.

Blocking (paramiko); the window calls it through ``asyncio.to_thread``.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.resources
import io
import json
import shlex
import tarfile
import zlib
from dataclasses import dataclass, field
from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.remote.ssh import SshConnection

DEFAULT_ROOT = "~/gpudesk"
DEFAULT_PYTHON = "python3"

MSG_DEPLOY = QT_TRANSLATE_NOOP(
    "Agent", "Could not set up the gpudesk agent on {target}: {detail}")
MSG_START = QT_TRANSLATE_NOOP(
    "Agent", "The gpudesk agent on {target} did not start: {detail}. Its log is {log}.")
MSG_RULES = QT_TRANSLATE_NOOP("Agent", "The agent rules are not valid: {detail}")


class AgentDeployError(TemplatedError):
    translation_context = "Agent"


# --------------------------------------------------------------------------- rules

@dataclass(frozen=True)
class IdleStop:
    """Act when every GPU stays under ``below_pct`` and no run is active for ``minutes``."""

    minutes: float
    below_pct: float = 5.0
    action: str = "stop"  # stop, terminate or warn


@dataclass(frozen=True)
class BudgetStop:
    """Act when ``spent_before + price_per_hour × hours since `since``` reaches ``cap``."""

    cap: float
    price_per_hour: float
    since: float
    spent_before: float = 0.0
    action: str = "stop"
    thresholds: tuple[float, ...] = (50.0, 80.0, 100.0)
    currency: str = "USD"


@dataclass(frozen=True)
class AgentRules:
    """What the app tells the agent (the schema of ``gpudesk/agent/rules.py``)."""

    idle: IdleStop | None = None
    budget: BudgetStop | None = None
    commands: dict[str, tuple[str, ...]] = field(default_factory=dict)
    spot_provider: str = "none"  # aws, tencent, aliyun or none
    spot_base_url: str = ""
    interval_ms: int = 1000
    procs_every_s: float = 5.0
    runs_dir: str | None = None  # default: <root>/runs on the machine
    metrics_max_bytes: int | None = None
    metrics_keep: int | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"interval_ms": self.interval_ms,
                                "procs_every_s": self.procs_every_s,
                                "spot": {"provider": self.spot_provider}}
        if self.spot_base_url:
            data["spot"]["base_url"] = self.spot_base_url
        if self.idle is not None:
            data["idle"] = {"below_pct": self.idle.below_pct, "minutes": self.idle.minutes,
                            "action": self.idle.action}
        if self.budget is not None:
            b = self.budget
            data["budget"] = {"cap": b.cap, "price_per_hour": b.price_per_hour,
                              "since": b.since, "spent_before": b.spent_before,
                              "action": b.action, "thresholds": list(b.thresholds),
                              "currency": b.currency}
        if self.commands:
            data["commands"] = {k: list(v) for k, v in self.commands.items()}
        if self.runs_dir:
            data["runs_dir"] = self.runs_dir
        metrics = {k: v for k, v in (("max_bytes", self.metrics_max_bytes),
                                     ("keep", self.metrics_keep)) if v is not None}
        if metrics:
            data["metrics"] = metrics
        return data

    def validate(self) -> None:
        """The agent's own parser, here, so bad rules fail before anything is uploaded."""
        from gpudesk.agent.rules import RulesError, parse_rules

        data = self.to_json()
        data.setdefault("runs_dir", "/")
        try:
            parse_rules(data)
        except RulesError as exc:
            raise AgentDeployError(MSG_RULES, detail=str(exc)) from None


# --------------------------------------------------------------------------- the bundle

@dataclass(frozen=True)
class AgentBundle:
    version: str  # "<AGENT_VERSION>-<content hash>"
    archive: bytes  # tar.gz holding agent/*.py


def agent_bundle() -> AgentBundle:
    """The agent package as a deterministic tar.gz, named by a hash of its sources."""
    from gpudesk.agent import AGENT_VERSION

    files = sorted((item.name, item.read_bytes())
                   for item in importlib.resources.files("gpudesk.agent").iterdir()
                   if item.name.endswith(".py"))
    digest = hashlib.sha256()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in files:
            digest.update(name.encode() + b"\0" + data + b"\0")
            info = tarfile.TarInfo(f"agent/{name}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return AgentBundle(f"{AGENT_VERSION}-{digest.hexdigest()[:12]}",
                       zlib.compress(raw.getvalue(), 9))


# --------------------------------------------------------------------------- the helper

# Runs on the machine (stdlib, Python 3.6+): ``python3 -c SRC`` with a JSON spec on stdin.
_HELPER = r'''
import base64, fcntl, io, json, os, shutil, signal, subprocess, sys, tarfile, time, zlib
spec = json.loads(sys.stdin.read())
root = os.path.abspath(os.path.expanduser(spec["root"]))
base = os.path.join(root, "agent")
vdir = os.path.join(base, "v" + spec["version"])
entry = os.path.join(vdir, "agent")
data = os.path.join(base, "data")
rules_path = os.path.join(base, "rules.json")
log_path = os.path.join(data, "agent.log")
out = {"root": root, "entry": entry, "data_dir": data, "rules_path": rules_path,
       "log": log_path, "started": False, "replaced": False, "uploaded": False}
def say(**kw):
    out.update(kw); sys.stdout.write(json.dumps(out)); sys.stdout.flush(); sys.exit(0)
def atomic(path, blob):
    tmp = "%s.tmp-%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(blob); f.flush(); os.fsync(f.fileno())
    os.replace(tmp, path)
if not os.path.isfile(os.path.join(entry, "__main__.py")):
    if spec.get("bundle") is None:
        say(need_bundle=True)
    tmp = vdir + ".tmp-%d" % os.getpid()
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    blob = zlib.decompress(base64.b64decode(spec["bundle"]))
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        for m in tar.getmembers():
            if not m.isfile() or m.name.startswith("/") or ".." in m.name.split("/"):
                raise SystemExit("bad member " + m.name)
        tar.extractall(tmp, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    try:
        os.rename(tmp, vdir)
    except OSError:  # there already: a concurrent deploy won, or a partial old folder
        if os.path.isfile(os.path.join(entry, "__main__.py")):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            shutil.rmtree(vdir, ignore_errors=True)
            os.rename(tmp, vdir)
    out["uploaded"] = True
os.makedirs(data, exist_ok=True)
rules = spec.get("rules")
if rules is not None or not os.path.isfile(rules_path):
    rules = dict(rules or {})
    rules.setdefault("runs_dir", os.path.join(root, "runs"))
    atomic(rules_path, (json.dumps(rules, indent=1) + "\n").encode())
def holder():
    """The pid holding agent.lock, 0 when none does."""
    fd = os.open(os.path.join(data, "agent.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        try:
            with open(os.path.join(data, "agent.pid")) as f:
                return int(f.read().strip() or 0) or -1
        except (OSError, ValueError):
            return -1
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return 0
    finally:
        os.close(fd)
def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []
def wait(cond, seconds):
    end = time.time() + seconds
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()
pid = holder()
args = cmdline(pid) if pid > 0 else []
if pid > 0 and args and entry.encode() not in args:
    os.kill(pid, signal.SIGTERM)
    if not wait(lambda: holder() == 0, 20):
        os.kill(pid, signal.SIGKILL)
        wait(lambda: holder() == 0, 5)
    out["replaced"] = True
    pid = 0
if pid == 0:
    argv = [spec["python"], entry, "--dir", data, "--rules", rules_path, "--log-level", "WARNING"]
    if spec.get("nvidia_smi"):
        argv += ["--nvidia-smi", spec["nvidia_smi"]]
    with open(log_path, "ab") as log, open(os.devnull, "rb") as null:
        proc = subprocess.Popen(argv, stdin=null, stdout=log, stderr=log, cwd=data,
                                start_new_session=True, close_fds=True)
    def pid_file():
        try:
            with open(os.path.join(data, "agent.pid")) as f:
                return int(f.read().strip() or 0)
        except (OSError, ValueError):
            return 0
    # not holder(): taking the lock to look would make the starting agent give up
    wait(lambda: proc.poll() is not None or pid_file() == proc.pid, 20)
    if proc.poll() == 3 and holder() > 0:  # another desktop started one meanwhile
        pid = holder()
    elif proc.poll() is not None or pid_file() != proc.pid:
        try:
            with open(log_path, "rb") as f:
                f.seek(max(0, os.path.getsize(log_path) - 1500))
                tail = f.read().decode("utf-8", "replace").strip()
        except OSError:
            tail = ""
        say(failed=True, code=proc.poll(), detail=tail[-600:])
    else:
        pid = proc.pid
        out["started"] = True
for name in os.listdir(base):
    if name.startswith("v") and name != os.path.basename(vdir):
        shutil.rmtree(os.path.join(base, name), ignore_errors=True)
sys.path.insert(0, vdir)
from pathlib import Path
from agent.metrics import last_seq
say(pid=pid, last_seq=last_seq(Path(data)))
'''


_FOLLOW_WRAPPER = (
    "import subprocess,sys,threading\n"
    "p=subprocess.Popen(sys.argv[1:],stdin=subprocess.DEVNULL)\n"
    "def w():\n"
    "    sys.stdin.buffer.read()\n"
    "    p.terminate()\n"
    "threading.Thread(target=w,daemon=True).start()\n"
    "sys.exit(p.wait())\n")


def helper_command(python: str) -> str:
    blob = base64.b64encode(zlib.compress(_HELPER.encode(), 9)).decode("ascii")
    code = ("import base64,zlib;exec(compile(zlib.decompress(base64.b64decode('" + blob
            + "')),'gpudesk_agent_deploy','exec'),{'__name__':'__main__'})")
    return f'exec {shlex.quote(python)} -I -S -c "{code}"'


# --------------------------------------------------------------------------- deploying

@dataclass(frozen=True)
class AgentSite:
    """Where the agent lives on one machine and how it was started (no secrets)."""

    target: str
    root: str
    entry: str  # the uploaded package folder, run as ``python entry``
    data_dir: str
    rules_path: str
    log: str
    version: str
    python: str = DEFAULT_PYTHON
    nvidia_smi: str | None = None
    pid: int = 0
    started: bool = False  # this call started it (it was not running)
    replaced: bool = False  # an agent with other code was running and was replaced
    uploaded: bool = False  # this call uploaded the code
    last_seq: int = 0  # the newest record on the machine when this call returned

    def follow_command(self, since: int) -> str:
        """What the desktop runs over SSH to backfill after ``since`` and then stream.

        Wrapped so that the follower ends when the channel does (its stdin closes):
        on its own it would notice only at its next write, never if the agent died.
        """
        words = [self.python, "-I", "-S", "-c", _FOLLOW_WRAPPER, self.python, self.entry,
                 "--dir", self.data_dir, "--since", str(int(since)), "--follow"]
        return "exec " + " ".join(shlex.quote(w) for w in words)


def deploy(conn: SshConnection, rules: AgentRules | None = None, *, root: str = DEFAULT_ROOT,
           python: str = DEFAULT_PYTHON, nvidia_smi: str | None = None,
           timeout: float = 120.0) -> AgentSite:
    """Upload the agent if this version is not there, write ``rules`` (None keeps the
    machine's rules.json, or writes empty rules if it has none) and make sure it runs.

    ``nvidia_smi`` (and ``python``) apply when this call starts the agent; a running
    agent of the same code is left as it is.
    """
    if rules is not None:
        rules.validate()
    bundle = agent_bundle()
    spec: dict[str, Any] = {"root": root, "version": bundle.version, "python": python,
                            "nvidia_smi": nvidia_smi,
                            "rules": None if rules is None else rules.to_json()}
    answer = _run_helper(conn, python, spec, timeout)
    if answer.get("need_bundle"):
        spec["bundle"] = base64.b64encode(bundle.archive).decode("ascii")
        answer = _run_helper(conn, python, spec, timeout)
    if answer.get("failed"):
        detail = str(answer.get("detail") or f"exit status {answer.get('code')}")
        raise AgentDeployError(MSG_START, target=str(conn.target), detail=detail,
                               log=answer.get("log", ""))
    return AgentSite(target=str(conn.target), root=str(answer["root"]),
                     entry=str(answer["entry"]), data_dir=str(answer["data_dir"]),
                     rules_path=str(answer["rules_path"]), log=str(answer["log"]),
                     version=bundle.version, python=python, nvidia_smi=nvidia_smi,
                     pid=int(answer.get("pid") or 0), started=bool(answer.get("started")),
                     replaced=bool(answer.get("replaced")),
                     uploaded=bool(answer.get("uploaded")),
                     last_seq=int(answer.get("last_seq") or 0))


def ensure_running(conn: SshConnection, site: AgentSite) -> AgentSite:
    """Start the agent again if it died (same code, rules and nvidia-smi); cheap otherwise."""
    root = site.root
    return deploy(conn, None, root=root, python=site.python, nvidia_smi=site.nvidia_smi)


def stop_agent(conn: SshConnection, data_dir: str, timeout: float = 30.0) -> bool:
    """End the agent on the user's own machine (it would outlive gpudesk there); True when
    one was running. Cloud machines keep theirs: it enforces the idle and budget guard."""
    pid_file = shlex.quote(f"{data_dir.rstrip('/')}/agent.pid")
    script = (f"pid=$(cat {pid_file} 2>/dev/null); "
              'if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then echo none; exit 0; fi; '
              'kill -TERM "$pid"; i=0; while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; '
              'do sleep 0.1; i=$((i+1)); done; kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"; '
              "echo stopped")
    result = conn.exec(script, timeout=timeout, what="stopping the agent")
    if not result.ok:
        detail = (result.stderr or result.stdout).decode("utf-8", "replace").strip()[-400:]
        raise AgentDeployError(MSG_DEPLOY, target=str(conn.target),
                               detail=detail or f"exit status {result.exit_status}")
    return result.text.strip().endswith("stopped")


def write_rules(conn: SshConnection, site: AgentSite, rules: AgentRules) -> AgentSite:
    """New rules for a running agent (a raised cap, a new spot price); it re-reads the file."""
    return deploy(conn, rules, root=site.root, python=site.python, nvidia_smi=site.nvidia_smi)


def _run_helper(conn: SshConnection, python: str, spec: dict[str, Any],
                timeout: float) -> dict[str, Any]:
    result = conn.exec(helper_command(python), input=json.dumps(spec).encode(),
                       timeout=timeout, what="setting up the agent")
    try:
        answer = json.loads(result.stdout) if result.ok else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        detail = (result.stderr or result.stdout).decode("utf-8", "replace").strip()[-400:]
        raise AgentDeployError(MSG_DEPLOY, target=str(conn.target),
                               detail=detail or f"exit status {result.exit_status}")
    return answer
