"""Put the stdlib agent on a machine, give it its rules, and keep it running there.

Layout on the machine (``root`` is ``~/gpudesk`` unless chosen)::

    <root>/agent/v<AGENT_VERSION>-<hash>/agent/   the uploaded package (one per content hash)
    <root>/agent/boot/agent/                      the first-boot guard (user data)
    <root>/agent/current -> v<...> or boot        what the unit runs
    <root>/agent/service.json                     the unit and how to reach the service manager
    <root>/agent/data/                            its folder: metrics.jsonl, spend.json, ...
    <root>/agent/rules.json                       what the app told it to enforce
    <root>/runs/                                  run folders (the idle rule looks there)

The code folder is named by a hash of the agent's sources, so an unchanged
agent is never uploaded twice and a changed one never mixes with the old one.
Everything happens in one small stdlib helper run with ``python3 -c`` (one
round trip when nothing needs uploading, two when it does): it writes
rules.json atomically (the agent re-reads it when it changes) and makes sure
the agent of this code runs:

* Supervised (a machine gpudesk launched: its first boot installed the one
  unit, :func:`unit_template`, ``Restart=always``, and ``service.json``; a unit
  an older gpudesk installed; or ``install_unit``): the
  helper points ``current`` at the new code, installs or upgrades the same unit
  text when it differs, and restarts the unit through the service manager
  command recorded in ``service.json`` (``sudo -n systemctl``). systemd brings
  the agent back after a kill, an OOM kill or a reboot, and the spend goes on
  from ``spend.json``.
* Unsupervised (the user's own machine without the unit, or without systemd or
  root): when no agent holds ``agent.lock`` it starts one in its own session
  with stdio on files, so it outlives the SSH connection and the app; an agent
  still running older code is stopped and replaced. Nothing restarts it if it
  dies but the desktop's ``ensure_running`` while Watch is open
  (``AgentSite.supervisor`` is "none", ``supervisor_note`` says why).

Blocking (paramiko); the window calls it through ``asyncio.to_thread``.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.resources
import io
import json
import os
import shlex
import tarfile
import zlib
from dataclasses import dataclass
from dataclasses import field
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


# --------------------------------------------------------------------------- the unit

UNIT = "gpudesk-agent.service"
RESTART_SEC = 2


def unit_template() -> str:
    """The machine's one systemd unit for its guard, from first boot to terminate.

    The first-boot script and the deploy helper both install exactly this text,
    with ``@USER@`` (the login user), ``@PY@`` (an absolute python) and ``@BASE@``
    (``<root>/agent``) filled in on the machine. It runs whatever ``current``
    points at (the boot guard, later the full agent), restarts it whatever its
    exit (``Restart=always``: a SIGTERM'd agent exits 0, a killed one dies by a
    signal), without a start limit (systemd gives up after 5 quick starts by
    default), and starts it on every boot; a restart or stop ends the agent's own process only
    (``KillMode=process``): the runs its queue started live on in the unit's group.
    """
    return ("[Unit]\n"
            "Description=gpudesk agent: the machine's budget and idle guard\n"
            "After=network-online.target\n"
            "StartLimitIntervalSec=0\n"
            "[Service]\n"
            "User=@USER@\n"
            "EnvironmentFile=-@BASE@/agent.env\n"
            "ExecStart=@PY@ @BASE@/current/agent --dir @BASE@/data --rules @BASE@/rules.json\n"
            "Restart=always\n"
            f"RestartSec={RESTART_SEC}\n"
            "StartLimitInterval=0\n"
            "OOMScoreAdjust=-500\n"
            # a restart ends the agent alone, not the queued runs it started (queue.py)
            "KillMode=process\n"
            "[Install]\n"
            "WantedBy=multi-user.target\n")


@dataclass(frozen=True)
class ServiceManager:
    """How the deploy step reaches the service manager when it installs the unit itself
    (``install_unit``); a machine whose first boot installed it says so in service.json.

    ``GPUDESK_SYSTEMCTL`` (and ``GPUDESK_UNIT_DIR``) name another one: the test suite
    points them away from the real systemd of the machine its sshd runs on.
    """

    systemctl: str = "sudo -n systemctl"
    unit_dir: str = "/etc/systemd/system"

    @classmethod
    def from_env(cls) -> ServiceManager | None:
        systemctl = os.environ.get("GPUDESK_SYSTEMCTL")
        if not systemctl:
            return None  # the machine's own (where it has systemd)
        return cls(systemctl, os.environ.get("GPUDESK_UNIT_DIR") or cls.unit_dir)


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
        from gpudesk.agent.rules import RulesError
        from gpudesk.agent.rules import parse_rules

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
       "log": log_path, "started": False, "replaced": False, "uploaded": False,
       "supervisor": "none", "supervisor_note": ""}
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
    try:  # what these rules replace, so that the app can say when the guard changed
        with open(rules_path, "rb") as f:
            out["rules_before"] = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        out["rules_before"] = None
    rules = dict(rules or {})
    rules.setdefault("runs_dir", os.path.join(root, "runs"))
    atomic(rules_path, (json.dumps(rules, indent=1) + "\n").encode())
def wait(cond, seconds):
    end = time.time() + seconds
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()
def sh(argv, blob=None):
    try:
        p = subprocess.run(argv, input=blob, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return -1, str(exc)
    return p.returncode, p.stdout.decode("utf-8", "replace").strip()[-600:]
def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True
def code_running():
    """(pid, real code folder) of the agent that last took the folder, if it still runs."""
    try:
        with open(os.path.join(data, "agent.code")) as f:
            info = json.load(f)
        pid = int(info["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0, ""
    return (pid, str(info.get("code"))) if pid > 0 and alive(pid) else (0, "")
def log_tail():
    try:
        with open(log_path, "rb") as f:
            f.seek(max(0, os.path.getsize(log_path) - 1500))
            return f.read().decode("utf-8", "replace").strip()[-600:]
    except OSError:
        return ""
svc_path = os.path.join(base, "service.json")
try:
    with open(svc_path) as f:
        svc = json.load(f)
    fresh = False
except (OSError, ValueError):
    svc, fresh = None, True
old_unit = os.path.join("/etc/systemd/system", spec["unit"])  # an older gpudesk's first boot
if svc is None and (spec.get("install_unit") or os.path.isfile(old_unit)):
    svc = dict(spec.get("service") or {})
    if not svc and not os.path.isdir("/run/systemd/system"):
        svc, out["supervisor_note"] = None, "no systemd on this machine"
    else:
        svc.setdefault("systemctl", "sudo -n systemctl")
        svc.setdefault("unit_dir", "/etc/systemd/system")
        svc["python"] = sys.executable
elif svc is None:
    out["supervisor_note"] = "no gpudesk unit here (only machines gpudesk launches get one)"
if svc is not None:  # the unit runs <base>/current: point it at this code, restart the unit
    import pwd, shlex
    ctl, unit = shlex.split(svc["systemctl"]), spec["unit"]
    unit_path = os.path.join(svc["unit_dir"], unit)
    real = os.path.realpath(entry)
    text = (spec["unit_template"].replace("@USER@", pwd.getpwuid(os.getuid()).pw_name)
            .replace("@PY@", svc.get("python") or sys.executable).replace("@BASE@", base))
    cur = os.path.join(base, "current")
    if os.path.realpath(cur) != os.path.realpath(vdir):
        tmp = "%s.tmp-%d" % (cur, os.getpid())
        os.symlink(os.path.basename(vdir), tmp)
        os.replace(tmp, cur)
    env_path = os.path.join(base, "agent.env")
    env = ("GPUDESK_NVIDIA_SMI=%s\n" % spec["nvidia_smi"]) if spec.get("nvidia_smi") else ""
    try:
        with open(env_path) as f:
            env_changed = f.read() != env
    except OSError:
        env_changed = bool(env)
    if env_changed:
        atomic(env_path, env.encode())
    try:
        with open(unit_path) as f:
            unit_changed = f.read() != text
    except OSError:
        unit_changed = True
    rc, msg = 0, ""
    if unit_changed:
        if os.access(svc["unit_dir"], os.W_OK):
            atomic(unit_path, text.encode())
        else:
            rc, msg = sh(ctl[:-1] + ["tee", unit_path], text.encode())
        for verb in (["daemon-reload"], ["enable", unit]):
            if rc == 0:
                rc, msg = sh(ctl + verb)
    if rc != 0 and fresh:
        out["supervisor_note"] = "could not install the unit: " + msg
        svc = None
    elif rc != 0:
        say(failed=True, code=rc, detail="the service manager refused the unit: " + msg)
if svc is not None:
    if fresh:
        atomic(svc_path, json.dumps(svc).encode())
    pid, code = code_running()
    if pid and fresh:  # started before this unit existed (detached): the unit runs it now
        os.kill(pid, signal.SIGTERM)
        if not wait(lambda: not alive(pid), 20):
            os.kill(pid, signal.SIGKILL)
            wait(lambda: not alive(pid), 5)
        out["replaced"] = True
        pid, code = 0, ""
    if pid and code != real:
        out["replaced"] = True
    if unit_changed or env_changed or code != real:
        rc, msg = sh(ctl + ["restart", unit])
        if rc != 0 and not (pid and not unit_changed and not env_changed):
            say(failed=True, code=rc, detail="restarting %s failed: %s" % (unit, msg))
        if rc != 0:  # no sudo now: end the old code, the unit starts `current` again
            out["supervisor_note"] = "restarted by its unit (%s: %s)" % (" ".join(ctl), msg)
            os.kill(pid, signal.SIGTERM)
        out["started"] = True
        if not wait(lambda: code_running()[1] == real, 20):
            stray = code_running()[0]  # not the unit's (restarted): an agent from before it
            if stray:
                os.kill(stray, signal.SIGTERM)
            if not wait(lambda: code_running()[1] == real, 20):
                say(failed=True, code=None, detail=(sh(ctl + ["status", unit])[1] + "\n"
                                                    + log_tail())[-600:])
    pid = code_running()[0]
    out["supervisor"] = "systemd"
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
pid = holder() if svc is None else pid
args = cmdline(pid) if pid > 0 and svc is None else []
if pid > 0 and args and entry.encode() not in args:
    os.kill(pid, signal.SIGTERM)
    if not wait(lambda: holder() == 0, 20):
        os.kill(pid, signal.SIGKILL)
        wait(lambda: holder() == 0, 5)
    out["replaced"] = True
    pid = 0
if pid == 0 and svc is None:  # nothing supervises it: a detached process
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
        say(failed=True, code=proc.poll(), detail=log_tail())
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


# Ends the follower when the channel's stdin closes, passes a SIGTERM/SIGHUP/SIGINT on to
# it (else the follower outlives the wrapper and holds the channel open: the stream never
# ends), ends cleanly (0: the desktop reopens) when the follower was told to end, and
# leaves through os._exit: a normal interpreter exit with the
# reading thread inside stdin's buffered reader aborts (3.8+: exit-signal, which the
# desktop reads as a dead link) or deadlocks (older: the stream never ends).
_FOLLOW_WRAPPER = (
    "import os,signal,subprocess,sys,threading\n"
    "p=subprocess.Popen(sys.argv[1:],stdin=subprocess.DEVNULL)\n"
    "for s in(signal.SIGTERM,signal.SIGHUP,signal.SIGINT):signal.signal(s,lambda*a:p.terminate())\n"
    "def w():\n"
    "    try:\n"
    "        while os.read(0,65536):pass\n"
    "    except OSError:pass\n"
    "    p.terminate()\n"
    "threading.Thread(target=w,daemon=True).start()\n"
    "r=p.wait()\n"
    "os._exit(r if r>=0 else 0 if -r in(1,2,15) else 128-r)\n")


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
    supervisor: str = "none"  # "systemd": the unit restarts it; "none": nothing does
    supervisor_note: str = ""  # why nothing supervises it
    # the rules.json this call replaced (None: there was none, it was unreadable, or the
    # call kept the machine's rules)
    rules_before: dict[str, Any] | None = None

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
           timeout: float = 120.0, install_unit: bool = False,
           service: ServiceManager | None = None) -> AgentSite:
    """Upload the agent if this version is not there, write ``rules`` (None keeps the
    machine's rules.json, or writes empty rules if it has none) and make sure it runs.

    Where the machine has the unit (first boot) it is upgraded in place; with
    ``install_unit`` it is installed where it is not (through ``service``, by default
    ``sudo -n systemctl``; without systemd or sudo the agent runs unsupervised and the
    site says why). ``nvidia_smi`` (and, unsupervised, ``python``) apply when this call
    starts the agent; a running agent of the same code is left as it is.
    """
    if rules is not None:
        rules.validate()
    service = service or ServiceManager.from_env()
    bundle = agent_bundle()
    spec: dict[str, Any] = {"root": root, "version": bundle.version, "python": python,
                            "nvidia_smi": nvidia_smi,
                            "rules": None if rules is None else rules.to_json(),
                            "unit": UNIT, "unit_template": unit_template(),
                            "install_unit": install_unit,
                            "service": None if service is None else
                            {"systemctl": service.systemctl, "unit_dir": service.unit_dir}}
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
                     last_seq=int(answer.get("last_seq") or 0),
                     supervisor=str(answer.get("supervisor") or "none"),
                     supervisor_note=str(answer.get("supervisor_note") or ""),
                     rules_before=before if isinstance(before := answer.get("rules_before"),
                                                       dict) else None)


def ensure_running(conn: SshConnection, site: AgentSite) -> AgentSite:
    """Start the agent again if it died (same code, rules and nvidia-smi); cheap otherwise."""
    root = site.root
    return deploy(conn, None, root=root, python=site.python, nvidia_smi=site.nvidia_smi)



def stop_agent(conn: SshConnection, data_dir: str, timeout: float = 30.0) -> bool:
    """End the agent on the user's own machine (it would outlive gpudesk there); True when
    one was running. Cloud machines keep theirs: it enforces the idle and budget guard.
    Where the unit supervises it (``install_unit``), the unit is stopped and disabled
    through its service manager: killing the process would only restart it."""
    data = data_dir.rstrip("/")
    pid_file = shlex.quote(f"{data}/agent.pid")
    service = shlex.quote(f"{data.rsplit('/', 1)[0]}/service.json")
    script = (f"if [ -f {service} ]; then "
              rf"""c=$(sed -n 's/.*"systemctl": *"\([^"]*\)".*/\1/p' {service}); """
              f"$c stop {UNIT} && $c disable {UNIT} && rm -f {service} && echo stopped "
              "&& exit 0; exit 1; fi; "
              f"pid=$(cat {pid_file} 2>/dev/null); "
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
